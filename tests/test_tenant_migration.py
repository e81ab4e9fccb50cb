"""`python -m hindsight_cli migrate` on an install of one collection set per project (the layout before tenants,
testkit/legacy_layout.py): everything moves into the project's tenant with its uuid, properties and vector, an
interrupted run is finished by the next one, nothing is dropped before it verifies."""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
import weaviate
from typer.testing import CliRunner
from weaviate.classes.data import DataObject

from hindsight_cli.app import app
from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder, Vectors
from hindsight_insights.errors import EmbedderMismatch, HindsightError
from hindsight_insights.models import CorrectionRecord, InsightDraft, InsightStatus, TurnDraft, TurnSignals
from hindsight_insights.store import InsightStore
from hindsight_insights.store.schema import (
    AUDIT,
    BUDGET,
    COLLECTION_SET,
    INSIGHTS,
    TURNS,
    VECTOR_NAME,
    VECTOR_TEXT_VERSION,
    legacy_collection_names,
)
from hindsight_insights.store.tenancy import drop_project, project_collection
from hindsight_insights.store.tenant_migration import legacy_projects, move_into_tenants
from hindsight_insights.weaviate_server import LocalWeaviate
from testkit.admitted import admitted_as_is, all_admitted_as_is
from testkit.legacy_layout import (
    create_legacy_collections,
    drop_legacy_collections,
    legacy_store,
    spend_legacy_budget,
)

STATUS = {INSIGHTS: "status", TURNS: "error_status", AUDIT: "action"}
Snapshot = dict[uuid.UUID, tuple[dict[str, Any], list[float] | None]]


def snapshot(collection: Any) -> Snapshot:
    """Every object: its properties and its vector, as Weaviate returns them."""
    found: Snapshot = {}
    for obj in collection.iterator(include_vector=True):
        vector = obj.vector.get(VECTOR_NAME) if isinstance(obj.vector, dict) else obj.vector
        found[obj.uuid] = (dict(obj.properties), list(vector) if vector else None)
    return found


def per_status(role: str, objects: Snapshot) -> Counter[str]:
    key = STATUS.get(role)
    return Counter(str(props.get(key) or "") if key else "all" for props, _ in objects.values())


def fill(store: InsightStore) -> None:
    """A project as it lives: insights of every status (with slot chains), turns with corrections, an audit trail and
    a model budget."""
    now = datetime.now(UTC)
    drafts = [
        InsightDraft.parse(
            {
                "topic": f"退货地址 {index}",
                "kind": ("fact", "preference", "process", "lesson")[index % 4],
                "scene": ("售后服务", "订单查询")[index % 2],
                "action": f"退货寄到 {index} 号仓，联系电话见工单。",
                "observation": f"用户第 {index} 次问到退货地址。",
                "evidence": f"我要退货，寄到哪个仓？{index}",
                "confidence": 0.5 + (index % 5) / 10,
                "user_id": f"u{index % 3}",
                "scope": "user",
                "tags": ["售后", f"t{index % 4}"],
            }
        )
        for index in range(56)
    ]
    assert store.import_many(all_admitted_as_is(drafts), batch_size=20)
    listed = store.list_insights(limit=100)
    store.set_status(listed[0].id, InsightStatus.REJECTED)
    flash = InsightDraft.parse(
        {
            "topic": "限时活动",
            "kind": "fact",
            "action": "提到限时活动。",
            "evidence": "限时活动",
            "expire_at": now + timedelta(hours=1),
        }
    )
    store.save(admitted_as_is(flash))
    assert store.expire_sweep(now + timedelta(hours=2)) == 1
    pending = store.save(
        admitted_as_is(
            InsightDraft.parse(
                {
                    "topic": "退款时限",
                    "kind": "process",
                    "scene": "售后服务",
                    "action": "告诉顾客 3 个工作日内原路退回。",
                    "evidence": "退款 3 个工作日到账",
                    "status": "pending_review",
                    "review_reason": "a project-wide process rule",
                }
            )
        )
    )
    # A slot with two versions: the older one superseded.
    for value in ("88", "99"):
        store.save(
            admitted_as_is(
                InsightDraft.parse(
                    {
                        "topic": "仓库门牌",
                        "kind": "fact",
                        "scene": "售后服务",
                        "action": f"仓库在张江路 {value} 号。",
                        "evidence": f"张江路 {value} 号",
                    }
                )
            ),
            now=now + timedelta(seconds=int(value)),
        )
    store.audit.record("edit", "ops-lin", store.get(pending.id), store.get(pending.id), "checked")
    store.audit.record("reject", "ops-lin", listed[0], store.get(listed[0].id), "wrong warehouse")
    for index in range(23):
        signals = TurnSignals(correction=index % 5 == 0, feedback="dislike" if index % 7 == 0 else None)
        turn = store.turns.append(
            TurnDraft(
                session_id=f"s{index % 4}",
                user_id=f"u{index % 3}",
                user_message=f"第 {index} 个问题",
                assistant_message=f"第 {index} 个回答",
                signals=signals,
                injected_insight_ids=[listed[index % 10].id],
            )
        )
        if index % 6 == 0:
            store.turns.mark_corrected(
                turn,
                CorrectionRecord(type="factual", original="88", corrected="99", by="u1", at=now, in_turn=uuid.uuid4()),
            )
    spend_legacy_budget(store.budget.collection, now.date(), 3)


