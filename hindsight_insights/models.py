"""The insight and the turn, with every rule of docs/architecture.md ("The insight") as validation.

Length caps (characters): topic 120, scene 60, observation 2,000, action 500, evidence quote 1,000,
tag 40 (at most 10 tags), user id / session id / source 128, turn messages 20,000 each.

Text fields take text. A number given for a text field is used as its digits (a model may send topic 404); an
object, a list or a boolean is refused rather than stored as its Python form. Control characters (NUL and the
like) are removed; in one-line fields (topic, scene, tags, ids) every run of whitespace, line breaks included,
becomes one space. Numbers must be finite: NaN and infinity are refused. `expire_at` is ISO-8601 with a time zone,
or a Unix timestamp in seconds (UTC).
"""

from __future__ import annotations

import unicodedata
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from hindsight_insights.errors import InvalidInput
from hindsight_insights.keys import GENERAL_SCENE, scene_key
from hindsight_insights.reranking import RerankReport

MAX_TAGS = 10
# The longest behaviour rule an insight holds (governance.lessons shortens a long wish to fit).
ACTION_CHARS = 500
# Weaviate keeps dates as int64 nanoseconds (to 2262); the store writes this for "never", so expiries stop before it.
NEVER = datetime(2200, 1, 1, tzinfo=UTC)


class InsightKind(StrEnum):
    PREFERENCE = "preference"
    FACT = "fact"
    PROCESS = "process"
    LESSON = "lesson"


class InsightStatus(StrEnum):
    ACTIVE = "active"
    PENDING_REVIEW = "pending_review"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"
    REJECTED = "rejected"
    SUSPECT = "suspect"


class Scope(StrEnum):
    """Who an insight is for: one user, only the session it was learned in (a weak or negative correction), or
    everyone in the project."""

    USER = "user"
    SESSION = "session"
    PROJECT = "project"


def slot_owner(scope: Scope, user_id: str | None, session_id: str | None) -> str | None:
    """Whose slot an insight is in: a user, a user's session, or the project (None)."""
    if scope is Scope.PROJECT:
        return None
    return f"{user_id}\x1fsession:{session_id}" if scope is Scope.SESSION else user_id


class Condition(StrEnum):
    """How widely a correction holds (named so as not to be confused with the user/project scope).

    universal: everywhere in its scene. context_specific: only in one context (a product line, a customer group),
    named by `condition_detail`. temporal: for a period, which `expire_at` ends. source_specific: according to one
    source (the website, a contract), named by `condition_detail`. A context- or source-specific correction lives in
    a slot of its own, so it never supersedes (silences) the topic's general rule.
    """

    UNIVERSAL = "universal"
    CONTEXT_SPECIFIC = "context_specific"
    TEMPORAL = "temporal"
    SOURCE_SPECIFIC = "source_specific"


def normalize_scene(scene: str) -> str:
    """The scene as displayed: whitespace collapsed, and every alias of the general scene as GENERAL_SCENE. Matching
    uses keys.scene_key, so case, width, punctuation and traditional characters never split a scene."""
    scene = " ".join(scene.split())
    return GENERAL_SCENE if scene_key(scene) == GENERAL_SCENE else scene


def _as_text(value: Any, *, one_line: bool) -> Any:
    if value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        kind = "a boolean" if isinstance(value, bool) else f"a JSON {'object' if isinstance(value, dict) else 'list'}"
        raise ValueError(f"must be text, not {kind if isinstance(value, bool | dict | list) else type(value).__name__}")
    kept = "".join(ch for ch in str(value) if ch in "\n\t" or unicodedata.category(ch) != "Cc")
    return " ".join(kept.split()) if one_line else kept


Line = BeforeValidator(lambda value: _as_text(value, one_line=True))
Paragraph = BeforeValidator(lambda value: _as_text(value, one_line=False))
Identifier = Annotated[str, Field(min_length=1, max_length=128), Line]


class StrictModel(BaseModel):
    """Unknown fields rejected, strings trimmed, immutable; `parse` raises InvalidInput naming each field and rule."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True, allow_inf_nan=False)

    @classmethod
    def parse(cls, data: Any, now: datetime | None = None) -> Self:
        """Validate, raising InvalidInput (field: rule) instead of pydantic's error. `now` is the clock that "in the
        future" is read against: the caller's, so a write learned at a given time is judged at that time."""
        try:
            return cls.model_validate(data, context={"now": now} if now is not None else None)
        except ValidationError as error:
            raise InvalidInput.from_validation_error(error) from None


class Quote(StrictModel):
    """The evidence as a model or a person writes it: the words and the turn they are in. Which conversation they
    come from is the writer's trusted context (commands.Provenance), never part of what a model writes."""

    quote: Annotated[str, Field(min_length=1, max_length=1000), Paragraph]
    turn: Annotated[int, Field(ge=0)] | None = None


class Evidence(Quote):
    """A verbatim quote of the conversation, checkable against the stored transcript."""

    session_id: Identifier | None = None


