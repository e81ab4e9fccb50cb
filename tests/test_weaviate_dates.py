"""Date properties read back as weaviate-client would read them, by our faster parser (connection.py): the same value
for every form Weaviate sends, and the exact stored instants through a real server."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
import weaviate
import weaviate.collections.queries.base_executor as query_results
from weaviate.classes.config import DataType, Property
from weaviate.util import _datetime_from_weaviate_str as sdk_parser

from hindsight_insights.connection import parse_weaviate_date

FORMS = [
    "2026-12-02T05:35:50Z",
    "2026-12-02T05:35:50.1Z",
    "2026-12-02T05:35:50.123Z",
    "2026-12-02T05:35:50.123456Z",
    "2026-12-02T05:35:50.123456789Z",  # Weaviate can send nanoseconds; both drop past microseconds
    "2026-12-02T13:35:50+08:00",
    "2026-12-02T13:35:50.5+08:00",
    "2026-12-01T23:35:50.000001-05:30",
    "9999-12-31T23:59:59.999999Z",  # the store's "never" (schema.NEVER)
    "0001-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",  # year 0: not a Python date; the client's parser says what it makes of it
]


@pytest.mark.parametrize("form", FORMS)
def test_every_form_reads_as_the_client_reads_it(form: str) -> None:
    ours, theirs = parse_weaviate_date(form), sdk_parser(form)
    assert ours == theirs and (ours is None or ours.utcoffset() == theirs.utcoffset())  # type: ignore[union-attr]


def test_query_results_use_it() -> None:
    assert query_results._datetime_from_weaviate_str is parse_weaviate_date  # type: ignore[attr-defined]


def test_stored_instants_come_back_exactly(client: weaviate.WeaviateClient) -> None:
    name = f"DateRoundTrip{uuid.uuid4().hex[:8]}"
    collection = client.collections.create(
        name,
        properties=[Property(name="at", data_type=DataType.DATE), Property(name="ats", data_type=DataType.DATE_ARRAY)],
    )
    try:
        shanghai = timezone(timedelta(hours=8))
        instants = [
            datetime(2026, 12, 2, 5, 35, 50, 123456, tzinfo=UTC),
            datetime(2026, 12, 2, 13, 35, 50, tzinfo=shanghai),
            datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        ]
        ids = [collection.data.insert({"at": at, "ats": [at, instants[0]]}) for at in instants]
        by_id = {obj.uuid: obj.properties for obj in collection.query.fetch_objects(limit=10).objects}
        for object_id, at in zip(ids, instants, strict=True):
            assert by_id[object_id]["at"] == at
            assert by_id[object_id]["ats"] == [at, instants[0]]
    finally:
        client.collections.delete(name)
