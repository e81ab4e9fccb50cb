"""The human review queue: project-wide facts and process rules, conflicts and poisoning suspects wait here, never
injected, until a reviewer approves, edits or rejects them. Every decision is kept in the audit trail (who, when,
before, after)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from hindsight_insights.models import Insight, InsightStatus
from hindsight_insights.store.audit import AuditEntry
from hindsight_insights.store.insights import InsightStore


class ReviewItem(BaseModel):
    """One insight with everything a reviewer needs: its slot's history, its audit trail, and what it touched (the
    dependency graph, store/graph.py: the turns it was injected into, what was learned from their sessions, and its
    blame with the turns that blamed it)."""

    model_config = ConfigDict(frozen=True)

    insight: Insight
    history: list[Insight]
    audit: list[AuditEntry]
    touched: dict[str, Any] = {}


class ReviewQueue:
    def __init__(self, store: InsightStore) -> None:
        self._store = store

    def pending(self, limit: int = 100) -> list[Insight]:
        """What waits for a reviewer: pending insights, oldest first, then suspects (marked by blame and repair)."""
        waiting = self._store.list_insights(status=InsightStatus.PENDING_REVIEW, limit=limit)
        suspects = self._store.list_insights(status=InsightStatus.SUSPECT, limit=limit)
        return sorted(waiting, key=lambda i: i.created_at) + sorted(suspects, key=lambda i: i.updated_at)

    def size(self) -> int:
        """How many insights wait for a reviewer (pending and suspect), counted, not listed."""
        waiting = (InsightStatus.PENDING_REVIEW, InsightStatus.SUSPECT)
        return sum(n for (status, _), n in self._store.insight_table.tally().items() if status in waiting)

    def show(self, insight_id: uuid.UUID | str) -> ReviewItem:
        graph = self._store.graph.of(insight_id)
        insight = graph.insight
        touched = {name: value for name, value in graph.as_json().items() if name != "insight"}
        return ReviewItem(
            insight=insight,
            history=self._store.history(insight.id),
            audit=self._store.audit.of(insight.id),
            touched=touched,
        )

    def approve(
        self, insight_id: uuid.UUID | str, reviewer: str, note: str = "", now: datetime | None = None
    ) -> Insight:
        before = self._store.get(insight_id)
        if before.status is InsightStatus.SUSPECT:  # found innocent: the rule again, and its blame starts afresh
            after = self._store.restore(before.id, now=now)
        else:
            after = self._store.approve(before.id, reviewer=reviewer, now=now)
        self._store.audit.record("approve", reviewer, before, after, note)
        return after

    def reject(
        self, insight_id: uuid.UUID | str, reviewer: str, note: str = "", now: datetime | None = None
    ) -> Insight:
        before = self._store.get(insight_id)
        after = self._store.set_status(before.id, InsightStatus.REJECTED, now)
        self._store.audit.record("reject", reviewer, before, after, note)
        return after

    def edit(self, insight_id: uuid.UUID | str, reviewer: str, changes: dict[str, Any], note: str = "") -> Insight:
        before = self._store.get(insight_id)
        after = self._store.revise(before.id, changes)
        self._store.audit.record("edit", reviewer, before, after, note)
        return after

    def delete(self, insight_id: uuid.UUID | str, reviewer: str, note: str = "") -> None:
        before = self._store.get(insight_id)
        self._store.delete(before.id)
        self._store.audit.record("delete", reviewer, before, None, note)
