"""The tools' operations: Dify parameters in, a core call, a ToolResult out. No business logic lives here.

Identity: every operation acts for the end user that Dify passes with the call. A builder may map another id (an
app's own user id) with the `end_user_id` setting, a `form: form` parameter that only the builder sets; no
parameter that a model fills (`form: llm`) and no field of LLM-written JSON chooses whose data is read or written.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hindsight_dify.cascade import cascade_for
from hindsight_dify.dify_model import DifyModelReflector, LlmInvocation, ModelSelection
from hindsight_dify.params import Parameters, recent_turns
from hindsight_dify.rerank import RerankInvocation, reranker_for
from hindsight_dify.results import ToolResult
from hindsight_insights.commands import Provenance, WriteCommand
from hindsight_insights.config import Language, Settings
from hindsight_insights.detector_model import learned_detector
from hindsight_insights.errors import HindsightError, InvalidInput, NotFound
from hindsight_insights.governance.recording import Recorded
from hindsight_insights.governance.recording import record_turn as record
from hindsight_insights.governance.writing import Placed, write
from hindsight_insights.llm_json import insight_from_llm_json
from hindsight_insights.models import Insight, InsightContent, SaveStatus, Scope, TurnDraft
from hindsight_insights.reflection import ReflectionEngine, ReflectionReport
from hindsight_insights.rules import render_rules
from hindsight_insights.store import MAX_TOP_K, InsightStore


@dataclass(frozen=True)
class Context:
    """Who is calling and from where, as the Dify runtime passes it (never from a tool parameter)."""

    user_id: str | None
    conversation_id: str | None = None
    message_id: str | None = None
    # The tool session's backwards invocation of the workspace's models (session.model.llm); None outside Dify.
    llm: LlmInvocation | None = None
    # Its backwards invocation of the workspace's rerank models (session.model.rerank); None outside Dify.
    rerank: RerankInvocation | None = None


def acting_user(parameters: Parameters, context: Context) -> str:
    """The builder's `end_user_id` setting, else Dify's end user of this call."""
    user = parameters.text("end_user_id") or context.user_id
    if not user:
        raise InvalidInput([("end_user_id", "Dify passed no end user with this call; set end_user_id in the node")])
    return user


_FIELDS = ("topic", "kind", "scene", "observation", "action", "confidence", "expire_at")
_SCOPES = {"user": Scope.USER, "project": Scope.PROJECT}


def _builder_scope(parameters: Parameters) -> Scope | None:
    """The builder's `scope` setting (form: form, never a model's): it applies to both input forms."""
    value = parameters.text("scope")
    if value is None:
        return None
    if value not in _SCOPES:
        raise InvalidInput([("scope", f"must be user or project, not {value!r}")])
    return _SCOPES[value]


def save_insight(store: InsightStore, parameters: Parameters, context: Context) -> ToolResult:
    """What is written comes from the parameters or insight_json; who it is for, its scope, session and source come
    only from Dify's runtime and the builder's settings (commands.Provenance)."""
    user = acting_user(parameters, context)
    scope = _builder_scope(parameters)
    cascade = cascade_for(store, parameters, context.llm)
    raw_json = parameters.text("insight_json")
    ignored: list[str] = []
    if raw_json is not None:
        given = [name for name in (*_FIELDS, "evidence", "tags") if parameters.text(name) is not None]
        if given:
            raise InvalidInput(
                [("insight_json", f"give either insight_json or the fields, not both ({', '.join(given)})")]
            )
        parsed = insight_from_llm_json(raw_json, "insight_json")
        if parsed.content is None:  # "{}": the reflection found nothing to learn
            return ToolResult(
                text="Nothing learned: the insight JSON was empty, so nothing was saved.",
                json={"id": None, "status": "nothing_learned", "supersedes": []},
            )
        content, ignored, source = parsed.content, parsed.ignored, "dify:insight_json"
    else:
        data: dict[str, Any] = {name: value for name in _FIELDS if (value := parameters.text(name)) is not None}
        data["evidence"] = {"quote": parameters.text("evidence") or ""}
        data["tags"] = parameters.text_list("tags")
        content, source = InsightContent.parse(data), "dify:save_insight"
    provenance = Provenance(source, user, context.conversation_id, scope=scope)
    placements = write(store, WriteCommand(content, provenance), cascade=cascade)
    return _with_ignored(_saved(content, placements), ignored + parameters.ignored())


def _saved(content: InsightContent, placements: list[Placed]) -> ToolResult:
    """The first placement is the answer (the user's, or the only one); the others are listed under `also`."""
    first = placements[0].result
    body: dict[str, Any] = {
        "id": str(first.id),
        "status": first.status,
        "supersedes": [str(i) for i in first.supersedes],
    }
    if first.changed:
        body["changed"] = first.changed
    notes = []
    if first.supersedes:
        notes.append(f"replacing {len(first.supersedes)} older insight(s)")
    if first.changed:
        notes.append(f"changed {', '.join(first.changed)}")
    others = placements[1:]
    if others:
        body["also"] = [{"id": str(p.result.id), "status": p.result.status, "scope": p.scope.value} for p in others]
        notes += [f"also {p.scope.value}-wide: {p.result.status}" for p in others]
    reasons = [p.review_reason for p in placements if p.review_reason]
    if reasons:
        body["review_reason"] = reasons[0]
        notes.append(f"held for review until a reviewer approves it ({reasons[0]})")
    redacted = sorted({kind for p in placements for kind in p.redacted})
    if redacted:
        body["redacted"] = redacted
        notes.append(f"removed before storing: {', '.join(redacted)}")
    topic = placements[0].topic or content.topic  # as stored: redacted
    return ToolResult(text=f"Insight {first.status}: {topic} ({first.id}){_clauses(notes)}.", json=body)


def _insight_summary(insight: Insight, channel: str, score: float | None = None) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "id": str(insight.id),
        "channel": channel,
        "topic": insight.topic,
        "kind": insight.kind.value,
        "scene": insight.scene,
        "action": insight.action,
        "confidence": insight.confidence,
        "updated_at": insight.asserted_at.isoformat(),
    }
    if score is not None:
        summary["score"] = round(score, 4)
    return summary