@pytest.fixture
def legacy(client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder) -> Iterator[InsightStore]:
    store = legacy_store(client, project_settings, embedder)
    fill(store)
    yield store
    drop_legacy_collections(client, project_settings.project)


def old_snapshots(client: weaviate.WeaviateClient, project: str) -> dict[str, Snapshot]:
    names = legacy_collection_names(project).by_role()
    return {role: snapshot(client.collections.use(name)) for role, name in names.items()}


def assert_moved(client: weaviate.WeaviateClient, project: str, before: dict[str, Snapshot]) -> None:
    """Every old object is in the project's tenant: same uuid, same properties, the same vector bit for bit, and the
    counts per status the same."""
    for role, old in before.items():
        now = snapshot(project_collection(client, project, role))
        assert set(now) == set(old), role
        assert per_status(role, now) == per_status(role, old), role
        for object_id, (properties, vector) in old.items():
            moved_properties, moved_vector = now[object_id]
            assert {k: v for k, v in moved_properties.items() if k in properties} == properties, (role, object_id)
            if vector is None:
                assert moved_vector is None
            else:
                assert moved_vector is not None
                assert np.array_equal(np.asarray(moved_vector, np.float32), np.asarray(vector, np.float32))


class Crash(Exception):
    """The process dies here."""


def crash_after(count: int) -> Any:
    def progress(collection: str, done: int) -> None:
        if collection.endswith("_Insight") and done >= count:
            raise Crash(f"killed after copying {done} insights")

    return progress


def test_an_interrupted_migration_is_finished_by_the_next_run_and_loses_nothing(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder, legacy: InsightStore
) -> None:
    project = project_settings.project
    before = old_snapshots(client, project)
    assert len(before[INSIGHTS]) == 60 and len(before[TURNS]) == 23 and len(before[AUDIT]) == 2
    assert len(before[BUDGET]) == 3
    statuses = per_status(INSIGHTS, before[INSIGHTS])
    assert {"active", "superseded", "pending_review", "rejected", "expired"} <= set(statuses), statuses

    with pytest.raises(Crash):
        move_into_tenants(client, project, embedder, batch_size=20, progress=crash_after(40))
    names = legacy_collection_names(project).by_role()
    assert all(client.collections.exists(name) for name in names.values())  # nothing dropped
    partial = len(snapshot(project_collection(client, project, INSIGHTS)))
    assert 0 < partial < 60

    started = time.perf_counter()
    report = move_into_tenants(client, project, embedder, batch_size=20)
    took = time.perf_counter() - started
    assert report.verified and sorted(report.dropped) == sorted(names.values())
    assert not any(client.collections.exists(name) for name in names.values())
    (insights,) = [move for move in report.moves if move.role == INSIGHTS]
    assert (insights.already, insights.copied) == (partial, 60 - partial)
    assert insights.old_counts == insights.new_counts == dict(statuses)
    assert_moved(client, project, before)
    logging.getLogger(__name__).info("migration finished in %.2fs", took)

    # Run again: nothing left to move, nothing changes.
    again = move_into_tenants(client, project, embedder)
    assert again.moves == [] and again.dropped == []
    assert_moved(client, project, before)

    # The project works from its tenant: reads, search, the turn log, the audit trail, the budget.
    store = InsightStore.open(client, project_settings, embedder)
    assert store.count()[0] == 60 and store.count()[1] == 23
    hits = store.retrieval.search("我要退货，寄到哪个仓？7", scene="订单查询", user_id="u1", score_threshold=0.0)
    assert hits and hits[0].insight.topic == "退货地址 7"
    assert [turn.user_message for turn in store.turns.session("s1")][:2] == ["第 1 个问题", "第 5 个问题"]
    (audited,) = [props for props, _ in before[AUDIT].values() if props["action"] == "reject"]
    assert [entry.note for entry in store.audit.of(uuid.UUID(str(audited["insight_id"])))] == ["wrong warehouse"]
    assert store.budget.used(datetime.now(UTC).date()) == 3


