"""Projects as tenants: every project is one tenant of each collection of the shared set (schema.COLLECTION_SET), so
a Weaviate holds hundreds or thousands of projects in a handful of collections instead of four collections each.

This module is the one place that knows it. `ensure_collections` hands out the project's handles already scoped to its
tenant (`collection.with_tenant(tenant)`, then the consistency levels of replication.py's `with_levels`), so every
query, write, forget, expiry sweep and worker task of a store reads and writes that tenant only: no other code names a
tenant.

**Tenant names.** Weaviate allows [A-Za-z0-9_-], 1 to 64 characters. A project name (NFKC-normalised and trimmed)
that is already such a name is its own tenant ("shop-cn" -> "shop-cn"); any other is mapped to a readable prefix
(other characters as "_", at most 40) + "--" + the first 16 hex digits of sha256(name) ("售后客服" ->
"--<hash16>", "Shop CN!" -> "Shop_CN--<hash16>"). A name that itself looks like a mapped one (ends in "--" and 16
hex digits) is mapped too, so a project can never take another's tenant by naming itself after it.

**The registry** (`HindsightProject`, not multi-tenant, one small object per project, no user data): the project's
name, its tenant, the embedder its vectors were made by (a project keeps one embedder: reopening it with another is
an EmbedderMismatch, as before tenants; different projects may use different embedders, since each tenant has its own
vector index), the recipe of its vectors (VECTOR_TEXT_VERSION) and when it was last used.

**Active tenants.** Tenants are created when a project is opened (a read of a tenant that does not exist fails;
writes would create it anyway) and activated automatically by Weaviate on their next request, whatever it is.
Weaviate never deactivates one, and each active tenant holds open files in every collection. So `deactivate_idle`
keeps at most `max_active_tenants` projects active and sets the least recently used others INACTIVE (100 per request,
Weaviate's cap). It runs when a store is opened (by the plugin at most once a minute) and in the worker's expiry job.
"Least recently used" comes from the registry's `last_used`, which a process writes when it opens a project and then
at most once a minute while it uses it (`ProjectTenancy.touch`: the plugin on each tool call, the worker on each job),
so every process sees every other's use. Limits: `last_used` is up to a minute stale, so a project in use can be
chosen when more than `max_active_tenants` projects were used within the last minute; it then comes back on its next
request (auto activation, a few ms). A project whose worker polls its turn log stays in use, as it should. Between
two sweeps the number of active projects can exceed the cap by the projects opened since.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
import unicodedata
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import weaviate
from weaviate.classes.config import Configure
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter
from weaviate.classes.tenants import Tenant, TenantActivityStatus
from weaviate.collections import Collection as WeaviateCollection

from hindsight_insights.connection import weaviate_errors
from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import EmbedderMismatch, HindsightError, InvalidInput
from hindsight_insights.store.replication import SINGLE_NODE, Replication, with_levels
from hindsight_insights.store.schema import (
    COLLECTION_PREFIX,
    COLLECTION_SET,
    DATE,
    INSIGHTS,
    INT,
    SCHEMA_VERSION,
    TEXT,
    VECTOR_TEXT_VERSION,
    CollectionSpec,
    Index,
    ProjectCollections,
    StoredField,
    create_collection,
    replication_config,
    spec_of,
    use_flat_search_cutoff,
)

log = logging.getLogger(__name__)

REGISTRY = f"{COLLECTION_PREFIX}Project"
REGISTRY_READ_PAUSES_S = (0.1, 0.2, 0.4, 0.8, 1.6)  # reading a new project's record until it shows: about 3 s
REGISTRY_FIELDS = (
    StoredField("project", TEXT, Index.KEYWORD),
    StoredField("tenant", TEXT, Index.KEYWORD),
    StoredField("embedder", TEXT, Index.KEYWORD),
    StoredField("dimension", INT),
    StoredField("vectors", INT),  # VECTOR_TEXT_VERSION of the project's insight vectors
    StoredField("last_used", DATE),
    StoredField("created_at", DATE),
)
TOUCH_EVERY_S = 60.0  # how stale a project's last_used may get while a process uses it
STATUS_UPDATES_PER_REQUEST = 100  # Weaviate refuses more tenant status changes in one request (since 1.26)
_NAMESPACE = uuid.UUID("0c6f3f5e-2b7e-4c1d-9a43-7d1f5e8b2a61")
_VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MAPPED = re.compile(r".*--[0-9a-f]{16}")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def normalized_project(project: str) -> str:
    name = unicodedata.normalize("NFKC", project).strip()
    if not name:
        raise InvalidInput([("project", "must not be empty")])
    return name


def tenant_name(project: str) -> str:
    """The project's tenant (see the module's docstring): the name itself when Weaviate allows it, else a readable
    prefix and a hash of the name. Distinct names get distinct tenants (up to a 64-bit hash collision)."""
    name = normalized_project(project)
    if _VALID.fullmatch(name) and not _MAPPED.fullmatch(name):
        return name
    prefix = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:40]
    return f"{prefix}--{hashlib.sha256(name.encode()).hexdigest()[:16]}"


def registry_id(tenant: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, tenant)


def ensure_shared_collections(client: weaviate.WeaviateClient, replication: Replication = SINGLE_NODE) -> None:
    """Create the set's collections and the registry if missing (idempotent), with `replication.factor` copies, and
    check that existing ones are ours, of this schema, multi-tenant."""
    for spec in COLLECTION_SET:
        if not client.collections.exists(spec.name):
            create_collection(client, spec, _description(spec.purpose), replication)
        check_binding(client.collections.use(spec.name), spec.name, tenants=True, replication=replication)
    if not client.collections.exists(REGISTRY):
        try:
            client.collections.create(
                REGISTRY,
                description=_description("the projects: tenant, embedder, vectors' recipe, last use"),
                properties=[field.weaviate_property() for field in REGISTRY_FIELDS],
                vector_config=Configure.Vectors.self_provided(),
                replication_config=replication_config(client, replication),
            )
        except weaviate.exceptions.UnexpectedStatusCodeError as error:
            if "already exists" not in str(error):  # another process created it first
                raise
    check_binding(client.collections.use(REGISTRY), REGISTRY, tenants=False, replication=replication)
    use_flat_search_cutoff(client.collections.use(spec_of(INSIGHTS).name))


def _description(purpose: str) -> str:
    return json.dumps({"hindsight": purpose, "schema": SCHEMA_VERSION, "tenants": True}, ensure_ascii=False)


def check_binding(
    collection: WeaviateCollection, name: str, *, tenants: bool, replication: Replication = SINGLE_NODE
) -> None:
    """The collection is one Hindsight Insights made, of this schema version (and multi-tenant where it must be). A
    replication factor other than the configured one is only warned of: the data is there either way."""
    config = collection.config.get()
    found_factor = config.replication_config.factor
    if found_factor != replication.factor:
        log.warning(
            "collection %s keeps %d copies of each project, but HINDSIGHT_REPLICATION_FACTOR is %d: the factor applies "
            "when the collections are created (Weaviate 1.32 and newer can change it in place)",
            name,
            found_factor,
            replication.factor,
        )
    try:
        found = json.loads(config.description or "")
    except json.JSONDecodeError:
        found = None
    if not isinstance(found, dict) or not found.get("tenants"):
        raise HindsightError(
            f"collection {name} exists but was not created by this version of Hindsight Insights; rename or delete it"
        )
    if found.get("schema") != SCHEMA_VERSION:
        raise HindsightError(
            f"collection {name} was made by another version of Hindsight Insights (schema {found.get('schema')}; "
            f"this version uses schema {SCHEMA_VERSION}). Run this version's `python -m hindsight_cli migrate`, or "
            "use the version that made it."
        )
    if tenants and not config.multi_tenancy_config.enabled:
        raise HindsightError(f"collection {name} is not multi-tenant; delete it so that it is made again")


class ProjectTenancy:
    """One project's tenant and registry record, as a store uses them: last use, the vectors' recipe."""

    def __init__(
        self,
        client: weaviate.WeaviateClient,
        project: str,
        tenant: str,
        *,
        touch_every_s: float = TOUCH_EVERY_S,
        replication: Replication = SINGLE_NODE,
    ) -> None:
        self.client = client
        self.project = project
        self.tenant = tenant
        self.touch_every_s = touch_every_s
        self._registry = with_levels(client.collections.use(REGISTRY), replication)
        self._touched = time.monotonic()  # opening the project noted its use (ensure_collections)

    def touch(self, *, force: bool = False) -> bool:
        """Note that the project is in use (at most once every `touch_every_s` per process). Returns whether it
        wrote."""
        if not force and time.monotonic() - self._touched < self.touch_every_s:
            return False
        self._touched = time.monotonic()
        with weaviate_errors("noting the project's use"):
            self._registry.data.update(registry_id(self.tenant), properties={"last_used": datetime.now(UTC)})
        return True

    def vector_text_version(self) -> int:
        with weaviate_errors("reading the project's record"):
            record = self._registry.query.fetch_object_by_id(registry_id(self.tenant))
        return _int(record.properties.get("vectors"), VECTOR_TEXT_VERSION) if record else VECTOR_TEXT_VERSION

    def record_vectors(self, version: int = VECTOR_TEXT_VERSION) -> None:
        """Note the recipe the project's insight vectors are made by (after they were made again, or copied)."""
        with weaviate_errors("recording the project's vectors"):
            self._registry.data.update(registry_id(self.tenant), properties={"vectors": version})

    def keep_active(self, max_active: int) -> list[str]:
        """Deactivate the least recently used projects past `max_active`, never this one."""
        return deactivate_idle(self.client, max_active, keep=self.tenant)


