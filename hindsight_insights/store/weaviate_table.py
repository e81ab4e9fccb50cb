"""The `InsightTable` over a project's Weaviate collection. It embeds what it writes, and keeps what search reads (the
vector, the segmented search text, the normalised keys) made from what the insight says."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

import weaviate
from weaviate.classes.aggregate import GroupByAggregate
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter, Sort
from weaviate.collections import Collection as WeaviateCollection

from hindsight_insights import keys
from hindsight_insights.connection import NOTHING_CHANGED, SAFE_TO_RERUN, weaviate_errors
from hindsight_insights.embedder import Embedder, Vectors
from hindsight_insights.errors import WeaviateUnavailable
from hindsight_insights.models import Insight, InsightKind, InsightStatus
from hindsight_insights.segment import segment
from hindsight_insights.store import filters
from hindsight_insights.store.bulk import delete_all
from hindsight_insights.store.locks import KeyedLocks
from hindsight_insights.store.schema import INSIGHT_FIELDS, VECTOR_NAME, insight_from, to_properties, vector_of
from hindsight_insights.store.table import MAX_SLOT_VERSIONS, SEARCHABLE_FIELDS, embedding_text, slot_of

# Process-wide, as the race it prevents is: every table of one tenant's collection in this process shares them.
_SLOT_WRITES = KeyedLocks()


def derived_properties(insight: Insight) -> dict[str, str]:
    """What the store derives from an insight for Weaviate's filters and BM25."""
    return {
        "topic_key": keys.normalize_key(insight.topic),
        "scene_key": keys.scene_key(insight.scene),
        "slot_key": slot_of(insight),
        "search_text": segment(" ".join([insight.topic, insight.scene, insight.observation, insight.action])),
    }


def stored_names(fields: Collection[str]) -> set[str]:
    """The Weaviate properties that hold these model fields (`evidence` is three of them)."""
    return {field.name for field in INSIGHT_FIELDS if field.model_path and field.model_path[0] in fields}


