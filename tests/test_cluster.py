"""A replicated cluster: three weaviate-server nodes on 127.0.0.1 (testkit/cluster.py) and the project's collection
set with replication factor 3, writes at QUORUM, reads at QUORUM (the defaults; store/replication.py).

- Saves and searches run side by side through the plugin's own operations (hindsight_dify.operations over the core's
  InsightStore) while one node is killed with SIGKILL, and go on while it is down and while it restarts: no
  acknowledged save is lost, every search answers or fails with our message within a stated bound, the node comes
  back HEALTHY and its own copy catches up (async replication, without anything reading it).
- Two worker processes on one PostgreSQL state database reflect against the cluster; one is killed mid-reflection:
  every session is reflected on exactly once.

Marker `cluster`: `make test-cluster`; `make test` runs it once, on the default Weaviate.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from weaviate.classes.config import ConsistencyLevel

from hindsight_dify.operations import Context, save_insight, search_insight
from hindsight_dify.params import Parameters
from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import HindsightError
from hindsight_insights.store import InsightStore
from hindsight_insights.store.replication import Replication, needs_async_flag
from hindsight_insights.store.schema import INSIGHTS, spec_of
from hindsight_insights.store.tenancy import ensure_collections, tenant_name
from hindsight_insights.weaviate_server import ensure_binary
from testkit.cluster import Cluster, ClusterNode, running_cluster
from tests.worker_support import ChatStub, WorkerProcess, done, environment, lessons, record_sessions, wait_until
from worker.db import open_engine
from worker.ledger import Ledger
from worker.tasks import TaskBoard

pytestmark = pytest.mark.cluster

FACTOR = 3
WRITERS = 2
LOAD_START_BOUND_S = 60.0
BEFORE_KILL_S = 6.0  # load on three nodes first
DOWN_S = 25.0  # then one node down: longer than the 20-30 s a first read routed to a dead node can block
CATCH_UP_BOUND_S = 90.0  # the restarted node's own copy holds every acknowledged write within this
OUR_FAILURE = "Weaviate failed while"  # how connection.weaviate_errors begins every message


@pytest.fixture(scope="module")
def cluster(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(ensure_binary(settings), tmp_path_factory.mktemp("cluster")) as started:
        yield started


def settings_on(base: Settings, node: ClusterNode, project: str, **changes: object) -> Settings:
    return node.server.settings(base).model_copy(update={"project": project, "replication_factor": FACTOR, **changes})


@pytest.fixture
def project() -> str:
    return f"cluster-{uuid.uuid4().hex[:8]}"


def search_bound_s(settings: Settings) -> float:
    """How long a search may take, answered or failed: search_insight's reads are the standing read and the hybrid
    search, in parallel, each bounded by the client's query timeout (connection.py), plus a few seconds for the
    embedder and this loaded machine."""
    return 2 * settings.weaviate_query_timeout_s + 5.0


@dataclass
class Load:
    """What the load saw: every acknowledged save's id, and each search's outcome and time."""

    acknowledged: dict[str, str] = field(default_factory=dict)  # insight id -> topic
    save_failures: list[str] = field(default_factory=list)
    searches: list[tuple[float, float, str | None]] = field(default_factory=list)  # (started, seconds, failure)
    unexpected: list[str] = field(default_factory=list)  # anything not our error: fails the test
    lock: threading.Lock = field(default_factory=threading.Lock)


def save_forever(store: InsightStore, writer: int, stop: threading.Event, load: Load) -> None:
    number = 0
    while not stop.is_set():
        number += 1
        topic = f"订单 {writer}-{number} 的回寄地址"
        parameters = Parameters(
            {
                "topic": topic,
                "kind": "preference",
                "scene": "售后",
                "action": f"当用户问起订单 {writer}-{number} 的退货时，告诉他寄到 {number} 号仓库。",
                "evidence": f"订单 {writer}-{number} 退到 {number} 号仓库",
                "confidence": 0.9,
            }
        )
        try:
            result = save_insight(store, parameters, Context(user_id=f"writer-{writer}"))
        except HindsightError as error:
            with load.lock:
                (load.save_failures if str(error).startswith(OUR_FAILURE) else load.unexpected).append(str(error))
            continue
        except Exception as error:  # recorded, and the test fails on it
            with load.lock:
                load.unexpected.append(f"{type(error).__name__}: {error}")
            continue
        assert result.json is not None
        with load.lock:
            load.acknowledged[str(result.json["id"])] = topic


def search_forever(store: InsightStore, stop: threading.Event, load: Load) -> None:
    while not stop.is_set():
        started = time.monotonic()
        failure: str | None = None
        try:
            search_insight(
                store, Parameters({"query": "订单退货寄到哪个仓库", "scene": "售后"}), Context(user_id="writer-0")
            )
        except HindsightError as error:
            failure = str(error)
        except Exception as error:
            with load.lock:
                load.unexpected.append(f"{type(error).__name__}: {error}")
        with load.lock:
            load.searches.append((started, time.monotonic() - started, failure))
        time.sleep(0.05)


def local_ids(node: ClusterNode, base: Settings, project: str, embedder: Embedder) -> set[str]:
    """The insights `node` holds itself: its own client, the project's handle reading at ONE."""
    settings = settings_on(base, node, project)
    client = connect_url(settings, node.server.url)
    try:
        one = Replication(FACTOR, read=ConsistencyLevel.ONE)
        insights = ensure_collections(client, project, embedder, replication=one).insights
        return {str(obj.uuid) for obj in insights.iterator(return_properties=[])}
    finally:
        client.close()


