"""Which channel a rule reaches its user through (docs/architecture.md, "Retrieval"): preferences and a user's own
rules of every kind are standing (no similarity gate); project-wide and session facts, processes and lessons are
situational (behind the gate). What a user taught stays with them after a reviewer approves the project-wide copy.
Real Weaviate, real detector (rules), the one write path."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from itertools import product
from typing import Any

import pytest

from hindsight_insights import ranking
from hindsight_insights.governance.recording import record_turn
from hindsight_insights.models import InsightDraft, InsightStatus, Scope, TurnDraft
from hindsight_insights.store import InsightStore, filters
from hindsight_insights.store.review import ReviewQueue
from hindsight_insights.store.weaviate_table import WeaviateInsightTable
from testkit.admitted import admitted_as_is


def teach(store: InsightStore, user: str, scene: str, answer: str, message: str) -> list[Any]:
    """One corrected exchange recorded through record_turn: the detector's layered writes."""
    session = f"s-{uuid.uuid4().hex[:8]}"
    first = {"session_id": session, "user_id": user, "scene": scene}
    asked = TurnDraft.parse({**first, "user_message": "帮我看看", "assistant_message": answer})
    record_turn(store, asked, store.settings)
    said = record_turn(
        store, TurnDraft.parse({**first, "user_message": message, "assistant_message": "好的"}), store.settings
    )
    return list(said.learned)


def actions(store: InsightStore, user: str | None, scene: str, conversation: str) -> list[str]:
    return [insight.action for insight in store.retrieval.recall(conversation, scene=scene, user_id=user).insights]


def own(store: InsightStore, **fields: Any) -> Any:
    draft = {"observation": "", "confidence": 0.9, "scope": "user", **fields}
    return store.save(admitted_as_is(InsightDraft.parse(draft))).id


BUG_PROCESS = "No. Write a failing test that reproduces the bug before you change any code."
PATCH_FIRST = "Here is a patch for the parser: replace split(',') with csv.reader."
PROBATION_FACT = "不对，试用期最长是六个月，不是一年。"
PROBATION_ANSWER = "新员工的试用期最长可以约定一年。"


def test_a_users_own_process_reaches_their_next_conversation_in_the_scene_and_nobody_elses(
    store: InsightStore,
) -> None:
    learned = teach(store, "dev-lin", "code_review", PATCH_FIRST, BUG_PROCESS)
    assert [(w.scope, w.result.status) for w in learned] == [(Scope.USER, "created"), (Scope.PROJECT, "pending_review")]
    lesson = store.get(learned[0].result.id)
    assert lesson.kind.value == "process" and lesson.status is InsightStatus.ACTIVE
    # A conversation that shares little with the rule's words: the gate alone would hold it back.
    conversation = "The nightly export job crashes on an empty CSV, can you look?"
    assert lesson.action in actions(store, "dev-lin", "code_review", conversation)
    recall = store.retrieval.recall(conversation, scene="code_review", user_id="dev-lin")
    assert lesson.id in [insight.id for insight in recall.standing]
    assert actions(store, "someone-else", "code_review", conversation) == []  # pending project copy: nobody else
    assert actions(store, "dev-lin", "数据分析", conversation) == []  # another scene: not there


def test_approving_the_project_copy_never_takes_the_lesson_from_its_teacher(store: InsightStore) -> None:
    reviewer = ReviewQueue(store)
    taught = {
        "process": (teach(store, "dev-lin", "code_review", PATCH_FIRST, BUG_PROCESS), "code_review"),
        "fact": (teach(store, "hr-zhou", "人事咨询", PROBATION_ANSWER, PROBATION_FACT), "人事咨询"),
    }
    probes = {"process": "Fix the crash when the CSV export hits an empty row.", "fact": "新员工试用期可以约定多久？"}
    for kind, (learned, scene) in taught.items():
        mine, project_copy = (store.get(w.result.id) for w in learned)
        teacher = mine.user_id
        assert (mine.kind.value, mine.scope, project_copy.status) == (kind, Scope.USER, InsightStatus.PENDING_REVIEW)
        assert teacher is not None and mine.action in actions(store, teacher, scene, probes[kind])
        approved = reviewer.approve(project_copy.id, reviewer="lead")
        assert approved.status is InsightStatus.ACTIVE and approved.scope is Scope.PROJECT
        assert store.get(mine.id).status is InsightStatus.ACTIVE  # the user's own version is not superseded
        assert mine.action in actions(store, teacher, scene, probes[kind])  # and it still reaches them
        others = store.retrieval.recall(probes[kind], scene=scene, user_id="colleague", score_threshold=0.0)
        assert [i.id for i in others.insights] == [approved.id]  # the project's copy, for everyone else


