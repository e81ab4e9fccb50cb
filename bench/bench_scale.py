"""Hindsight Insights at a million insights: three layouts, each imported through the batch path and searched through
the plugin runtime beside a raw hybrid query in the same run, interleaved call by call (as bench_search does).

  one        one project of --insights (1,000,000) insights, searched beside a project of --baseline (100,000) on a
             second server in the same run: p95 ratio 1M / 100k, and plugin / raw at each size. The plugin is set up
             as the provider form is left by default for the built-in embedder (no score threshold: its calibrated
             no-match gate), and measured with a plain threshold (0.17) beside it. The same
             search_insight called in this process (the plugin's code without the runtime: no stdio, no gevent) is
             interleaved with them, to show the runtime's share. Then Weaviate's own
             vector compression (RQ, 8 bits) is switched on and the 1M searched again: the server's resident memory
             with and without it, and recall@10 of the raw vector query against exact results (numpy, brute force on
             the stored vectors), with and without it.
  projects   --projects (1,000) projects of --project-insights (1,000) insights each
  tenants    --tenant-projects (10,000) projects of --tenant-insights (100) each, created in waves of --wave projects
             and deactivated after each wave (deactivate_idle keeps at most --max-active active: the open-file limit).
             A search on an active project beside one on a single project of the same size alone on a second server,
             and the first search on an inactive project (auto-activation, and the plugin opening that project).

Vectors. Embedding a million texts with the real embedder would take ten minutes, so --pool (20,000) distinct insights
are embedded (the cost is printed on its own) and reused: insight g is insight g mod pool of bench_store's synthetic
set, renumbered (the same subject, rule, kind, scene and user: bench_store draws them from the same seed), with its
vector plus a small seeded jitter, so that no two stored vectors are equal (recall against exact results needs no
ties). Objects are made as the store makes them (admission, store/writing.new_insight, the stored and derived
properties) and sent with weaviate-client's batch (fixed size, two concurrent requests), the path the tenant
migration's copies and the store's bulk import take, not the per-insight save.

Imported data is cached under Settings.cache_dir/bench/ (~/.cache/hindsight-insights/bench/scale-<layout>-<projects>x
<insights>-schema<N>-v<bench version>) and reused by the next run, which then prints the first run's import figures;
--fresh imports into a temporary directory. The resident memory is the server process's VmRSS (/proc), open files its
/proc/<pid>/fd count.

    make bench-scale   (or: .venv/bin/python -m bench.bench_scale [--layout one --layout tenants] [--insights N] ...)
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import argparse
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import weaviate
from weaviate.classes.config import Reconfigure
from weaviate.classes.query import Filter
from weaviate.collections import Collection as WeaviateCollection

from bench.bench_store import QUERIES, SCENES, direct_hybrid_query, iter_synthetic_insights
from hindsight_dify import Context, StoreCache, run
from hindsight_insights import keys
from hindsight_insights.admission import admit
from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.embedder import Embedder, load_embedder
from hindsight_insights.models import Insight
from hindsight_insights.ranking import query_vector
from hindsight_insights.screening import RULES_ONLY
from hindsight_insights.store import SITUATIONAL_KINDS
from hindsight_insights.store.filters import eligible
from hindsight_insights.store.schema import (
    INSIGHT_FIELDS,
    INSIGHTS,
    SCHEMA_VERSION,
    VECTOR_NAME,
    spec_of,
    to_properties,
)
from hindsight_insights.store.table import content_uuid, embedding_text, instruction_key
from hindsight_insights.store.tenancy import (
    create_projects,
    deactivate_idle,
    project_collection,
    tenant_name,
)
from hindsight_insights.store.weaviate_table import derived_properties
from hindsight_insights.store.writing import new_insight
from hindsight_insights.weaviate_server import LocalWeaviate, ensure_binary, start_local
from scripts.package_plugin import ROOT, package
from testkit.messages import credentials_for
from testkit.plugin_runtime import PluginProcess
from testkit.runtimes import CLI

BENCH_VERSION = 1  # bumped when what an import writes changes, so that a cached import is not reused
SEED = 13  # bench_store's synthetic insights, as bench_search imports them
JITTER = 0.01  # per dimension, on unit vectors: cosine ≈ 0.975 to the pooled vector
WARM_UP = 20
IMPORT_RECORD = "hindsight-bench-import.json"
BATCH_SIZE = 500
MiB = 1024 * 1024


@dataclass(frozen=True)
class Layout:
    key: str
    projects: int
    per_project: int

    @property
    def insights(self) -> int:
        return self.projects * self.per_project

    @property
    def cache_name(self) -> str:
        return f"scale-{self.key}-{self.projects}x{self.per_project}-schema{SCHEMA_VERSION}-v{BENCH_VERSION}"

    def project(self, index: int) -> str:
        return f"scale-{self.key}-{self.per_project}-{index:05d}"


class InsightSource:
    """The bench's insights and their vectors: insight g is pool insight g mod `size`, renumbered, and its vector that
    insight's embedding plus a jitter seeded by g's block (see the module's docstring).

    The pool's insights are admitted and made into stored objects as the store's bulk import makes them (admission:
    screen and redaction, store/writing.new_insight, the stored and derived properties, content_uuid). A renumbered
    one is its pool object with the number changed where it appears (topic, its key and slot, observation, quote,
    search text) and its id and slot computed again: admission costs ~3 ms an insight, an hour for a million."""

    def __init__(self, embedder: Embedder, settings: Settings, size: int) -> None:
        if size % 2:
            raise SystemExit("--pool must be even (insight g and g mod pool must share their language)")
        self.size = size
        started = time.perf_counter()
        now = datetime.now(UTC)
        self.templates: list[tuple[Insight, dict[str, Any], str]] = []
        for index, command in enumerate(iter_synthetic_insights(size, random.Random(SEED))):
            draft = admit(command, settings, RULES_ONLY, now=now)[0].draft  # the user's placement, or the only one
            insight = new_insight(draft, content_uuid(draft), now + timedelta(microseconds=index), now)
            properties = to_properties(insight, INSIGHT_FIELDS, **derived_properties(insight))
            self.templates.append((insight, properties, instruction_key(insight.action)))
        self.prepare_s = time.perf_counter() - started
        started = time.perf_counter()
        vectors = embedder.embed([embedding_text(insight) for insight, _, _ in self.templates])
        self.embed_s = time.perf_counter() - started
        self.pool = np.asarray(vectors, dtype=np.float32)
        self._noise: tuple[int, np.ndarray] | None = None

    def vectors(self, start: int, count: int) -> np.ndarray:
        """The stored vectors of insights start .. start+count-1."""
        parts = []
        index = start
        while index < start + count:
            block, offset = divmod(index, self.size)
            if self._noise is None or self._noise[0] != block:
                rng = np.random.default_rng(block)
                self._noise = (block, rng.standard_normal((self.size, self.pool.shape[1]), dtype=np.float32))
            take = min(self.size - offset, start + count - index)
            jittered = self.pool[offset : offset + take] + JITTER * self._noise[1][offset : offset + take]
            parts.append(jittered / np.linalg.norm(jittered, axis=1, keepdims=True))
            index += take
        return np.concatenate(parts)

    def objects(self, start: int, count: int) -> Iterator[tuple[uuid.UUID, dict[str, Any], list[float]]]:
        """(uuid, properties, vector) of each stored object."""
        vectors = self.vectors(start, count)
        for offset in range(count):
            number = start + offset
            pooled = number % self.size
            insight, template, instruction = self.templates[pooled]
            properties = dict(template)
            if number != pooled:
                old, new = str(pooled), str(number)
                properties["topic"] = template["topic"].replace(f"#{old}", f"#{new}")
                properties["topic_key"] = template["topic_key"].replace(f"#{old}", f"#{new}")
                properties["observation"] = template["observation"].replace(f" {old}:", f" {new}:")
                properties["evidence_quote"] = template["evidence_quote"].replace(f"quote {old} ", f"quote {new} ")
                properties["search_text"] = f" {template['search_text']} ".replace(f" {old} ", f" {new} ").strip()
                slot = keys.slot_key(properties["topic"], insight.scene, insight.owner, insight.condition_detail)
                properties["slot_key"] = slot
                object_id = uuid.uuid5(
                    uuid.NAMESPACE_DNS, json.dumps([slot, insight.kind.value, instruction], ensure_ascii=False)
                )
            else:
                object_id = insight.id
            yield object_id, properties, vectors[offset].tolist()


def server_memory(server: LocalWeaviate) -> tuple[float, int]:
    """The server process's resident memory (MiB) and open files."""
    pid = server.process.pid
    rss_kb = next(
        int(line.split()[1])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("VmRSS")
    )
    return rss_kb / 1024, len(os.listdir(f"/proc/{pid}/fd"))


@dataclass
class Running:
    """A server of the bench and a client of it."""

    server: LocalWeaviate
    settings: Settings
    client: weaviate.WeaviateClient

    def memory(self) -> tuple[float, int]:
        return server_memory(self.server)

    def credentials(self, project: str, score_threshold: str = "") -> dict[str, Any]:
        """The provider form as a builder with the built-in embedder fills it: the score threshold left blank, so the
        embedder's calibrated no-match gate decides (the form's own advice), unless a plain threshold is given."""
        server = self.server
        return credentials_for(server.url, server.grpc_port, project, server.api_key, score_threshold=score_threshold)

    def stop(self) -> None:
        self.client.close()
        self.server.stop(timeout_s=120)


def start(base: Settings, data_dir: Path) -> Running:
    server = start_local(ensure_binary(base), data_dir, ready_timeout_s=600)
    settings = server.settings(base)
    return Running(server, settings, connect_url(settings, server.url))


@dataclass
class ImportRecord:
    """What importing a layout took; kept beside the cached data."""

    objects: int = 0
    seconds: float = 0.0
    create_s: float = 0.0  # create_projects, all waves
    deactivate_s: float = 0.0  # deactivate_idle, all waves
    deactivated: int = 0
    max_fds: int = 0
    rss_mib: float = 0.0  # at the end of the import
    waves: int = 0
    errors: int = 0
    when: str = ""
    resumed_from: int = 0  # objects an interrupted import had written before this one went on

    @property
    def rate(self) -> float:
        return self.objects / self.seconds if self.seconds else 0.0


def import_layout(
    running: Running,
    layout: Layout,
    source: InsightSource,
    embedder: Embedder,
    wave: int,
    max_active: int,
    resume: int = 0,
    until: int | None = None,
) -> ImportRecord:
    """Create the layout's projects and import their insights, `wave` projects at a time, deactivating idle projects
    after each wave. `resume`: a one-project layout's insights before this one are there already (an interrupted
    import; the figures are then of this run's part)."""
    record = ImportRecord(when=datetime.now(UTC).isoformat(timespec="seconds"), resumed_from=resume)
    client = running.client
    insights = spec_of(INSIGHTS).name
    started = time.perf_counter()
    for first in range(0, layout.projects, wave):
        indexes = range(first, min(first + wave, layout.projects))
        t0 = time.perf_counter()
        create_projects(client, [layout.project(i) for i in indexes], embedder)
        record.create_s += time.perf_counter() - t0
        with client.batch.fixed_size(batch_size=BATCH_SIZE, concurrent_requests=2) as batch:
            for project in indexes:
                tenant = tenant_name(layout.project(project))
                first_object = project * layout.per_project + resume
                count = min(layout.per_project, until or layout.per_project) - resume
                for object_id, properties, vector in source.objects(first_object, max(0, count)):
                    batch.add_object(
                        collection=insights,
                        tenant=tenant,
                        properties=properties,
                        uuid=object_id,
                        vector={VECTOR_NAME: vector},
                    )
                    record.objects += 1
                    if layout.projects == 1 and (record.objects + resume) % 100_000 == 0:
                        rss, fds = running.memory()
                        print(
                            f"  {record.objects + resume} objects, {time.perf_counter() - started:.0f}s, "
                            f"RSS {rss:.0f} MiB",
                            flush=True,
                        )
        failed = client.batch.failed_objects
        record.errors += len(failed)
        if failed:
            raise SystemExit(f"{len(failed)} objects failed to import, e.g. {failed[0].message}")
        record.max_fds = max(record.max_fds, running.memory()[1])
        t0 = time.perf_counter()
        record.deactivated += len(deactivate_idle(client, max_active))
        record.deactivate_s += time.perf_counter() - t0
        record.waves += 1
        done = indexes.stop
        if layout.projects > 1 and (done % max(1, layout.projects // 10) < wave or done == layout.projects):
            rss, fds = running.memory()
            print(
                f"  {done} projects, {record.objects} objects, {time.perf_counter() - started:.0f}s, "
                f"RSS {rss:.0f} MiB, {fds} open files",
                flush=True,
            )
    record.seconds = time.perf_counter() - started
    record.rss_mib = running.memory()[0]
    return record


@contextlib.contextmanager
def layout_dir(layout: Layout, fresh: bool, base: Settings) -> Iterator[Path]:
    if fresh:
        with tempfile.TemporaryDirectory() as work:
            yield Path(work)
        return
    cached = base.cache_dir / "bench" / layout.cache_name
    cached.mkdir(parents=True, exist_ok=True)
    yield cached


def prepared(
    layout: Layout,
    data: Path,
    base: Settings,
    source: InsightSource,
    embedder: Embedder,
    wave: int,
    max_active: int,
    until: int | None = None,
) -> tuple[Running, ImportRecord, bool]:
    """The layout's server, its data imported now or earlier (then the earlier import's figures)."""
    marker = data / IMPORT_RECORD
    if marker.exists():
        record = ImportRecord(**json.loads(marker.read_text()))
        return start(base, data / "weaviate"), record, True
    resume = 0
    if layout.projects == 1 and (data / "weaviate").exists():  # an interrupted import of one project: go on
        running = start(base, data / "weaviate")
        with contextlib.suppress(Exception):  # no project yet: start from the beginning
            resume = max(0, len(project_collection(running.client, layout.project(0), INSIGHTS)) - 4 * BATCH_SIZE)
    else:
        shutil.rmtree(data / "weaviate", ignore_errors=True)  # an interrupted import of many projects: again
        running = start(base, data / "weaviate")
    print(f"{layout.key}: importing {layout.projects} x {layout.per_project} insights from {resume}", flush=True)
    record = import_layout(running, layout, source, embedder, wave, max_active, resume, until)
    if until is None or until >= layout.insights:
        marker.write_text(json.dumps(vars(record)))
    return running, record, False


def restarted(running: Running, base: Settings) -> Running:
    """The same data in a fresh server process: memory figures that owe nothing to the import's garbage."""
    data = running.server.data_dir
    running.stop()
    return start(base, data)


def print_import(layout: Layout, record: ImportRecord, reused: bool, data: Path) -> None:
    when = f"imported {record.when} (cached in {data}, reused now)" if reused else "imported now"
    if record.resumed_from:
        when += f", going on from {record.resumed_from} objects an interrupted import had written"
    print(
        f"{layout.key} import ({layout.projects} projects x {layout.per_project}): {record.objects} objects in "
        f"{record.seconds:.0f}s = {record.rate:.0f} objects/s, {record.waves} waves, {record.errors} errors; "
        f"RSS at the end {record.rss_mib:.0f} MiB, at most {record.max_fds} open files; {when}"
    )
    if layout.projects > 1:
        print(
            f"{layout.key} projects: created in {record.create_s:.1f}s "
            f"({record.create_s / layout.projects * 1000:.1f} ms per project); {record.deactivated} deactivated by "
            f"{record.waves} deactivate_idle sweeps in {record.deactivate_s:.1f}s"
            + (f" ({record.deactivate_s / record.deactivated * 1000:.1f} ms per project)" if record.deactivated else "")
        )


# One search round: the query, scene and user every path of the round uses, and which project of the path's list.
@dataclass(frozen=True)
class Round:
    query: str
    scene: str
    user: str
    pick: int


SearchPath = Callable[[Round], None]
# A builder's plain relevance threshold (the provider form's score_threshold), measured beside the default gate.
PLAIN_THRESHOLD = "0.17"


def plugin_path(plugin: PluginProcess, credentials: Sequence[dict[str, Any]]) -> SearchPath:
    def search(round_: Round) -> None:
        output = plugin.invoke_tool(
            "search_insight",
            {"query": round_.query, "scene": round_.scene},
            credentials[round_.pick % len(credentials)],
            user_id=round_.user,
        )
        if "error" in output.json:
            raise SystemExit(f"search_insight failed: {output.json}")

    return search


def in_process_path(stores: StoreCache, credentials: Sequence[dict[str, Any]]) -> SearchPath:
    """search_insight as the plugin's tool body runs it (hindsight_dify.run), in this process."""

    def search(round_: Round) -> None:
        parameters = {"query": round_.query, "scene": round_.scene}
        result = run(
            stores, "search_insight", credentials[round_.pick % len(credentials)], parameters, Context(round_.user)
        )
        if "error" in result.json:
            raise SystemExit(f"search_insight failed in process: {result.json}")

    return search


def raw_path(collections: Sequence[WeaviateCollection], settings: Settings, embedder: Embedder) -> SearchPath:
    situational = Filter.by_property("kind").contains_any([kind.value for kind in SITUATIONAL_KINDS])

    def search(round_: Round) -> None:
        vector = query_vector(embedder.embed([round_.query], query=True))
        where = eligible(round_.scene, round_.user, datetime.now(UTC)) & situational
        direct_hybrid_query(collections[round_.pick % len(collections)], settings, round_.query, vector, where)

    return search


def in_turn(path: SearchPath) -> SearchPath:
    """The path on its projects one after the other (each call on a project not searched before)."""
    calls = iter(range(1 << 30))

    def search(round_: Round) -> None:
        path(Round(round_.query, round_.scene, round_.user, next(calls)))

    return search


def interleaved(paths: dict[str, SearchPath], searches: int, rng: random.Random, warm_up: int = WARM_UP) -> Timings:
    """`searches` timed rounds (after `warm_up`), each path once per round, in a shuffled order."""
    timings = Timings({name: [] for name in paths})
    for index in range(searches + warm_up):
        round_ = Round(rng.choice(QUERIES), rng.choice(SCENES), f"user-{rng.randrange(200)}", rng.randrange(1 << 30))
        order = list(paths)
        rng.shuffle(order)
        for name in order:
            started = time.perf_counter()
            paths[name](round_)
            if index >= warm_up:
                timings.values[name].append((time.perf_counter() - started) * 1000)
    return timings


@dataclass
class Timings:
    values: dict[str, list[float]] = field(default_factory=dict)

    def p(self, name: str, q: float) -> float:
        return float(np.percentile(np.asarray(self.values[name]), q))

    def print(self, title: str, baseline: str) -> None:
        count = len(next(iter(self.values.values())))
        print(f"{title} ({count} calls per path, interleaved); ratios to {baseline!r}")
        print(f"{'path':>34} | {'p50 ms':>7} | {'p95 ms':>7} | {'max ms':>7} | {'p95 ratio':>9}")
        for name, values in self.values.items():
            print(
                f"{name:>34} | {self.p(name, 50):7.2f} | {self.p(name, 95):7.2f} | {max(values):7.1f} | "
                f"{self.p(name, 95) / self.p(baseline, 95):9.2f}"
            )


def target(label: str, ratio: float, limit: float) -> None:
    print(f"target: {label}: {ratio:.2f}x (target <= {limit}x): {'held' if ratio <= limit else 'MISSED'}")


def recall_at_10(collection: WeaviateCollection, stored: np.ndarray, queries: np.ndarray) -> tuple[float, float]:
    """recall@10 of the raw vector query against exact cosine top-10 (numpy, brute force), and its p95 in ms. A
    returned object counts when its exact distance is within the exact 10th's (so equal distances cannot cost
    recall)."""
    found, times = [], []
    for query in queries:
        started = time.perf_counter()
        result = collection.query.near_vector(
            near_vector=query.tolist(), target_vector=VECTOR_NAME, limit=10, include_vector=True
        )
        times.append((time.perf_counter() - started) * 1000)
        exact = stored @ query
        tenth = np.partition(-exact, 9)[9]
        returned = np.asarray([obj.vector[VECTOR_NAME] for obj in result.objects], dtype=np.float32)
        found.append(float(np.sum(-(returned @ query) <= tenth + 1e-5)) / 10)
    return float(np.mean(found)), float(np.percentile(times, 95))


def check_stored_vectors(collection: WeaviateCollection, source: InsightSource, count: int) -> None:
    """The exact baseline is computed on regenerated vectors: check a sample of them against what Weaviate holds."""
    result = collection.query.fetch_objects(limit=50, include_vector=True, return_properties=["topic"])
    stored = {str(obj.properties["topic"]): np.asarray(obj.vector[VECTOR_NAME]) for obj in result.objects}
    for topic, vector in stored.items():
        index = int(topic.rsplit("#", 1)[1])
        if index >= count or not np.allclose(source.vectors(index, 1)[0], vector, atol=1e-5):
            raise SystemExit(f"stored vector of {topic!r} is not the bench's vector {index}: the exact baseline is off")


def compress(client: weaviate.WeaviateClient, project: str, timeout_s: float = 3600) -> float:
    """Switch on 8-bit RQ on the existing insights collection and wait until the project's shard reports its vectors
    compressed and is READY again (Weaviate compresses in the background, after the shard's vector cache is filled,
    and keeps the shard READONLY meanwhile). Returns seconds."""
    name = spec_of(INSIGHTS).name
    started = time.perf_counter()
    project_collection(client, project, INSIGHTS).query.fetch_objects(limit=1)  # the shard loaded, its cache filling
    client.collections.use(name).config.update(
        vector_config=[
            Reconfigure.Vectors.update(
                name=VECTOR_NAME,
                vector_index_config=Reconfigure.VectorIndex.hnsw(quantizer=Reconfigure.VectorIndex.Quantizer.rq()),
            )
        ]
    )
    tenant = tenant_name(project)
    while time.perf_counter() - started < timeout_s:
        shards = [
            shard for node in client.cluster.nodes(collection=name, output="verbose") for shard in node.shards or []
        ]
        # The flag turns on when compressing starts; the shard is READONLY until it ends.
        if any(
            shard.name == tenant and shard.compressed and shard.vector_indexing_status == "READY" for shard in shards
        ):
            return time.perf_counter() - started
        time.sleep(2)
    raise SystemExit(f"the vectors were not compressed within {timeout_s:.0f}s")


@dataclass
class Bench:
    """What every layout of one run shares."""

    args: argparse.Namespace
    base: Settings
    embedder: Embedder
    source: InsightSource
    plugin: PluginProcess
    rng: random.Random
    stores: StoreCache

    def prepared(self, layout: Layout, data: Path, wave: int, until: int | None = None) -> Running:
        running, record, reused = prepared(
            layout, data, self.base, self.source, self.embedder, wave, self.args.max_active, until
        )
        print_import(layout, record, reused, data)
        return running

    def restarted(self, running: Running) -> Running:
        """The same data in a fresh server process (--no-restart: the same process, for smoke runs)."""
        return running if self.args.no_restart else restarted(running, self.base)

    def opened(
        self, running: Running, projects: Sequence[str], score_threshold: str = ""
    ) -> tuple[list[dict[str, Any]], list[WeaviateCollection]]:
        """The projects' credentials and raw collections, each opened once by the plugin (not timed: a cached store is
        what a running plugin searches with)."""
        credentials = [running.credentials(project, score_threshold) for project in projects]
        warm = plugin_path(self.plugin, credentials)
        for index in range(len(projects)):
            warm(Round(QUERIES[0], SCENES[0], "user-0", index))
        return credentials, [project_collection(running.client, project, INSIGHTS) for project in projects]

    def paths(self, label: str, running: Running, projects: Sequence[str]) -> dict[str, SearchPath]:
        """search_insight through the plugin as configured by default (the gate), and with a plain threshold (0.17,
        which also makes its situational read a hybrid query); the default in this process; one raw hybrid query."""
        credentials, collections = self.opened(running, projects)
        plain, _ = self.opened(running, projects, PLAIN_THRESHOLD)
        in_process = in_process_path(self.stores, credentials)
        for index in range(len(projects)):  # each project's store opened before the timed calls, as the plugin's
            in_process(Round(QUERIES[0], SCENES[0], "user-0", index))
        return {
            f"plugin runtime · {label}": plugin_path(self.plugin, credentials),
            f"plugin, threshold {PLAIN_THRESHOLD} · {label}": plugin_path(self.plugin, plain),
            f"in process · {label}": in_process,
            f"raw hybrid · {label}": raw_path(collections, running.settings, self.embedder),
        }


def statuses(client: weaviate.WeaviateClient) -> dict[str, str]:
    tenants = client.collections.use(spec_of(INSIGHTS).name).tenants.get()
    return {name: str(tenant.activity_status.value) for name, tenant in tenants.items()}


def held_out_text(bench: Bench, command: Any) -> str:
    """A query like the stored insights but none of them (another seed, numbered far past them)."""
    now = datetime.now(UTC)
    draft = admit(command, bench.base, RULES_ONLY, now=now)[0].draft
    return embedding_text(new_insight(draft, content_uuid(draft), now, now))


def run_one(bench: Bench) -> None:
    args = bench.args
    big, small = Layout("one", 1, args.insights), Layout("one", 1, args.baseline)
    with layout_dir(small, args.fresh, bench.base) as small_dir, layout_dir(big, args.fresh, bench.base) as big_dir:
        small_run = bench.restarted(bench.prepared(small, small_dir, 1))
        big_run = bench.restarted(bench.prepared(big, big_dir, 1, args.import_until))
        size = len(project_collection(big_run.client, big.project(0), INSIGHTS))
        if size < big.insights:
            print(f"one: measured at {size:,} insights: --import-until stopped the import of {size:,} there")
        try:
            idle_rss = big_run.memory()[0]
            paths = bench.paths(f"{size:,}", big_run, [big.project(0)])
            paths |= bench.paths(f"{small.insights:,}", small_run, [small.project(0)])
            timings = interleaved(paths, args.searches, bench.rng)
            timings.print(
                f"one project: search_insight at {size:,} beside {small.insights:,}",
                f"raw hybrid · {size:,}",
            )
            plugin_big = timings.p(f"plugin runtime · {size:,}", 95)
            target(
                f"plugin p95 at {size:,} / at {small.insights:,}",
                plugin_big / timings.p(f"plugin runtime · {small.insights:,}", 95),
                1.5,
            )
            target(
                f"plugin p95 / raw hybrid p95 at {size:,}",
                plugin_big / timings.p(f"raw hybrid · {size:,}", 95),
                1.3,
            )
            in_process, raw = timings.p(f"in process · {size:,}", 95), timings.p(f"raw hybrid · {size:,}", 95)
            print(
                f"in process / raw hybrid p95 at {size:,}: {in_process / raw:.2f}x; "
                f"plugin / in process (the runtime's share): {plugin_big / in_process:.2f}x"
            )
        finally:
            small_run.stop()
        collection = project_collection(big_run.client, big.project(0), INSIGHTS)
        stored = bench.source.vectors(0, size)
        check_stored_vectors(collection, bench.source, size)
        held_out = list(iter_synthetic_insights(args.recall_queries, random.Random(SEED + 1), start=10**8))
        queries = np.asarray(
            bench.embedder.embed([held_out_text(bench, command) for command in held_out], query=True),
            dtype=np.float32,
        )
        plain_recall, plain_p95 = recall_at_10(collection, stored, queries)
        plain_rss, plain_fds = big_run.memory()
        big_run.stop()

        # Compression changes the data: a cached import is compressed in a copy, which is deleted afterwards.
        with tempfile.TemporaryDirectory(dir=big_dir) as copy_dir:
            data = big_run.server.data_dir
            if not args.fresh:
                started = time.perf_counter()
                shutil.copytree(data, Path(copy_dir) / "weaviate")
                data = Path(copy_dir) / "weaviate"
                print(f"copied the cached data for compression in {time.perf_counter() - started:.0f}s", flush=True)
            running = start(bench.base, data)
            compress_s = compress(running.client, big.project(0))
            running = bench.restarted(running)
            try:
                rq_idle_rss, _ = running.memory()
                rq_timings = interleaved(
                    bench.paths(f"{size:,} RQ", running, [big.project(0)]), args.searches, bench.rng
                )
                rq_timings.print(f"one project of {size:,}, RQ (8 bits)", f"raw hybrid · {size:,} RQ")
                collection = project_collection(running.client, big.project(0), INSIGHTS)
                rq_recall, rq_p95 = recall_at_10(collection, stored, queries)
                rq_rss, rq_fds = running.memory()
            finally:
                running.stop()
    print(
        f"compression: RQ switched on and the vectors compressed in {compress_s:.1f}s (on the existing collection, "
        "no second import)"
    )
    print(
        f"{'one project, ' + format(size, ','):>28} | {'RSS idle MiB':>12} | {'RSS after searches':>18} | "
        f"{'recall@10':>9} | {'vector p95 ms':>13}"
    )
    print(f"{'uncompressed':>28} | {idle_rss:12.0f} | {plain_rss:18.0f} | {plain_recall:9.3f} | {plain_p95:13.2f}")
    print(f"{'RQ 8 bits':>28} | {rq_idle_rss:12.0f} | {rq_rss:18.0f} | {rq_recall:9.3f} | {rq_p95:13.2f}")
    print(
        f"memory: RQ / uncompressed after searches {rq_rss / plain_rss:.2f}; open files {plain_fds} / {rq_fds}; "
        f"recall against exact cosine top-10 over {size:,} stored vectors, {len(queries)} held-out queries"
    )


def run_projects(bench: Bench) -> None:
    args = bench.args
    layout = Layout("projects", args.projects, args.project_insights)
    with layout_dir(layout, args.fresh, bench.base) as data:
        running = bench.restarted(bench.prepared(layout, data, args.wave))
        try:
            active = sorted(name for name, status in statuses(running.client).items() if status == "ACTIVE")
            by_tenant = {tenant_name(layout.project(i)): layout.project(i) for i in range(layout.projects)}
            sample = [by_tenant[name] for name in active[: args.active_sample]]
            timings = interleaved(
                bench.paths(f"{len(sample)} active of {layout.projects}", running, sample), args.searches, bench.rng
            )
            timings.print(
                f"{layout.projects} projects of {layout.per_project}",
                f"raw hybrid · {len(sample)} active of {layout.projects}",
            )
            rss, fds = running.memory()
            print(f"projects: RSS after searches {rss:.0f} MiB, {fds} open files, {len(active)} active projects")
        finally:
            running.stop()


def run_tenants(bench: Bench) -> None:
    args = bench.args
    layout = Layout("tenants", args.tenant_projects, args.tenant_insights)
    single = Layout("single", 1, args.tenant_insights)
    with (
        layout_dir(layout, args.fresh, bench.base) as data,
        tempfile.TemporaryDirectory() as single_dir,
    ):
        single_run = bench.prepared(single, Path(single_dir), 1)
        running = bench.restarted(bench.prepared(layout, data, args.wave))
        try:
            idle_rss, idle_fds = running.memory()
            found = statuses(running.client)
            by_tenant = {tenant_name(layout.project(i)): layout.project(i) for i in range(layout.projects)}
            active = [by_tenant[name] for name, status in sorted(found.items()) if status == "ACTIVE"]
            inactive = [by_tenant[name] for name, status in sorted(found.items()) if status != "ACTIVE"]
            bench.rng.shuffle(inactive)
            sample = active[: args.active_sample]
            label = f"active of {layout.projects:,}"
            paths = bench.paths(label, running, sample) | bench.paths("single project", single_run, [single.project(0)])
            timings = interleaved(paths, args.searches, bench.rng)
            timings.print(
                f"{layout.projects:,} projects of {layout.per_project}: {len(sample)} active ones beside a single "
                "project",
                "plugin runtime · single project",
            )
            target(
                f"plugin p95 on an active project of {layout.projects:,} / on a single project",
                timings.p(f"plugin runtime · {label}", 95) / timings.p("plugin runtime · single project", 95),
                1.2,
            )
            # First searches: every call on a project not searched before, INACTIVE until then.
            firsts = min(args.first_searches, len(inactive) // 2)
            first_plugin = [running.credentials(project) for project in inactive[:firsts]]
            first_raw = [
                project_collection(running.client, project, INSIGHTS) for project in inactive[firsts : 2 * firsts]
            ]
            first_paths = {
                "first search_insight · plugin": in_turn(plugin_path(bench.plugin, first_plugin)),
                "first raw hybrid": in_turn(raw_path(first_raw, running.settings, bench.embedder)),
            }
            first_timings = interleaved(first_paths, firsts, bench.rng, warm_up=0)
            first_timings.print(f"first search on an INACTIVE project of {layout.projects:,}", "first raw hybrid")
            first_p95 = first_timings.p("first search_insight · plugin", 95)
            print(
                f"first search_insight on an inactive project, p95 {first_p95:.1f} ms, "
                f"beside {timings.p(f'plugin runtime · {label}', 95):.1f} ms on an active one "
                f"(the plugin opens the project's store on its first call: connection, tenants, deactivate_idle)"
            )
            after_rss, after_fds = running.memory()
            t0 = time.perf_counter()
            swept = deactivate_idle(running.client, args.max_active)
            sweep_s = time.perf_counter() - t0
            print(
                f"tenants: RSS {idle_rss:.0f} MiB idle after restart, {after_rss:.0f} MiB after searches; open files "
                f"{idle_fds} / {after_fds}; {len(active)} active of {layout.projects:,}; one deactivate_idle sweep "
                f"deactivated {len(swept)} in {sweep_s:.2f}s"
            )
        finally:
            running.stop()
            single_run.stop()


LAYOUTS: dict[str, Callable[[Bench], None]] = {"one": run_one, "projects": run_projects, "tenants": run_tenants}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layout", action="append", choices=list(LAYOUTS), help="repeatable; default: all three")
    parser.add_argument("--insights", type=int, default=1_000_000, help="one: the project's insights")
    parser.add_argument("--baseline", type=int, default=100_000, help="one: the smaller project searched beside it")
    parser.add_argument("--projects", type=int, default=1_000)
    parser.add_argument("--project-insights", type=int, default=1_000)
    parser.add_argument("--tenant-projects", type=int, default=10_000)
    parser.add_argument("--tenant-insights", type=int, default=100)
    parser.add_argument("--wave", type=int, default=50, help="projects created and imported before each deactivation")
    parser.add_argument("--max-active", type=int, default=Settings(_env_file=None).max_active_tenants)
    parser.add_argument("--active-sample", type=int, default=50, help="active projects searched")
    parser.add_argument("--first-searches", type=int, default=100)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--recall-queries", type=int, default=200)
    parser.add_argument("--pool", type=int, default=20_000, help="distinct insights embedded; their vectors are reused")
    parser.add_argument(
        "--import-until",
        type=int,
        help="one: stop importing the large project there and measure what is stored (not cached as complete; the "
        "next run goes on from there)",
    )
    parser.add_argument("--fresh", action="store_true", help="import into temporary directories, not the cache")
    parser.add_argument(
        "--no-restart",
        action="store_true",
        help="search in the importing server process (smoke runs: each restart costs seconds; memory is then not "
        "comparable)",
    )
    args = parser.parse_args(argv)
    base = Settings(
        _env_file=None, weaviate_insert_timeout_s=600.0, weaviate_query_timeout_s=60.0, weaviate_timeout_s=60.0
    )
    embedder = load_embedder(base)
    source = InsightSource(embedder, base, args.pool)
    print(
        f"embedding: {args.pool} distinct insights in {source.embed_s:.1f}s = {args.pool / source.embed_s:.0f}/s "
        f"(admitted and made into objects beforehand in {source.prepare_s:.1f}s) "
        f"(real embedder {embedder.id}, {embedder.dimension} dims); their vectors are reused with jitter",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as work:
        archive = Path(work) / "hindsight_insights.difypkg"
        package(ROOT, archive, CLI.find())
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(Path(work) / "plugin")
        plugin = PluginProcess(
            Path(work) / "plugin", python=sys.executable, env={"HINDSIGHT_MAX_ACTIVE_TENANTS": str(args.max_active)}
        )
        stores = StoreCache(Settings(_env_file=None, max_active_tenants=args.max_active))
        try:
            bench = Bench(args, base, embedder, source, plugin, random.Random(SEED), stores)
            for name in args.layout or list(LAYOUTS):
                started = time.perf_counter()
                LAYOUTS[name](bench)
                print(f"[{name} done in {time.perf_counter() - started:.0f}s]", flush=True)
        finally:
            plugin.close()
            stores.close()


if __name__ == "__main__":
    main()