def test_a_node_killed_mid_load_loses_no_acknowledged_save(
    cluster: Cluster, settings: Settings, embedder: Embedder, project: str
) -> None:
    entry, victim = cluster.nodes[0], cluster.nodes[2]  # the clients talk to node0; node2 dies
    base = settings_on(settings, entry, project)
    client = connect_url(base, entry.server.url)
    stores = [InsightStore.open(client, base, embedder) for _ in range(WRITERS + 1)]
    try:
        replication = client.collections.use(spec_of(INSIGHTS).name).config.get().replication_config
        assert replication.factor == FACTOR
        if needs_async_flag(str(client.get_meta()["version"])):
            assert replication.async_enabled  # 1.27: asked for; 1.38 and newer: always on, no field
        load, stop = Load(), threading.Event()
        threads = [
            threading.Thread(target=save_forever, args=(stores[n], n, stop, load), daemon=True) for n in range(WRITERS)
        ]
        threads.append(threading.Thread(target=search_forever, args=(stores[WRITERS], stop, load), daemon=True))
        for thread in threads:
            thread.start()
        # The first calls read the models (seconds on a loaded machine); the load counts from the first answers.
        wait_until(lambda: bool(load.acknowledged) and bool(load.searches), LOAD_START_BOUND_S, "the load to start")
        time.sleep(BEFORE_KILL_S)
        acknowledged_before_kill = len(load.acknowledged)
        victim.kill()
        killed_at = time.monotonic()
        time.sleep(DOWN_S)
        acknowledged_while_down = len(load.acknowledged) - acknowledged_before_kill
        restarted_at = time.monotonic()
        victim.restart()
        healthy_after_s = cluster.wait_healthy(120)
        rejoined_at = time.monotonic()
        time.sleep(3.0)  # load on the three again
        stop.set()
        for thread in threads:
            thread.join(60)
            assert not thread.is_alive()

        # Every acknowledged save is there, read at ALL (every copy answers) through node0.
        acknowledged = dict(load.acknowledged)
        handle = client.collections.use(spec_of(INSIGHTS).name).with_tenant(tenant_name(project))
        at_all = {str(o.uuid) for o in handle.with_consistency_level(ConsistencyLevel.ALL).iterator()}
        missing_at_all = set(acknowledged) - at_all

        # The restarted node's own copy catches up: read at ONE through node2 until it holds every acknowledged save.
        caught_up_s: float | None = None
        held: set[str] = set()
        while time.monotonic() - rejoined_at < CATCH_UP_BOUND_S:
            held = local_ids(victim, settings, project, embedder)
            if set(acknowledged) <= held:
                caught_up_s = time.monotonic() - restarted_at
                break
            time.sleep(1.0)
        per_node = {
            node.name: len(set(acknowledged) & local_ids(node, settings, project, embedder)) for node in cluster.nodes
        }
    finally:
        for store in stores:
            store.close()
        client.close()

    during = [s for s in load.searches if killed_at <= s[0] < rejoined_at]
    failed = [s[2] for s in load.searches if s[2] is not None]
    bound = search_bound_s(base)
    print(
        f"\nacknowledged {len(acknowledged)} saves ({acknowledged_before_kill} before the kill, "
        f"{acknowledged_while_down} while node2 was down), {len(load.save_failures)} saves failed with our message; "
        f"missing at ALL: {len(missing_at_all)}; searches {len(load.searches)}, {len(during)} while down or "
        f"rejoining, {len(failed)} failed; slowest {max(s[1] for s in load.searches):.2f}s "
        f"(bound {bound:.0f}s), slowest while down {max((s[1] for s in during), default=0):.2f}s; node2 HEALTHY "
        f"{healthy_after_s:.1f}s after ready, its copy complete {caught_up_s}s after restart; per node {per_node}; "
        f"save failures {Counter(load.save_failures).most_common(3)}; unexpected {load.unexpected[:3]}"
    )
    assert not load.unexpected, load.unexpected[:5]
    assert acknowledged_before_kill > 0 and acknowledged_while_down > 0  # the load went on through the kill
    assert not missing_at_all  # 0 acknowledged writes lost
    assert caught_up_s is not None, f"node2 held {len(set(acknowledged) & held)} of {len(acknowledged)}"
    assert per_node == {node.name: len(acknowledged) for node in cluster.nodes}
    # Searches answered or failed with our message, each within the bound; most answered while the node was down.
    assert all(seconds <= bound for _, seconds, _ in load.searches), sorted(s[1] for s in load.searches)[-5:]
    assert all(failure.startswith(OUR_FAILURE) for failure in failed), failed[:3]
    answered_during = [s for s in during if s[2] is None]
    assert len(answered_during) >= len(during) / 2 and answered_during