def ensure_collections(
    client: weaviate.WeaviateClient,
    project: str,
    embedder: Embedder,
    *,
    vectors: int = VECTOR_TEXT_VERSION,
    replication: Replication = SINGLE_NODE,
) -> ProjectCollections:
    """The project's handles on the shared set, scoped to its tenant and reading and writing at the consistency
    levels of `replication` (replication.py): the set and the project's record and tenants are created if missing
    (idempotent; racing processes are fine), the record's embedder checked, its last use noted. `vectors`: the recipe
    of the vectors a new project starts with (the migration passes the copied ones')."""
    name = normalized_project(project)
    tenant = tenant_name(name)
    ensure_shared_collections(client, replication)
    registry = with_levels(client.collections.use(REGISTRY), replication)
    record_id = registry_id(tenant)
    now = datetime.now(UTC)
    found = _fetch_record(registry, record_id)
    registered_now = found is None
    if found is None:
        found = _register(registry, record_id, _record(name, tenant, embedder, vectors, now))
    if found.get("project") != name:
        raise HindsightError(
            f"projects {name!r} and {found.get('project')!r} map to the same tenant {tenant!r}; rename one of them"
        )
    if (found.get("embedder"), _int(found.get("dimension"), 0)) != (embedder.id, embedder.dimension):
        raise EmbedderMismatch(
            f"project {name!r} holds vectors of {found.get('embedder')} ({found.get('dimension')} dims), but the "
            f"configured embedder is {embedder.id} ({embedder.dimension} dims). Mixing them would break search: "
            "configure the original embedder, or use another project name."
        )
    handles = {}
    for spec in COLLECTION_SET:
        collection = client.collections.use(spec.name)
        collection.tenants.create([Tenant(name=tenant)])  # no change when it exists (active or not)
        handles[spec.role] = with_levels(collection.with_tenant(tenant), replication)
    if not registered_now:  # a record just written says `now` already
        registry.data.update(record_id, properties={"last_used": now})
    return ProjectCollections(
        project=name, tenant=tenant, handles=handles, vector_text_version=_int(found.get("vectors"), 1)
    )


