"""Reading insights by id, slot and listing filters (search and recall are retrieval.py's)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from hindsight_insights.errors import InvalidInput, NotFound
from hindsight_insights.models import Insight, InsightDraft, InsightKind, InsightStatus
from hindsight_insights.store import chain
from hindsight_insights.store.table import InsightTable, slot_of


def as_uuid(value: uuid.UUID | str) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value).strip())
    except ValueError:
        raise InvalidInput([("id", f"{value!r} is not an insight id (a UUID)")]) from None


class InsightReads:
    def __init__(self, table: InsightTable, project: str) -> None:
        self._table = table
        self._project = project

    def get(self, insight_id: uuid.UUID | str) -> Insight:
        with self._table.failures("reading an insight"):
            found = self._table.get(as_uuid(insight_id))
        if found is None:
            raise NotFound(f"no insight {insight_id} in project {self._project!r}")
        return found

    def visible_ids(
        self, insight_ids: Sequence[uuid.UUID], user_id: str | None, session_id: str | None = None
    ) -> set[uuid.UUID]:
        """Which of these insights exist and could reach this user (project-wide, theirs, or this session's)."""
        if not insight_ids:
            return set()
        with self._table.failures("reading insights"):
            return self._table.visible_ids(insight_ids, user_id, session_id)

    def slot_versions_of(self, insight: InsightDraft | Insight) -> list[Insight]:
        """Every stored version of the slot this insight or draft belongs to, in any status."""
        with self._table.failures("reading a slot's versions"):
            return self._table.in_slot(slot_of(insight))

    def history(self, insight_id: uuid.UUID | str) -> list[Insight]:
        """Every version of the insight's slot, oldest first (pending, rejected and suspect ones at the end)."""
        insight = self.get(insight_id)
        with self._table.failures("reading an insight's history"):
            versions = self._table.in_slot(slot_of(insight))
        members = chain.order(versions)
        return members + [v for v in versions if v not in members]

    def list_insights(
        self,
        *,
        status: InsightStatus | None = None,
        user_id: str | None = None,
        scene: str | None = None,
        kind: InsightKind | None = None,
        limit: int = 100,
    ) -> list[Insight]:
        """Insights matching every given filter, newest first."""
        with self._table.failures("listing insights"):
            return self._table.matching(status=status, user_id=user_id, scene=scene, kind=kind, limit=limit)

    def count(self, *, user_id: str | None = None) -> int:
        """How many insights, optionally of one user (their own)."""
        with self._table.failures("counting"):
            return self._table.count(user_id)