def test_a_run_killed_between_drops_drops_the_rest_after_verifying(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder, legacy: InsightStore
) -> None:
    project = project_settings.project
    before = old_snapshots(client, project)
    move_into_tenants(client, project, embedder)
    # What a kill after dropping the turns and the audit leaves: the insights and the budget still in their own
    # collections, everything already in the tenant.
    create_legacy_collections(client, project, embedder)
    names = legacy_collection_names(project)
    client.collections.delete([names.turns, names.audit])
    for role, name in ((INSIGHTS, names.insights), (BUDGET, names.budget)):
        objects = [
            DataObject(
                properties={k: v for k, v in props.items() if v is not None},
                uuid=object_id,
                vector={VECTOR_NAME: vector} if vector else None,
            )
            for object_id, (props, vector) in before[role].items()
        ]
        assert not client.collections.use(name).data.insert_many(objects).has_errors

    report = move_into_tenants(client, project, embedder)
    assert report.verified and report.dropped == [names.budget, names.insights]
    assert all(move.copied == 0 for move in report.moves)
    assert_moved(client, project, before)


def test_a_copy_that_differs_is_never_dropped(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder, legacy: InsightStore
) -> None:
    """An object changed in the tenant since (by this version, after the upgrade) is not overwritten, and the old
    collections stay until someone looks."""
    project = project_settings.project
    with pytest.raises(Crash):
        move_into_tenants(client, project, embedder, batch_size=20, progress=crash_after(20))
    tenant_insights = project_collection(client, project, INSIGHTS)
    changed = next(iter(tenant_insights.iterator()))
    tenant_insights.data.update(uuid=changed.uuid, properties={"status": "rejected", "review_reason": "changed"})

    with pytest.raises(HindsightError, match=f"does not verify, so nothing was dropped.*{changed.uuid}"):
        move_into_tenants(client, project, embedder, batch_size=20)
    assert all(client.collections.exists(name) for name in legacy_collection_names(project).by_role().values())
    stored = tenant_insights.query.fetch_object_by_id(changed.uuid)
    assert stored is not None and stored.properties["review_reason"] == "changed"


class OtherEmbedder:
    @property
    def id(self) -> str:
        return "other-model@1"

    @property
    def dimension(self) -> int:
        return 384

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        return np.zeros((len(texts), self.dimension), dtype=np.float32)


def test_collections_of_another_embedder_are_not_moved(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder
) -> None:
    project = project_settings.project
    create_legacy_collections(client, project, OtherEmbedder())
    try:
        with pytest.raises(EmbedderMismatch, match=r"other-model@1 \(384 dims\).*configure the embedder"):
            move_into_tenants(client, project, embedder)
        assert client.collections.exists(legacy_collection_names(project).insights)
        assert not client.collections.use(COLLECTION_SET[0].name).tenants.exists(project)
    finally:
        drop_legacy_collections(client, project)


def test_a_store_opened_before_the_migration_says_to_run_it(
    client: weaviate.WeaviateClient,
    project_settings: Settings,
    embedder: Embedder,
    legacy: InsightStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="hindsight_insights.store.tenant_migration"):
        InsightStore.open(client, project_settings, embedder)
    assert "still has collections of its own" in caplog.text
    assert f"python -m hindsight_cli migrate --project {project_settings.project}" in caplog.text


def test_migrate_all_from_the_command_line_moves_and_makes_old_vectors_again(
    client: weaviate.WeaviateClient,
    weaviate_server: LocalWeaviate,
    settings: Settings,
    embedder: Embedder,
) -> None:
    projects = [f"旧项目 {uuid.uuid4().hex[:6]}", f"old-{uuid.uuid4().hex[:6]}"]
    befores = {}
    try:
        for project in projects:
            store = legacy_store(client, settings.model_copy(update={"project": project}), embedder, vectors=2)
            fill(store)
            befores[project] = old_snapshots(client, project)
        assert set(projects) <= set(legacy_projects(client))
        environment = {
            "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
            "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
            "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
            "COLUMNS": "200",
        }
        result = CliRunner().invoke(app, ["migrate", "--all"], env=environment, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        for project in projects:
            assert f"project {project!r}: re-embedded 60 insights" in result.output
            assert f"project {project!r}: {legacy_collection_names(project).insights} -> tenant" in result.output
            store = InsightStore.open(client, settings.model_copy(update={"project": project}), embedder)
            assert not store.vectors_outdated and store.tenancy.vector_text_version() == VECTOR_TEXT_VERSION
            before = befores[project]
            for role in (TURNS, AUDIT, BUDGET):
                assert_moved(client, project, {role: before[role]})
            moved = snapshot(project_collection(client, project, INSIGHTS))
            assert set(moved) == set(before[INSIGHTS])
            assert per_status(INSIGHTS, moved) == per_status(INSIGHTS, before[INSIGHTS])
        assert not set(projects) & set(legacy_projects(client))
        again = CliRunner().invoke(app, ["migrate", "--all"], env=environment, catch_exceptions=False)
        assert "no project has collections of its own: nothing to move" in again.output
    finally:
        for project in projects:
            drop_legacy_collections(client, project)
            drop_project(client, project)
