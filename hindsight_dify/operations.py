"""The four tools' operations: Dify parameters in, a core call, a ToolResult out. No business logic lives here."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hindsight_dify import params
from hindsight_dify.results import ToolResult
from hindsight_insights.config import Language
from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import Insight, InsightDraft, InsightStatus, TurnDraft
from hindsight_insights.rules import render_rules
from hindsight_insights.store import InsightStore


@dataclass(frozen=True)
class Context:
    """Who is calling, from the Dify runtime."""

    user_id: str | None
    conversation_id: str | None


_FIELDS = ("topic", "kind", "scene", "observation", "action", "confidence", "expire_at", "scope")


def save_insight(store: InsightStore, parameters: Mapping[str, Any], context: Context) -> ToolResult:
    raw_json = params.text(parameters, "insight_json")
    user_id = params.text(parameters, "user_id") or context.user_id
    if raw_json is not None:
        given = [name for name in (*_FIELDS, "evidence", "tags") if params.text(parameters, name) is not None]
        if given:
            raise InvalidInput(
                [("insight_json", f"give either insight_json or the fields, not both ({', '.join(given)})")]
            )
        parsed = InsightDraft.from_llm_json(raw_json, defaults={"user_id": user_id, "source": "dify:insight_json"})
        if parsed is None:  # "{}": the reflection found nothing to learn
            return ToolResult(
                text="Nothing learned: the insight JSON was empty, so nothing was saved.",
                json={"id": None, "status": "nothing_learned", "supersedes": []},
            )
        draft = parsed
    else:
        data: dict[str, Any] = {name: value for name in _FIELDS if (value := params.text(parameters, name)) is not None}
        data["evidence"] = {
            "quote": params.text(parameters, "evidence") or "",
            "session_id": params.text(parameters, "evidence_session_id") or context.conversation_id,
        }
        data["tags"] = params.text_list(parameters, "tags")
        data["user_id"] = user_id
        data["source"] = "dify:save_insight"
        draft = InsightDraft.parse(data)
    result = store.save(draft)
    status = "pending_review" if result.insight_status is InsightStatus.PENDING_REVIEW else result.status
    body = {"id": str(result.id), "status": status, "supersedes": [str(i) for i in result.supersedes]}
    replaced = f", replacing {len(result.supersedes)} older insight(s)" if result.supersedes else ""
    return ToolResult(text=f"Insight {status}: {draft.topic} ({result.id}){replaced}.", json=body)


def _insight_summary(insight: Insight, channel: str, score: float | None = None) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "id": str(insight.id),
        "channel": channel,
        "topic": insight.topic,
        "kind": insight.kind.value,
        "scene": insight.scene,
        "action": insight.action,
        "confidence": insight.confidence,
        "updated_at": insight.updated_at.isoformat(),
    }
    if score is not None:
        summary["score"] = round(score, 4)
    return summary


def search_insight(store: InsightStore, parameters: Mapping[str, Any], context: Context) -> ToolResult:
    settings = store.settings
    languages: dict[str, Language] = {"zh": "zh", "en": "en"}
    language = languages.get(params.text(parameters, "language") or settings.language)
    if language is None:
        raise InvalidInput([("language", "must be zh or en")])
    recall = store.recall(
        params.recent_turns(params.text(parameters, "query") or ""),
        scene=params.text(parameters, "scene") or "general",
        user_id=params.text(parameters, "user_id") or context.user_id,
        top_k=params.number(parameters, "top_k", lambda v: int(float(v))),
        score_threshold=params.number(parameters, "score_threshold", float),
    )
    rules = render_rules(
        recall.insights, language=language, must_confidence=settings.must_confidence, prompts_dir=settings.prompts_dir
    )
    insights = [_insight_summary(i, "standing") for i in recall.standing] + [
        _insight_summary(hit.insight, "situational", hit.score) for hit in recall.situational
    ]
    injected = [item["id"] for item in insights]
    body = {"insights": insights, "count": len(insights), "rules": rules, "injected_ids": injected}
    return ToolResult(text=rules, json=body, variables={"rules": rules, "injected_ids": ",".join(injected)})


def record_turn(store: InsightStore, parameters: Mapping[str, Any], context: Context) -> ToolResult:
    feedback = params.text(parameters, "feedback")
    injected = []
    for value in params.text_list(parameters, "injected_insight_ids"):
        try:
            injected.append(uuid.UUID(value))
        except ValueError:
            raise InvalidInput([("injected_insight_ids", f"{value!r} is not an insight id")]) from None
    draft = TurnDraft.parse(
        {
            "session_id": params.text(parameters, "session_id") or context.conversation_id or "",
            "user_id": params.text(parameters, "user_id") or context.user_id or "",
            "scene": params.text(parameters, "scene") or "general",
            "user_message": params.text(parameters, "user_message") or "",
            "assistant_message": params.text(parameters, "assistant_message") or "",
            "signals": {
                "feedback": None if feedback in (None, "none") else feedback,
                "tool_error": params.boolean(parameters, "tool_error"),
                "stopped_generation": params.boolean(parameters, "stopped_generation"),
                "correction": params.boolean(parameters, "correction"),
            },
            "injected_insight_ids": injected,
        }
    )
    turn = store.turns.append(draft)
    signals = [name for name, on in draft.signals.model_dump().items() if on and name != "feedback"]
    if draft.signals.feedback:
        signals.insert(0, draft.signals.feedback)
    body = {"id": str(turn.id), "session_id": turn.session_id, "turn_index": turn.turn_index, "signals": signals}
    flagged = f" with signals {', '.join(signals)}" if signals else ""
    return ToolResult(text=f"Recorded turn {turn.turn_index} of session {turn.session_id}{flagged}.", json=body)


def forget_user(store: InsightStore, parameters: Mapping[str, Any], context: Context) -> ToolResult:
    user_id = params.text(parameters, "user_id")
    problems = []
    if user_id is None:
        problems.append(("user_id", "is required: the id of the user whose data is deleted"))
    if not params.boolean(parameters, "confirm"):
        problems.append(("confirm", "must be true: deleting a user's insights and turns cannot be undone"))
    if problems:
        raise InvalidInput(problems)
    assert user_id is not None
    result = store.forget_user(user_id)
    body = {"user_id": user_id, "insights_deleted": result.insights_deleted, "turns_deleted": result.turns_deleted}
    return ToolResult(
        text=f"Deleted {result.insights_deleted} insights and {result.turns_deleted} turns of user {user_id}.",
        json=body,
    )


Operation = Callable[[InsightStore, Mapping[str, Any], Context], ToolResult]
OPERATIONS: dict[str, Operation] = {
    "save_insight": save_insight,
    "search_insight": search_insight,
    "record_turn": record_turn,
    "forget_user": forget_user,
}
