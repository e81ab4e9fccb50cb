"""The audit trail: who changed an insight by hand, when, and what it was before and after."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from weaviate.classes.query import Filter, Sort
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
