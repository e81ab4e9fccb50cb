"""`python -m hindsight_cli migrate` on an install of one collection set per project (the layout before tenants,
testkit/legacy_layout.py): everything moves into the project's tenant with its uuid, properties and vector, an
interrupted run is finished by the next one, nothing is dropped before it verifies."""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
import weaviate
from typer.testing import CliRunner
from weaviate.classes.data import DataObject

from hindsight_cli.app import app
from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import EmbedderMismatch, HindsightError
from hindsight_insights.fewshot import ExampleDraft
from hindsight_insights.models import CorrectionRecord, InsightDraft, InsightStatus, TurnDraft, TurnSignals
from hindsight_insights.store import InsightStore
from hindsight_insights.store.blame import BlameMark
from hindsight_insights.store.schema import (
    AUDIT,
    BLAME,
    BUDGET,
    COLLECTION_SET,
    EXAMPLES,
    INSIGHTS,
    SUGGESTIONS,
    TURNS,
    VECTOR_NAME,
    VECTOR_TEXT_VERSION,
    legacy_collection_names,
)
from hindsight_insights.store.tenancy import drop_project, project_collection, tenant_name
from hindsight_insights.store.tenant_migration import legacy_projects, move_into_tenants
from hindsight_insights.suggestions import Mined, SuggestionEvidence
from hindsight_insights.weaviate_server import LocalWeaviate
from testkit.admitted import admitted_as_is, all_admitted_as_is
from testkit.embedders import OtherEmbedder
from testkit.legacy_layout import (
    LATE_ROLES,
    create_legacy_collections,
    create_legacy_examples,
    drop_late_collections,
    drop_legacy_collections,
    legacy_store,
    spend_legacy_budget,
)

STATUS = {
    INSIGHTS: "status",
    TURNS: "error_status",
    AUDIT: "action",
    BLAME: "kind",
    EXAMPLES: "scope",
    SUGGESTIONS: "status",
}
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
    """A project as it lives: insights of every status (with slot chains), turns with corrections, an audit trail, a
    model budget, blame and support marks, few-shot examples (one promoted) and prompt suggestions (one dismissed)."""
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
    judged = [uuid.uuid4() for _ in range(4)]
    store.blame_ledger.add(
        BlameMark(
            insight_id=listed[index % 6].id,
            turn_id=judged[index % 4],
            by_turn=judged[index % 4],
            session_id=f"s{index % 4}",
            user_id=f"u{index % 3}",
            kind="blame" if index % 3 == 0 else "support",
            weight=0.6 if index % 3 == 0 else 1.0,
            reason="correction:factual" if index % 3 == 0 else "used",
            at=now,
        )
        for index in range(9)
    )
    questions = [
        ("退货寄到哪里？", "寄到张江路 99 号仓。"),
        ("运费谁出？", "运费由我们承担。"),
        ("退款多久到账？", "3 个工作日内原路退回。"),
        ("能换货吗？", "可以换同款其他颜色。"),
    ]
    kept = [
        store.examples.keep(
            ExampleDraft(
                user_id=f"u{index}",
                session_id=f"s{index}",
                turn_id=uuid.uuid4(),
                scene="售后服务",
                topic="退货",
                type="factual",
                context=question,
                said="我不清楚。",
                corrected=corrected,
            ),
            now,
        )
        for index, (question, corrected) in enumerate(questions)
    ]
    store.examples.promote(kept[0].id, "ops-lin")
    for index, topic in enumerate(("退货地址", "退款时限")):
        store.suggestions.upsert(
            Mined(
                id=uuid.uuid4(),
                topic=topic,
                topic_key=topic,
                scene="售后服务",
                scene_key="售后服务",
                type="factual",
                corrections=3 + index,
                users=2,
                sessions=3,
                first_at=now - timedelta(days=2),
                last_at=now,
                evidence=[SuggestionEvidence(original="88", corrected="99", user_id="u1", session_id="s1", at=now)],
                text=f"在系统提示里写明{topic}。",
            ),
            now,
        )
    (first, _) = store.suggestions.all()
    store.suggestions.decide(first.id, "dismissed", "ops-lin", "not now", now)


