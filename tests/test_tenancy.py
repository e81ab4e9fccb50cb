"""Projects as tenants: tenant names, one project never reading another's on the same collections, and idle projects
deactivated least recently used first (store/tenancy.py)."""

from __future__ import annotations

import random
import re
import threading
import unicodedata
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import weaviate
from weaviate.classes.config import ConsistencyLevel
from weaviate.classes.query import Filter
from weaviate.classes.tenants import TenantActivityStatus

from hindsight_dify import StoreCache, credentials_for
from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import NotFound
from hindsight_insights.fewshot import ExampleDraft
from hindsight_insights.models import InsightStatus, TurnDraft, TurnSignals
from hindsight_insights.store import InsightStore
from hindsight_insights.store.blame import BlameMark
from hindsight_insights.store.replication import Replication, replication_of, with_levels
from hindsight_insights.store.schema import BLAME, COLLECTION_SET, EXAMPLES, INSIGHTS, SUGGESTIONS, spec_of
from hindsight_insights.store.tenancy import (
    REGISTRY,
    STATUS_UPDATES_PER_REQUEST,
    ProjectTenancy,
    create_projects,
    deactivate_idle,
    drop_project,
    ensure_collections,
    registry_id,
    tenant_name,
)
from hindsight_insights.suggestions import Mined
from hindsight_insights.weaviate_server import LocalWeaviate, ensure_binary, start_local
from testkit.admitted import admitted_as_is
from testkit.drafts import draft as insight
from tests.worker_support import FakeClock, RuleExtractor, running_worker

VALID_TENANT = re.compile(r"[A-Za-z0-9_-]{1,64}")


# ---- tenant names ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("project", "tenant"),
    [
        ("default", "default"),
        ("shop-cn", "shop-cn"),
        ("Shop_CN", "Shop_CN"),
        (" ＳＨＯＰ ", "SHOP"),
        ("a" * 64, "a" * 64),
    ],
)
def test_a_name_weaviate_allows_is_its_own_tenant(project: str, tenant: str) -> None:
    assert tenant_name(project) == tenant


@pytest.mark.parametrize(
    "project", ["售后客服", "Shop CN!", "电商 / 退货 v2", "🙂", "a" * 65, "a" * 100, "x.y", "a--" + "0" * 16]
)
def test_any_other_name_maps_to_a_valid_readable_tenant(project: str) -> None:
    tenant = tenant_name(project)
    assert VALID_TENANT.fullmatch(tenant), tenant
    assert tenant == tenant_name(project)  # deterministic
    prefix = re.sub(r"[^A-Za-z0-9_-]+", "_", project).strip("_")[:40]
    assert tenant.startswith(f"{prefix}--") and len(tenant) == len(prefix) + 18


def test_distinct_names_never_share_a_tenant() -> None:
    mapped = tenant_name("Shop CN!")
    tricky = [
        "Shop-CN",
        "shop-cn",
        "shop cn",
        "shop_cn",
        "Shop CN!",
        "Shop CN?",
        "售后",
        "售前",
        mapped,  # a name chosen to look like another project's tenant is mapped too, never given that tenant
        mapped.upper(),
        "a" * 64,
        "a" * 65,
        "a" * 66,
        "a" * 40 + "b",
        "a" * 40 + "c",
    ]
    assert tenant_name(mapped) != mapped
    assert len({tenant_name(name) for name in tricky}) == len(tricky)
    rng = random.Random(20)
    alphabet = "abcAB01_- .!/售后客服电商🙂ＳＨＯＰ"
    names = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))).strip() for _ in range(20_000)}
    names = {name for name in names if name}
    by_normal_form: dict[str, set[str]] = {}
    for name in names:
        by_normal_form.setdefault(tenant_name(name), set()).add(name)
    for tenant, sharing in by_normal_form.items():
        assert VALID_TENANT.fullmatch(tenant), tenant
        # Only spellings of one name (full-width letters, spaces around it) share a tenant.
        assert len({unicodedata.normalize("NFKC", name).strip() for name in sharing}) == 1, sharing


