"""The audit trail: who changed an insight by hand, when, and what it was before and after."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from weaviate.classes.query import Filter, FilterReturn, Sort
from weaviate.collections import Collection

from hindsight_insights.connection import weaviate_errors
from hindsight_insights.models import Insight
from hindsight_insights.store.schema import AUDIT_FIELDS, from_object, to_properties

AuditAction = Literal["approve", "reject", "edit", "delete", "suspect", "requeue", "repair"]


class AuditEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: uuid.UUID
    insight_id: uuid.UUID
    action: AuditAction
    actor: str
    at: datetime
    before: str  # the insight as JSON
    after: str  # "" when it was deleted
    note: str = ""

    @property
    def topic(self) -> str:
        """The insight's topic before the step ("" when unreadable)."""
        return _topic_of(self.before)


def _trail_filter() -> FilterReturn:
    return Filter.by_property("action").equal("suspect") | Filter.by_property("action").like("repair*")


def _topic_of(before: object) -> str:
    try:
        topic = json.loads(str(before)).get("topic", "")
    except (ValueError, AttributeError):
        return ""
    return str(topic)


class AuditLog:
    def __init__(self, collection: Collection) -> None:
        self._audit = collection

    def record(
        self, action: AuditAction, actor: str, before: Insight, after: Insight | None, note: str = ""
    ) -> AuditEntry:
        entry = AuditEntry(
            id=uuid.uuid4(),
            insight_id=before.id,
            action=action,
            actor=actor,
            at=datetime.now(UTC),
            before=before.model_dump_json(),
            after=after.model_dump_json() if after is not None else "",
            note=note,
        )
        with weaviate_errors("writing the audit trail"):
            self._audit.data.insert(to_properties(entry, AUDIT_FIELDS), uuid=entry.id)
        return entry

    def of(self, insight_id: uuid.UUID) -> list[AuditEntry]:
        """The insight's audit entries, oldest first."""
        with weaviate_errors("reading the audit trail"):
            result = self._audit.query.fetch_objects(
                filters=Filter.by_property("insight_id").equal(insight_id),
                limit=1000,
                sort=Sort.by_property("at", ascending=True),
            )
        return [from_object(obj, AUDIT_FIELDS, AuditEntry) for obj in result.objects]

    def decisions(
        self, actions: tuple[AuditAction, ...] = ("approve", "reject", "edit"), limit: int = 10_000
    ) -> list[AuditEntry]:
        """Every entry of these actions, oldest first (a reviewer's decisions, for the detector's retraining)."""
        with weaviate_errors("reading the audit trail"):
            result = self._audit.query.fetch_objects(
                filters=Filter.by_property("action").contains_any(list(actions)),
                limit=limit,
                sort=Sort.by_property("at", ascending=True),
            )
        return [from_object(obj, AUDIT_FIELDS, AuditEntry) for obj in result.objects]

    def trail(self, since: datetime, until: datetime, limit: int = 1000) -> list[AuditEntry]:
        """Suspect marks and repair steps recorded in [since, until), oldest first."""
        where = (
            _trail_filter()
            & Filter.by_property("at").greater_or_equal(since)
            & Filter.by_property("at").less_than(until)
        )
        with weaviate_errors("reading the audit trail"):
            result = self._audit.query.fetch_objects(
                filters=where, limit=limit, sort=Sort.by_property("at", ascending=True)
            )
        return [from_object(obj, AUDIT_FIELDS, AuditEntry) for obj in result.objects]

    def trail_counts(self) -> tuple[int, int]:
        """(suspect marks, repair steps) ever recorded."""
        with weaviate_errors("counting the audit trail"):
            marks = self._audit.aggregate.over_all(
                filters=Filter.by_property("action").equal("suspect"), total_count=True
            ).total_count
            repairs = self._audit.aggregate.over_all(
                filters=Filter.by_property("action").like("repair*"), total_count=True
            ).total_count
        return int(marks or 0), int(repairs or 0)
