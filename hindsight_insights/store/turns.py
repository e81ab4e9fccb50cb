"""The turn log: what record_turn stores and what reflection reads, one collection per project."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import cast

import weaviate
from weaviate.classes.query import Filter, Sort
from weaviate.collections import Collection
from weaviate.util import generate_uuid5

from hindsight_insights.connection import SAFE_TO_RERUN, weaviate_errors
from hindsight_insights.errors import WeaviateUnavailable
from hindsight_insights.models import Turn, TurnDraft
from hindsight_insights.store import filters
from hindsight_insights.store.schema import TURN_FIELDS, from_object, to_properties


class TurnLog:
    def __init__(self, collection: Collection) -> None:
        self._turns = collection

    def append(self, draft: TurnDraft, now: datetime | None = None) -> Turn:
        now = now or datetime.now(UTC)
        with weaviate_errors("recording a turn"):
            for _attempt in range(5):
                index = self._next_turn_index(draft.session_id)
                turn_id = uuid.UUID(generate_uuid5(f"{draft.session_id}\n{index}"))
                turn = Turn(id=turn_id, turn_index=index, created_at=now, **draft.model_dump())
                try:
                    self._turns.data.insert(to_properties(turn, TURN_FIELDS), uuid=turn_id)
                except weaviate.exceptions.UnexpectedStatusCodeError as error:
                    if "already exists" in str(error):  # a concurrent append took this index
                        continue
                    raise
                return turn
        raise WeaviateUnavailable(f"could not record a turn in session {draft.session_id}: too many concurrent writes")

    def _next_turn_index(self, session_id: str) -> int:
        result = self._turns.query.fetch_objects(
            filters=Filter.by_property("session_id").equal(session_id),
            limit=1,
            sort=Sort.by_property("turn_index", ascending=False),
        )
        return cast(int, result.objects[0].properties["turn_index"]) + 1 if result.objects else 0

    def session(self, session_id: str) -> list[Turn]:
        with weaviate_errors("reading a session's turns"):
            result = self._turns.query.fetch_objects(
                filters=Filter.by_property("session_id").equal(session_id),
                limit=10_000,
                sort=Sort.by_property("turn_index", ascending=True),
            )
        return [from_object(obj, TURN_FIELDS, Turn) for obj in result.objects]

    def count(self, *, user_id: str | None = None) -> int:
        where = filters.owned_by(user_id) if user_id is not None else None
        with weaviate_errors("counting turns"):
            return int(self._turns.aggregate.over_all(filters=where, total_count=True).total_count or 0)

    def forget_user(self, user_id: str) -> int:
        """Delete one user's turns. Returns how many."""
        with weaviate_errors("forgetting a user's turns", SAFE_TO_RERUN):
            return int(self._turns.data.delete_many(where=filters.owned_by(user_id)).successful)
