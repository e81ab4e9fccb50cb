"""What the Dify tools do, without Dify: parameters in, a ToolResult out.

The plugin's tools are a few lines each over `invoke`. This module never imports `dify_plugin` (it monkey-patches
gevent on import); it only calls the tool object's `create_*_message` methods. Every expected failure becomes a
text + JSON error the user can act on. Nothing raises a traceback into a chat.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import weaviate
from pydantic import Field, SecretStr, ValidationError, field_validator

from hindsight_insights.config import Language, Settings
from hindsight_insights.embedder import load_embedder
from hindsight_insights.errors import HindsightError, InvalidInput, NotFound, WeaviateUnavailable
from hindsight_insights.models import Insight, InsightDraft, InsightStatus, Recall, StrictModel, TurnDraft
from hindsight_insights.rules import render_rules
from hindsight_insights.store import InsightStore, weaviate_errors
from hindsight_insights.weaviate_server import connect_url

log = logging.getLogger(__name__)

MINIMUM_WEAVIATE = (1, 27)


# ---- credentials -------------------------------------------------------------------------------------------------


def _blank_to_none(value: Any) -> Any:
    return None if value is None or (isinstance(value, str) and not value.strip()) else value


class ProviderCredentials(StrictModel):
    """The plugin's provider credentials as Dify sends them (strings; blank means unset)."""

    weaviate_url: str = Field(min_length=1)
    weaviate_api_key: SecretStr | None = None
    weaviate_grpc_host: str | None = None
    weaviate_grpc_port: int = Field(50051, ge=1, le=65535)
    project: str = Field("default", min_length=1, max_length=100)
    embedder: Literal["use-m3", "openai"] = "use-m3"
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_model: str | None = None
    language: Language = "zh"
    top_k: int = Field(5, ge=1, le=20)
    score_threshold: float = Field(0.17, ge=0.0, le=1.0)

    @field_validator("*", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        return _blank_to_none(value)

    @classmethod
    def parse_credentials(cls, credentials: Mapping[str, Any]) -> ProviderCredentials:
        # Dify keeps the key of a field that was left empty; dropping blanks lets the defaults apply.
        return cls.parse({key: value for key, value in credentials.items() if _blank_to_none(value) is not None})

    def settings(self, base: Settings) -> Settings:
        update: dict[str, Any] = {
            "weaviate_url": self.weaviate_url.strip().rstrip("/"),
            "weaviate_api_key": self.weaviate_api_key,
            "weaviate_grpc_host": self.weaviate_grpc_host,
            "weaviate_grpc_port": self.weaviate_grpc_port,
            "project": self.project,
            "embedder": self.embedder,
            "language": self.language,
            "top_k": self.top_k,
            "score_threshold": self.score_threshold,
        }
        if self.embedder == "openai":
            update |= {"openai_base_url": self.embedding_base_url, "openai_api_key": self.embedding_api_key}
            if self.embedding_model:
                update["openai_model"] = self.embedding_model
        return base.model_copy(update=update)


def require_server_version(version: str) -> None:
    parts = re.findall(r"\d+", version)[:2]
    found = tuple(int(part) for part in parts) if len(parts) == 2 else (0, 0)
    if found < MINIMUM_WEAVIATE:
        raise WeaviateUnavailable(
            f"Weaviate {version} is too old: Hindsight Insights needs 1.27 or newer. Upgrade the weaviate service "
            "(Dify's docker-compose ships 1.27 or newer since Dify 1.0) or point the URL at a newer server."
        )


# ---- one connection per configuration, reused across invocations -------------------------------------------------


class StoreCache:
    """Open stores keyed by their settings. Connecting costs far more than a search, so connections are reused."""

    def __init__(self, base: Settings | None = None) -> None:
        self._base = base
        self._stores: dict[str, tuple[weaviate.WeaviateClient, InsightStore]] = {}
        self._lock = threading.Lock()

    def base_settings(self) -> Settings:
        if self._base is None:
            self._base = Settings()
        return self._base

    def settings_for(self, credentials: Mapping[str, Any]) -> Settings:
        return ProviderCredentials.parse_credentials(credentials).settings(self.base_settings())

    def store_for(self, credentials: Mapping[str, Any]) -> tuple[Settings, InsightStore]:
        settings = self.settings_for(credentials)
        key = _cache_key(settings)
        with self._lock:
            cached = self._stores.get(key)
            if cached is not None and cached[0].is_connected():
                return settings, cached[1]
            client = connect_url(settings, settings.weaviate_url or "")
            try:
                with weaviate_errors("checking the server version"):
                    require_server_version(str(client.get_meta().get("version", "")))
                store = InsightStore.open(client, settings, load_embedder(settings))
            except BaseException:
                client.close()
                raise
            self._stores[key] = (client, store)
            return settings, store

    def validate(self, credentials: Mapping[str, Any]) -> str:
        """Connect, check the version, ensure the collections. Returns a one-line summary."""
        settings, store = self.store_for(credentials)
        insights, turns = store.count()
        return f"Connected to {settings.weaviate_url}, project {settings.project!r}: {insights} insights, {turns} turns"


def _cache_key(settings: Settings) -> str:
    """Settings with secrets included (model_dump masks SecretStr), hashed so they are not kept in clear."""
    secrets = [s.get_secret_value() if s else "" for s in (settings.weaviate_api_key, settings.openai_api_key)]
    material = json.dumps([settings.model_dump_json(), secrets])
    return hashlib.sha256(material.encode()).hexdigest()


# ---- results -----------------------------------------------------------------------------------------------------


@dataclass
class ToolResult:
    text: str
    json: dict[str, Any]
    variables: dict[str, Any] = field(default_factory=dict)


def error_result(error: Exception) -> ToolResult:
    kinds = {InvalidInput: "invalid_input", NotFound: "not_found", WeaviateUnavailable: "weaviate_unavailable"}
    kind = next((name for cls, name in kinds.items() if isinstance(error, cls)), "error")
    problems = [{"field": f, "rule": r} for f, r in error.problems] if isinstance(error, InvalidInput) else []
    body: dict[str, Any] = {"type": kind, "message": str(error)}
    if problems:
        body["problems"] = problems
    return ToolResult(text=f"Error ({kind}): {error}", json={"error": body})


# ---- parameter parsing: Dify sends blanks, strings for numbers, and lists as text --------------------------------


def _text(params: Mapping[str, Any], name: str) -> str | None:
    value = _blank_to_none(params.get(name))
    return None if value is None else str(value).strip()


def _list(params: Mapping[str, Any], name: str) -> list[str]:
    """A list parameter: a JSON array, or text separated by commas, 、 or new lines."""
    value = _blank_to_none(params.get(name))
    if value is None:
        return []
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    text = str(value).strip()
    if text.startswith("["):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError:
            raise InvalidInput([(name, "looks like a JSON array but is not valid JSON")]) from None
        if not isinstance(loaded, list):
            raise InvalidInput([(name, "must be a JSON array or comma-separated text")])
        return [str(item).strip() for item in loaded if str(item).strip()]
    return [part.strip() for part in re.split(r"[,，、\n]", text) if part.strip()]


def _bool(params: Mapping[str, Any], name: str) -> bool:
    value = _blank_to_none(params.get(name))
    if value is None or isinstance(value, bool):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "是"):
        return True
    if text in ("false", "0", "no", "否"):
        return False
    raise InvalidInput([(name, f"must be true or false, not {value!r}")])


