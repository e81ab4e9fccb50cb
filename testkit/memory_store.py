"""A project's store in memory, for tests: the core's own save policy, lifecycle, forgetting and reads
(store/insights.py ProjectStore) over dicts instead of Weaviate. It satisfies the storage Protocols governance and
reflection depend on (store/ports.py), and passes the same contract tests as the Weaviate store
(tests/test_store_contract.py).

It lives in testkit/, not in the core: it has no vectors, so no search and no recall, and it forgets everything when
the process ends. Nothing a user runs could use it; the tests of reflection and governance can, without a server.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime

from hindsight_insights.cascade import MemoryBudget
from hindsight_insights.config import Settings
from hindsight_insights.errors import WeaviateUnavailable
from hindsight_insights.keys import scene_key
from hindsight_insights.models import CorrectionRecord, Insight, InsightKind, InsightStatus, Scope, Turn, TurnDraft
from hindsight_insights.screening import RULES_ONLY, Screen
from hindsight_insights.store.insights import ProjectStore
from hindsight_insights.store.locks import KeyedLocks
from hindsight_insights.store.table import slot_of
from hindsight_insights.store.turns import turn_uuid

_OWN_SCOPES = (Scope.USER, Scope.SESSION)
_DUE_STATUSES = (InsightStatus.ACTIVE, InsightStatus.SUPERSEDED, InsightStatus.PENDING_REVIEW)


def _owned_by(insight: Insight, user_id: str) -> bool:
    return insight.scope in _OWN_SCOPES and insight.user_id == user_id


def _visible_to(insight: Insight, user_id: str | None, session_id: str | None) -> bool:
    """filters.visible_to, in Python."""
    if insight.scope is Scope.PROJECT:
        return True
    if not user_id or insight.user_id != user_id:
        return False
    return insight.scope is Scope.USER or (bool(session_id) and insight.evidence.session_id == session_id)


class MemoryInsightTable:
    """An `InsightTable` (store/table.py) of dicts. Every read returns copies, as a database would."""

    def __init__(self) -> None:
        self._rows: dict[uuid.UUID, Insight] = {}
        self._slot_writes = KeyedLocks()

    @contextmanager
    def failures(self, action: str, *, safe_to_rerun: bool = False) -> Iterator[None]:
        yield  # nothing here fails on its own

    def slot_writes(self, slot: str) -> AbstractContextManager[None]:
        return self._slot_writes.held(slot)

    def _out(self, rows: Iterator[Insight] | list[Insight]) -> list[Insight]:
        return [row.model_copy(deep=True) for row in rows]

    def get(self, insight_id: uuid.UUID) -> Insight | None:
        row = self._rows.get(insight_id)
        return None if row is None else row.model_copy(deep=True)

    def existing_ids(self, insight_ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
        return {i for i in insight_ids if i in self._rows}

    def in_slot(self, slot: str) -> list[Insight]:
        return self.in_slots([slot])

    def in_slots(self, slots: Collection[str]) -> list[Insight]:
        wanted = set(slots)
        return self._out([row for row in self._rows.values() if slot_of(row) in wanted])

    def insert(self, insight: Insight) -> bool:
        if insight.id in self._rows:
            return False
        self._rows[insight.id] = insight.model_copy(deep=True)
        return True

    def insert_many(self, insights: Sequence[Insight]) -> None:
        clashes = [insight.id for insight in insights if insight.id in self._rows]
        if clashes:
            raise WeaviateUnavailable(f"{len(clashes)} of {len(insights)} insights exist already: {clashes[0]}")
        for insight in insights:
            self._rows[insight.id] = insight.model_copy(deep=True)

    def update(self, insight: Insight, fields: Collection[str]) -> None:
        stored = self._rows.get(insight.id)
        if stored is None:  # as Weaviate's PATCH of a missing object
            raise WeaviateUnavailable(f"no insight {insight.id} to update")
        changes = {name: getattr(insight, name) for name in fields}
        self._rows[insight.id] = stored.model_copy(update=changes, deep=True)

    def delete(self, insight_id: uuid.UUID) -> None:
        self._rows.pop(insight_id, None)

    def delete_ids(self, insight_ids: Collection[uuid.UUID]) -> None:
        for insight_id in insight_ids:
            self._rows.pop(insight_id, None)

    def delete_owned_by(self, user_id: str) -> int:
        owned = [i for i, row in self._rows.items() if _owned_by(row, user_id)]
        self.delete_ids(owned)
        return len(owned)

    def supported_by(self, user_id: str, limit: int) -> list[Insight]:
        found = (r for r in self._rows.values() if r.scope is Scope.PROJECT and user_id in r.supporters)
        return self._out(list(itertools.islice(found, limit)))

    def past_expiry(self, now: datetime, limit: int) -> list[Insight]:
        due = (
            row
            for row in self._rows.values()
            if row.expire_at is not None and row.expire_at <= now and row.status in _DUE_STATUSES
        )
        return self._out(list(itertools.islice(due, limit)))

    def visible_ids(
        self, insight_ids: Collection[uuid.UUID], user_id: str | None, session_id: str | None
    ) -> set[uuid.UUID]:
        return {i for i in insight_ids if i in self._rows and _visible_to(self._rows[i], user_id, session_id)}

    def matching(
        self,
        *,
        status: InsightStatus | None,
        user_id: str | None,
        scene: str | None,
        kind: InsightKind | None,
        limit: int,
    ) -> list[Insight]:
        found = [
            row
            for row in self._rows.values()
            if (status is None or row.status is status)
            and (user_id is None or _owned_by(row, user_id))
            and (scene is None or scene_key(row.scene) == scene_key(scene))
            and (kind is None or row.kind is kind)
        ]
        found.sort(key=lambda row: row.updated_at, reverse=True)
        return self._out(found[:limit])

    def count(self, user_id: str | None = None) -> int:
        return sum(1 for row in self._rows.values() if user_id is None or _owned_by(row, user_id))


class MemoryTurnLog:
    """The turn log (store/turns.py TurnLog) in memory: a turn's index is its place in its session, counted on read."""

    def __init__(self) -> None:
        self._turns: dict[uuid.UUID, Turn] = {}
        self._sequence = itertools.count(1)

    def _indexed(self, turn: Turn) -> Turn:
        index = sum(1 for t in self._turns.values() if t.session_id == turn.session_id and t.sequence < turn.sequence)
        return turn.model_copy(update={"turn_index": index}, deep=True)

    def append(self, draft: TurnDraft, now: datetime | None = None) -> Turn:
        turn_id = turn_uuid(draft)
        if turn_id in self._turns:  # the same Dify message recorded again
            return self._indexed(self._turns[turn_id])
        turn = Turn(
            id=turn_id, sequence=next(self._sequence), created_at=now or datetime.now(UTC), **draft.model_dump()
        )
        self._turns[turn_id] = turn
        return self._indexed(turn)

    def get(self, turn_id: uuid.UUID) -> Turn | None:
        turn = self._turns.get(turn_id)
        return None if turn is None else self._indexed(turn)

    def session(self, session_id: str) -> list[Turn]:
        turns = sorted((t for t in self._turns.values() if t.session_id == session_id), key=lambda t: t.sequence)
        return [turn.model_copy(update={"turn_index": index}, deep=True) for index, turn in enumerate(turns)]

    def holds_other_users(self, session_id: str, user_id: str) -> bool:
        return any(t.session_id == session_id and t.user_id != user_id for t in self._turns.values())

    def latest(self, session_id: str) -> Turn | None:
        turns = self.session(session_id)
        return turns[-1] if turns else None

    def mark_corrected(self, turn: Turn, record: CorrectionRecord) -> Turn:
        corrected = turn.model_copy(update={"error_status": "corrected", "correction": record})
        stored = self._turns[turn.id]
        self._turns[turn.id] = stored.model_copy(update={"error_status": "corrected", "correction": record})
        return corrected

    def of_user(self, user_id: str, *, recent: int = 20) -> list[Turn]:
        """The user's latest turns, newest first."""
        turns = sorted((t for t in self._turns.values() if t.user_id == user_id), key=lambda t: -t.sequence)
        return [turn.model_copy(deep=True) for turn in turns[:recent]]

    def count(self, *, user_id: str | None = None) -> int:
        return sum(1 for t in self._turns.values() if user_id is None or t.user_id == user_id)

    def forget_user(self, user_id: str) -> int:
        theirs = [i for i, t in self._turns.items() if t.user_id == user_id]
        for turn_id in theirs:
            del self._turns[turn_id]
        return len(theirs)


class MemoryStore(ProjectStore[MemoryTurnLog]):
    """A project's insights and turns in memory: the core's rules, no server, no search."""

    def __init__(self, settings: Settings, screen: Screen = RULES_ONLY) -> None:
        super().__init__(MemoryInsightTable(), MemoryTurnLog(), settings, screen)
        self.budget = MemoryBudget()  # the project's daily workspace-model calls (cascade.py)