# ---- one project never reads another's ------------------------------------------------------------------------------


def turn(session: str, user: str, text: str, correction: bool = False) -> TurnDraft:
    return TurnDraft(
        session_id=session,
        user_id=user,
        user_message=text,
        assistant_message="ok",
        signals=TurnSignals(correction=correction),
    )


@pytest.fixture
def other_store(client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder) -> Iterator[InsightStore]:
    project = f"其他项目 {uuid.uuid4().hex[:8]}"  # a name that maps to a hashed tenant
    yield InsightStore.open(client, settings.model_copy(update={"project": project}), embedder)
    drop_project(client, project)


def test_one_project_never_reads_or_changes_anothers_on_the_same_collections(
    store: InsightStore, other_store: InsightStore
) -> None:
    mine, theirs = store, other_store
    assert mine.insight_table.collection.name == theirs.insight_table.collection.name == "HindsightInsight"
    now = datetime.now(UTC)
    # The same content in both: the same deterministic id, one object in each tenant.
    shared = insight(user_id="u1")
    mine_shared, theirs_shared = mine.save(admitted_as_is(shared)).id, theirs.save(admitted_as_is(shared)).id
    assert mine_shared == theirs_shared
    secret = mine.save(
        admitted_as_is(
            insight(topic="vip discount", action="Offer the VIP code ZEBRA-77 for 30% off.", evidence="ZEBRA-77")
        )
    ).id
    expiring = mine.save(
        admitted_as_is(insight(topic="flash sale", action="Mention the flash sale.", expire_at=now + timedelta(days=1)))
    ).id
    mine.audit.record("edit", "reviewer", mine.get(secret), mine.get(secret), "checked")
    for store in (mine, theirs):
        store.turns.append(turn("s1", "u1", "where do returns go?"))
    mine.turns.append(turn("s1", "u1", "no, the ZEBRA code", correction=True))
    day = now.date()
    assert mine.budget.take("screen", 3, day) and mine.budget.take("screen", 3, day)
    mine_counts = mine.count()

    # Search, recall, get by id, list, count, visible ids: none of mine from theirs.
    found = theirs.retrieval.search("VIP discount code", scene="after-sales", score_threshold=0.0)
    assert secret not in {hit.insight.id for hit in found}
    assert {hit.insight.id for hit in found} <= {theirs_shared}
    recalled = theirs.retrieval.recall("VIP discount code ZEBRA", scene="after-sales", user_id="u1")
    recalled_ids = {i.id for i in recalled.standing} | {hit.insight.id for hit in recalled.situational}
    assert secret not in recalled_ids and expiring not in recalled_ids
    assert secret in {hit.insight.id for hit in mine.retrieval.search("VIP discount code", scene="after-sales")}
    with pytest.raises(NotFound):
        theirs.get(secret)
    assert {i.id for i in theirs.list_insights()} == {theirs_shared}
    assert theirs.count() == (1, 1)
    assert theirs.visible_ids([secret, expiring], user_id="u1") == set()
    # The turn log and the audit trail, and the model budget.
    assert [t.user_message for t in theirs.turns.session("s1")] == ["where do returns go?"]
    assert theirs.turns.signal_turns(now - timedelta(minutes=5)) == []
    assert len(mine.turns.signal_turns(now - timedelta(minutes=5))) == 1
    assert theirs.audit.of(secret) == [] and len(mine.audit.of(secret)) == 1
    assert theirs.budget.used(day) == 0 and mine.budget.used(day) == 2

    # Their expiry sweep, forgetting and deletes change nothing of mine.
    later = now + timedelta(days=2)
    assert theirs.expire_sweep(later) == 0
    assert mine.get(expiring).status == InsightStatus.ACTIVE
    theirs.delete(theirs_shared)
    assert mine.get(mine_shared).status == InsightStatus.ACTIVE
    forgotten = theirs.forget_user("u1")
    assert forgotten.turns_deleted == 1
    assert mine.count() == mine_counts and mine.turns.count(user_id="u1") == 2
    assert mine.expire_sweep(later) == 1 and mine.get(expiring).status == InsightStatus.EXPIRED
    assert theirs.count() == (0, 0)


