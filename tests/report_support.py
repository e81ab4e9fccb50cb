"""A day of conversations for the report, metrics and console tests: corrections of a few patterns (some on answers
that had a rule injected), plain and disliked answers, a pending insight, a suspect with its mark, and a repair step
as the blame-and-repair work records it. Stored in the real turn log and audit trail."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from hindsight_insights.models import (
    CorrectionRecord,
    DetectedCorrection,
    Insight,
    InsightDraft,
    InsightStatus,
    TurnDraft,
    TurnSignals,
)
from hindsight_insights.store import InsightStore
from hindsight_insights.store.blame import BlameMark
from testkit.admitted import admitted_as_is

CHARGING = {
    "topic": "手机故障描述",
    "kind": "fact",
    "scene": "售后服务",
    "action": "当顾客描述手机故障时，记住：手机无法充电，先建议更换充电线。",
    "evidence": "手机无法充电",
    "confidence": 0.9,
}
PENDING = {
    "topic": "退款时限",
    "kind": "process",
    "scene": "售后服务",
    "action": "当顾客问退款多久到账时，告诉他 3 个工作日内原路退回。",
    "evidence": "退款 3 个工作日到账",
    "status": "pending_review",
    "review_reason": "a project-wide process rule",
}
SECOND_PENDING = {
    "topic": "发票抬头",
    "kind": "process",
    "scene": "售后服务",
    "action": "When a customer asks for an invoice, ask for the company name first.",
    "evidence": "please put the company name on the invoice",
    "status": "pending_review",
    "review_reason": "a project-wide process rule",
}


@dataclass
class SeededDay:
    day: date
    rule: Insight  # injected into two corrected answers, then marked suspect
    pending: list[Insight] = field(default_factory=list)
    turns: int = 0
    errors: int = 0
    corrected: int = 0
    corrected_uninformed: int = 0


def at(day: date, hour: int, minute: int = 0) -> datetime:
    return datetime.combine(day, time(hour, minute), UTC)


def correct(
    store: InsightStore,
    when: datetime,
    *,
    session: str,
    user: str,
    scene: str,
    answer: str,
    said: str,
    type: str,
    topic: str | None,
    corrected: str,
    injected: tuple[uuid.UUID, ...] = (),
    sources: tuple[str, ...] = (),
) -> None:
    """An answer, the user's message correcting it (with what the detector found), and the correction record."""
    answered = store.turns.append(
        TurnDraft(
            session_id=session,
            user_id=user,
            scene=scene,
            user_message="我的手机有问题",
            assistant_message=answer,
            injected_insight_ids=list(injected),
            sources=list(sources),
        ),
        now=when - timedelta(minutes=1),
    )
    detected = DetectedCorrection.model_validate(
        {"type": type, "confidence": 0.9, "corrected": corrected, "topic": topic}
    )
    correcting = store.turns.append(
        TurnDraft(
            session_id=session,
            user_id=user,
            scene=scene,
            user_message=said,
            assistant_message="明白了。",
            signals=TurnSignals(detected=detected),
        ),
        now=when,
    )
    record = CorrectionRecord(type=type, original=answer, corrected=corrected, by=user, at=when, in_turn=correcting.id)
    store.turns.mark_corrected(answered, record)
    # What record_turn's blame writes for a correction that is about the injected rule (governance/blame.py).
    store.blame_ledger.add(
        BlameMark(
            insight_id=insight_id,
            turn_id=answered.id,
            by_turn=correcting.id,
            session_id=session,
            user_id=user,
            kind="blame",
            weight=1.0,
            reason=f"correction:{type}",
            at=when,
        )
        for insight_id in injected
    )


def seed_day(store: InsightStore, day: date) -> SeededDay:
    rule = store.save(admitted_as_is(InsightDraft.parse(CHARGING)))
    seeded = SeededDay(day=day, rule=store.get(rule.id))
    charging: dict[str, Any] = dict(
        scene="售后服务",
        answer="建议您更换一根新的充电线。",
        said="不是充电问题，是根本开不了机",
        type="factual",
        topic="手机故障",
        corrected="是根本开不了机",
        sources=("kb://charging-faq",),
    )
    # The top pattern: three corrections of the phone's fault, two of them on answers that had the rule injected.
    correct(store, at(day, 9), session="s-a", user="u-a", injected=(rule.id,), **charging)
    correct(store, at(day, 10), session="s-b", user="u-b", injected=(rule.id,), **charging)
    correct(store, at(day, 11), session="s-c", user="u-b", **charging)
    for hour, session in ((12, "s-d"), (13, "s-e")):
        correct(
            store,
            at(day, hour),
            session=session,
            user="u-c",
            scene="闲聊",
            answer="王老师您好",
            said="别叫我王老师，叫我老王就行",
            type="preference",
            topic="称呼",
            corrected="叫我老王就行",
            sources=("profile",),
        )
    correct(
        store,
        at(day, 14),
        session="s-f",
        user="u-d",
        scene="售后服务",
        answer="已为您登记退货。",
        said="这不对",
        type="negative",
        topic=None,
        corrected="",
    )
    # Earlier in the chart's 30 days, and one before them.
    for days_back, hour in ((3, 9), (3, 10), (40, 9)):
        correct(
            store,
            at(day - timedelta(days=days_back), hour),
            session=f"s-old-{days_back}-{hour}",
            user="u-a",
            injected=(rule.id,),
            **charging,
        )
    # Answers nobody corrected, one of them disliked.
    for minute in range(4):
        store.turns.append(
            TurnDraft(session_id="s-plain", user_id="u-e", user_message="你好", assistant_message="您好！"),
            now=at(day, 15, minute),
        )
    store.turns.append(
        TurnDraft(
            session_id="s-plain",
            user_id="u-e",
            user_message="查一下订单",
            assistant_message="查询失败。",
            signals=TurnSignals(feedback="dislike"),
        ),
        now=at(day, 15, 30),
    )
    seeded.turns = 6 * 2 + 5
    seeded.errors = 6 + 1
    seeded.corrected = 6
    seeded.corrected_uninformed = 4
    # The rule is blamed: a suspect, marked in the audit trail, and a repair step as the repair work records it.
    before = store.get(rule.id)
    suspect = store.set_status(rule.id, InsightStatus.SUSPECT)
    store.audit.record("suspect", "blame", before, suspect, "blamed by 2 corrected answers")
    seeded.rule = suspect
    store.audit.record("repair", "worker", suspect, None, "re-reflected 2 sessions without it")
    for draft in (PENDING, SECOND_PENDING):
        saved = store.save(admitted_as_is(InsightDraft.parse(draft)))
        seeded.pending.append(store.get(saved.id))
    return seeded
