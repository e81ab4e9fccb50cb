"""The insight and the turn, with every rule of docs/architecture.md ("The insight") as validation.

Length caps (characters): topic 120, scene 60, observation 2,000, action 500, evidence quote 1,000,
tag 40 (at most 10 tags), user id / session id / source 128, turn messages 20,000 each.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hindsight_insights.errors import InvalidInput

GENERAL_SCENE = "general"
# Words a Chinese or English builder uses for "applies everywhere"; all stored as GENERAL_SCENE.
_GENERAL_SCENE_ALIASES = frozenset({"general", "通用", "全部", "all", "*", "default"})

MAX_TAGS = 10


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
    USER = "user"
    PROJECT = "project"


def normalize_scene(scene: str) -> str:
    scene = " ".join(scene.split())
    return GENERAL_SCENE if scene.casefold() in _GENERAL_SCENE_ALIASES else scene


NonEmpty = Annotated[str, Field(min_length=1)]
Identifier = Annotated[str, Field(min_length=1, max_length=128)]


class StrictModel(BaseModel):
    """Unknown fields rejected, strings trimmed, immutable; `parse` raises InvalidInput naming each field and rule."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)

    @classmethod
    def parse(cls, data: Any) -> Self:
        """Validate, raising InvalidInput (field: rule) instead of pydantic's error."""
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise InvalidInput.from_validation_error(error) from None


class Evidence(StrictModel):
    """A verbatim quote of the conversation, checkable against the stored transcript."""

    quote: Annotated[str, Field(min_length=1, max_length=1000)]
    session_id: Identifier | None = None
    turn: Annotated[int, Field(ge=0)] | None = None


class InsightDraft(StrictModel):
    """An insight as submitted for saving. The store adds id, status history and timestamps."""

    topic: Annotated[str, Field(min_length=1, max_length=120)]
    kind: InsightKind
    scene: Annotated[str, Field(min_length=1, max_length=60)] = GENERAL_SCENE
    observation: Annotated[str, Field(max_length=2000)] = ""
    action: Annotated[str, Field(min_length=1, max_length=500)]
    evidence: Evidence
    tags: Annotated[list[Annotated[str, Field(min_length=1, max_length=40)]], Field(max_length=MAX_TAGS)] = []
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 0.7
    expire_at: AwareDatetime | None = None
    user_id: Identifier | None = None
    scope: Scope | None = None
    source: Annotated[str, Field(min_length=1, max_length=128)] = "manual"
    status: Literal[InsightStatus.ACTIVE, InsightStatus.PENDING_REVIEW] = InsightStatus.ACTIVE

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
    def _not_past(cls, value: datetime | None) -> datetime | None:
        if value is not None and value <= datetime.now(UTC):
            raise ValueError("must be in the future (or null for no expiry)")
        return value

    @model_validator(mode="after")
    def _scope(self) -> Self:
        # Preferences belong to a person; facts, processes and lessons to the project.
        scope = self.scope or (Scope.USER if self.kind is InsightKind.PREFERENCE and self.user_id else Scope.PROJECT)
        if scope is Scope.USER and not self.user_id:
            raise ValueError("user_id is required when scope is 'user'")
        object.__setattr__(self, "scope", scope)
        return self

    @property
    def resolved_scope(self) -> Scope:
        assert self.scope is not None  # set by the validator
        return self.scope

    @classmethod
    def from_llm_json(
        cls, text: str, *, defaults: Mapping[str, Any] | None = None, field: str = "insight_json"
    ) -> InsightDraft | None:
        """The insight object an LLM emits, with or without a ```json fence; None for {} (nothing was learned).

        `defaults` fill fields the object leaves out. Errors name `field` (the parameter the text came in).
        """
        data = json_object(text, field)
        if not data:
            return None
        for key, value in (defaults or {}).items():
            data.setdefault(key, value)
        return cls.parse(data)


def json_object(text: str, field: str) -> dict[str, Any]:
    """One JSON object from LLM output, with or without a ```json fence."""
    stripped = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        loaded = json.loads(stripped)
    except json.JSONDecodeError as error:
        raise InvalidInput([(field, f"is not valid JSON ({error.msg} at line {error.lineno})")]) from None
    if not isinstance(loaded, dict):
        raise InvalidInput([(field, 'must be one JSON object, e.g. {"topic": ..., "action": ...}')])
    return loaded


class Insight(BaseModel):
    """A stored insight. Not frozen to the draft's save-time rules: a stored one may have expired."""

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
    support_count: int = 1
    supersedes: list[uuid.UUID] = []
    created_at: datetime
    updated_at: datetime


class ScoredInsight(BaseModel):
    """A search hit and the parts of its score (see store.rank_score)."""

    model_config = ConfigDict(frozen=True)

    insight: Insight
    score: float
    relevance: float
    similarity: float
    keyword: float


class TurnSignals(StrictModel):
    feedback: Literal["like", "dislike"] | None = None
    tool_error: bool = False
    stopped_generation: bool = False
    correction: bool = False

    @property
    def any(self) -> bool:
        return self.feedback == "dislike" or self.tool_error or self.stopped_generation or self.correction


class TurnDraft(StrictModel):
    """A conversation turn as logged by record_turn."""

    session_id: Identifier
    user_id: Identifier
    scene: Annotated[str, Field(min_length=1, max_length=60)] = GENERAL_SCENE
    user_message: Annotated[str, Field(max_length=20000)] = ""
    assistant_message: Annotated[str, Field(max_length=20000)] = ""
    signals: TurnSignals = TurnSignals()
    injected_insight_ids: Annotated[list[uuid.UUID], Field(max_length=50)] = []

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
    model_config = ConfigDict(extra="forbid")

    id: uuid.UUID
    session_id: str
    user_id: str
    scene: str
    turn_index: int
    user_message: str = ""
    assistant_message: str = ""
    signals: TurnSignals = TurnSignals()
    injected_insight_ids: list[uuid.UUID] = []
    created_at: datetime


class Recall(BaseModel):
    """What to inject: standing rules (no similarity needed) and situational hits, kept apart."""

    model_config = ConfigDict(frozen=True)

    standing: list[Insight]
    situational: list[ScoredInsight]

    @property
    def insights(self) -> list[Insight]:
        return [*self.standing, *(hit.insight for hit in self.situational)]


SaveStatus = Literal["created", "merged", "superseded", "unchanged"]


class SaveResult(BaseModel):
    """`unchanged`: an exact duplicate of a stored insight; nothing was written (saves are idempotent)."""

    model_config = ConfigDict(frozen=True)

    id: uuid.UUID
    status: SaveStatus
    insight_status: InsightStatus
    supersedes: list[uuid.UUID] = []


class ForgetResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    insights_deleted: int
    turns_deleted: int
