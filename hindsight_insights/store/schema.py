"""The collection set every project shares, as a tenant of each collection: the collections, their properties (each
declared once, with where it lives on the model, which drives the conversion both ways), and how they are created.

Adding a collection to the set: declare its fields (a tuple of StoredField) and add a CollectionSpec with a new role
to COLLECTION_SET. store/tenancy.py then creates it multi-tenant, creates each project's tenant in it, hands it out
already scoped to the project (`ProjectCollections.of(role)`), deactivates idle projects in it, and the migration
and `drop_project` cover it. Nothing else needs to know about tenants.

The layout before tenants (one collection set per project) is kept only as `legacy_collection_names`, which the
migration into tenants reads (store/tenant_migration.py).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

import numpy as np
import weaviate
from pydantic import BaseModel
from weaviate.classes.config import (
    Configure,
    DataType,
    Property,
    Reconfigure,
    ReplicationConfigCreate,
    StopwordsPreset,
    Tokenization,
)
from weaviate.collections import Collection as WeaviateCollection

from hindsight_insights.embedder import Vectors
from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import NEVER, Insight
from hindsight_insights.store.replication import SINGLE_NODE, Replication, needs_async_flag

SCHEMA_VERSION = 2  # bumped when stored fields change; collections of another version are refused
# Bumped when what the store derives from an insight changes: its vector (table.embedding_text), its search text or its
# keys (keys.py). A store opening an older collection warns; `python -m hindsight_cli migrate` makes them again
# (store/migration.py): vectors of two recipes must not mix, and a slot key made the old way would split a slot.
# 2: vectors from topic, action, quote and scene. 3: slot and topic keys keep a number's sign and decimal point.
VECTOR_TEXT_VERSION = 3
VECTOR_NAME = "default"  # Configure.Vectors.self_provided() without a name
# A filtered vector search whose allowed set is smaller than this scans it exactly; a larger one walks the HNSW graph
# with the filter. Weaviate's default (40,000) made a scene of a 100,000-insight project (about 18,000 eligible) an
# exact scan: 22 ms, against 8 ms through the graph (bench/bench_search.py). Small projects still scan exactly.
FLAT_SEARCH_CUTOFF = 3000


def project_slug(project: str) -> str:
    """The project's name as ASCII letters, digits and "_", lower case (40 characters at most), plus the first 8 hex
    digits of sha256(name) unless the slug is exactly the name, so distinct names never share a slug. It named the
    per-project collections before tenants and still names the worker's job table."""
    name = unicodedata.normalize("NFKC", project).strip()
    if not name:
        raise InvalidInput([("project", "must not be empty")])
    slug = re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_").lower()[:40]
    if slug != name:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        slug = f"{slug}_{digest}" if slug else digest
    return slug


@dataclass(frozen=True)
class LegacyCollectionNames:
    """A project's own collections, as versions before tenants made them. Read only by the migration."""

    insights: str
    turns: str
    audit: str
    budget: str
    blame: str  # this one and the next two came last: an install may predate them
    examples: str
    suggestions: str

    def by_role(self) -> dict[str, str]:
        return {
            INSIGHTS: self.insights,
            TURNS: self.turns,
            AUDIT: self.audit,
            BUDGET: self.budget,
            BLAME: self.blame,
            EXAMPLES: self.examples,
            SUGGESTIONS: self.suggestions,
        }


def legacy_collection_names(project: str) -> LegacyCollectionNames:
    """Hindsight_<slug>_Insight, _Turn, _Audit, _Budget, _Blame, _Example and _Suggestion (project_slug:
    "default" -> Hindsight_default_Insight, "售后客服" -> Hindsight_<hash8>_Insight, "Shop-CN" ->
    Hindsight_shop_cn_<hash8>_Insight)."""
    base = f"Hindsight_{project_slug(project)}"
    return LegacyCollectionNames(
        insights=f"{base}_Insight",
        turns=f"{base}_Turn",
        audit=f"{base}_Audit",
        budget=f"{base}_Budget",
        blame=f"{base}_Blame",
        examples=f"{base}_Example",
        suggestions=f"{base}_Suggestion",
    )


class Index(Enum):
    """How a property is indexed. Text is never BM25-searchable except the one segmented property."""

    KEYWORD = "keyword"  # exact-match filterable text
    VALUE = "value"  # numbers, dates, booleans, ids: filterable and sortable as Weaviate does by default
    STORED = "stored"  # kept for display only
    SEGMENTED = "segmented"  # rjieba-segmented text, whitespace-tokenised: the only BM25 property (segment.py)


