"""Per-project collections: their names, their properties, and the embedder they are bound to.

Name mapping (project name -> collection names):
  1. NFKC-normalise and trim the project name;
  2. slug = ASCII letters and digits kept, every other run of characters becomes "_", lower-cased, at most 40 chars;
  3. if the slug is not exactly the project name (Chinese, capitals, punctuation, truncation), append "_" plus the
     first 8 hex digits of sha256(name), so distinct names never share collections;
  4. base = "Hindsight_" + slug (+ hash); collections are base + "_Insight" and base + "_Turn".
Examples: "default" -> Hindsight_default_Insight; "售后客服" -> Hindsight_<hash8>_Insight;
"Shop-CN" -> Hindsight_shop_cn_<hash8>_Insight.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass

import weaviate
from weaviate.classes.config import Configure, DataType, Property, Tokenization
from weaviate.collections import Collection

from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import EmbedderMismatch, HindsightError, InvalidInput

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class CollectionNames:
    insights: str
    turns: str


def collection_names(project: str) -> CollectionNames:
    name = unicodedata.normalize("NFKC", project).strip()
    if not name:
        raise InvalidInput([("project", "must not be empty")])
    slug = re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_").lower()[:40]
    if slug != name:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        slug = f"{slug}_{digest}" if slug else digest
    base = f"Hindsight_{slug}"
    return CollectionNames(insights=f"{base}_Insight", turns=f"{base}_Turn")


def _keyword(name: str, data_type: DataType = DataType.TEXT) -> Property:
    """Exact-match filterable, not BM25-searchable."""
    return Property(
        name=name, data_type=data_type, tokenization=Tokenization.FIELD, index_filterable=True, index_searchable=False
    )


def _stored(name: str, data_type: DataType = DataType.TEXT) -> Property:
    """Kept for display only."""
    return Property(name=name, data_type=data_type, index_filterable=False, index_searchable=False)


INSIGHT_PROPERTIES = [
    _stored("topic"),
    _keyword("topic_key"),
    _keyword("kind"),
    _keyword("scene"),
    _stored("observation"),
    _stored("action"),
    _stored("evidence_quote"),
    _keyword("evidence_session_id"),
    Property(name="evidence_turn", data_type=DataType.INT),
    _keyword("tags", DataType.TEXT_ARRAY),
    Property(name="confidence", data_type=DataType.NUMBER),
    Property(name="expire_at", data_type=DataType.DATE),
    _keyword("user_id"),
    _keyword("scope"),
    _keyword("status"),
    _keyword("source"),
    Property(name="support_count", data_type=DataType.INT),
    Property(name="supersedes", data_type=DataType.UUID_ARRAY),
    Property(name="created_at", data_type=DataType.DATE),
    Property(name="updated_at", data_type=DataType.DATE),
    # rjieba-segmented text; the only BM25 property (see segment.py).
    Property(
        name="search_text",
        data_type=DataType.TEXT,
        tokenization=Tokenization.WHITESPACE,
        index_searchable=True,
        index_filterable=False,
    ),
]

TURN_PROPERTIES = [
    _keyword("session_id"),
    _keyword("user_id"),
    _keyword("scene"),
    Property(name="turn_index", data_type=DataType.INT),
    _stored("user_message"),
    _stored("assistant_message"),
    _keyword("feedback"),
    Property(name="tool_error", data_type=DataType.BOOL),
    Property(name="stopped_generation", data_type=DataType.BOOL),
    Property(name="correction", data_type=DataType.BOOL),
    Property(name="injected_insight_ids", data_type=DataType.UUID_ARRAY),
    Property(name="created_at", data_type=DataType.DATE),
]


@dataclass(frozen=True)
class ProjectCollections:
    insights: Collection
    turns: Collection


def ensure_collections(client: weaviate.WeaviateClient, project: str, embedder: Embedder) -> ProjectCollections:
    """Create the project's collections if missing (idempotent) and check they belong to this embedder."""
    names = collection_names(project)
    binding = {"project": project, "embedder": embedder.id, "dimension": embedder.dimension, "schema": SCHEMA_VERSION}
    for name, properties in ((names.insights, INSIGHT_PROPERTIES), (names.turns, TURN_PROPERTIES)):
        if not client.collections.exists(name):
            try:
                client.collections.create(
                    name,
                    description=json.dumps(binding, ensure_ascii=False),
                    properties=properties,
                    vector_config=Configure.Vectors.self_provided(),
                    inverted_index_config=Configure.inverted_index(index_null_state=True),
                )
            except weaviate.exceptions.UnexpectedStatusCodeError as error:
                if "already exists" not in str(error):  # another process created it first
                    raise
        _check_binding(client.collections.use(name), name, binding)
    return ProjectCollections(client.collections.use(names.insights), client.collections.use(names.turns))


def _check_binding(collection: Collection, name: str, expected: dict[str, object]) -> None:
    description = collection.config.get().description or ""
    try:
        found = json.loads(description)
    except json.JSONDecodeError:
        found = None
    if not isinstance(found, dict) or "embedder" not in found:
        raise HindsightError(
            f"collection {name} exists but was not created by Hindsight Insights; choose another project"
        )
    if (found["embedder"], found.get("dimension")) != (expected["embedder"], expected["dimension"]):
        raise EmbedderMismatch(
            f"collection {name} holds vectors of {found['embedder']} ({found.get('dimension')} dims), but the "
            f"configured embedder is {expected['embedder']} ({expected['dimension']} dims). Mixing them would break "
            "search: configure the original embedder, or use another project name."
        )
