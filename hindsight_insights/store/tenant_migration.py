"""Moving an install of one collection set per project (Hindsight_<slug>_Insight, _Turn, _Audit, _Budget, and in
installs made since they came, _Blame, _Example, _Suggestion) into the shared multi-tenant set (tenancy.py):
`python -m hindsight_cli migrate`, never a side effect of opening a store (which warns when a project still has its
own collections).

For each of the project's old collections:
1. copy: every object, with its uuid, properties and vector, into the project's tenant of the shared collection;
   an object whose uuid is already there is left as it is (copied by an interrupted run, or written by this version
   since the upgrade);
2. verify: every old object is in the tenant with the same properties and the same vector; the counts per status
   (insights: status, turns: error_status, audit: action, blame: kind, examples: scope, suggestions: status) are
   reported for both sides;
3. only when every old collection of the project verifies are they dropped, the insights last.

A collection the project does not have (an install older than the blame ledger, few-shot examples or suggestions) is
skipped. The insights' and the few-shot examples' old binding must name the configured embedder: their vectors are
copied as they are.

A run killed at any point is finished by running the command again: it copies what is missing, verifies everything
again and drops what is left. Vectors made by an older recipe are copied as they are, and the project's record says
so, so that the same command then makes them again (migration.embed_again).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import weaviate
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter
from weaviate.collections import Collection as WeaviateCollection

from hindsight_insights.connection import SAFE_TO_RERUN, weaviate_errors
from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import EmbedderMismatch, HindsightError
from hindsight_insights.store.migration import MIGRATE_COMMAND
from hindsight_insights.store.replication import SINGLE_NODE, Replication
from hindsight_insights.store.schema import (
    AUDIT,
    BLAME,
    BUDGET,
    EXAMPLES,
    INSIGHTS,
    SUGGESTIONS,
    TURNS,
    VECTOR_NAME,
    VECTOR_TEXT_VERSION,
    legacy_collection_names,
    spec_of,
)
from hindsight_insights.store.tenancy import ProjectTenancy, ensure_collections

log = logging.getLogger(__name__)

STATUS_PROPERTY = {  # what "counts per status" counts
    INSIGHTS: "status",
    TURNS: "error_status",
    AUDIT: "action",
    BLAME: "kind",
    EXAMPLES: "scope",
    SUGGESTIONS: "status",
}
# The insights, whose binding names the project (legacy_projects finds it by them), go last.
DROP_ORDER = (TURNS, AUDIT, BUDGET, BLAME, EXAMPLES, SUGGESTIONS, INSIGHTS)
_LEGACY = re.compile(r"Hindsight_.+_Insight")


@dataclass
class CollectionMove:
    role: str
    old: str  # the old collection's name
    copied: int = 0  # objects this run wrote
    already: int = 0  # objects found in the tenant already
    old_counts: dict[str, int] = field(default_factory=dict)  # per status (or "all")
    new_counts: dict[str, int] = field(default_factory=dict)  # of the same objects, in the tenant
    mismatched: list[str] = field(default_factory=list)  # ids missing from the tenant or different there

    @property
    def verified(self) -> bool:
        return not self.mismatched and self.old_counts == self.new_counts


@dataclass
class ProjectMove:
    project: str
    tenant: str = ""
    moves: list[CollectionMove] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return all(move.verified for move in self.moves)


def legacy_projects(client: weaviate.WeaviateClient) -> list[str]:
    """The projects that still have collections of their own (named in their insights collection's binding)."""
    projects = []
    with weaviate_errors("listing the collections"):
        configs = client.collections.list_all(simple=True)
    for name, config in configs.items():
        if not _LEGACY.fullmatch(name):
            continue
        binding = _binding(config.description)
        if isinstance(binding.get("project"), str):
            projects.append(binding["project"])
    return sorted(projects)


def warn_of_legacy_collections(client: weaviate.WeaviateClient, project: str) -> None:
    """A store opened on a project that still has its own collections sees none of what they hold: say so."""
    if client.collections.exists(legacy_collection_names(project).insights):
        log.warning(
            "project %r still has collections of its own from a version before tenants: this store does not see "
            "what they hold until `%s --project %s` moves them into its tenant",
            project,
            MIGRATE_COMMAND,
            project,
        )


def move_into_tenants(
    client: weaviate.WeaviateClient,
    project: str,
    embedder: Embedder,
    *,
    batch_size: int = 200,
    progress: Callable[[str, int], None] | None = None,
    replication: Replication = SINGLE_NODE,
) -> ProjectMove:
    """Copy the project's own collections into its tenant, verify, then drop them (see the module's docstring).
    Raises HindsightError, having dropped nothing, when a collection does not verify."""
    legacy = legacy_collection_names(project).by_role()
    with weaviate_errors("reading the project's own collections"):
        present = {role: name for role, name in legacy.items() if client.collections.exists(name)}
    report = ProjectMove(project)
    if not present:
        return report
    old_vectors = VECTOR_TEXT_VERSION
    if INSIGHTS in present:
        binding = _check_old_binding(client.collections.use(present[INSIGHTS]), present[INSIGHTS], embedder)
        old_vectors = int(binding.get("vectors", 1))
    if EXAMPLES in present:
        _check_old_binding(client.collections.use(present[EXAMPLES]), present[EXAMPLES], embedder)
    with weaviate_errors("creating the project's tenant"):
        collections = ensure_collections(client, project, embedder, vectors=old_vectors, replication=replication)
        tenancy = ProjectTenancy(client, collections.project, collections.tenant, replication=replication)
        if old_vectors < tenancy.vector_text_version():  # noted before copying: a crash leaves it noted
            tenancy.record_vectors(old_vectors)
    report.tenant = collections.tenant
    with weaviate_errors("copying the project into its tenant", SAFE_TO_RERUN):
        for role, name in present.items():
            old = client.collections.use(name)
            _check_fields(old, name, role)
            move = CollectionMove(role, name)
            _copy(old, collections.of(role), move, batch_size, progress)
            _verify(old, collections.of(role), move)
            report.moves.append(move)
    if not report.verified:
        raise HindsightError(_not_verified(report))
    with weaviate_errors("dropping the project's own collections", SAFE_TO_RERUN):
        for role in DROP_ORDER:
            if role in present:
                client.collections.delete(present[role])
                report.dropped.append(present[role])
    log.info("moved project %r into tenant %r: %s", project, report.tenant, _summary(report))
    return report


def _binding(description: str | None) -> dict[str, Any]:
    try:
        found = json.loads(description or "")
    except json.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def _check_old_binding(collection: WeaviateCollection, name: str, embedder: Embedder) -> dict[str, Any]:
    """The binding a vectorised old collection records: its embedder must be the configured one."""
    binding = _binding(collection.config.get().description)
    if "embedder" not in binding:
        raise HindsightError(f"collection {name} was not created by Hindsight Insights; it is left as it is")
    if (binding["embedder"], binding.get("dimension")) != (embedder.id, embedder.dimension):
        raise EmbedderMismatch(
            f"collection {name} holds vectors of {binding['embedder']} ({binding.get('dimension')} dims), but the "
            f"configured embedder is {embedder.id} ({embedder.dimension} dims): configure the embedder it was made "
            "with to move it into its tenant"
        )
    return binding


def _check_fields(old: WeaviateCollection, name: str, role: str) -> None:
    """Every old property must have a place in the shared collection, or copying would drop it."""
    known = {stored.name for stored in spec_of(role).fields}
    unknown = sorted({prop.name for prop in old.config.get().properties} - known)
    if unknown:
        raise HindsightError(
            f"collection {name} has properties this version does not store ({', '.join(unknown)}); nothing was moved"
        )


def _batches(collection: WeaviateCollection, size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for obj in collection.iterator(include_vector=True):
        batch.append(obj)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _writable(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list):
        return [_writable(item) for item in value]
    return value


def _vector(obj: Any) -> list[float] | None:
    vectors = obj.vector if isinstance(obj.vector, dict) else {VECTOR_NAME: obj.vector}
    vector = vectors.get(VECTOR_NAME)
    return list(vector) if vector else None


def _copy(
    old: WeaviateCollection,
    new: WeaviateCollection,
    move: CollectionMove,
    batch_size: int,
    progress: Callable[[str, int], None] | None,
) -> None:
    for batch in _batches(old, batch_size):
        ids = [obj.uuid for obj in batch]
        there = {
            obj.uuid
            for obj in new.query.fetch_objects(
                filters=Filter.by_id().contains_any(ids), limit=len(ids), return_properties=[]
            ).objects
        }
        missing = [obj for obj in batch if obj.uuid not in there]
        move.already += len(batch) - len(missing)
        if missing:
            objects = []
            for obj in missing:
                vector = _vector(obj)
                properties = {key: _writable(value) for key, value in obj.properties.items() if value is not None}
                objects.append(
                    DataObject(properties=properties, uuid=obj.uuid, vector={VECTOR_NAME: vector} if vector else None)
                )
            result = new.data.insert_many(objects)
            if result.has_errors:
                first = next(iter(result.errors.values()))
                raise HindsightError(
                    f"copying {move.old} failed for {len(result.errors)} objects ({first.message}); nothing was "
                    f"dropped: run `{MIGRATE_COMMAND}` again"
                )
            move.copied += len(objects)
        if progress is not None:
            progress(move.old, move.copied + move.already)


def _fingerprint(properties: Mapping[str, Any], keys: Sequence[str], vector: list[float] | None) -> str:
    """What must survive the move: the properties (those the old collection had) and the vector, bit for bit."""
    values = {key: properties.get(key) for key in keys}
    digest = hashlib.sha256(json.dumps(values, sort_keys=True, default=str, ensure_ascii=False).encode())
    if vector:
        digest.update(np.asarray(vector, dtype=np.float32).tobytes())
    return digest.hexdigest()


def _verify(old: WeaviateCollection, new: WeaviateCollection, move: CollectionMove) -> None:
    keys = [prop.name for prop in old.config.get().properties]
    status = STATUS_PROPERTY.get(move.role)
    expected: dict[uuid.UUID, tuple[str, str]] = {}
    for obj in old.iterator(include_vector=True):
        label = str(obj.properties.get(status) or "") if status else "all"
        expected[obj.uuid] = (label, _fingerprint(obj.properties, keys, _vector(obj)))
    found: dict[uuid.UUID, tuple[str, str]] = {}
    for obj in new.iterator(include_vector=True):
        if obj.uuid in expected:
            label = str(obj.properties.get(status) or "") if status else "all"
            found[obj.uuid] = (label, _fingerprint(obj.properties, keys, _vector(obj)))
    move.old_counts = dict(Counter(label for label, _ in expected.values()))
    move.new_counts = dict(Counter(label for label, _ in found.values()))
    move.mismatched = sorted(str(key) for key, value in expected.items() if found.get(key) != value)


def _summary(report: ProjectMove) -> str:
    return "; ".join(
        f"{move.role}: {sum(move.old_counts.values())} ({move.copied} copied now) {move.old_counts}"
        for move in report.moves
    )


def _not_verified(report: ProjectMove) -> str:
    details = "; ".join(
        f"{move.old}: {len(move.mismatched)} objects missing or different in the tenant (e.g. "
        f"{', '.join(move.mismatched[:3])}), counts {move.old_counts} before, {move.new_counts} after"
        for move in report.moves
        if not move.verified
    )
    return (
        f"project {report.project!r} was copied into tenant {report.tenant!r} but does not verify, so nothing was "
        f"dropped: {details}. An object changed since the upgrade differs from its old copy; check it, then delete "
        "the old collection by hand."
    )