@dataclass(frozen=True)
class StoredField:
    """One property: its Weaviate type and index, and where its value lives on the model (None: the store derives
    it, e.g. a normalised key or the segmented search text)."""

    name: str
    data_type: DataType
    index: Index = Index.VALUE
    path: tuple[str, ...] | None = ()
    # Stored for None: Weaviate cannot set a property back to null in a partial update, so a field that is cleared
    # later (an expiry removed, a chain link cut) stores this value instead, and reads it back as None.
    none_as: Any = None

    @property
    def model_path(self) -> tuple[str, ...] | None:
        return (self.name,) if self.path == () else self.path

    def weaviate_property(self) -> Property:
        if self.index is Index.KEYWORD:
            return Property(
                name=self.name,
                data_type=self.data_type,
                tokenization=Tokenization.FIELD,
                index_filterable=True,
                index_searchable=False,
            )
        if self.index is Index.STORED:
            return Property(name=self.name, data_type=self.data_type, index_filterable=False, index_searchable=False)
        if self.index is Index.SEGMENTED:
            return Property(
                name=self.name,
                data_type=self.data_type,
                tokenization=Tokenization.WHITESPACE,
                index_searchable=True,
                index_filterable=False,
            )
        return Property(name=self.name, data_type=self.data_type)


NO_ID = uuid.UUID(int=0)  # stored for "no link"

TEXT, TEXTS, INT, NUMBER, DATE, BOOL, UUIDS = (
    DataType.TEXT,
    DataType.TEXT_ARRAY,
    DataType.INT,
    DataType.NUMBER,
    DataType.DATE,
    DataType.BOOL,
    DataType.UUID_ARRAY,
)

INSIGHT_FIELDS = (
    StoredField("topic", TEXT, Index.STORED),
    StoredField("topic_key", TEXT, Index.KEYWORD, path=None),  # keys.normalize_key(topic)
    StoredField("kind", TEXT, Index.KEYWORD),
    StoredField("scene", TEXT, Index.STORED),
    StoredField("scene_key", TEXT, Index.KEYWORD, path=None),  # keys.scene_key(scene): what scene filters match
    StoredField("slot_key", TEXT, Index.KEYWORD, path=None),  # keys.slot_key: the versions of one rule
    StoredField("observation", TEXT, Index.STORED),
    StoredField("action", TEXT, Index.STORED),
    StoredField("evidence_quote", TEXT, Index.STORED, path=("evidence", "quote")),
    StoredField("evidence_session_id", TEXT, Index.KEYWORD, path=("evidence", "session_id"), none_as=""),
    StoredField("evidence_turn", INT, path=("evidence", "turn"), none_as=-1),
    StoredField("tags", TEXTS, Index.KEYWORD),
    StoredField("confidence", NUMBER),
    StoredField("expire_at", DATE, none_as=NEVER),
    StoredField("user_id", TEXT, Index.KEYWORD),
    StoredField("scope", TEXT, Index.KEYWORD),
    StoredField("status", TEXT, Index.KEYWORD),
    StoredField("source", TEXT, Index.KEYWORD),
    StoredField("review_reason", TEXT, Index.STORED, none_as=""),
    StoredField("condition", TEXT, Index.KEYWORD),
    StoredField("condition_detail", TEXT, Index.STORED, none_as=""),
    StoredField("learned_from", TEXT, Index.KEYWORD, none_as=""),
    StoredField("supporters", TEXTS, Index.KEYWORD),
    StoredField("support_count", INT),
    StoredField("supersedes", UUIDS),
    StoredField("superseded_by", DataType.UUID, none_as=NO_ID),
    StoredField("resume_at", DATE, none_as=NEVER),
    StoredField("asserted_at", DATE),
    StoredField("created_at", DATE),
    StoredField("updated_at", DATE),
    StoredField("search_text", TEXT, Index.SEGMENTED, path=None),
)

