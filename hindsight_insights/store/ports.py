"""What governance and reflection need of a project's storage, as Protocols: they depend on these, never on the
Weaviate store. `InsightStore` satisfies them, and so does the in-memory store of testkit/memory_store.py, which their
unit tests run on.

    LearningStore     governance.writing: save where admission put it, read a slot, approve by agreement
    RecordingStore    governance.recording.record_turn: the turn log, and which injected ids a user could see
    BlamingStore      governance.blame: a store that keeps blame (the Weaviate one; the in-memory store keeps none)
    ReflectionStore   reflection.ReflectionEngine: the turn log (a session's turns), and the topics already known
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from hindsight_insights.admission import Admitted
from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder, Vectors
from hindsight_insights.models import (
    CorrectionRecord,
    Insight,
    InsightDraft,
    InsightKind,
    InsightStatus,
    SaveResult,
    Turn,
    TurnDraft,
)
from hindsight_insights.screening import Screen
from hindsight_insights.store.audit import AuditLog
from hindsight_insights.store.blame import BlameLedger


class TurnRecords(Protocol):
    """The turn log as recording and reflection use it (store/turns.py TurnLog is the Weaviate one)."""

    def append(self, draft: TurnDraft, now: datetime | None = None) -> Turn: ...

    def get(self, turn_id: uuid.UUID) -> Turn | None: ...

    def latest(self, session_id: str) -> Turn | None: ...

    def holds_other_users(self, session_id: str, user_id: str) -> bool: ...

    def session(self, session_id: str) -> list[Turn]: ...

    def mark_corrected(self, turn: Turn, record: CorrectionRecord) -> Turn: ...

    def count(self, *, user_id: str | None = None) -> int: ...

    def forget_user(self, user_id: str) -> int: ...


class LearningStore(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def screen(self) -> Screen:
        """The process's poisoning screen (screening.screen_for), built once where the store was opened."""
        ...

    def save(self, admitted: Admitted, now: datetime | None = None) -> SaveResult: ...

    def import_many(self, admitted: Sequence[Admitted], batch_size: int = 256, now: datetime | None = None) -> int: ...

    def slot_versions_of(self, insight: InsightDraft | Insight) -> list[Insight]: ...

    def approve(
        self, insight_id: uuid.UUID | str, reviewer: str = "reviewer", now: datetime | None = None
    ) -> Insight: ...


class RecordingStore(LearningStore, Protocol):
    @property
    def turns(self) -> TurnRecords: ...

    def visible_ids(
        self, insight_ids: Sequence[uuid.UUID], user_id: str | None, session_id: str | None = None
    ) -> set[uuid.UUID]: ...


class ReflectionStore(LearningStore, Protocol):
    @property
    def turns(self) -> TurnRecords: ...

    def list_insights(
        self,
        *,
        status: InsightStatus | None = None,
        user_id: str | None = None,
        scene: str | None = None,
        kind: InsightKind | None = None,
        limit: int = 100,
    ) -> list[Insight]: ...


class InsightVectors(Protocol):
    def with_vectors(self, insight_ids: Collection[uuid.UUID]) -> list[tuple[Insight, Vectors]]: ...


@runtime_checkable
class BlamingStore(Protocol):
    """What blame needs: the ledger, the embedder (how closely a complaint touches an insight), the insights, their
    status and the audit trail. record_turn judges a turn only on a store that has these."""

    @property
    def settings(self) -> Settings: ...

    @property
    def blame_ledger(self) -> BlameLedger: ...

    @property
    def insight_table(self) -> InsightVectors: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def audit(self) -> AuditLog: ...

    def get(self, insight_id: uuid.UUID | str) -> Insight: ...

    def set_status(
        self, insight_id: uuid.UUID | str, status: InsightStatus, now: datetime | None = None
    ) -> Insight: ...