class WeaviateInsightTable:
    def __init__(self, collection: WeaviateCollection, embedder: Embedder) -> None:
        self.collection = collection
        self._embedder = embedder

    def failures(self, action: str, *, safe_to_rerun: bool = False) -> AbstractContextManager[None]:
        return weaviate_errors(action, SAFE_TO_RERUN if safe_to_rerun else NOTHING_CHANGED)

    def slot_writes(self, slot: str) -> AbstractContextManager[None]:
        return _SLOT_WRITES.held((self.collection.name, self.collection.tenant, slot))

    def get(self, insight_id: uuid.UUID) -> Insight | None:
        obj = self.collection.query.fetch_object_by_id(insight_id)
        return None if obj is None else insight_from(obj)

    def existing_ids(self, insight_ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
        if not insight_ids:
            return set()
        result = self.collection.query.fetch_objects(
            filters=filters.with_ids(insight_ids), limit=len(insight_ids), return_properties=[]
        )
        return {uuid.UUID(str(obj.uuid)) for obj in result.objects}

    def in_slot(self, slot: str) -> list[Insight]:
        result = self.collection.query.fetch_objects(filters=filters.in_slot(slot), limit=MAX_SLOT_VERSIONS)
        return [insight_from(obj) for obj in result.objects]

    def in_slots(self, slots: Collection[str]) -> list[Insight]:
        result = self.collection.query.fetch_objects(filters=filters.in_slots(slots), limit=MAX_SLOT_VERSIONS * 10)
        return [insight_from(obj) for obj in result.objects]

    def insert(self, insight: Insight) -> bool:
        vector = self._embedder.embed([embedding_text(insight)])[0]
        try:
            self.collection.data.insert(
                to_properties(insight, INSIGHT_FIELDS, **derived_properties(insight)),
                uuid=insight.id,
                vector={VECTOR_NAME: vector.tolist()},
            )
        except weaviate.exceptions.UnexpectedStatusCodeError as error:
            if "already exists" in str(error):
                return False
            raise
        return True

    def insert_many(self, insights: Sequence[Insight]) -> None:
        vectors = self._embedder.embed([embedding_text(insight) for insight in insights])
        objects = [
            DataObject(
                uuid=insight.id,
                properties=to_properties(insight, INSIGHT_FIELDS, **derived_properties(insight)),
                vector={VECTOR_NAME: vector.tolist()},
            )
            for insight, vector in zip(insights, vectors, strict=True)
        ]
        result = self.collection.data.insert_many(objects)
        if result.has_errors:
            first = next(iter(result.errors.values()))
            raise WeaviateUnavailable(
                f"Weaviate rejected {len(result.errors)} of {len(objects)} insights: {first.message}"
            )

    def update(self, insight: Insight, fields: Collection[str]) -> None:
        properties = to_properties(insight, INSIGHT_FIELDS, only=stored_names(fields))
        if SEARCHABLE_FIELDS.isdisjoint(fields):
            self.collection.data.update(uuid=insight.id, properties=properties)
        else:
            self.update_searchable(insight, properties)

    def update_searchable(self, insight: Insight, properties: dict[str, Any], vector: Vectors | None = None) -> None:
        """PATCH `properties` together with what the store derives from `insight` as it says now: its keys, the
        segmented search text and the vector (embedded here unless given)."""
        if vector is None:
            vector = self._embedder.embed([embedding_text(insight)])[0]
        self.collection.data.update(
            uuid=insight.id,
            properties={**properties, **derived_properties(insight)},
            vector={VECTOR_NAME: vector.tolist()},
        )

    def delete(self, insight_id: uuid.UUID) -> None:
        self.collection.data.delete_by_id(insight_id)

    def delete_ids(self, insight_ids: Collection[uuid.UUID]) -> None:
        if insight_ids:
            delete_all(self.collection, filters.with_ids(insight_ids))

    def delete_owned_by(self, user_id: str) -> int:
        return delete_all(self.collection, filters.owned_by(user_id))

    def supported_by(self, user_id: str, limit: int) -> list[Insight]:
        result = self.collection.query.fetch_objects(filters=filters.supported_by(user_id), limit=limit)
        return [insight_from(obj) for obj in result.objects]

    def past_expiry(self, now: datetime, limit: int) -> list[Insight]:
        result = self.collection.query.fetch_objects(filters=filters.past_expiry(now), limit=limit)
        return [insight_from(obj) for obj in result.objects]

    def visible_ids(
        self, insight_ids: Collection[uuid.UUID], user_id: str | None, session_id: str | None
    ) -> set[uuid.UUID]:
        where = filters.with_ids(insight_ids) & filters.visible_to(user_id, session_id)
        result = self.collection.query.fetch_objects(filters=where, limit=len(insight_ids), return_properties=[])
        return {uuid.UUID(str(obj.uuid)) for obj in result.objects}

    def matching(
        self,
        *,
        status: InsightStatus | None,
        user_id: str | None,
        scene: str | None,
        kind: InsightKind | None,
        limit: int,
    ) -> list[Insight]:
        result = self.collection.query.fetch_objects(
            filters=filters.matching(status=status, user_id=user_id, scene=scene, kind=kind),
            limit=limit,
            sort=Sort.by_property("updated_at", ascending=False),
        )
        found = [insight_from(obj) for obj in result.objects]
        # The status filter can lag the object after racing writers (InsightTable.slot_writes): the object decides.
        return found if status is None else [insight for insight in found if insight.status is status]

    def with_vectors(self, insight_ids: Collection[uuid.UUID]) -> list[tuple[Insight, Vectors]]:
        """These insights with their stored vectors (of `embedding_text`), for blame's closeness: none is embedded
        again."""
        if not insight_ids:
            return []
        with weaviate_errors("reading the insights a turn was given"):
            result = self.collection.query.fetch_objects(
                filters=filters.with_ids(insight_ids), limit=len(insight_ids), include_vector=True
            )
        return [(insight_from(obj), vector_of(obj)) for obj in result.objects]

    def from_sessions(self, session_ids: Collection[str], limit: int = 1000) -> list[Insight]:
        """The insights whose evidence is in these sessions: what was learned, at once or by reflection, from them."""
        if not session_ids:
            return []
        result = self.collection.query.fetch_objects(
            filters=Filter.by_property("evidence_session_id").contains_any(sorted(session_ids)),
            limit=limit,
            sort=Sort.by_property("created_at", ascending=True),
        )
        return [insight_from(obj) for obj in result.objects]

    def count(self, user_id: str | None = None) -> int:
        where = filters.owned_by(user_id) if user_id is not None else None
        return int(self.collection.aggregate.over_all(filters=where, total_count=True).total_count or 0)

    def tally(self) -> dict[tuple[InsightStatus, InsightKind], int]:
        """How many insights of each status and kind (one grouped count per kind): what the metrics and the review
        queue's size read."""
        found: dict[tuple[InsightStatus, InsightKind], int] = {}
        for kind in InsightKind:
            result = self.collection.aggregate.over_all(
                filters=Filter.by_property("kind").equal(kind.value),
                group_by=GroupByAggregate(prop="status"),
                total_count=True,
            )
            for group in result.groups:
                status = InsightStatus(str(group.grouped_by.value))
                found[(status, kind)] = int(group.total_count or 0)
        return found

    def everything(self) -> Iterator[Insight]:
        """Every insight of the project, streamed (for a migration)."""
        return (insight_from(obj) for obj in self.collection.iterator())