def test_a_project_wide_process_stays_behind_the_gate(store: InsightStore) -> None:
    store.save(
        admitted_as_is(
            InsightDraft.parse(
                {
                    "topic": "退款审批",
                    "kind": "process",
                    "scene": "售后服务",
                    "observation": "",
                    "action": "当退款金额超过 500 元时，先提交主管审批，再原路退回。",
                    "evidence": "超过 500 的退款要主管批",
                }
            )
        )
    )
    assert actions(store, "anyone", "售后服务", "What time does your office open on Saturdays?") == []


def test_without_a_conversation_preferences_come_before_a_users_newer_facts(store: InsightStore) -> None:
    now = datetime.now(UTC)
    common = {"user_id": "u-qian", "scene": "采购"}
    preferences = [
        own(store, **common, topic=f"偏好{n}", kind="preference", action=action, evidence=action)
        for n, action in enumerate(["回复不超过五行。", "称呼我钱总。", "日期写成 YYYY-MM-DD。", "不要表情符号。"])
    ]
    facts = [
        store.save(
            admitted_as_is(
                InsightDraft.parse(
                    {**common, "observation": "", "scope": "user", "kind": "fact", "topic": topic, "action": action}
                    | {"evidence": action}
                )
            ),
            now=now + timedelta(minutes=1),
        ).id
        for topic, action in [("仓库位置", "我们的备件仓在嘉兴。"), ("供应商账期", "华信的账期是 60 天。")]
    ]
    rules = store.retrieval.standing_rules(scene="采购", user_id="u-qian")
    assert [rule.id for rule in rules][:4] == preferences[::-1] and rules[4].id in facts


def test_the_in_force_check_on_an_object_agrees_with_the_filter_weaviate_runs(store: InsightStore) -> None:
    now = datetime.now(UTC)
    saved = store.get(
        own(
            store,
            user_id="u-check",
            scene="采购",
            topic="称呼",
            kind="preference",
            action="称呼我钱总。",
            evidence="称呼我钱总",
        )
    )
    dates = [None, now - timedelta(days=1), now + timedelta(days=1)]
    versions = [
        saved.model_copy(update={"id": uuid.uuid4(), "status": status, "expire_at": expire_at, "resume_at": resume_at})
        for status, expire_at, resume_at in product(InsightStatus, dates, dates)
    ]
    for version in versions:
        store.table.insert(version)
    ids = [version.id for version in versions]
    assert isinstance(store.table, WeaviateInsightTable)
    in_weaviate = store.table.collection.query.fetch_objects(
        filters=filters.with_ids(ids) & filters.in_force(now), limit=len(ids), return_properties=[]
    )
    by_filter = {uuid.UUID(str(obj.uuid)) for obj in in_weaviate.objects}
    assert by_filter == {version.id for version in versions if version.in_force_at(now)}
    assert 0 < len(by_filter) < len(versions)  # both answers occur


def test_a_standing_rule_retired_between_recalls_two_reads_is_left_out(
    store: InsightStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = own(
        store,
        user_id="u-race",
        scene="采购",
        topic="称呼",
        kind="preference",
        action="称呼我钱总。",
        evidence="称呼我钱总",
    )
    retired = own(
        store,
        user_id="u-race",
        scene="采购",
        topic="格式",
        kind="preference",
        action="回复不超过五行。",
        evidence="回复不超过五行",
    )
    rank = ranking.standing_order

    def rank_then_retire(*args: Any) -> Any:
        chosen = rank(*args)  # the first read has ranked both; a reviewer rejects one before the second read
        store.lifecycle.set_status(retired, InsightStatus.REJECTED)
        return chosen

    monkeypatch.setattr(ranking, "standing_order", rank_then_retire)
    recall = store.retrieval.recall("帮我列一下这周的采购单", scene="采购", user_id="u-race")
    assert [insight.id for insight in recall.standing] == [kept]