TURN_FIELDS = (
    StoredField("session_id", TEXT, Index.KEYWORD),
    StoredField("user_id", TEXT, Index.KEYWORD),
    StoredField("message_id", TEXT, Index.KEYWORD),
    StoredField("scene", TEXT, Index.KEYWORD),
    StoredField("sequence", INT),  # microseconds since the epoch: the order of a session's turns
    StoredField("user_message", TEXT, Index.STORED),
    StoredField("assistant_message", TEXT, Index.STORED),
    StoredField("feedback", TEXT, Index.KEYWORD, path=("signals", "feedback")),
    StoredField("tool_error", BOOL, path=("signals", "tool_error")),
    StoredField("stopped_generation", BOOL, path=("signals", "stopped_generation")),
    StoredField("correction", BOOL, path=("signals", "correction")),
    StoredField("detected_type", TEXT, Index.KEYWORD, path=("signals", "detected", "type")),
    StoredField("detected_confidence", NUMBER, path=("signals", "detected", "confidence")),
    StoredField("detected_corrected", TEXT, Index.STORED, path=("signals", "detected", "corrected")),
    StoredField("detected_original", TEXT, Index.STORED, path=("signals", "detected", "original")),
    StoredField("detected_topic", TEXT, Index.STORED, path=("signals", "detected", "topic")),
    StoredField("detected_condition", TEXT, Index.STORED, path=("signals", "detected", "condition")),
    StoredField("detected_condition_detail", TEXT, Index.STORED, path=("signals", "detected", "condition_detail")),
    StoredField("injected_insight_ids", UUIDS),
    StoredField("sources", TEXTS, Index.STORED),
    StoredField("tool_calls", TEXTS, Index.STORED),
    StoredField("answer_confidence", NUMBER),
    StoredField("error_status", TEXT, Index.KEYWORD),
    StoredField("correction_type", TEXT, Index.STORED, path=("correction", "type")),
    StoredField("correction_original", TEXT, Index.STORED, path=("correction", "original")),
    StoredField("correction_corrected", TEXT, Index.STORED, path=("correction", "corrected")),
    StoredField("correction_condition", TEXT, Index.STORED, path=("correction", "condition")),
    StoredField("correction_condition_detail", TEXT, Index.STORED, path=("correction", "condition_detail")),
    StoredField("correction_by", TEXT, Index.STORED, path=("correction", "by")),
    StoredField("correction_at", DATE, path=("correction", "at")),
    StoredField("correction_in_turn", DataType.UUID, path=("correction", "in_turn")),
    StoredField("created_at", DATE),
)

BUDGET_FIELDS = (  # store/budget.py: one object per workspace-model call
    StoredField("day", TEXT, Index.KEYWORD),
    StoredField("purpose", TEXT, Index.KEYWORD),
    StoredField("at", DATE),
    StoredField("taker", TEXT, Index.STORED),  # who took the call: a racing writer that overwrote it took it
)

BLAME_FIELDS = (  # store/blame.py: one mark per (insight, judged turn, kind)
    StoredField("insight_id", DataType.UUID),
    StoredField("turn_id", DataType.UUID),
    StoredField("by_turn", DataType.UUID),
    StoredField("session_id", TEXT, Index.KEYWORD),
    StoredField("user_id", TEXT, Index.KEYWORD),
    StoredField("kind", TEXT, Index.KEYWORD),
    StoredField("reason", TEXT, Index.KEYWORD),
    StoredField("weight", NUMBER),
    StoredField("at", DATE),
)

EXAMPLE_FIELDS = (  # store/examples.py: few-shot examples, vectorised with the project's embedder
    StoredField("user_id", TEXT, Index.KEYWORD),
    StoredField("scope", TEXT, Index.KEYWORD),
    StoredField("session_id", TEXT, Index.KEYWORD),
    StoredField("turn_id", DataType.UUID),
    StoredField("scene", TEXT, Index.STORED),
    StoredField("scene_key", TEXT, Index.KEYWORD, path=None),
    StoredField("topic", TEXT, Index.STORED),
    StoredField("type", TEXT, Index.KEYWORD),
    StoredField("context", TEXT, Index.STORED),
    StoredField("said", TEXT, Index.STORED),
    StoredField("corrected", TEXT, Index.STORED),
    StoredField("learned_at", DATE),
    StoredField("expire_at", DATE),
    StoredField("merged", INT),
    StoredField("promoted_by", TEXT, Index.STORED, none_as=""),
)

SUGGESTION_FIELDS = (  # store/suggestions.py: prompt suggestions
    StoredField("topic", TEXT, Index.STORED),
    StoredField("topic_key", TEXT, Index.KEYWORD),
    StoredField("scene", TEXT, Index.STORED),
    StoredField("scene_key", TEXT, Index.KEYWORD),
    StoredField("type", TEXT, Index.KEYWORD),
    StoredField("corrections", INT),
    StoredField("users", INT),
    StoredField("sessions", INT),
    StoredField("first_at", DATE),
    StoredField("last_at", DATE),
    StoredField("evidence_json", TEXT, Index.STORED, path=None),  # the evidence list, as JSON
    StoredField("text", TEXT, Index.STORED),
    StoredField("status", TEXT, Index.KEYWORD),
    StoredField("decided_by", TEXT, Index.STORED, none_as=""),
    StoredField("decided_at", DATE),
    StoredField("decided_corrections", INT),
    StoredField("note", TEXT, Index.STORED),
    StoredField("reopened", INT),
    StoredField("created_at", DATE),
    StoredField("updated_at", DATE),
)

