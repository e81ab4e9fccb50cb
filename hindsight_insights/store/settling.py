"""What every room that writes shares: undoing a call's earlier writes, and bringing a slot to its plan (chain.py).

Every save, import and status change writes all or nothing: when a later write fails, the earlier writes of that call
are undone in reverse.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import datetime

from hindsight_insights.models import Insight
from hindsight_insights.store import chain
from hindsight_insights.store.table import InsightTable

log = logging.getLogger(__name__)

SETTLE_ROUNDS = 5
STATE_FIELDS = ("status", "supersedes", "superseded_by", "resume_at", "updated_at")


class Undo:
    """Compensating actions for the writes of one call, run in reverse when a later write fails."""

    def __init__(self) -> None:
        self._steps: list[Callable[[], object]] = []

    def add(self, step: Callable[[], object]) -> None:
        self._steps.append(step)

    def run(self) -> None:
        for step in reversed(self._steps):
            try:
                step()
            except Exception:  # keep undoing the rest; the original error is re-raised by the caller
                log.exception("undo step failed")


def write(table: InsightTable, insight: Insight, fields: Collection[str], undo: Undo, previous: Insight) -> None:
    """Store `fields` of `insight`, and note how to put back those of `previous`."""
    names = frozenset(fields)
    table.update(insight, names)
    undo.add(lambda: table.update(previous, names))


def settle(table: InsightTable, slot: str, now: datetime, undo: Undo | None = None) -> list[Insight]:
    """Bring the slot's chain to its plan (store/chain.py) and return its versions as stored.

    Re-reads after writing: a writer that raced this one may have written from an older view; planning again from
    what is stored converges, because every writer plans the same states from the same versions.
    """
    with table.slot_writes(slot):
        versions = table.in_slot(slot)
        for _round in range(SETTLE_ROUNDS):
            planned = chain.plan(versions, now)
            stale = [v for v in versions if v.id in planned and chain.state_of(v) != planned[v.id]]
            if not stale:
                return versions
            for version in stale:
                settled = version.model_copy(update={**vars(planned[version.id]), "updated_at": now})
                write(table, settled, STATE_FIELDS, undo or Undo(), previous=version)
            versions = table.in_slot(slot)
    log.warning("slot %s still changing after %d rounds; the next write settles it", slot, SETTLE_ROUNDS)
    return versions
