"""What happens to an insight after it is saved: a reviewer's approval, edit, rejection or deletion; expiry and the
worker's retirement. Each change settles the slot (chain.py), so its rule is always the newest living version."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import Insight, InsightDraft, InsightStatus
from hindsight_insights.store import chain
from hindsight_insights.store.reads import InsightReads
from hindsight_insights.store.settling import Undo, settle, write
from hindsight_insights.store.table import InsightTable, slot_of

EDITABLE_FIELDS = frozenset({"action", "observation", "tags", "confidence", "expire_at"})
_DRAFT_FIELDS = {"topic", "kind", "scene", "observation", "action", "evidence", "tags", "confidence", "expire_at"}


class Lifecycle:
    def __init__(self, table: InsightTable, reads: InsightReads) -> None:
        self._table = table
        self._reads = reads

    def approve(self, insight_id: uuid.UUID | str, reviewer: str = "reviewer", now: datetime | None = None) -> Insight:
        """A reviewer approves a pending insight: it becomes the newest version of its slot, as if saved now, and the
        reviewer counts as a supporter (so reviewed knowledge outlives the forgetting of the user it came from)."""
        insight = self._reads.get(insight_id)
        if insight.status is not InsightStatus.PENDING_REVIEW:
            raise InvalidInput([("id", f"insight {insight.id} is {insight.status.value}, not pending_review")])
        supporters = list(dict.fromkeys([*insight.supporters, f"reviewer:{reviewer}"]))
        extra = {"supporters": supporters, "support_count": len(supporters), "review_reason": None}
        return self._change_status(insight, InsightStatus.ACTIVE, now or datetime.now(UTC), reassert=True, extra=extra)

    def revise(self, insight_id: uuid.UUID | str, changes: dict[str, Any], now: datetime | None = None) -> Insight:
        """A reviewer's edit of what an insight says: action, observation, tags, confidence, expire_at. Validated as a
        draft would be; what search reads is made again from a new text. Topic and scene stay: changing them is a
        new insight."""
        unknown = sorted(set(changes) - EDITABLE_FIELDS)
        if unknown:
            editable = ", ".join(sorted(EDITABLE_FIELDS))
            raise InvalidInput([(name, f"cannot be edited; editable: {editable}") for name in unknown])
        insight = self._reads.get(insight_id)
        now = now or datetime.now(UTC)
        checked = InsightDraft.parse({**insight.model_dump(include=_DRAFT_FIELDS), **changes})
        revised = insight.model_copy(update={**{name: getattr(checked, name) for name in changes}, "updated_at": now})
        with self._table.failures("editing an insight"):
            self._table.update(revised, {*changes, "updated_at"})
            if "expire_at" in changes and insight.status is not InsightStatus.PENDING_REVIEW:
                settle(self._table, slot_of(insight), now)
        return self._reads.get(insight.id)

    def set_status(self, insight_id: uuid.UUID | str, status: InsightStatus, now: datetime | None = None) -> Insight:
        """Reject, suspect, return to review or approve; the slot is settled after it. `superseded` and `expired`
        follow from the versions and their expiry, so they cannot be set."""
        if status in (InsightStatus.SUPERSEDED, InsightStatus.EXPIRED):
            raise InvalidInput([("status", f"{status.value} follows from newer versions and expiry; it is not set")])
        insight = self._reads.get(insight_id)
        if status is InsightStatus.ACTIVE:
            return self.approve(insight.id, now=now) if insight.status is InsightStatus.PENDING_REVIEW else insight
        return self._change_status(insight, status, now or datetime.now(UTC), reassert=False)

    def restore(self, insight_id: uuid.UUID | str, now: datetime | None = None) -> Insight:
        """A suspect found innocent (repair re-derived it without the faulty insight): it is a version of its slot
        again, as it was, and the slot settles (it is the rule again if it is still the newest)."""
        insight = self._reads.get(insight_id)
        if insight.status is not InsightStatus.SUSPECT:
            raise InvalidInput([("id", f"insight {insight.id} is {insight.status.value}, not suspect")])
        return self._change_status(insight, InsightStatus.ACTIVE, now or datetime.now(UTC), reassert=False)

    def _change_status(
        self,
        insight: Insight,
        status: InsightStatus,
        now: datetime,
        *,
        reassert: bool,
        extra: dict[str, Any] | None = None,
    ) -> Insight:
        update: dict[str, Any] = {"status": status, "updated_at": now, **(extra or {})}
        if reassert:
            update["asserted_at"] = now
        undo = Undo()
        with self._table.failures("changing an insight's status"):
            try:
                write(self._table, insight.model_copy(update=update), update, undo, previous=insight)
                settle(self._table, slot_of(insight), now, undo)
            except BaseException:
                undo.run()
                raise
        return self._reads.get(insight.id)

    def delete(self, insight_id: uuid.UUID | str, now: datetime | None = None) -> None:
        """Delete one insight; if it was its slot's rule, the newest remaining living version takes over."""
        insight = self._reads.get(insight_id)
        with self._table.failures("deleting an insight", safe_to_rerun=True):
            self._table.delete(insight.id)
            settle(self._table, slot_of(insight), now or datetime.now(UTC))

    def expire_sweep(self, now: datetime | None = None) -> int:
        """Mark insights whose expire_at has passed as expired, and settle their slots. Returns how many expired.
        Idempotent: if interrupted, the next sweep finishes the job."""
        now = now or datetime.now(UTC)
        expired: set[uuid.UUID] = set()
        with self._table.failures("expiring insights", safe_to_rerun=True):
            while True:
                batch = [i for i in self._table.past_expiry(now, limit=1000) if i.id not in expired]
                if not batch:  # done, or only versions a racing writer keeps changing (the next sweep finishes them)
                    return len(expired)
                for insight in batch:
                    if insight.status is InsightStatus.PENDING_REVIEW:
                        ended = insight.model_copy(update={"status": InsightStatus.EXPIRED, "updated_at": now})
                        self._table.update(ended, {"status", "updated_at"})
                    else:
                        settle(self._table, slot_of(insight), now)
                    expired.add(insight.id)

    def retire(self, insight_id: uuid.UUID | str, now: datetime | None = None) -> Insight:
        """Retire an insight now (the worker's TTL for unused low-confidence insights). `expired` is never set
        directly: retiring sets `expire_at` to now and settles the slot, so the insight is expired and, if it was
        the rule, the newest living older version is the rule again, as when any expiry passes. Only versions of a
        chain (active, superseded) retire; one that has expired already is returned as it is."""
        now = now or datetime.now(UTC)
        insight = self._reads.get(insight_id)
        if insight.status not in chain.CHAIN_STATUSES:
            raise InvalidInput(
                [("id", f"insight {insight.id} is {insight.status.value}; only active or superseded retire")]
            )
        if not chain.alive(insight, now):
            return insight
        retired = insight.model_copy(update={"expire_at": now, "updated_at": now})
        undo = Undo()
        with self._table.failures("retiring an insight"):
            try:
                write(self._table, retired, ("expire_at", "updated_at"), undo, previous=insight)
                settle(self._table, slot_of(insight), now, undo)
            except BaseException:
                undo.run()
                raise
        return self._reads.get(insight.id)
