"""The blame ledger: which turns complained about an insight they were given, and which used it without complaint
(ExpeL-style bookkeeping; governance/blame.py decides what a turn means for its insights).

One object per (insight, judged turn, kind) in the project's collection `Hindsight_<project>_Blame`, with a uuid5 of
those three, so recording a turn twice (a retried Dify message, two writers) never counts twice, and no insight
object is read, changed and written back (no lost update between racing writers). A turn's marks are written in one
batch. Tallies are sums over the marks.
It holds ids, weights and times, never anyone's words; forgetting a user deletes their marks.

A collection of its own, created on opening a store (like the model budget), so an existing project gets it without
a migration and the insight collection's schema is unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import weaviate
from weaviate.classes.config import Configure, DataType, Property, StopwordsPreset, Tokenization
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter, Sort
from weaviate.collections import Collection

from hindsight_insights.connection import SAFE_TO_RERUN, weaviate_errors
from hindsight_insights.errors import WeaviateUnavailable
from hindsight_insights.store.bulk import delete_all
from hindsight_insights.store.schema import collection_names

_NAMESPACE = uuid.UUID("0c9f3a52-3c1e-4d8b-b7a2-8f4d61e0b2c7")
MAX_MARKS = 10_000  # blame marks per insight read back; it is suspect long before
MarkKind = Literal["blame", "support"]


def blame_collection_name(project: str) -> str:
    return collection_names(project).insights.removesuffix("_Insight") + "_Blame"


@dataclass(frozen=True)
class BlameMark:
    """One turn's verdict on one insight it was given: blame (weighted by how closely the complaint touches the
    insight, 0-1) or support (weight 1). `turn_id` is the judged turn (whose answer the insight shaped); `by_turn` the
    turn whose message complained (the same turn for a dislike)."""

    insight_id: uuid.UUID
    turn_id: uuid.UUID
    by_turn: uuid.UUID
    session_id: str
    user_id: str
    kind: MarkKind
    weight: float
    reason: str  # "correction:factual", "dislike", "used"
    at: datetime

    @property
    def uuid(self) -> uuid.UUID:
        return uuid.uuid5(_NAMESPACE, f"{self.insight_id}\n{self.turn_id}\n{self.kind}")


@dataclass(frozen=True)
class BlameTally:
    """What the marks of one insight add up to."""

    blame: float = 0.0
    support: int = 0
    marks: list[BlameMark] = field(default_factory=list)  # the blame marks, oldest first

    @property
    def blamed_by(self) -> list[BlameMark]:
        return [mark for mark in self.marks if mark.kind == "blame"]

    def as_json(self) -> dict[str, object]:
        return {
            "blame": round(self.blame, 3),
            "support": self.support,
            "blamed_by": [
                {
                    "turn_id": str(mark.turn_id),
                    "by_turn": str(mark.by_turn),
                    "session_id": mark.session_id,
                    "weight": round(mark.weight, 3),
                    "reason": mark.reason,
                    "at": mark.at.isoformat(),
                }
                for mark in self.blamed_by
            ],
        }


class BlameLedger:
    def __init__(self, collection: Collection) -> None:
        self.collection = collection

    @classmethod
    def ensure(cls, client: weaviate.WeaviateClient, project: str) -> BlameLedger:
        name = blame_collection_name(project)
        with weaviate_errors("creating the project's blame ledger"):
            if not client.collections.exists(name):
                try:
                    client.collections.create(
                        name,
                        description="Hindsight Insights: blame and support of injected insights (store/blame.py)",
                        properties=[
                            Property(name="insight_id", data_type=DataType.UUID),
                            Property(name="turn_id", data_type=DataType.UUID),
                            Property(name="by_turn", data_type=DataType.UUID),
                            Property(name="session_id", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                            Property(name="user_id", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                            Property(name="kind", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                            Property(name="reason", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                            Property(name="weight", data_type=DataType.NUMBER),
                            Property(name="at", data_type=DataType.DATE),
                        ],
                        vector_config=Configure.Vectors.self_provided(),
                        inverted_index_config=Configure.inverted_index(stopwords_preset=StopwordsPreset.NONE),
                    )
                except weaviate.exceptions.UnexpectedStatusCodeError as error:
                    if "already exists" not in str(error):  # another process created it first
                        raise
        return cls(client.collections.use(name))

    def add(self, marks: Iterable[BlameMark]) -> list[BlameMark]:
        """Record the marks in one round trip. A mark's id is its insight, judged turn and kind, so one recorded
        again replaces itself: nothing is counted twice."""
        marks = list(marks)
        if not marks:
            return []
        objects = [
            DataObject(
                uuid=mark.uuid,
                properties=_properties(mark),
            )
            for mark in marks
        ]
        with weaviate_errors("recording blame", SAFE_TO_RERUN):
            result = self.collection.data.insert_many(objects)
        if result.has_errors:
            first = next(iter(result.errors.values()))
            raise WeaviateUnavailable(
                f"Weaviate rejected {len(result.errors)} of {len(objects)} blame marks: {first.message}"
            )
        return marks

    def tally(self, insight_id: uuid.UUID, since: datetime | None = None) -> BlameTally:
        """The insight's blame marks, and how often it was used without complaint (counted, not read: a rule in use
        gathers many); only marks after `since` (when a reviewer last cleared it) when given."""
        mine = Filter.by_property("insight_id").equal(insight_id)
        if since is not None:
            mine = mine & Filter.by_property("at").greater_than(since)
        with weaviate_errors("reading blame"):
            result = self.collection.query.fetch_objects(
                filters=mine & Filter.by_property("kind").equal("blame"),
                limit=MAX_MARKS,
                sort=Sort.by_property("at", ascending=True),
            )
            supported = self.collection.aggregate.over_all(
                filters=mine & Filter.by_property("kind").equal("support"), total_count=True
            )
        marks = [_mark(obj.properties) for obj in result.objects]
        return BlameTally(
            blame=sum(mark.weight for mark in marks), support=int(supported.total_count or 0), marks=marks
        )

    def forget_user(self, user_id: str) -> int:
        with weaviate_errors("forgetting a user's blame marks", SAFE_TO_RERUN):
            return delete_all(self.collection, Filter.by_property("user_id").equal(user_id))


def _mark(p: object) -> BlameMark:
    assert isinstance(p, dict)
    at = p["at"]
    return BlameMark(
        insight_id=uuid.UUID(str(p["insight_id"])),
        turn_id=uuid.UUID(str(p["turn_id"])),
        by_turn=uuid.UUID(str(p["by_turn"])),
        session_id=str(p["session_id"]),
        user_id=str(p["user_id"]),
        kind="blame" if p["kind"] == "blame" else "support",
        weight=float(p["weight"]),
        reason=str(p["reason"]),
        at=at if isinstance(at, datetime) else datetime.fromisoformat(str(at)),
    )


def _properties(mark: BlameMark) -> dict[str, Any]:
    return {
        "insight_id": str(mark.insight_id),
        "turn_id": str(mark.turn_id),
        "by_turn": str(mark.by_turn),
        "session_id": mark.session_id,
        "user_id": mark.user_id,
        "kind": mark.kind,
        "reason": mark.reason,
        "weight": mark.weight,
        "at": mark.at,
    }