def test_two_workers_on_postgres_against_the_cluster_reflect_each_session_once_when_one_is_killed(
    cluster: Cluster,
    settings: Settings,
    embedder: Embedder,
    project: str,
    postgres_url: str,
    tmp_path: Path,
) -> None:
    node = cluster.nodes[1]
    project_settings = settings_on(settings, node, project)
    client = connect_url(project_settings, node.server.url)
    stub = ChatStub(lessons(4))
    workers: list[WorkerProcess] = []
    engine = open_engine(postgres_url)
    try:
        store = InsightStore.open(client, project_settings, embedder)
        sessions = record_sessions(store, 4)
        every = [(kind, s) for s in sessions for kind in ("anomaly", "session")]
        env = {
            **environment(node.server, project_settings, postgres_url, stub),
            "HINDSIGHT_REPLICATION_FACTOR": str(FACTOR),
        }
        stub.hold_from = 3  # two reflections finish; from the third on, each waits mid-reflection with its claim
        workers += [WorkerProcess(env, tmp_path / f"worker-{n}.log") for n in range(2)]
        ledger = Ledger(engine, project)
        board = TaskBoard(engine, project, "observer", lease=timedelta(seconds=3), max_attempts=3)

        def held_mid_reflection() -> bool:
            arrived = len(stub.prompts)
            return arrived >= 3 and len(ledger.reflections()) == 2 and len(board.tasks(state="running")) == arrived - 2

        wait_until(held_mid_reflection, 120, "a worker to be mid-reflection", *workers)
        running = board.tasks(state="running")
        owners = {int(str(task.owner).split(":")[1]) for task in running}
        (victim,) = [w for w in workers if w.process.pid in owners][:1]
        cut_short = [task for task in running if int(str(task.owner).split(":")[1]) == victim.process.pid]
        victim.kill()  # SIGKILL mid-reflection: its claims left behind
        survivor = next(w for w in workers if w is not victim)
        stub.release()
        wait_until(lambda: done(engine, project, sessions), 120, "every reflection", survivor)
        assert survivor.stop() == 0, survivor.output()
        rows = ledger.reflections()
        counted = ledger.counters(datetime.now(UTC).date())
        insights = {f"u{n}": store.list_insights(user_id=f"u{n}") for n in range(4)}
        store.close()
    finally:
        for worker in workers:
            worker.ensure_stopped()
        engine.dispose()
        stub.close()
        client.close()

    print(f"\nreflections {len(rows)} for {len(every)} tasks; cut short by the kill {len(cut_short)}")
    assert Counter((r["kind"], r["subject"]) for r in rows) == Counter(every)  # each once: none lost, none twice
    assert all(r["outcome"] == "ok" for r in rows)
    for task in cut_short:
        (redone,) = [r for r in rows if (r["kind"], r["subject"]) == (task.kind, task.subject)]
        assert redone["attempt"] == 2 and redone["worker"] != task.owner
    assert counted["claims.taken_over"] == len(cut_short) >= 1
    assert all(len(found) == 1 and found[0].topic == "称呼" for found in insights.values()), insights
