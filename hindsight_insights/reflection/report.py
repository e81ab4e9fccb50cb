"""What one reflection did: its outcome, what it saved and dropped, and what it cost."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, computed_field

from hindsight_insights.models import SaveStatus
from hindsight_insights.reflection.transcript import Variant

DropReason = Literal[
    "quote_not_in_transcript",  # the guard against invented lessons
    "quote_not_in_turn",
    "quote_too_short",
    "unknown_session",
    "invalid_fields",  # a rule of InsightDraft (length caps, empty after cleaning, too many tags, ...)
    "over_limit",  # more candidates than one reflection may save
    "excluded",  # repeats an insight a reviewer found faulty (a repair's re-reflection)
]


class Dropped(BaseModel):
    """A candidate that was not saved, and why."""

    model_config = ConfigDict(frozen=True)

    index: int  # its place in the answer
    topic: str
    reason: DropReason
    detail: str


class ReflectionReport(BaseModel):
    """One reflection of one session (session and anomaly variants) or of one user's sessions (nightly).

    tokens_in is the whole prompt, cached parts included, summed over the calls (two when the answer was retried);
    cached_share is the part of it read from the prompt cache.
    """

    session_ids: list[str]
    variant: Variant
    user_id: str | None = None
    source: str
    outcome: Literal["ok", "failed"] = "ok"
    reason: str | None = None  # why it failed
    candidates: int = 0
    created: list[uuid.UUID] = []
    merged: list[uuid.UUID] = []
    superseded: list[uuid.UUID] = []
    updated: list[uuid.UUID] = []
    unchanged: list[uuid.UUID] = []
    pending_review: list[uuid.UUID] = []
    dropped: list[Dropped] = []
    ignored_fields: list[str] = []  # trusted fields (user_id, source, status) the model tried to set
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    model: str | None = None
    via_batch: bool = False
    duration_s: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def session_id(self) -> str | None:
        """The session reflected on; for a nightly run over several, the first."""
        return self.session_ids[0] if self.session_ids else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def counts(self) -> dict[str, int]:
        return {
            "created": len(self.created),
            "merged": len(self.merged),
            "superseded": len(self.superseded),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "pending_review": len(self.pending_review),
            "dropped": len(self.dropped),
        }

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cached_share(self) -> float:
        """The share of the prompt tokens read from the cache, 0..1."""
        return round(self.cached_tokens / self.tokens_in, 4) if self.tokens_in else 0.0

    @property
    def saved_ids(self) -> list[uuid.UUID]:
        return [*self.created, *self.merged, *self.superseded, *self.updated, *self.unchanged, *self.pending_review]

    def ids_for(self, status: SaveStatus) -> list[uuid.UUID]:
        ids: list[uuid.UUID] = getattr(self, status)
        return ids