def test_blame_examples_and_suggestions_stay_in_their_project(
    client: weaviate.WeaviateClient, store: InsightStore, other_store: InsightStore
) -> None:
    mine, theirs = store, other_store
    now = datetime.now(UTC)
    assert mine.examples.collection.name == theirs.examples.collection.name == "HindsightExample"
    rule = mine.save(admitted_as_is(insight(user_id="u1"))).id
    judged = uuid.uuid4()
    mine.blame_ledger.add([BlameMark(rule, judged, judged, "s1", "u1", "blame", 0.8, "correction:factual", now)])
    draft = ExampleDraft(
        user_id="u1",
        session_id="s1",
        turn_id=judged,
        scene="after-sales",
        type="factual",
        context="where do returns go?",
        said="to Beijing",
        corrected="no, returns go to 88 Zhangjiang Road",
    )
    example = mine.examples.keep(draft, now)
    mined = Mined(
        id=uuid.uuid4(),
        topic="return address",
        topic_key="return address",
        scene="after-sales",
        scene_key="after-sales",
        type="factual",
        corrections=3,
        users=2,
        sessions=3,
        first_at=now,
        last_at=now,
        evidence=[],
        text="State the return address in the system prompt.",
    )
    assert mine.suggestions.upsert(mined, now) == "created"

    assert theirs.blame_ledger.tally(rule).blame == 0.0 and mine.blame_ledger.tally(rule).blame == pytest.approx(0.8)
    assert theirs.examples.matching("where do returns go?", user_id="u1", scene="after-sales") == []
    assert [
        found.id for found in mine.examples.matching("where do returns go?", user_id="u1", scene="after-sales")
    ] == [example.id]
    with pytest.raises(NotFound):
        theirs.examples.get(example.id)
    assert theirs.suggestions.all() == [] and [found.id for found in mine.suggestions.all()] == [mined.id]
    theirs.forget_user("u1")  # their forgetting leaves mine
    assert mine.examples.recent(user_id="u1") and mine.blame_ledger.tally(rule).blame == pytest.approx(0.8)

    drop_project(client, mine.settings.project)  # deleting the project deletes its tenant in each
    for role in (BLAME, EXAMPLES, SUGGESTIONS):
        tenants = client.collections.use(spec_of(role).name).tenants
        assert not tenants.exists(tenant_name(mine.settings.project))
        assert tenants.exists(tenant_name(theirs.settings.project))  # theirs stays


# ---- idle projects deactivated, least recently used first ----------------------------------------------------------


@pytest.fixture(scope="module")
def own_server(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalWeaviate]:
    """A Weaviate of this module's own: counting active tenants must not see other tests' projects."""
    server = start_local(ensure_binary(settings), tmp_path_factory.mktemp("tenants-weaviate"))
    yield server
    server.stop()


def drop_collection_set(client: weaviate.WeaviateClient) -> None:
    for spec in COLLECTION_SET:
        client.collections.delete(spec.name)
    client.collections.delete(REGISTRY)


@pytest.fixture
def own_client(own_server: LocalWeaviate, settings: Settings) -> Iterator[weaviate.WeaviateClient]:
    client = connect_url(own_server.settings(settings), own_server.url)
    yield client
    drop_collection_set(client)
    client.close()


def statuses(client: weaviate.WeaviateClient, role: str = INSIGHTS) -> dict[str, TenantActivityStatus]:
    collection = client.collections.use(next(spec.name for spec in COLLECTION_SET if spec.role == role))
    return {name: tenant.activity_status for name, tenant in collection.tenants.get().items()}