def _register(registry: WeaviateCollection, record_id: uuid.UUID, record: dict[str, Any]) -> Mapping[str, Any]:
    """Write a new project's record and return the properties stored, read back.

    Read back because Weaviate's insert checks for the id and then writes: processes opening a new project at the same
    instant may all write, and the last write stays. Their records differ only in times, unless the processes were
    configured with different embedders: whichever then reads the other's record is stopped by the embedder check.

    Read again for a few seconds because on a replicated set just created, a QUORUM read can miss a write acknowledged
    at QUORUM for a fraction of a second (seen on a fresh 3-node cluster, about one creation in ten)."""
    try:
        registry.data.insert(record, uuid=record_id)
    except weaviate.exceptions.UnexpectedStatusCodeError as error:
        if "already exists" not in str(error):  # another process registered it first
            raise
    found = _fetch_record(registry, record_id, written=True)
    if found is not None:
        return found
    raise HindsightError(f"project {record['project']!r} could not be registered in {REGISTRY}; try again")


def _fetch_record(
    registry: WeaviateCollection, record_id: uuid.UUID, *, written: bool = False
) -> Mapping[str, Any] | None:
    """A project's record's properties, or None, tried again for a few seconds (REGISTRY_READ_PAUSES_S) while a
    registry another process has just created is in the schema before its index opens ("tried to browse
    non-existing index"), and, when the record was just `written`, while it does not show yet (_register)."""
    for pause_s in (*REGISTRY_READ_PAUSES_S, None):
        try:
            record = registry.query.fetch_object_by_id(record_id)
        except weaviate.exceptions.WeaviateQueryError as error:
            if pause_s is None or "non-existing index" not in str(error):
                raise
        else:
            if record is not None:
                return record.properties
            if not written or pause_s is None:
                return None
        time.sleep(pause_s)
    raise AssertionError("unreachable")


