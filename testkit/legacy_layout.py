"""A project as versions before tenants stored it: four collections of its own (Hindsight_<slug>_Insight, _Turn,
_Audit, _Budget), created exactly as those versions created them (store/schema.py ensure_collections and
store/budget.py WeaviateBudget.ensure before tenants), and filled through today's store code, which writes to any
collection handle it is given. For the migration's tests and its bench."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from typing import Any

import weaviate
from weaviate.classes.config import Configure, DataType, Property, StopwordsPreset, Tokenization

from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder
from hindsight_insights.store import InsightStore
from hindsight_insights.store.schema import (
    AUDIT_FIELDS,
    FLAT_SEARCH_CUTOFF,
    INSIGHT_FIELDS,
    SCHEMA_VERSION,
    TURN_FIELDS,
    VECTOR_TEXT_VERSION,
    ProjectCollections,
    legacy_collection_names,
)
from hindsight_insights.store.tenancy import tenant_name

LEGACY_BUDGET_NAMESPACE = uuid.UUID("5b0f8a4e-6d1c-4f57-9a55-6c0de0b1d9a3")  # store/budget.py's


def create_legacy_collections(
    client: weaviate.WeaviateClient, project: str, embedder: Embedder, *, vectors: int = VECTOR_TEXT_VERSION
) -> ProjectCollections:
    """The project's own collections, as the per-project layout made them, with their binding in the description."""
    names = legacy_collection_names(project)
    binding = {
        "project": project,
        "embedder": embedder.id,
        "dimension": embedder.dimension,
        "schema": SCHEMA_VERSION,
        "vectors": vectors,
    }
    for name, fields in ((names.insights, INSIGHT_FIELDS), (names.turns, TURN_FIELDS), (names.audit, AUDIT_FIELDS)):
        client.collections.create(
            name,
            description=json.dumps(binding, ensure_ascii=False),
            properties=[field.weaviate_property() for field in fields],
            vector_config=Configure.Vectors.self_provided(
                vector_index_config=Configure.VectorIndex.hnsw(flat_search_cutoff=FLAT_SEARCH_CUTOFF)
            ),
            inverted_index_config=Configure.inverted_index(
                index_null_state=True, stopwords_preset=StopwordsPreset.NONE
            ),
        )
    client.collections.create(
        names.budget,
        description="Hindsight Insights: workspace-model calls per day (store/budget.py)",
        properties=[
            Property(name="day", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
            Property(name="purpose", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
            Property(name="at", data_type=DataType.DATE),
        ],
        vector_config=Configure.Vectors.self_provided(),
    )
    return ProjectCollections(
        project=project,
        tenant=tenant_name(project),
        handles={role: client.collections.use(name) for role, name in names.by_role().items()},
        vector_text_version=vectors,
    )


def legacy_store(
    client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder, *, vectors: int = VECTOR_TEXT_VERSION
) -> InsightStore:
    """Today's store over the project's own (old-layout) collections: what it writes lands where old versions wrote."""
    collections = create_legacy_collections(client, settings.project, embedder, vectors=vectors)
    return InsightStore(collections, embedder, settings, client)


def drop_legacy_collections(client: weaviate.WeaviateClient, project: str) -> None:
    for name in legacy_collection_names(project).by_role().values():
        client.collections.delete(name)  # a missing collection is no error


def spend_legacy_budget(collection: Any, day: date, calls: int) -> None:
    """Model calls counted as versions before tenants counted them: object n of the day is uuid5(day, n)."""
    for n in range(calls):
        collection.data.insert(
            {"day": day.isoformat(), "purpose": "screen", "at": datetime.now(UTC)},
            uuid=uuid.uuid5(LEGACY_BUDGET_NAMESPACE, f"{day.isoformat()}:{n}"),
        )