def _language(parameters: Parameters, settings: Settings) -> Language:
    """The node's `language`, else the provider's default."""
    languages: dict[str, Language] = {"zh": "zh", "en": "en"}
    language = languages.get(parameters.text("language") or settings.language)
    if language is None:
        raise InvalidInput([("language", "must be zh or en")])
    return language


def search_insight(store: InsightStore, parameters: Parameters, context: Context) -> ToolResult:
    settings = store.settings
    language = _language(parameters, settings)
    turns = recent_turns(parameters.text("query") or "")
    scene = parameters.text("scene") or "general"
    user = acting_user(parameters, context)
    with_examples = parameters.boolean("examples")  # the builder's switch (form: form)
    reranker = reranker_for(parameters, context.rerank)
    recall = store.retrieval.recall(
        turns,
        scene=scene,
        user_id=user,
        session_id=context.conversation_id,
        top_k=parameters.whole_number("top_k", 1, MAX_TOP_K),
        score_threshold=parameters.number("score_threshold", 0.0, 1.0),
        reranker=reranker,
    )
    examples = store.examples.matching(turns, user_id=user, scene=scene) if with_examples else []
    rules = render_rules(recall.insights, settings, language, examples)
    insights = [_insight_summary(i, "standing") for i in recall.standing] + [
        _insight_summary(hit.insight, "situational", hit.score) for hit in recall.situational
    ]
    injected = [item["id"] for item in insights]
    body: dict[str, Any] = {"insights": insights, "count": len(insights), "rules": rules, "injected_ids": injected}
    if with_examples:
        body["examples"] = [
            {
                "id": str(e.id),
                "scope": e.scope,
                "scene": e.scene,
                "context": e.context,
                "said": e.said,
                "corrected": e.corrected,
                "learned_at": e.learned_at.isoformat(),
            }
            for e in examples
        ]
    if recall.rerank is not None:  # only with a rerank_model: who decided the situational rules, and why
        body["rerank"] = dataclasses.asdict(recall.rerank)
    result = ToolResult(text=rules, json=body, variables={"rules": rules, "injected_ids": ",".join(injected)})
    return _with_ignored(result, parameters.ignored(), in_text=False)  # the text is the rules block alone