def _record(name: str, tenant: str, embedder: Embedder, vectors: int, now: datetime) -> dict[str, Any]:
    """A project's registry record as it is first written."""
    return {
        "project": name,
        "tenant": tenant,
        "embedder": embedder.id,
        "dimension": embedder.dimension,
        "vectors": vectors,
        "last_used": now,
        "created_at": now,
    }


def create_projects(client: weaviate.WeaviateClient, projects: Sequence[str], embedder: Embedder) -> list[str]:
    """Create many projects at once (provisioning, benchmarks): their records in one batch and their tenants in every
    collection of the set, 100 per request, instead of `ensure_collections`' dozen requests per project. Projects
    already registered are left as they are (opening one checks its embedder). The new tenants are ACTIVE: with more
    than `max_active_tenants` of them, `deactivate_idle` after each few hundred keeps the server's open files down.
    Returns the tenants created."""
    names = {tenant_name(project): normalized_project(project) for project in projects}
    with weaviate_errors("creating projects"):
        ensure_shared_collections(client)
        registry = client.collections.use(REGISTRY)
        known: set[str] = set()
        tenants = list(names)
        for start in range(0, len(tenants), 1000):
            ids = [registry_id(tenant) for tenant in tenants[start : start + 1000]]
            found = registry.query.fetch_objects(
                filters=Filter.by_id().contains_any(ids), limit=len(ids), return_properties=["tenant"]
            )
            known |= {str(obj.properties["tenant"]) for obj in found.objects}
        new = [tenant for tenant in tenants if tenant not in known]
        now = datetime.now(UTC)
        records = [
            DataObject(
                properties=_record(names[tenant], tenant, embedder, VECTOR_TEXT_VERSION, now), uuid=registry_id(tenant)
            )
            for tenant in new
        ]
        for start in range(0, len(records), 1000):
            result = registry.data.insert_many(records[start : start + 1000])
            if result.has_errors:
                first = next(iter(result.errors.values()))
                raise HindsightError(f"registering {len(result.errors)} projects failed: {first.message}; try again")
        for spec in COLLECTION_SET:
            collection = client.collections.use(spec.name)
            for start in range(0, len(new), STATUS_UPDATES_PER_REQUEST):
                collection.tenants.create(
                    [Tenant(name=tenant) for tenant in new[start : start + STATUS_UPDATES_PER_REQUEST]]
                )
    return new