AUDIT_FIELDS = (
    StoredField("insight_id", DataType.UUID),
    StoredField("action", TEXT, Index.KEYWORD),
    StoredField("actor", TEXT, Index.KEYWORD),
    StoredField("at", DATE),
    StoredField("before", TEXT, Index.STORED),  # the insight as JSON, before and after
    StoredField("after", TEXT, Index.STORED),
    StoredField("note", TEXT, Index.STORED),
)


class StoredObject(Protocol):
    """What the store reads of an object weaviate-client returns (its several return types all have these)."""

    @property
    def uuid(self) -> uuid.UUID: ...

    @property
    def properties(self) -> Mapping[str, Any]: ...

    @property
    def vector(self) -> Mapping[str, Any]: ...


def _same(value: Any, none_as: Any) -> bool:
    return none_as is not None and (value == none_as or str(value) == str(none_as))


def _encode(value: Any) -> Any:
    if isinstance(value, uuid.UUID | Enum):
        return str(value.value if isinstance(value, Enum) else value)
    if isinstance(value, list):
        return [_encode(item) for item in value]
    return value


def to_properties(
    model: BaseModel, fields: Sequence[StoredField], only: Collection[str] | None = None, **derived: Any
) -> dict[str, Any]:
    """The model as Weaviate properties (all, or `only` these), plus the derived ones. None is stored as the field's
    `none_as`, or left out."""
    properties: dict[str, Any] = {}
    for field in fields:
        if only is not None and field.name not in only:
            continue
        path = field.model_path
        value: Any = derived.get(field.name) if path is None else model
        for step in path or ():
            value = None if value is None else getattr(value, step)  # an optional part (a correction) may be absent
        if value is None:
            value = field.none_as
        if value is not None:
            properties[field.name] = _encode(value)
    return properties


def from_object[M: BaseModel](obj: StoredObject, fields: Sequence[StoredField], model: type[M]) -> M:
    """The model from a stored object: each property put back where its field says; missing ones take defaults."""
    data: dict[str, Any] = {"id": obj.uuid}
    for field in fields:
        path = field.model_path
        value = obj.properties.get(field.name)
        if path is None or value is None or _same(value, field.none_as):
            continue
        target = data
        for step in path[:-1]:
            target = target.setdefault(step, {})
        target[path[-1]] = value
    return model.model_validate(data)


def insight_from(obj: StoredObject) -> Insight:
    return from_object(obj, INSIGHT_FIELDS, Insight)


def vector_of(obj: StoredObject) -> Vectors:
    """The stored vector of an object read with include_vector=True."""
    vector = obj.vector[VECTOR_NAME] if isinstance(obj.vector, dict) else obj.vector
    return np.asarray(vector, dtype=np.float32)


INSIGHTS, TURNS, AUDIT, BUDGET = "Insight", "Turn", "Audit", "Budget"
BLAME, EXAMPLES, SUGGESTIONS = "Blame", "Example", "Suggestion"
# The shared collections are "Hindsight" + role: a name no per-project collection ("Hindsight_<slug>_<role>") has.
COLLECTION_PREFIX = "Hindsight"


@dataclass(frozen=True)
class CollectionSpec:
    """One collection of the set: every project has a tenant in it."""

    role: str  # the collection's name after COLLECTION_PREFIX, and its key in ProjectCollections
    fields: Sequence[StoredField]
    purpose: str  # recorded in the collection's description, for someone reading the schema

    @property
    def name(self) -> str:
        return f"{COLLECTION_PREFIX}{self.role}"

    def properties(self) -> list[Property]:
        return [field.weaviate_property() for field in self.fields]