class InsightContent(StrictModel):
    """What a model or a person may write of an insight, and nothing else: whose it is, for whom (scope), from
    which session and source, and whether it waits for a reviewer are not fields here, so no written text can carry
    them (commands.WriteCommand adds them from the caller's trusted context)."""

    topic: Annotated[str, Field(min_length=1, max_length=120), Line]
    kind: InsightKind
    scene: Annotated[str, Field(min_length=1, max_length=60), Line] = GENERAL_SCENE
    observation: Annotated[str, Field(max_length=2000), Paragraph] = ""
    action: Annotated[str, Field(min_length=1, max_length=ACTION_CHARS), Paragraph]
    evidence: Quote
    tags: Annotated[list[Annotated[str, Field(min_length=1, max_length=40), Line]], Field(max_length=MAX_TAGS)] = []
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 0.7
    expire_at: AwareDatetime | None = None
    condition: Condition = Condition.UNIVERSAL
    condition_detail: Annotated[str, Field(min_length=1, max_length=120), Line] | None = None

    @field_validator("evidence", mode="before")
    @classmethod
    def _quote_alone(cls, value: Any) -> Any:
        # A reflection LLM often emits evidence as a bare string.
        return {"quote": value} if isinstance(value, str) else value

    @field_validator("scene")
    @classmethod
    def _scene(cls, value: str) -> str:
        return normalize_scene(value)

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(tag.strip() for tag in value))

    @field_validator("expire_at")
    @classmethod
    def _not_past(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        now = (info.context or {}).get("now") or datetime.now(UTC)
        if value is not None and value <= now:
            raise ValueError("must be in the future (or null for no expiry)")
        if value is not None and value >= NEVER:
            raise ValueError("must be before 2200-01-01 (or null for no expiry)")
        return value

    @model_validator(mode="after")
    def _condition(self) -> Self:
        needs_detail = self.condition in (Condition.CONTEXT_SPECIFIC, Condition.SOURCE_SPECIFIC)
        if needs_detail and not self.condition_detail:
            raise ValueError(f"condition_detail is required when condition is {self.condition.value!r}")
        if self.condition is Condition.UNIVERSAL and self.condition_detail:
            raise ValueError("condition_detail needs a condition other than 'universal'")
        return self


class InsightDraft(InsightContent):
    """An insight as the store saves it: content and its trusted placement. The store adds id, status history and
    timestamps.

    Only admission (admission.py) makes the drafts that are written, from a commands.WriteCommand; the
    scope is decided by scope.py, never here. A draft with a user must say its scope; one without a user
    can only be project-wide.
    """

    evidence: Evidence
    user_id: Identifier | None = None
    scope: Scope | None = None
    source: Identifier = "manual"
    status: Literal[InsightStatus.ACTIVE, InsightStatus.PENDING_REVIEW] = InsightStatus.ACTIVE
    review_reason: Annotated[str, Field(max_length=500), Line] | None = None

    @model_validator(mode="after")
    def _scope_consistent(self) -> Self:
        if self.scope is None and self.user_id:
            raise ValueError("scope is required with a user_id (scope.py decides it)")
        scope = self.scope or Scope.PROJECT  # without a user there is no one else it could be for
        if scope is not Scope.PROJECT and not self.user_id:
            raise ValueError(f"user_id is required when scope is {scope.value!r}")
        if scope is Scope.SESSION and not self.evidence.session_id:
            raise ValueError("evidence.session_id is required when scope is 'session'")
        object.__setattr__(self, "scope", scope)
        return self

    @property
    def resolved_scope(self) -> Scope:
        assert self.scope is not None  # set by the validator
        return self.scope

    @property
    def owner(self) -> str | None:
        """Whose slot it is in (slot_owner): the user, the user's session, or None for a project-wide one."""
        return slot_owner(self.resolved_scope, self.user_id, self.evidence.session_id)


class Insight(BaseModel):
    """A stored insight. Not bound by the draft's save-time rules: a stored one may have expired.

    History: the versions of one slot (same topic, scene and owner) are ordered by `asserted_at`, when their content
    was last said. `supersedes` and `superseded_by` link each to its neighbours; `resume_at` is when a superseded one
    becomes the rule again because every newer version has expired (None: never).
    """

    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID
    topic: str
    kind: InsightKind
    scene: str
    observation: str = ""
    action: str
    evidence: Evidence
    tags: list[str] = []
    confidence: float
    expire_at: datetime | None = None
    user_id: str | None = None
    scope: Scope
    status: InsightStatus
    source: str
    review_reason: str | None = None
    condition: Condition = Condition.UNIVERSAL
    condition_detail: str | None = None
    learned_from: str | None = None
    supporters: list[str] = []
    support_count: int = 1
    supersedes: list[uuid.UUID] = []
    superseded_by: uuid.UUID | None = None
    resume_at: datetime | None = None
    asserted_at: datetime
    created_at: datetime
    updated_at: datetime

    @property
    def owner(self) -> str | None:
        return slot_owner(self.scope, self.user_id, self.evidence.session_id)

    def in_force_at(self, now: datetime) -> bool:
        """The rule of its slot at `now`, as store/filters.in_force asks Weaviate: active, or superseded by versions
        that have all expired; and not expired itself. For checking objects read by id."""
        resumed = self.status is InsightStatus.SUPERSEDED and self.resume_at is not None and self.resume_at <= now
        live = self.status is InsightStatus.ACTIVE or resumed
        return live and (self.expire_at is None or self.expire_at > now)


class ScoredInsight(BaseModel):
    """A search hit and the parts of its score (see ranking.py)."""

    model_config = ConfigDict(frozen=True)

    insight: Insight
    score: float
    relevance: float
    similarity: float
    keyword: float


class DetectedCorrection(StrictModel):
    """What the correction detector found in a user message (detection/corrections.py), as stored on the turn."""

    type: Literal["factual", "preference", "process", "negative", "none"] = "none"
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    corrected: str | None = None
    original: str | None = None
    topic: str | None = None
    condition: Condition = Condition.UNIVERSAL
    condition_detail: str | None = None


class TurnSignals(StrictModel):
    """Learning signals of a turn: what the builder's flow reports, and what the detector found."""

    feedback: Literal["like", "dislike"] | None = None
    tool_error: bool = False
    stopped_generation: bool = False
    correction: bool = False
    detected: DetectedCorrection = DetectedCorrection()

    @property
    def any(self) -> bool:
        return (
            self.feedback == "dislike"
            or self.tool_error
            or self.stopped_generation
            or self.correction
            or self.detected.type != "none"
        )


class CorrectionRecord(StrictModel):
    """Behaviour memory: on an assistant answer that the user's next message corrected."""

    type: str
    original: str | None = None
    corrected: str | None = None
    condition: Condition = Condition.UNIVERSAL
    condition_detail: str | None = None
    by: str  # the user who corrected it
    at: datetime
    in_turn: uuid.UUID  # the turn whose user message holds the correction


class TurnDraft(StrictModel):
    """A conversation turn as logged by record_turn. `message_id` (Dify's) makes a retried record idempotent."""

    session_id: Identifier
    user_id: Identifier
    message_id: Identifier | None = None
    scene: Annotated[str, Field(min_length=1, max_length=60), Line] = GENERAL_SCENE
    user_message: Annotated[str, Field(max_length=20000), Paragraph] = ""
    assistant_message: Annotated[str, Field(max_length=20000), Paragraph] = ""
    signals: TurnSignals = TurnSignals()
    injected_insight_ids: Annotated[list[uuid.UUID], Field(max_length=50)] = []
    # Behaviour memory: what the answer rested on.
    sources: Annotated[list[Annotated[str, Field(min_length=1, max_length=500), Line]], Field(max_length=20)] = []
    tool_calls: Annotated[list[Annotated[str, Field(min_length=1, max_length=200), Line]], Field(max_length=20)] = []
    answer_confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = None

    @field_validator("scene")
    @classmethod
    def _scene(cls, value: str) -> str:
        return normalize_scene(value)

    @model_validator(mode="after")
    def _some_text(self) -> Self:
        if not self.user_message and not self.assistant_message:
            raise ValueError("user_message or assistant_message must be non-empty")
        return self


class Turn(BaseModel):
    """A stored turn. `turn_index` is its place in the session, counted when it is read."""

    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID
    session_id: str
    user_id: str
    message_id: str | None = None
    scene: str
    turn_index: int = 0
    sequence: int
    user_message: str = ""
    assistant_message: str = ""
    signals: TurnSignals = TurnSignals()
    injected_insight_ids: list[uuid.UUID] = []
    sources: list[str] = []
    tool_calls: list[str] = []
    answer_confidence: float | None = None
    error_status: Literal["ok", "corrected"] = "ok"
    correction: CorrectionRecord | None = None
    created_at: datetime


class Recall(BaseModel):
    """What to inject: standing rules (no similarity needed) and situational hits, kept apart."""

    model_config = ConfigDict(frozen=True)

    standing: list[Insight]
    situational: list[ScoredInsight]
    # With a rerank model: whether it decided the situational channel, or the built-in gate did (reranking.py).
    rerank: RerankReport | None = None

    @property
    def insights(self) -> list[Insight]:
        return [*self.standing, *(hit.insight for hit in self.situational)]


SaveStatus = Literal["created", "merged", "superseded", "updated", "unchanged", "pending_review"]


class SaveResult(BaseModel):
    """What a save did.

    created: a new slot. superseded: a new version that replaces `supersedes`. merged: the same instruction again,
    from a new source (its support grew). updated: the same insight with new values (`changed` names them).
    unchanged: nothing to write. pending_review: stored, but not used until a reviewer approves it.
    """

    model_config = ConfigDict(frozen=True)

    id: uuid.UUID
    status: SaveStatus
    insight_status: InsightStatus
    supersedes: list[uuid.UUID] = []
    changed: list[str] = []


class ForgetResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    insights_deleted: int
    insights_scrubbed: int = 0
    turns_deleted: int