def _insight_json(text: str) -> dict[str, Any]:
    """The object a reflection LLM node emits, with or without a ```json fence."""
    stripped = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        loaded = json.loads(stripped)
    except json.JSONDecodeError as error:
        raise InvalidInput([("insight_json", f"is not valid JSON ({error.msg} at line {error.lineno})")]) from None
    if not isinstance(loaded, dict):
        raise InvalidInput([("insight_json", 'must be one JSON object, e.g. {"topic": ..., "action": ...}')])
    return loaded


_FIELDS = ("topic", "kind", "scene", "observation", "action", "confidence", "expire_at", "scope")


# ---- the operations ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """Who is calling, from the Dify runtime."""

    user_id: str | None
    conversation_id: str | None


def save_insight(store: InsightStore, settings: Settings, params: Mapping[str, Any], context: Context) -> ToolResult:
    raw_json = _text(params, "insight_json")
    user_id = _text(params, "user_id") or context.user_id
    if raw_json is not None:
        given = [name for name in (*_FIELDS, "evidence", "tags") if _text(params, name) is not None]
        if given:
            raise InvalidInput(
                [("insight_json", f"give either insight_json or the fields, not both ({', '.join(given)})")]
            )
        data = _insight_json(raw_json)
        if not data:  # "{}": the reflection found nothing to learn
            return ToolResult(
                text="Nothing learned: the insight JSON was empty, so nothing was saved.",
                json={"id": None, "status": "nothing_learned", "supersedes": []},
            )
        data.setdefault("user_id", user_id)
        data.setdefault("source", "dify:insight_json")
    else:
        data = {name: value for name in _FIELDS if (value := _text(params, name)) is not None}
        quote = _text(params, "evidence")
        data["evidence"] = {
            "quote": quote or "",
            "session_id": _text(params, "evidence_session_id") or context.conversation_id,
        }
        data["tags"] = _list(params, "tags")
        data["user_id"] = user_id
        data["source"] = "dify:save_insight"
    draft = InsightDraft.parse(data)
    result = store.save(draft)
    status = "pending_review" if result.insight_status is InsightStatus.PENDING_REVIEW else result.status
    body = {"id": str(result.id), "status": status, "supersedes": [str(i) for i in result.supersedes]}
    replaced = f", replacing {len(result.supersedes)} older insight(s)" if result.supersedes else ""
    return ToolResult(text=f"Insight {status}: {draft.topic} ({result.id}){replaced}.", json=body)