def used_at(client: weaviate.WeaviateClient, project: str, at: datetime) -> None:
    client.collections.use(REGISTRY).data.update(registry_id(tenant_name(project)), properties={"last_used": at})


def test_the_least_recently_used_projects_are_deactivated_and_come_back_on_their_next_call(
    own_client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder
) -> None:
    base = datetime.now(UTC) - timedelta(hours=1)
    stores = {}
    for project in ["old", "older", "recent", "newest"]:
        stores[project] = InsightStore.open(own_client, settings.model_copy(update={"project": project}), embedder)
        stores[project].save(admitted_as_is(insight(topic=f"topic of {project}")))
        stores[project].turns.append(turn("s1", "u1", f"hello from {project}"))
    for project, minutes in {"older": 0, "old": 10, "recent": 20, "newest": 30}.items():
        used_at(own_client, project, base + timedelta(minutes=minutes))

    assert deactivate_idle(own_client, 4) == []  # at the cap: nothing to do
    assert deactivate_idle(own_client, 2) == ["older", "old"]
    for spec in COLLECTION_SET:  # every collection of the set: the project's tenant in each
        assert {name: status.value for name, status in statuses(own_client, spec.role).items()} == {
            "older": "INACTIVE",
            "old": "INACTIVE",
            "recent": "ACTIVE",
            "newest": "ACTIVE",
        }, spec.role

    # An inactive project's next call brings it back, whatever the call is.
    old = stores["old"]
    (hit,) = old.retrieval.search("topic of old", scene="after-sales", score_threshold=0.0)
    assert hit.insight.topic == "topic of old"
    assert statuses(own_client)["old"] == TenantActivityStatus.ACTIVE
    assert [t.user_message for t in stores["older"].turns.session("s1")] == ["hello from older"]
    assert stores["older"].count() == (1, 1)

    # Opening a project notes its use (and keeps the cap): the one opened now is never the one deactivated.
    used_at(own_client, "old", base - timedelta(days=1))
    InsightStore.open(own_client, settings.model_copy(update={"project": "old", "max_active_tenants": 1}), embedder)
    record = own_client.collections.use(REGISTRY).query.fetch_object_by_id(registry_id("old"))
    assert record is not None and record.properties["last_used"] > base  # type: ignore[operator]
    active = {name for name, status in statuses(own_client).items() if status == TenantActivityStatus.ACTIVE}
    assert active == {"old"}


def test_more_than_a_request_can_deactivate_are_deactivated_in_chunks(
    own_client: weaviate.WeaviateClient, embedder: Embedder
) -> None:
    projects = [f"bulk-{index:03d}" for index in range(STATUS_UPDATES_PER_REQUEST + 30)]
    for project in projects:
        ensure_collections(own_client, project, embedder)
    assert sum(s == TenantActivityStatus.ACTIVE for s in statuses(own_client).values()) == len(projects)
    gone = deactivate_idle(own_client, 10)
    assert len(gone) == len(projects) - 10
    for spec in COLLECTION_SET:
        found = statuses(own_client, spec.role)
        assert sum(s == TenantActivityStatus.ACTIVE for s in found.values()) == 10, spec.role


def test_the_plugin_opening_many_projects_sweeps_idle_ones_at_most_once_a_minute(
    own_client: weaviate.WeaviateClient, own_server: LocalWeaviate, settings: Settings
) -> None:
    """The sweep lists every project's tenants: a plugin process opening one project after another runs it on its
    first open, then at most once every `sweep_every_s`, not on each."""
    served = own_server.settings(settings).model_copy(update={"max_active_tenants": 1})

    def open_in(cache: StoreCache, project: str) -> None:
        cache.store_for(credentials_for(served.model_copy(update={"project": project})))

    def active() -> set[str]:
        return {name for name, status in statuses(own_client).items() if status == TenantActivityStatus.ACTIVE}

    slow = StoreCache(served, sweep_every_s=3600)
    try:
        for project in ("sweep-a", "sweep-b", "sweep-c"):
            open_in(slow, project)
        assert active() == {"sweep-a", "sweep-b", "sweep-c"}  # swept on the first open only, when it was alone
    finally:
        slow.close()
    due = StoreCache(served, sweep_every_s=0)
    try:
        open_in(due, "sweep-d")  # a sweep is due: the cap of 1 holds again, the project opened now kept
        assert active() == {"sweep-d"}
    finally:
        due.close()


