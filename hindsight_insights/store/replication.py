"""Replication and consistency on a Weaviate cluster: how many copies the collection set is made with, and how many
of them each operation waits for (docs/architecture.md, "Replication and consistency").

Writes (inserts, updates, deletes) wait for QUORUM, a majority of the copies: an acknowledged write survives any one
node of three being lost, and a QUORUM read afterwards meets at least one copy that has it. Reads wait for
`Settings.read_consistency`: QUORUM (the default) so that every read sees every acknowledged write, which the save
policy relies on (it reads a slot's versions before it writes the next one), or ONE, faster and answering while a
single copy is up, but possibly missing a write just made.

`with_levels` is the one place that applies them: tenancy.py passes every handle of a project (and the registry's)
through it. A handle is one weaviate-client Collection, whose consistency level holds for all its namespaces; so the
handle is made at the write level, and its reading namespaces (query, the iterator over it, aggregate, generate) are
taken from a handle at the read level. Both keep the tenant, which `with_tenant` set first.
"""

from __future__ import annotations

from dataclasses import dataclass

from weaviate.classes.config import ConsistencyLevel
from weaviate.collections import Collection as WeaviateCollection

from hindsight_insights.config import Settings

ASYNC_BY_DEFAULT = (1, 38)  # from this server version async replication is on for every factor > 1, not a setting


@dataclass(frozen=True)
class Replication:
    factor: int = 1
    read: ConsistencyLevel = ConsistencyLevel.QUORUM
    write: ConsistencyLevel = ConsistencyLevel.QUORUM


SINGLE_NODE = Replication()


def replication_of(settings: Settings) -> Replication:
    return Replication(factor=settings.replication_factor, read=ConsistencyLevel(settings.read_consistency))


def with_levels(collection: WeaviateCollection, replication: Replication) -> WeaviateCollection:
    """`collection` (tenant already chosen) writing at `replication.write` and reading at `replication.read`. On one
    copy (factor 1) it is returned as it is, with no level: Weaviate 1.27 fails a batch import at QUORUM into a
    collection without replication ("broadcast: cannot reach enough replicas")."""
    if replication.factor <= 1:
        return collection
    handle: WeaviateCollection = collection.with_consistency_level(replication.write)
    if replication.read != replication.write:
        reader = collection.with_consistency_level(replication.read)
        # The iterator reads through `query`; the batch and data namespaces stay at the write level.
        handle.query, handle.aggregate, handle.generate = reader.query, reader.aggregate, reader.generate
    return handle


def needs_async_flag(server_version: str) -> bool:
    """Whether async replication must be asked for when a replicated collection is created: on 1.26-1.37 it is off
    unless asked (and it is what lets a restarted node catch up without being read); from 1.38 it is on and the
    field is gone (the client warns when it is passed)."""
    parts = [int(part) for part in server_version.split("-")[0].split(".")[:2] if part.isdigit()]
    return tuple(parts) < ASYNC_BY_DEFAULT if len(parts) == 2 else True