def record_turn(store: InsightStore, parameters: Parameters, context: Context) -> ToolResult:
    cascade = cascade_for(store, parameters, context.llm)
    feedback = parameters.text("feedback")
    injected = []
    for value in parameters.text_list("injected_insight_ids"):
        try:
            injected.append(uuid.UUID(value))
        except ValueError:
            raise InvalidInput([("injected_insight_ids", f"{value!r} is not an insight id")]) from None
    draft = TurnDraft.parse(
        {
            "session_id": parameters.text("session_id") or context.conversation_id or "",
            "user_id": acting_user(parameters, context),
            "message_id": context.message_id,
            "scene": parameters.text("scene") or "general",
            "user_message": parameters.text("user_message") or "",
            "assistant_message": parameters.text("assistant_message") or "",
            "signals": {
                "feedback": None if feedback in (None, "none") else feedback,
                "tool_error": parameters.boolean("tool_error"),
                "stopped_generation": parameters.boolean("stopped_generation"),
                "correction": parameters.boolean("correction"),
            },
            "injected_insight_ids": injected,
            "sources": parameters.text_list("sources"),
            "tool_calls": parameters.text_list("tool_calls"),
            "answer_confidence": parameters.number("answer_confidence", 0.0, 1.0),
        }
    )
    detector = learned_detector(store.embedder, store.settings)
    recorded = record(store, draft, store.settings, detector=detector, cascade=cascade)
    turn, correction = recorded.turn, recorded.turn.signals.detected
    flagged_by_the_flow = draft.signals.model_dump(include={"tool_error", "stopped_generation", "correction"})
    signals = [name for name, on in flagged_by_the_flow.items() if on]
    if draft.signals.feedback:
        signals.insert(0, draft.signals.feedback)
    body: dict[str, Any] = {
        "id": str(turn.id),
        "session_id": turn.session_id,
        "turn_index": turn.turn_index,
        "signals": signals,
        "correction": correction.model_dump(mode="json"),
        "learned": [
            {"id": str(p.result.id), "status": p.result.status, "scope": p.scope.value}
            | ({"review_reason": p.review_reason} if p.review_reason else {})
            for p in recorded.learned
        ],
        "corrected_turn": str(recorded.corrected_turn.id) if recorded.corrected_turn else None,
        "detector": _detector_report(recorded),
        "blame": [judged.as_json() for judged in recorded.judged],
    }
    flagged = f" with signals {', '.join(signals)}" if signals else ""
    text = f"Recorded turn {turn.turn_index} of session {turn.session_id}{flagged}."
    if recorded.unseen_injected:
        body["ignored_injected_ids"] = [str(i) for i in recorded.unseen_injected]
        text += (
            f" {len(recorded.unseen_injected)} injected insight id(s) were not recorded: no such insight reaches this"
            " user (pass search_insight's injected_ids, with the same end_user_id)."
        )
    if recorded.repeated:
        text = f"Turn {turn.turn_index} of session {turn.session_id} was recorded already (same Dify message)."
    elif correction.type != "none":
        text += f" The user's message is a {correction.type} correction (confidence {correction.confidence:.2f})"
        text += f"; learned {len(recorded.learned)} insight(s)." if recorded.learned else "."
    suspects = [str(judged.insight_id) for judged in recorded.judged if judged.suspected]
    if suspects:
        text += f" Blamed past the threshold, now suspect and no longer injected: {', '.join(suspects)}."
    variables = {"correction_type": correction.type, "correction_confidence": correction.confidence}
    return _with_ignored(ToolResult(text=text, json=body, variables=variables), parameters.ignored())


def _detector_report(recorded: Recorded) -> dict[str, Any]:
    """The learned detector's class probabilities and whether its decision was unsure; with a `model`, whether the
    workspace model was asked about it and what it said: `model_verdict` (a type) decided the correction, otherwise
    (`model_outcome` malformed, failed, or budget: not asked) the detector's own decision stands."""
    opinion = recorded.asked
    return {
        "probabilities": dict(recorded.correction.probabilities),
        "unsure": recorded.correction.unsure,
        "asked": opinion is not None and opinion.asked,
        "model_verdict": opinion.verdict.value if opinion is not None and opinion.verdict is not None else None,
        "model_outcome": opinion.outcome if opinion is not None else None,
        "model_detail": opinion.detail if opinion is not None else None,
    }


def forget_user(store: InsightStore, parameters: Parameters, context: Context) -> ToolResult:
    """Deletes the acting user's data; another user's only when the builder switched allow_other_users on."""
    user = acting_user(parameters, context)
    target = parameters.text("target_user_id") or user
    problems = []
    if not parameters.boolean("confirm"):
        problems.append(("confirm", "must be true: deleting a user's insights and turns cannot be undone"))
    if target != user and not parameters.boolean("allow_other_users"):
        problems.append(
            (
                "target_user_id",
                f"names another user than the one this call acts for ({user}); deleting another user's data needs "
                "the builder setting allow_other_users",
            )
        )
    if problems:
        raise InvalidInput(problems)
    result = store.forget_user(target)
    body = {
        "user_id": target,
        "insights_deleted": result.insights_deleted,
        "insights_scrubbed": result.insights_scrubbed,
        "turns_deleted": result.turns_deleted,
    }
    text = (
        f"Deleted {result.insights_deleted} insights and {result.turns_deleted} turns of user {target}, and removed "
        f"their words from {result.insights_scrubbed} project-wide insights."
    )
    return _with_ignored(ToolResult(text=text, json=body), parameters.ignored())


