"""The project's daily budget of workspace-model calls (cascade.DailyBudget), in a Weaviate collection of its own.

Why Weaviate: the count must survive the plugin process restarting (a daemon restarts plugins freely) and be one
count for every replica and process that writes for the project; Weaviate is the one store they all share, and the
turn log is the wrong place (forgetting a user deletes their turns, and must not refill the budget). The collection,
`Hindsight_<project>_Budget`, holds no user data: one small object per call (day, purpose, time).

Counting without a lost update: Weaviate has no atomic increment, so call n of a day is the object whose uuid is
uuid5(day, n). Taking a call counts the day's objects and inserts the next one; an insert that finds its uuid taken
(another process took call n first) tries n + 1. Weaviate checks an id and writes it without a lock, so two inserts
of call n racing within milliseconds can both succeed (measured: 8 calls taken of 7 with 4 writers racing 5 times
each). The budget is a cost cap, not an exact quota: at most one call per writer racing at the limit's edge
goes over it.
Days older than a week are deleted as the budget is used.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

import weaviate
from weaviate.classes.config import Configure, DataType, Property, StopwordsPreset, Tokenization
from weaviate.classes.query import Filter
from weaviate.collections import Collection

from hindsight_insights.connection import weaviate_errors
from hindsight_insights.store.schema import collection_names

_NAMESPACE = uuid.UUID("5b0f8a4e-6d1c-4f57-9a55-6c0de0b1d9a3")
KEEP_DAYS = 7


def budget_collection_name(project: str) -> str:
    return collection_names(project).insights.removesuffix("_Insight") + "_Budget"


class WeaviateBudget:
    def __init__(self, collection: Collection) -> None:
        self.collection = collection

    @classmethod
    def ensure(cls, client: weaviate.WeaviateClient, project: str) -> WeaviateBudget:
        name = budget_collection_name(project)
        with weaviate_errors("creating the project's model budget"):
            if not client.collections.exists(name):
                try:
                    client.collections.create(
                        name,
                        description="Hindsight Insights: workspace-model calls per day (store/budget.py)",
                        properties=[
                            Property(name="day", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                            Property(name="purpose", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                            Property(name="at", data_type=DataType.DATE),
                        ],
                        vector_config=Configure.Vectors.self_provided(),
                        inverted_index_config=Configure.inverted_index(stopwords_preset=StopwordsPreset.NONE),
                    )
                except weaviate.exceptions.UnexpectedStatusCodeError as error:
                    if "already exists" not in str(error):  # another process created it first
                        raise
        return cls(client.collections.use(name))

    def used(self, day: date) -> int:
        with weaviate_errors("reading the model budget"):
            result = self.collection.aggregate.over_all(
                filters=Filter.by_property("day").equal(day.isoformat()), total_count=True
            )
        return int(result.total_count or 0)

    def take(self, purpose: str, limit: int, day: date) -> bool:
        n = self.used(day)
        if n == 0:
            self._forget_before(day - timedelta(days=KEEP_DAYS))
        with weaviate_errors("counting a model call"):
            while n < limit:
                try:
                    self.collection.data.insert(
                        {"day": day.isoformat(), "purpose": purpose, "at": datetime.now(UTC)},
                        uuid=uuid.uuid5(_NAMESPACE, f"{day.isoformat()}:{n}"),
                    )
                except weaviate.exceptions.UnexpectedStatusCodeError as error:
                    if "already exists" not in str(error):
                        raise
                    n += 1  # another writer took call n
                    continue
                return True
        return False

    def _forget_before(self, day: date) -> None:
        with weaviate_errors("pruning the model budget"):
            self.collection.data.delete_many(where=Filter.by_property("day").less_than(day.isoformat()))