def test_many_projects_are_created_at_once_and_open_as_if_opened_one_by_one(
    own_client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder
) -> None:
    projects = [f"batch-{index:03d}" for index in range(STATUS_UPDATES_PER_REQUEST + 30)] + ["售后 批量"]
    ensure_collections(own_client, "batch-000", embedder)  # one exists already: left as it is
    created = create_projects(own_client, projects, embedder)
    assert sorted(created) == sorted(tenant_name(project) for project in projects[1:])
    for spec in COLLECTION_SET:  # a tenant in every collection of the set, active
        found = statuses(own_client, spec.role)
        assert set(found) == {tenant_name(project) for project in projects}, spec.role
        assert set(found.values()) == {TenantActivityStatus.ACTIVE}
    registry = own_client.collections.use(REGISTRY)
    record = registry.query.fetch_object_by_id(registry_id(tenant_name("售后 批量")))
    assert record is not None
    assert (record.properties["project"], record.properties["embedder"]) == ("售后 批量", embedder.id)
    assert create_projects(own_client, projects, embedder) == []  # again: nothing new
    store = InsightStore.open(own_client, settings.model_copy(update={"project": "售后 批量"}), embedder)
    store.import_many([admitted_as_is(insight())])
    assert store.count()[0] == 1
    assert (
        deactivate_idle(own_client, 10)
        and len([s for s in statuses(own_client).values() if s == TenantActivityStatus.ACTIVE]) == 10
    )


def test_a_second_process_sees_the_first_ones_use(
    own_client: weaviate.WeaviateClient, own_server: LocalWeaviate, settings: Settings, embedder: Embedder
) -> None:
    """The last use is in Weaviate, not in a process: another client's sweep keeps the project the first one used."""
    for project in ("a", "b"):
        ensure_collections(own_client, project, embedder)
    used_at(own_client, "a", datetime.now(UTC) - timedelta(hours=2))
    used_at(own_client, "b", datetime.now(UTC) - timedelta(hours=1))
    first = InsightStore.open(own_client, settings.model_copy(update={"project": "a"}), embedder)
    assert first.tenancy.touch(force=True)
    other = connect_url(own_server.settings(settings), own_server.url)
    try:
        assert deactivate_idle(other, 1) == ["b"]
    finally:
        other.close()


def test_dropping_a_project_leaves_the_others(own_client: weaviate.WeaviateClient, embedder: Embedder) -> None:
    for project in ("keep", "drop"):
        ensure_collections(own_client, project, embedder)
    drop_project(own_client, "drop")
    drop_project(own_client, "never-made")  # no error
    for spec in COLLECTION_SET:
        assert set(statuses(own_client, spec.role)) == {"keep"}
    registry = own_client.collections.use(REGISTRY)
    assert registry.query.fetch_object_by_id(registry_id("drop")) is None
    assert registry.query.fetch_object_by_id(registry_id("keep")) is not None


def last_used(client: weaviate.WeaviateClient, project: str) -> datetime:
    record = client.collections.use(REGISTRY).query.fetch_object_by_id(registry_id(tenant_name(project)))
    assert record is not None and isinstance(record.properties["last_used"], datetime)
    return record.properties["last_used"]


def test_use_is_noted_at_most_once_a_minute_per_process(
    own_client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder
) -> None:
    store = InsightStore.open(own_client, settings.model_copy(update={"project": "busy"}), embedder)
    long_ago = datetime.now(UTC) - timedelta(days=1)
    used_at(own_client, "busy", long_ago)
    assert store.tenancy.touch() is False and last_used(own_client, "busy") == long_ago  # opened just now
    eager = ProjectTenancy(own_client, "busy", tenant_name("busy"), touch_every_s=0.0)
    assert eager.touch() is True and last_used(own_client, "busy") > long_ago


