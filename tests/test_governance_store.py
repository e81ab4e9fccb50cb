"""Governance on the real store: the review queue and its audit trail, conditions that keep a narrow correction from
silencing a topic, and behaviour memory (what we told a user, and what was corrected)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from hindsight_insights.config import Settings
from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import CorrectionRecord, InsightDraft, InsightStatus, TurnDraft
from hindsight_insights.rules import render_rules
from hindsight_insights.store import InsightStore
from hindsight_insights.store.review import ReviewQueue
from testkit.admitted import admitted_as_is
from testkit.drafts import draft_of

REFUND_PROCESS: dict[str, Any] = {
    "topic": "退款时限",
    "kind": "process",
    "scene": "售后服务",
    "action": "当顾客问退款多久到账时，告诉他 3 个工作日内原路退回。",
    "evidence": "退款 3 个工作日到账",
    "confidence": 0.9,
}


def draft(**changes: Any) -> InsightDraft:
    return draft_of(REFUND_PROCESS, **changes)


def recalled(store: InsightStore, query: str = "退款多久到账", user: str | None = None) -> list[str]:
    return [
        i.action for i in store.retrieval.recall(query, scene="售后服务", user_id=user, score_threshold=0.0).insights
    ]


# ---- the review queue ------------------------------------------------------------------------------------------------


def test_pending_insights_wait_in_the_queue_and_are_never_injected(store: InsightStore) -> None:
    pending = store.save(admitted_as_is(draft(status="pending_review", review_reason="a project-wide process rule")))
    queue = ReviewQueue(store)
    assert [i.id for i in queue.pending()] == [pending.id]
    assert queue.pending()[0].review_reason == "a project-wide process rule"
    assert recalled(store) == [] and store.retrieval.standing_rules(scene="售后服务", user_id=None) == []


def test_approving_activates_it_and_keeps_who_when_before_and_after(store: InsightStore) -> None:
    pending = store.save(admitted_as_is(draft(status="pending_review")))
    queue = ReviewQueue(store)
    approved = queue.approve(pending.id, reviewer="ops-lin", note="checked with finance")
    assert approved.status is InsightStatus.ACTIVE and "reviewer:ops-lin" in approved.supporters
    assert recalled(store) == [approved.action] and queue.pending() == []
    (entry,) = queue.show(pending.id).audit
    assert (entry.action, entry.actor, entry.note) == ("approve", "ops-lin", "checked with finance")
    assert abs((datetime.now(UTC) - entry.at).total_seconds()) < 60
    assert json.loads(entry.before)["status"] == "pending_review" and json.loads(entry.after)["status"] == "active"
    with pytest.raises(InvalidInput, match="not pending_review"):
        queue.approve(pending.id, reviewer="ops-lin")


def test_an_edit_is_validated_embedded_again_and_audited(store: InsightStore) -> None:
    pending = store.save(admitted_as_is(draft(status="pending_review")))
    queue = ReviewQueue(store)
    edited = queue.edit(pending.id, "ops-lin", {"action": "当顾客问退款多久到账时，告诉他 5 个工作日内原路退回。"})
    assert (
        edited.action.startswith("当顾客问退款多久到账时，告诉他 5 个")
        and edited.status is InsightStatus.PENDING_REVIEW
    )
    entry = queue.show(pending.id).audit[-1]
    assert (entry.action, json.loads(entry.before)["action"], json.loads(entry.after)["action"]) == (
        "edit",
        draft().action,
        edited.action,
    )
    with pytest.raises(InvalidInput, match="confidence"):
        queue.edit(pending.id, "ops-lin", {"confidence": 3})
    with pytest.raises(InvalidInput, match="topic: cannot be edited"):
        queue.edit(pending.id, "ops-lin", {"topic": "另一个主题"})
    queue.approve(pending.id, reviewer="ops-lin")
    assert recalled(store, "退款 5 个工作日") == [edited.action]


def test_rejecting_and_deleting_are_audited(store: InsightStore) -> None:
    queue = ReviewQueue(store)
    rejected = store.save(admitted_as_is(draft(status="pending_review")))
    assert queue.reject(rejected.id, "ops-lin", "wrong").status is InsightStatus.REJECTED
    deleted = store.save(
        admitted_as_is(draft(topic="发票", action="开具电子发票。", evidence="发票", status="pending_review"))
    )
    queue.delete(deleted.id, "ops-lin", "duplicate")
    assert [e.action for e in store.audit.of(rejected.id)] == ["reject"]
    (gone,) = store.audit.of(deleted.id)
    assert (gone.action, gone.after, gone.note) == ("delete", "", "duplicate")
    assert recalled(store) == []


# ---- conditions ------------------------------------------------------------------------------------------------------


def test_a_correction_for_one_context_does_not_silence_the_topic_elsewhere(
    store: InsightStore, settings: Settings
) -> None:
    general = store.save(admitted_as_is(draft()))
    vip = store.save(
        admitted_as_is(
            draft(
                action="当 VIP 顾客问退款多久到账时，告诉他 1 个工作日内到账。",
                evidence="VIP 是 1 个工作日",
                condition="context_specific",
                condition_detail="VIP 顾客",
            )
        )
    )
    assert vip.status == "created" and store.get(general.id).status is InsightStatus.ACTIVE
    assert sorted(recalled(store, "退款多久到账 VIP")) == sorted([draft().action, store.get(vip.id).action])
    rules = render_rules(
        store.retrieval.recall("退款多久到账", scene="售后服务", score_threshold=0.0).insights, settings, "zh"
    )
    assert "（仅适用于：「VIP 顾客」；主题：「退款时限」" in rules
    with pytest.raises(InvalidInput, match="condition_detail is required"):
        draft(condition="source_specific")


# ---- behaviour memory ------------------------------------------------------------------------------------------------


def test_what_we_told_a_user_and_what_was_corrected_is_one_call(store: InsightStore) -> None:
    answered = store.turns.append(
        TurnDraft.parse(
            {
                "session_id": "s1",
                "user_id": "u1",
                "user_message": "退款多久到账？",
                "assistant_message": "一般 7 个工作日。",
                "sources": ["help-center/refunds"],
                "tool_calls": ["order_lookup"],
                "answer_confidence": 0.6,
            }
        )
    )
    correcting = store.turns.append(
        TurnDraft.parse({"session_id": "s1", "user_id": "u1", "user_message": "不对，官网写的是 3 个工作日"})
    )
    record = CorrectionRecord(
        type="factual",
        original="一般 7 个工作日。",
        corrected="官网写的是 3 个工作日",
        condition="source_specific",
        condition_detail="官网",
        by="u1",
        at=datetime.now(UTC),
        in_turn=correcting.id,
    )
    previous = store.turns.previous(correcting)
    assert previous is not None and previous.id == answered.id
    store.turns.mark_corrected(previous, record)
    latest, earlier = store.turns.of_user("u1", recent=5)
    assert latest.id == correcting.id and latest.error_status == "ok"
    assert (earlier.error_status, earlier.sources, earlier.tool_calls, earlier.answer_confidence) == (
        "corrected",
        ["help-center/refunds"],
        ["order_lookup"],
        0.6,
    )
    assert earlier.correction is not None
    assert (earlier.correction.corrected, earlier.correction.in_turn, earlier.correction.condition_detail) == (
        "官网写的是 3 个工作日",
        correcting.id,
        "官网",
    )
    assert store.turns.of_user(str(uuid.uuid4())) == []
