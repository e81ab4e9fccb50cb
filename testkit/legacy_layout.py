"""A project as versions before tenants stored it: collections of its own (Hindsight_<slug>_Insight, _Turn, _Audit,
_Budget, and in the versions that had them _Blame, _Example, _Suggestion), created exactly as those versions created
them (store/schema.py ensure_collections, store/budget.py WeaviateBudget.ensure, and the `ensure` classmethods of
store/blame.py, store/examples.py and store/suggestions.py, before tenants), and filled through today's store code,
which writes to any collection handle it is given. For the migration's tests and its bench."""

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
    BLAME,
    EXAMPLE_FIELDS,
    EXAMPLES,
    FLAT_SEARCH_CUTOFF,
    INSIGHT_FIELDS,
    SCHEMA_VERSION,
    SUGGESTION_FIELDS,
    SUGGESTIONS,
    TURN_FIELDS,
    VECTOR_TEXT_VERSION,
    ProjectCollections,
    legacy_collection_names,
)
from hindsight_insights.store.tenancy import tenant_name

LEGACY_BUDGET_NAMESPACE = uuid.UUID("5b0f8a4e-6d1c-4f57-9a55-6c0de0b1d9a3")  # store/budget.py's
LATE_ROLES = (BLAME, EXAMPLES, SUGGESTIONS)  # collections that came after the first per-project versions


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
    create_legacy_blame(client, names.blame)
    create_legacy_examples(client, project, names.examples, embedder)
    create_legacy_suggestions(client, project, names.suggestions)
    return ProjectCollections(
        project=project,
        tenant=tenant_name(project),
        handles={role: client.collections.use(name) for role, name in names.by_role().items()},
        vector_text_version=vectors,
    )


def create_legacy_blame(client: weaviate.WeaviateClient, name: str) -> None:
    """As store/blame.py BlameLedger.ensure made it."""
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
    )


def create_legacy_examples(client: weaviate.WeaviateClient, project: str, name: str, embedder: Embedder) -> None:
    """As store/examples.py ExampleLibrary.ensure made it: the embedder's binding in the description."""
    binding = {"project": project, "embedder": embedder.id, "dimension": embedder.dimension}
    client.collections.create(
        name,
        description=json.dumps(binding, ensure_ascii=False),
        properties=[field.weaviate_property() for field in EXAMPLE_FIELDS],
        vector_config=Configure.Vectors.self_provided(),
    )


def create_legacy_suggestions(client: weaviate.WeaviateClient, project: str, name: str) -> None:
    """As store/suggestions.py SuggestionBox.ensure made it."""
    client.collections.create(
        name,
        description=json.dumps({"project": project, "suggestions": 1}, ensure_ascii=False),
        properties=[field.weaviate_property() for field in SUGGESTION_FIELDS],
        vector_config=Configure.Vectors.self_provided(),
    )


def drop_late_collections(client: weaviate.WeaviateClient, project: str) -> None:
    """What an install made before the blame ledger, few-shot examples and suggestions has: none of them."""
    names = legacy_collection_names(project).by_role()
    client.collections.delete([names[role] for role in LATE_ROLES])


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
