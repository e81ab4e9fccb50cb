"""Blame, the dependency graph and the repair's plan, on the real Weaviate (governance/blame.py, store/graph.py,
reflection/repair.py). The whole chain through the plugin and the worker is in tests/test_repair_chain.py."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import weaviate

from hindsight_insights.commands import Provenance, WriteCommand
from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import InvalidInput, NotFound
from hindsight_insights.governance.blame import blame_weight, crosses
from hindsight_insights.governance.recording import Recorded, record_turn
from hindsight_insights.governance.writing import write
from hindsight_insights.models import InsightContent, InsightStatus, Scope, TurnDraft, TurnSignals
from hindsight_insights.reflection.repair import conclude_repair, plan_repair
from hindsight_insights.reflection.report import ReflectionReport
from hindsight_insights.store import InsightStore
from hindsight_insights.store.blame import BlameTally
from hindsight_insights.store.review import ReviewQueue
from hindsight_insights.store.schema import BLAME, spec_of
from hindsight_insights.store.tenancy import tenant_name

USER = "cust-wang"
SCENE = "售后服务"
WRONG = {
    "topic": "手机故障",
    "kind": "fact",
    "scene": SCENE,
    "action": "这位客户的手机充不上电，你先建议他更换新的充电线。",
    "evidence": {"quote": "我的手机开不了机"},
    "confidence": 0.8,
}
GOOD = {
    "topic": "称呼",
    "kind": "preference",
    "scene": SCENE,
    "action": "当你称呼这位客户时，叫他“老王”。",
    "evidence": {"quote": "叫我老王就行"},
    "confidence": 0.8,
}

CABLE = {
    **GOOD,
    "topic": "维修建议",
    "action": "这位客户的手机问题，你推荐购买原装充电线。",
    "evidence": {"quote": "手机还是不行"},
}


def learned(store: InsightStore, content: dict[str, Any], session: str, source: str = "reflection:openai") -> uuid.UUID:
    (placed,) = write(store, WriteCommand(InsightContent.parse(content), Provenance(source, USER, session)))
    assert placed.result.status == "created", placed
    return placed.result.id


def say(store: InsightStore, session: str, user_message: str, answer: str, injected: list[uuid.UUID]) -> Recorded:
    draft = TurnDraft(
        session_id=session,
        user_id=USER,
        scene=SCENE,
        user_message=user_message,
        assistant_message=answer,
        injected_insight_ids=injected,
    )
    return record_turn(store, draft, store.settings)


def a_corrected_conversation(store: InsightStore, given: list[uuid.UUID]) -> Recorded:
    """The next conversation: both insights injected, the answer follows the wrong one, the customer corrects it."""
    session = f"s-{uuid.uuid4().hex[:8]}"
    say(store, session, "老王这边，手机还是不行", "老王您好，可能是充电线坏了，建议您换一根新的充电线。", given)
    answer = "抱歉老王，开不了机的话请先长按电源键十秒强制重启。"
    return say(store, session, "不对，我的手机是开不了机，不是充不上电", answer, given)


def a_quiet_conversation(store: InsightStore, given: list[uuid.UUID]) -> Recorded:
    session = f"s-{uuid.uuid4().hex[:8]}"
    say(store, session, "你好，我是老王", "老王您好，请问有什么可以帮您？", given)
    return say(store, session, "好的，谢谢", "不客气，老王。", given)


def test_a_wrong_insight_is_suspect_after_the_configured_corrections_a_good_one_used_as_often_stays(
    store: InsightStore,
) -> None:
    assert store.settings.blame_suspect_at == 2.0  # the default: about two corrections that clearly touch it
    wrong = learned(store, WRONG, "s-origin")
    good = learned(store, GOOD, "s-origin")
    given = [wrong, good]
    a_quiet_conversation(store, given)  # used once without complaint: one support each

    first = a_corrected_conversation(store, given)
    (blamed,) = [j for j in first.judged if j.kind == "blame"]
    assert blamed.insight_id == wrong and blamed.weight == 1.0 and not blamed.suspected
    assert store.get(wrong).status is InsightStatus.ACTIVE  # blame 1.0 < 2.0: one correction is not enough

    second = a_corrected_conversation(store, given)
    (blamed,) = [j for j in second.judged if j.kind == "blame"]
    assert blamed.suspected and blamed.tally is not None
    assert blamed.tally.blame == pytest.approx(2.0) and blamed.tally.support == 1
    assert store.get(wrong).status is InsightStatus.SUSPECT
    good_now = store.get(good)
    assert good_now.status is InsightStatus.ACTIVE
    good_tally = store.blame_ledger.tally(good)
    assert good_tally.blame == 0.0 and good_tally.support == 1  # injected just as often, never blamed

    # Never injected again: search reads only the rule in force.
    hits = store.retrieval.recall("手机开不了机，充电线", scene=SCENE, user_id=USER, score_threshold=0.0)
    assert wrong not in [i.id for i in hits.insights]
    # In the review queue, with its evidence and the turns that blamed it.
    queue = ReviewQueue(store)
    assert wrong in [i.id for i in queue.pending()]
    item = queue.show(wrong)
    assert item.insight.evidence.quote == "我的手机开不了机"
    blamed_turns = {mark["by_turn"] for mark in item.touched["blame"]["blamed_by"]}
    assert blamed_turns == {str(first.turn.id), str(second.turn.id)}
    (entry,) = [e for e in item.audit if e.action == "suspect"]
    assert entry.actor == "blame" and str(second.turn.id) in entry.note

    # A reviewer who finds it innocent approves it: the rule again, its blame counted afresh from then on.
    assert (
        queue.approve(wrong, "reviewer-li", "the cable advice was right for this model").status is InsightStatus.ACTIVE
    )
    third = a_corrected_conversation(store, given)
    (blamed,) = [j for j in third.judged if j.kind == "blame"]
    assert blamed.tally is not None and blamed.tally.blame == 1.0 and not blamed.suspected
    assert store.get(wrong).status is InsightStatus.ACTIVE


def test_blame_is_counted_once_per_turn_and_weighted_by_closeness(store: InsightStore) -> None:
    wrong = learned(store, WRONG, "s-origin")
    session = f"s-{uuid.uuid4().hex[:8]}"
    draft = TurnDraft(
        session_id=session,
        user_id=USER,
        message_id="m-1",
        scene=SCENE,
        user_message="手机还是不行",
        assistant_message="建议您换一根新的充电线。",
        injected_insight_ids=[wrong],
    )
    record_turn(store, draft, store.settings)
    correction = draft.model_copy(update={"message_id": "m-2", "user_message": "不对，是开不了机，不是充电的问题"})
    record_turn(store, correction, store.settings)
    record_turn(store, correction, store.settings)  # Dify retried the message: nothing counted again
    tally = store.blame_ledger.tally(wrong)
    assert len(tally.blamed_by) == 1 and tally.blame == 1.0
    # A complaint about something else touches it little or not at all.
    other = draft.model_copy(
        update={"message_id": "m-3", "user_message": "不对，我要的是发票，不是收据", "assistant_message": "已寄出。"}
    )
    record_turn(store, other, store.settings)
    assert store.blame_ledger.tally(wrong).blame < 1.5
    assert blame_weight(0.1) == 0.0 and blame_weight(0.35) == pytest.approx(0.5) and blame_weight(0.9) == 1.0


def test_support_outweighing_blame_keeps_an_insight_active() -> None:
    assert not crosses(BlameTally(blame=2.0, support=3), 2.0)
    assert crosses(BlameTally(blame=2.0, support=1), 2.0)
    assert not crosses(BlameTally(blame=1.9, support=0), 2.0)


def test_a_dislike_blames_what_the_disliked_answer_was_given(store: InsightStore) -> None:
    wrong = learned(store, WRONG, "s-origin")
    session = f"s-{uuid.uuid4().hex[:8]}"
    draft = TurnDraft(
        session_id=session,
        user_id=USER,
        scene=SCENE,
        user_message="我的手机开不了机",
        assistant_message="可能是充电线坏了，建议您换一根新的充电线。",
        injected_insight_ids=[wrong],
        signals={"feedback": "dislike"},
    )
    recorded = record_turn(store, draft, store.settings)
    (judged,) = recorded.judged
    assert (judged.kind, judged.insight_id) == ("blame", wrong) and judged.weight > 0.5
    assert store.blame_ledger.tally(wrong).blamed_by[0].reason == "dislike"
    another = f"s-{uuid.uuid4().hex[:8]}"
    liked = draft.model_copy(update={"session_id": another, "signals": TurnSignals(feedback="like")})
    (judged,) = record_turn(store, liked, store.settings).judged
    assert (judged.kind, judged.tally) == ("support", None) and store.blame_ledger.tally(wrong).support == 1
    store.forget_user(USER)  # their marks go with their turns
    assert store.blame_ledger.tally(wrong) == BlameTally()


def test_a_project_opened_before_blame_existed_gets_its_ledger(
    client: weaviate.WeaviateClient, store: InsightStore, embedder: Embedder
) -> None:
    ledger = client.collections.use(spec_of(BLAME).name)
    tenant = tenant_name(store.settings.project)
    ledger.tenants.remove([tenant])  # as a project made before the ledger joined the set has no tenant in it
    assert not ledger.tenants.exists(tenant)
    reopened = InsightStore.open(client, store.settings, embedder)
    assert ledger.tenants.exists(tenant) and reopened.blame_ledger.tally(uuid.uuid4()).blame == 0.0


def test_the_graph_shows_what_an_insight_touched(store: InsightStore) -> None:
    wrong = learned(store, WRONG, "s-origin")
    recorded = a_corrected_conversation(store, [wrong])
    later_session = recorded.turn.session_id
    derived = learned(
        store,
        CABLE,
        later_session,
    )
    graph = store.graph.of(wrong)
    assert graph.learned_in == "s-origin" and graph.used_in == [later_session]
    assert [use.turn_index for use in graph.injected_into] == [0, 1]
    assert graph.injected_into[0].corrected and not graph.injected_into[1].corrected
    assert derived in [i.id for i in graph.derived] and wrong not in [i.id for i in graph.derived]
    as_json = graph.as_json()
    assert as_json["used_in_sessions"] == [later_session] and as_json["blame"]["blame"] == 1.0
    assert store.graph.reflected_from([later_session])[-1].id == derived


def test_unknown_ids_and_nothing_to_repair_are_clear_errors_and_change_nothing(store: InsightStore) -> None:
    with pytest.raises(NotFound):
        store.graph.of(uuid.uuid4())
    with pytest.raises(NotFound):
        plan_repair(store, uuid.uuid4(), "reviewer-li")
    with pytest.raises(InvalidInput, match="is not an insight id"):
        plan_repair(store, "not-an-id", "reviewer-li")
    lonely = learned(store, WRONG, "s-never-recorded")
    with pytest.raises(InvalidInput, match="nothing to repair") as error:
        plan_repair(store, lonely, "reviewer-li")
    assert "insights reject" in str(error.value)
    assert store.get(lonely).status is InsightStatus.ACTIVE and store.audit.of(lonely) == []
    with pytest.raises(InvalidInput, match="not suspect"):
        store.restore(lonely)


def test_the_plan_rejects_the_faulty_insight_and_suspects_only_what_reflection_learned(store: InsightStore) -> None:
    wrong = learned(store, WRONG, "s-origin")
    recorded = a_corrected_conversation(store, [wrong])
    session = recorded.turn.session_id
    reflected = learned(
        store,
        CABLE,
        session,
    )
    at_once = [placed.result.id for placed in recorded.learned]  # the detector's lesson, in the user's own words
    plan = plan_repair(store, wrong, "reviewer-li", "it cannot boot")
    assert plan.sessions == [session]  # s-origin has no stored turns
    assert [i.id for i in plan.suspected] == [reflected]
    assert store.get(wrong).status is InsightStatus.REJECTED
    assert store.get(reflected).status is InsightStatus.SUSPECT
    for lesson in at_once:
        assert store.get(lesson).status is not InsightStatus.SUSPECT
    actions = [(e.action, e.actor) for e in store.audit.of(wrong)]
    assert actions == [("reject", "reviewer-li"), ("repair", "reviewer-li")]
    assert [e.action for e in store.audit.of(reflected)] == ["suspect"]


def test_a_suspect_that_waited_for_a_reviewer_waits_again_when_the_repair_learns_it_again(store: InsightStore) -> None:
    wrong = learned(store, WRONG, "s-origin")
    session = a_corrected_conversation(store, [wrong]).turn.session_id
    asked = Provenance("reflection:openai", USER, session, scope=Scope.PROJECT)
    placed = write(store, WriteCommand(InsightContent.parse(CABLE), asked))  # the user's copy, and the project's
    assert sorted(p.result.status for p in placed) == ["created", "pending_review"]
    plan = plan_repair(store, wrong, "reviewer-li")
    suspects = [i.id for i in plan.suspected]
    assert sorted(suspects) == sorted(p.result.id for p in placed)
    report = ReflectionReport(session_ids=[session], variant="session", source="reflection:openai")
    report.unchanged.extend(suspects)  # learned again, word for word, without the faulty insight
    outcome = conclude_repair(store, wrong, session, suspects, report)
    assert sorted(outcome.restored) == sorted(suspects) and outcome.rejected == []
    statuses = {p.result.status: store.get(p.result.id).status for p in placed}
    # The project's copy goes back to its reviewer: a repair never approves anything.
    assert statuses == {"created": InsightStatus.ACTIVE, "pending_review": InsightStatus.PENDING_REVIEW}