def _split_turns(query: str) -> list[str]:
    """The recent turns: a JSON array of strings, or text with one turn per line."""
    if query.startswith("["):
        try:
            loaded = json.loads(query)
        except json.JSONDecodeError:
            loaded = None
        if isinstance(loaded, list) and all(isinstance(item, str) for item in loaded):
            return loaded
    return [line for line in query.splitlines() if line.strip()]


def _number(params: Mapping[str, Any], name: str, kind: Callable[[str], float | int]) -> Any:
    value = _text(params, name)
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        raise InvalidInput([(name, f"must be a number, not {value!r}")]) from None


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


def search_insight(store: InsightStore, settings: Settings, params: Mapping[str, Any], context: Context) -> ToolResult:
    query = _text(params, "query") or ""
    languages: dict[str, Language] = {"zh": "zh", "en": "en"}
    language = languages.get(_text(params, "language") or settings.language)
    if language is None:
        raise InvalidInput([("language", "must be zh or en")])
    top_k = _number(params, "top_k", lambda v: int(float(v)))
    recall: Recall = store.recall(
        _split_turns(query),
        scene=_text(params, "scene") or "general",
        user_id=_text(params, "user_id") or context.user_id,
        top_k=top_k,
        score_threshold=_number(params, "score_threshold", float),
    )
    rules = render_rules(
        recall.insights,
        language=language,
        must_confidence=settings.must_confidence,
        prompts_dir=settings.prompts_dir,
    )
    insights = [_insight_summary(i, "standing") for i in recall.standing] + [
        _insight_summary(hit.insight, "situational", hit.score) for hit in recall.situational
    ]
    injected = [item["id"] for item in insights]
    body = {"insights": insights, "count": len(insights), "rules": rules, "injected_ids": injected}
    return ToolResult(
        text=rules,
        json=body,
        variables={"rules": rules, "injected_ids": ",".join(injected)},
    )


