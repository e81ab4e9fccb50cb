"""The project's daily budget of workspace-model calls (cascade.DailyBudget), in its tenant of the shared Budget
collection (schema.COLLECTION_SET).

Why Weaviate: the count must survive the plugin process restarting (a daemon restarts plugins freely) and be one
count for every replica and process that writes for the project; Weaviate is the one store they all share, and the
turn log is the wrong place (forgetting a user deletes their turns, and must not refill the budget). The collection,
`HindsightBudget`, holds no user data: one small object per call (day, purpose, time).

Counting without a lost update: Weaviate has no atomic increment, so call n of a day is the object whose uuid is
uuid5(day, n). Taking a call counts the day's objects and inserts the next one; an insert that finds its uuid taken
(another process took call n first) tries n + 1. Weaviate checks an id and writes it without a lock, so two inserts
of call n racing within milliseconds can both succeed, the later overwriting the earlier; in a multi-tenant collection
that happens to most racing inserts (measured: 22 of 28 inserts of 7 ids by 4 racing writers succeeded, against 7-10
in a collection of its own). So each call also stores who took it (`taker`, a fresh uuid) and reads call n back: a
writer whose object was overwritten lost call n to the other and tries n + 1. Only a read that comes before the other
writer's overwrite still counts twice, so the budget is a cost cap, not an exact quota: racing writers at the
limit's edge can go over it by about one call each.
Days older than a week are deleted as the budget is used.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

import weaviate
from weaviate.classes.query import Filter
from weaviate.collections import Collection

from hindsight_insights.connection import weaviate_errors

_NAMESPACE = uuid.UUID("5b0f8a4e-6d1c-4f57-9a55-6c0de0b1d9a3")
KEEP_DAYS = 7
MAX_CALLS_COUNTED = 10_000  # Weaviate's default QUERY_MAXIMUM_RESULTS; a day's limit above it counts no further


class WeaviateBudget:
    def __init__(self, collection: Collection) -> None:
        """`collection`: the project's tenant of the Budget collection (ProjectCollections.budget)."""
        self.collection = collection

    def used(self, day: date) -> int:
        """The day's calls: its distinct ids. Not an aggregate count: on Weaviate 1.27 two racing inserts of one id
        into a tenant can both be indexed, and the filtered count then sees the id twice (seen in the racing-writers
        test: 8 objects counted for the 7 ids of a limit of 7)."""
        with weaviate_errors("reading the model budget"):
            result = self.collection.query.fetch_objects(
                filters=Filter.by_property("day").equal(day.isoformat()),
                limit=MAX_CALLS_COUNTED,
                return_properties=[],
            )
        return len({obj.uuid for obj in result.objects})

    def take(self, purpose: str, limit: int, day: date) -> bool:
        n = self.used(day)
        if n == 0:
            self._forget_before(day - timedelta(days=KEEP_DAYS))
        with weaviate_errors("counting a model call"):
            while n < limit:
                call = uuid.uuid5(_NAMESPACE, f"{day.isoformat()}:{n}")
                taker = str(uuid.uuid4())
                try:
                    self.collection.data.insert(
                        {"day": day.isoformat(), "purpose": purpose, "at": datetime.now(UTC), "taker": taker},
                        uuid=call,
                    )
                except weaviate.exceptions.UnexpectedStatusCodeError as error:
                    if "already exists" not in str(error):
                        raise
                    n += 1  # another writer took call n
                    continue
                stored = self.collection.query.fetch_object_by_id(call, return_properties=["taker"])
                if stored is not None and stored.properties.get("taker") == taker:
                    return True
                n += 1  # a racing writer's insert of call n overwrote this one's: call n is theirs
        return False

    def _forget_before(self, day: date) -> None:
        with weaviate_errors("pruning the model budget"):
            self.collection.data.delete_many(where=Filter.by_property("day").less_than(day.isoformat()))