COLLECTION_SET: tuple[CollectionSpec, ...] = (
    CollectionSpec(INSIGHTS, INSIGHT_FIELDS, "insights"),
    CollectionSpec(TURNS, TURN_FIELDS, "the turn log"),
    CollectionSpec(AUDIT, AUDIT_FIELDS, "the reviewers' audit trail"),
    CollectionSpec(BUDGET, BUDGET_FIELDS, "workspace-model calls per day (store/budget.py)"),
    CollectionSpec(BLAME, BLAME_FIELDS, "blame and support of injected insights (store/blame.py)"),
    # Vectors of the project's embedder (as the insights'), which its record in the registry binds.
    CollectionSpec(EXAMPLES, EXAMPLE_FIELDS, "few-shot examples (store/examples.py)"),
    CollectionSpec(SUGGESTIONS, SUGGESTION_FIELDS, "prompt suggestions (store/suggestions.py)"),
)


def spec_of(role: str) -> CollectionSpec:
    for spec in COLLECTION_SET:
        if spec.role == role:
            return spec
    raise KeyError(f"no collection {role!r} in the set (schema.COLLECTION_SET)")


@dataclass(frozen=True)
class ProjectCollections:
    """The project's handles on the shared collections, each already scoped to its tenant (tenancy.py makes them)."""

    project: str
    tenant: str
    handles: Mapping[str, WeaviateCollection]  # role -> collection.with_tenant(tenant)
    vector_text_version: int  # of the insights' vectors: older than VECTOR_TEXT_VERSION means they are made again

    def of(self, role: str) -> WeaviateCollection:
        return self.handles[role]

    @property
    def insights(self) -> WeaviateCollection:
        return self.handles[INSIGHTS]

    @property
    def turns(self) -> WeaviateCollection:
        return self.handles[TURNS]

    @property
    def audit(self) -> WeaviateCollection:
        return self.handles[AUDIT]

    @property
    def budget(self) -> WeaviateCollection:
        return self.handles[BUDGET]

    @property
    def blame(self) -> WeaviateCollection:
        return self.handles[BLAME]

    @property
    def examples(self) -> WeaviateCollection:
        return self.handles[EXAMPLES]

    @property
    def suggestions(self) -> WeaviateCollection:
        return self.handles[SUGGESTIONS]


def create_collection(
    client: weaviate.WeaviateClient, spec: CollectionSpec, description: str, replication: Replication = SINGLE_NODE
) -> None:
    """Create one collection of the set, multi-tenant; tenants are created and activated on first use too; with
    `replication.factor` copies of each tenant on a cluster. Another process creating it first is no error."""
    try:
        client.collections.create(
            spec.name,
            description=description,
            properties=spec.properties(),
            vector_config=Configure.Vectors.self_provided(
                vector_index_config=Configure.VectorIndex.hnsw(flat_search_cutoff=FLAT_SEARCH_CUTOFF)
            ),
            # No stop words: ids and keys are matched whole, and an id such as "a" must still be found.
            inverted_index_config=Configure.inverted_index(
                index_null_state=True, stopwords_preset=StopwordsPreset.NONE
            ),
            multi_tenancy_config=Configure.multi_tenancy(
                enabled=True, auto_tenant_creation=True, auto_tenant_activation=True
            ),
            replication_config=replication_config(client, replication),
        )
    except weaviate.exceptions.UnexpectedStatusCodeError as error:
        if "already exists" not in str(error):
            raise


def use_flat_search_cutoff(collection: WeaviateCollection) -> None:
    """A collection made before FLAT_SEARCH_CUTOFF was set gets it too (it can be changed in place)."""
    vectors = collection.config.get().vector_config or {}
    index = vectors[VECTOR_NAME].vector_index_config if VECTOR_NAME in vectors else None
    if index is not None and getattr(index, "flat_search_cutoff", FLAT_SEARCH_CUTOFF) != FLAT_SEARCH_CUTOFF:
        collection.config.update(
            vector_config=[
                Reconfigure.Vectors.update(
                    name=VECTOR_NAME,
                    vector_index_config=Reconfigure.VectorIndex.hnsw(flat_search_cutoff=FLAT_SEARCH_CUTOFF),
                )
            ]
        )


def replication_config(client: weaviate.WeaviateClient, replication: Replication) -> ReplicationConfigCreate | None:
    """None on one node (the server's default, as before replication was configurable); else the factor, with async
    replication asked for where the server does not turn it on by itself (store/replication.py)."""
    if replication.factor <= 1:
        return None
    version = str(client.get_meta().get("version", ""))
    if needs_async_flag(version):
        with warnings.catch_warnings():  # the client's deprecation is about 1.38 and newer, where it is not passed
            warnings.simplefilter("ignore", DeprecationWarning)
            return Configure.replication(factor=replication.factor, async_enabled=True)
    return Configure.replication(factor=replication.factor)