def record_turn(store: InsightStore, settings: Settings, params: Mapping[str, Any], context: Context) -> ToolResult:
    feedback = _text(params, "feedback")
    injected = []
    for value in _list(params, "injected_insight_ids"):
        try:
            injected.append(uuid.UUID(value))
        except ValueError:
            raise InvalidInput([("injected_insight_ids", f"{value!r} is not an insight id")]) from None
    draft = TurnDraft.parse(
        {
            "session_id": _text(params, "session_id") or context.conversation_id or "",
            "user_id": _text(params, "user_id") or context.user_id or "",
            "scene": _text(params, "scene") or "general",
            "user_message": _text(params, "user_message") or "",
            "assistant_message": _text(params, "assistant_message") or "",
            "signals": {
                "feedback": None if feedback in (None, "none") else feedback,
                "tool_error": _bool(params, "tool_error"),
                "stopped_generation": _bool(params, "stopped_generation"),
                "correction": _bool(params, "correction"),
            },
            "injected_insight_ids": injected,
        }
    )
    turn = store.append_turn(draft)
    signals = [name for name, on in draft.signals.model_dump().items() if on and name != "feedback"]
    if draft.signals.feedback:
        signals.insert(0, draft.signals.feedback)
    body = {"id": str(turn.id), "session_id": turn.session_id, "turn_index": turn.turn_index, "signals": signals}
    flagged = f" with signals {', '.join(signals)}" if signals else ""
    return ToolResult(text=f"Recorded turn {turn.turn_index} of session {turn.session_id}{flagged}.", json=body)


def forget_user(store: InsightStore, settings: Settings, params: Mapping[str, Any], context: Context) -> ToolResult:
    user_id = _text(params, "user_id")
    problems = []
    if user_id is None:
        problems.append(("user_id", "is required: the id of the user whose data is deleted"))
    if not _bool(params, "confirm"):
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


Operation = Callable[[InsightStore, Settings, Mapping[str, Any], Context], ToolResult]
OPERATIONS: dict[str, Operation] = {
    "save_insight": save_insight,
    "search_insight": search_insight,
    "record_turn": record_turn,
    "forget_user": forget_user,
}


def run(
    stores: StoreCache, operation: str, credentials: Mapping[str, Any], params: Mapping[str, Any], context: Context
) -> ToolResult:
    """One tool call: every failure becomes an error result, never a traceback."""
    try:
        settings, store = stores.store_for(credentials)
        return OPERATIONS[operation](store, settings, params, context)
    except HindsightError as error:
        return error_result(error)
    except ValidationError as error:
        return error_result(InvalidInput.from_validation_error(error))
    except Exception as error:
        log.exception("%s failed", operation)
        return error_result(HindsightError(f"unexpected {type(error).__name__}: {error}. The plugin log has details."))


# One per plugin process: every tool call with the same credentials reuses one connection and one embedder.
STORES = StoreCache()

# A workflow wires these variables into later nodes (the rules into a system prompt), so a failed call emits them
# empty: the chat goes on without rules instead of the workflow failing on a missing variable.
ERROR_VARIABLES: dict[str, dict[str, str]] = {"search_insight": {"rules": "", "injected_ids": ""}}


def invoke(tool: Any, operation: str, params: Mapping[str, Any], stores: StoreCache = STORES) -> Iterator[Any]:
    """The body of a Dify tool's `_invoke`: run the operation and yield its messages."""
    context = Context(user_id=tool.runtime.user_id, conversation_id=getattr(tool.session, "conversation_id", None))
    result = run(stores, operation, tool.runtime.credentials, params, context)
    yield tool.create_text_message(result.text)
    yield tool.create_json_message(result.json)
    variables = ERROR_VARIABLES.get(operation, {}) if "error" in result.json else result.variables
    for name, value in variables.items():
        yield tool.create_variable_message(name, value)