def _int(value: object, default: int) -> int:
    return int(value) if isinstance(value, int | float) else default


def project_collection(client: weaviate.WeaviateClient, project: str, role: str) -> WeaviateCollection:
    """One collection of the set, scoped to the project's tenant, without opening a store (for operators' tools and
    tests that look at what is stored)."""
    return client.collections.use(spec_of(role).name).with_tenant(tenant_name(project))


def _statuses(collection: WeaviateCollection) -> dict[str, TenantActivityStatus]:
    return {name: tenant.activity_status for name, tenant in collection.tenants.get().items()}


def deactivate_idle(client: weaviate.WeaviateClient, max_active: int, keep: str | None = None) -> list[str]:
    """Set the least recently used projects INACTIVE in every collection of the set, so that at most `max_active`
    stay active (a project counts as active while any of its tenants is). Returns the tenants deactivated."""
    with weaviate_errors("deactivating idle projects"):
        statuses = {spec.name: _statuses(client.collections.use(spec.name)) for spec in COLLECTION_SET}
        active = {
            name
            for tenants in statuses.values()
            for name, status in tenants.items()
            if status == TenantActivityStatus.ACTIVE
        }
        if len(active) <= max_active:
            return []
        last_used = _last_used(client)
        idle = sorted(active - {keep}, key=lambda name: (last_used.get(name, EPOCH), name))
        idle = idle[: len(active) - max_active]
        for spec in COLLECTION_SET:
            _set_inactive(
                client.collections.use(spec.name),
                [name for name in idle if statuses[spec.name].get(name) == TenantActivityStatus.ACTIVE],
            )
    log.info("deactivated %d idle projects (%d were active, at most %d kept)", len(idle), len(active), max_active)
    return idle


def _last_used(client: weaviate.WeaviateClient) -> dict[str, datetime]:
    used: dict[str, datetime] = {}
    for record in client.collections.use(REGISTRY).iterator(return_properties=["tenant", "last_used"]):
        tenant, at = record.properties.get("tenant"), record.properties.get("last_used")
        if isinstance(tenant, str) and isinstance(at, datetime):
            used[tenant] = at
    return used


def _set_inactive(collection: WeaviateCollection, tenants: Sequence[str]) -> None:
    for start in range(0, len(tenants), STATUS_UPDATES_PER_REQUEST):
        chunk = tenants[start : start + STATUS_UPDATES_PER_REQUEST]
        collection.tenants.update([Tenant(name=name, activity_status=TenantActivityStatus.INACTIVE) for name in chunk])


def drop_project(client: weaviate.WeaviateClient, project: str) -> None:
    """Delete the project: its tenant in every collection of the set (with everything in it) and its record."""
    tenant = tenant_name(project)
    with weaviate_errors("deleting the project"):
        for spec in _existing(client, COLLECTION_SET):
            collection = client.collections.use(spec.name)
            if collection.tenants.exists(tenant):
                collection.tenants.remove([tenant])
        if client.collections.exists(REGISTRY):
            client.collections.use(REGISTRY).data.delete_by_id(registry_id(tenant))


def _existing(client: weaviate.WeaviateClient, specs: Iterable[CollectionSpec]) -> list[CollectionSpec]:
    return [spec for spec in specs if client.collections.exists(spec.name)]