def reflect_session(store: InsightStore, parameters: Parameters, context: Context) -> ToolResult:
    """Reflect on one of the acting user's sessions with the model the builder picked, and save what it teaches.

    Whose session: the builder's `session_id` (form) or Dify's conversation, never a model-filled value; a session
    with turns of anyone but the acting user is refused before any model call. A failed reflection (the model
    unreachable, its answer malformed twice) is an error result carrying the report.
    """
    user = acting_user(parameters, context)
    selection = ModelSelection.parse(parameters.mapping("model"))
    language = _language(parameters, store.settings)
    session_id = parameters.text("session_id") or context.conversation_id
    if not session_id:
        raise InvalidInput(
            [("session_id", "Dify passed no conversation with this call (a workflow has none); set session_id")]
        )
    if context.llm is None:
        raise HindsightError("this call came without access to Dify's models (backwards invocation); nothing was read")
    turns = store.turns.session(session_id)
    if not turns:
        raise NotFound(f"no turns are recorded for session {session_id}: record_turn stores them; nothing was read")
    if any(turn.user_id != user for turn in turns):
        raise InvalidInput(
            [
                (
                    "session_id",
                    f"session {session_id} holds turns of another user than the one this call acts for ({user}); "
                    "reflect_session reads only the acting user's sessions",
                )
            ]
        )
    engine = ReflectionEngine(store, DifyModelReflector(context.llm, selection), language=language)
    report = engine.reflect_session(session_id, user_id=user)  # the engine checks the owner again as it reads
    return _with_ignored(_reflection_result(report, selection), parameters.ignored())


def _reflection_result(report: ReflectionReport, selection: ModelSelection) -> ToolResult:
    saved = [i for status in _LEARNED for i in report.ids_for(status)]
    # What a workflow branches on; the same values are in the JSON (its `outcome` says more than the report's ok).
    variables: dict[str, Any] = {
        "learned": len(saved),
        "outcome": "failed" if report.outcome == "failed" else "learned" if saved else "nothing_learned",
        "insight_ids": ",".join(str(i) for i in saved),
    }
    body = report.model_dump(mode="json", exclude=_NOT_IN_DIFY) | variables | {"provider": selection.provider}
    dropped = ", ".join(sorted({d.reason for d in report.dropped}))
    if report.outcome == "failed":
        # Saving stops at the first write that fails, and the reason then says what was saved before it.
        kept = "" if saved else " Nothing was saved."
        error = {
            "type": "reflection_failed",
            "message": f"reflection on session {report.session_id} failed: {report.reason}.{kept}",
        }
        return ToolResult(
            text=f"Error (reflection_failed): {error['message']}",
            json={"error": error, "report": body},
            variables=variables,
        )
    counts = [f"{name} {count}" for name, count in report.counts.items() if count and name != "dropped"]
    summary = f"learned {len(saved)} insight(s)" if saved else "nothing new learned" if counts else "nothing learned"
    if counts:
        summary += f" ({', '.join(counts)})"
    text = f"Reflected on session {report.session_id} with {selection.model}: {summary}"
    if report.dropped:
        text += f"; dropped {len(report.dropped)} ({dropped})"
    return ToolResult(text=f"{text}.", json=body, variables=variables)


def _clauses(notes: list[str]) -> str:
    return f", {'; '.join(notes)}" if notes else ""


def _with_ignored(result: ToolResult, ignored: list[str], *, in_text: bool = True) -> ToolResult:
    """Say which given parameters or fields were not used, rather than drop them silently."""
    if ignored:
        result.json["ignored"] = ignored
        if in_text:
            result.text += f" Ignored (not this tool's to decide, or not a parameter): {', '.join(ignored)}."
    return result


Operation = Callable[[InsightStore, Parameters, Context], ToolResult]
OPERATIONS: dict[str, Operation] = {
    "save_insight": save_insight,
    "search_insight": search_insight,
    "record_turn": record_turn,
    "forget_user": forget_user,
    "reflect_session": reflect_session,
}
# Variables a workflow wires: emitted, empty, when the call fails, so that a reference never renders as text.
ERROR_VARIABLES: dict[str, dict[str, Any]] = {
    "search_insight": {"rules": "", "injected_ids": ""},
    "record_turn": {"correction_type": "none", "correction_confidence": 0.0},
    "reflect_session": {"learned": 0, "outcome": "failed", "insight_ids": ""},
}
# Save statuses that count as learned; `unchanged` means the model found what was already known.
_LEARNED: tuple[SaveStatus, ...] = ("created", "merged", "superseded", "updated", "pending_review")
# Report fields that mean nothing for Dify's invocation: no prompt-cache counts, never a batch.
_NOT_IN_DIFY = {"cached_tokens", "cache_write_tokens", "cached_share", "via_batch"}