@pytest.fixture
def legacy(client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder) -> Iterator[InsightStore]:
    store = legacy_store(client, project_settings, embedder)
    fill(store)
    yield store
    drop_legacy_collections(client, project_settings.project)


def old_snapshots(client: weaviate.WeaviateClient, project: str) -> dict[str, Snapshot]:
    """The project's old collections (those it has)."""
    names = legacy_collection_names(project).by_role()
    return {
        role: snapshot(client.collections.use(name)) for role, name in names.items() if client.collections.exists(name)
    }


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
    assert len(before[BUDGET]) == 3 and len(before[BLAME]) == 9 and len(before[SUGGESTIONS]) == 2
    assert per_status(EXAMPLES, before[EXAMPLES]) == Counter({"user": 3, "project": 1})
    assert all(vector for _, vector in before[EXAMPLES].values())  # few-shot examples carry vectors
    assert per_status(SUGGESTIONS, before[SUGGESTIONS]) == Counter({"pending": 1, "dismissed": 1})
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
    assert report.dropped[-1] == names[INSIGHTS]  # the insights, which name the project, last
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
    blamed = [props for props, _ in before[BLAME].values() if props["kind"] == "blame"]
    insight_id = uuid.UUID(str(blamed[0]["insight_id"]))
    weights = [float(props["weight"]) for props in blamed if uuid.UUID(str(props["insight_id"])) == insight_id]
    assert store.blame_ledger.tally(insight_id).blame == pytest.approx(sum(weights))
    (shown,) = store.examples.matching("运费谁出？", user_id="u1", scene="售后服务", limit=1)
    assert shown.corrected == "运费由我们承担。"  # found by its copied vector
    assert sorted(suggestion.status for suggestion in store.suggestions.all()) == ["dismissed", "pending"]


def test_a_run_killed_between_drops_drops_the_rest_after_verifying(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder, legacy: InsightStore
) -> None:
    project = project_settings.project
    before = old_snapshots(client, project)
    move_into_tenants(client, project, embedder)
    # What a kill after dropping the turns, the audit, the budget and the blame leaves: the few-shot examples, the
    # suggestions and the insights still in their own collections, everything already in the tenant.
    create_legacy_collections(client, project, embedder)
    names = legacy_collection_names(project)
    client.collections.delete([names.turns, names.audit, names.budget, names.blame])
    for role, name in ((INSIGHTS, names.insights), (EXAMPLES, names.examples), (SUGGESTIONS, names.suggestions)):
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
    assert report.verified and report.dropped == [names.examples, names.suggestions, names.insights]
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


def test_an_install_from_before_blame_examples_and_suggestions_moves_without_them(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder, legacy: InsightStore
) -> None:
    project = project_settings.project
    drop_late_collections(client, project)
    before = old_snapshots(client, project)
    assert set(before) == {INSIGHTS, TURNS, AUDIT, BUDGET}

    report = move_into_tenants(client, project, embedder)
    names = legacy_collection_names(project).by_role()
    assert report.verified and {move.role for move in report.moves} == set(before)
    assert sorted(report.dropped) == sorted(names[role] for role in before)
    assert_moved(client, project, before)
    for role in LATE_ROLES:  # the project has its (empty) tenant in each, as any project opened since
        assert len(project_collection(client, project, role)) == 0
    store = InsightStore.open(client, project_settings, embedder)
    assert store.count()[0] == 60 and store.examples.recent() == [] and store.suggestions.all() == []


def test_few_shot_examples_of_another_embedder_are_not_moved(
    client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder, legacy: InsightStore
) -> None:
    project = project_settings.project
    names = legacy_collection_names(project)
    client.collections.delete(names.examples)
    create_legacy_examples(client, project, names.examples, OtherEmbedder())
    with pytest.raises(EmbedderMismatch, match=f"{names.examples} holds vectors of other-model@1"):
        move_into_tenants(client, project, embedder)
    assert all(client.collections.exists(name) for name in names.by_role().values())  # nothing dropped
    insights = COLLECTION_SET[0].name
    assert not client.collections.exists(insights) or not (
        client.collections.use(insights).tenants.exists(tenant_name(project))
    )  # nothing copied either


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
            for role in (TURNS, AUDIT, BUDGET, BLAME, EXAMPLES, SUGGESTIONS):
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