def test_the_workers_expiry_job_keeps_the_cap_and_its_jobs_note_their_use(
    own_client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    for project in ("idle-1", "idle-2"):
        ensure_collections(own_client, project, embedder)
        used_at(own_client, project, datetime.now(UTC) - timedelta(hours=1))
    store = InsightStore.open(own_client, settings.model_copy(update={"project": "worked"}), embedder)
    clock = FakeClock(datetime.now(UTC))
    with running_worker(
        store, f"sqlite:///{tmp_path / 'state.sqlite3'}", clock, RuleExtractor(), max_active_tenants=1
    ) as worker:
        store.tenancy.touch_every_s = 0.0
        used_at(own_client, "worked", datetime.now(UTC) - timedelta(days=1))
        worker.note_use()
        assert last_used(own_client, "worked") > datetime.now(UTC) - timedelta(minutes=1)
        report = worker.expire()
    assert report.deactivated == 2
    assert {name: status.value for name, status in statuses(own_client).items()} == {
        "idle-1": "INACTIVE",
        "idle-2": "INACTIVE",
        "worked": "ACTIVE",
    }


def test_on_one_node_the_handles_ask_for_no_consistency_level_and_replicated_ones_do(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder
) -> None:
    """Factor 1 (the default) leaves every request as it was: Weaviate 1.27 fails a batch import at QUORUM into an
    unreplicated collection. With a factor above 1 the handles write at QUORUM, whatever the reads are (reads at ONE
    are read through such handles in tests/test_cluster.py)."""
    single = ensure_collections(
        client, project_settings.project, embedder, replication=replication_of(project_settings)
    )
    assert {role: handle.consistency_level for role, handle in single.handles.items()} == dict.fromkeys(
        single.handles, None
    )
    reading_one = Replication(3, read=ConsistencyLevel.ONE)
    for role, handle in single.handles.items():
        leveled = with_levels(handle, reading_one)
        assert leveled.consistency_level == ConsistencyLevel.QUORUM and leveled.tenant == single.tenant, role


# ---- processes opening a new project at once -----------------------------------------------------------------------


def race_to_open(clients: list[weaviate.WeaviateClient], project: str, embedder: Embedder) -> list[str]:
    """Each client opens `project` in a thread of its own, all released at once; the tenants they were handed."""
    start = threading.Barrier(len(clients))

    def open_project(client: weaviate.WeaviateClient) -> str:
        start.wait()
        return ensure_collections(client, project, embedder).tenant

    with ThreadPoolExecutor(len(clients)) as pool:
        return list(pool.map(open_project, clients))


def test_processes_racing_to_open_a_new_project_on_a_new_server_all_open_it_on_one_record(
    own_server: LocalWeaviate, own_client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder
) -> None:
    """Racers on a server without the collection set race to create the set, then to register the project; a few
    rounds, since a round is won in a different order each time. Weaviate's insert is check-then-write, so several may
    each write the record (the last write stays): none of them may fail or be told the project could not be registered,
    and one record is left."""
    racers, rounds = 6, 5
    clients = [connect_url(own_server.settings(settings), own_server.url) for _ in range(racers)]
    try:
        for _ in range(rounds):
            drop_collection_set(own_client)
            project = f"race-{uuid.uuid4().hex[:8]}"
            tenants = race_to_open(clients, project, embedder)
            assert tenants == [tenant_name(project)] * racers
            registry = own_client.collections.use(REGISTRY)
            (record,) = registry.query.fetch_objects(filters=Filter.by_property("project").equal(project)).objects
            assert (record.properties["embedder"], record.properties["dimension"]) == (embedder.id, embedder.dimension)
    finally:
        for client in clients:
            client.close()
