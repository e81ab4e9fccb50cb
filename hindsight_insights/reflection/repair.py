"""Repair: when a reviewer confirms an insight is faulty, everything it touched is traced and learned again.

    plan       (`plan_repair`, the CLI's `insights faulty ID`) the insight is rejected if it is not already; the
               dependency graph (store/graph.py) gives the sessions it touched: the one it was learned from and those
               it was injected into; what was learned from the sessions that used it becomes suspect (it may rest on
               the faulty advice); one `repair` audit entry lists the sessions and the suspects
    re-reflect the worker reflects on each session again with the faulty insight excluded (a `repair` task, claimed and
               budgeted like any other reflection; the prompt names the faulty insight, and a candidate repeating it
               is dropped: reflection/engine.py)
    conclude   (`conclude_repair`, when a session's re-reflection ends) a suspect of that session that the
               re-reflection learned again is restored (it did not rest on the faulty insight); one it did not learn
               again is rejected, replaced by what was learned; one `repair` audit entry per session says what changed

Only what a model learned by reflection (the worker's, or a chatflow's reflection node) is suspected: a lesson learned
at once from the user's own words (record_turn) does not rest on what the assistant was told. Every step is an
AuditEntry: "reject" (the reviewer's verdict), "suspect" (each derived insight), "repair" (the plan on the faulty
insight, then each session's outcome on the faulty insight and on each suspect it resolved).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hindsight_insights.errors import InvalidInput, NotFound
from hindsight_insights.models import Insight, InsightStatus
from hindsight_insights.reflection.report import ReflectionReport
from hindsight_insights.store.insights import InsightStore

REPAIR_ACTOR = "repair"
# What a model wrote by reading a conversation: the worker's reflections (ReflectionEngine.source), and a chatflow's
# reflection node's JSON through save_insight.
REFLECTED = ("reflection:", "dify:insight_json")
_SUSPECTABLE = (InsightStatus.ACTIVE, InsightStatus.SUPERSEDED, InsightStatus.PENDING_REVIEW)


@dataclass(frozen=True)
class RepairPlan:
    faulty: Insight  # as it is now: rejected
    sessions: list[str]  # to reflect on again, oldest use first (where it was learned comes first)
    suspected: list[Insight]  # derived insights made suspect now
    already_suspect: list[Insight]  # derived insights that were suspect before

    def as_json(self) -> dict[str, Any]:
        return {
            "faulty": str(self.faulty.id),
            "sessions": self.sessions,
            "suspected": [str(i.id) for i in self.suspected],
            "already_suspect": [str(i.id) for i in self.already_suspect],
        }


@dataclass(frozen=True)
class RepairOutcome:
    """What one session's re-reflection changed."""

    faulty_id: uuid.UUID
    session_id: str
    outcome: str  # the reflection's: ok, failed
    learned: list[uuid.UUID] = field(default_factory=list)  # saved by the re-reflection (new, merged, updated, ...)
    restored: list[uuid.UUID] = field(default_factory=list)  # suspects learned again without the faulty insight
    rejected: list[uuid.UUID] = field(default_factory=list)  # suspects not learned again: replaced
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "step": "re-reflected",
            "faulty": str(self.faulty_id),
            "session_id": self.session_id,
            "outcome": self.outcome,
            "learned": [str(i) for i in self.learned],
            "restored": [str(i) for i in self.restored],
            "rejected": [str(i) for i in self.rejected],
            **({"reason": self.reason} if self.reason else {}),
        }


def plan_repair(
    store: InsightStore, insight_id: uuid.UUID | str, reviewer: str, note: str = "", now: datetime | None = None
) -> RepairPlan:
    """The reviewer's verdict, and what must be learned again. Raises NotFound for an unknown id, InvalidInput when
    the insight touched no stored session (nothing to repair); nothing is changed then."""
    now = now or datetime.now(UTC)
    graph = store.graph.of(insight_id)
    faulty = graph.insight
    sessions = [session for session in graph.sessions if store.turns.session(session)]
    if not sessions:
        raise InvalidInput(
            [
                (
                    "id",
                    f"insight {faulty.id} was never injected into a recorded turn and its source session has no "
                    "stored turns: nothing to repair. Reject it with `insights reject` instead. Nothing was changed",
                )
            ]
        )
    if faulty.status is not InsightStatus.REJECTED:
        rejected = store.set_status(faulty.id, InsightStatus.REJECTED, now)
        store.audit.record("reject", reviewer, faulty, rejected, f"confirmed faulty{': ' + note if note else ''}")
        faulty = rejected
    suspected: list[Insight] = []
    already: list[Insight] = []
    for derived in graph.derived:
        if not derived.source.startswith(REFLECTED):
            continue  # a user's own words, learned at once, do not rest on what the assistant was told
        if derived.status is InsightStatus.SUSPECT:
            already.append(derived)
        elif derived.status in _SUSPECTABLE:
            after = store.set_status(derived.id, InsightStatus.SUSPECT, now)
            reason = (
                f"learned from session {derived.evidence.session_id}, which used faulty insight {faulty.id}; "
                "waits for the repair's re-reflection"
            )
            store.audit.record("suspect", REPAIR_ACTOR, derived, after, reason)
            suspected.append(after)
    plan = RepairPlan(faulty, sessions, suspected, already)
    store.audit.record("repair", reviewer, faulty, faulty, json.dumps({"step": "planned", **plan.as_json()}))
    return plan


def conclude_repair(
    store: InsightStore,
    faulty_id: uuid.UUID,
    session_id: str,
    suspects: list[uuid.UUID],
    report: ReflectionReport,
    now: datetime | None = None,
) -> RepairOutcome:
    """A session's re-reflection has ended: resolve the plan's suspects learned from it (`suspects`: the plan's), and
    write down what changed."""
    now = now or datetime.now(UTC)
    try:
        faulty = store.get(faulty_id)
    except NotFound:  # deleted since the repair was planned: its trail went with it
        return RepairOutcome(faulty_id, session_id, "failed", reason=f"insight {faulty_id} was deleted")
    if report.outcome != "ok":
        outcome = RepairOutcome(faulty.id, session_id, "failed", reason=report.reason)
        store.audit.record("repair", REPAIR_ACTOR, faulty, faulty, json.dumps(outcome.as_json(), ensure_ascii=False))
        return outcome
    learned = [
        *report.created,
        *report.merged,
        *report.superseded,
        *report.updated,
        *report.unchanged,
        *report.pending_review,
    ]
    restored: list[uuid.UUID] = []
    rejected: list[uuid.UUID] = []
    for suspect in store.graph.reflected_from([session_id]):
        if suspect.status is not InsightStatus.SUSPECT or suspect.id not in suspects:
            continue
        if suspect.id in learned:
            if _before_suspected(store, suspect.id) is InsightStatus.PENDING_REVIEW:  # it still needs its reviewer
                after = store.set_status(suspect.id, InsightStatus.PENDING_REVIEW, now)
            else:
                after = store.restore(suspect.id, now)
            note = f"learned again from session {session_id} without faulty insight {faulty.id}: restored"
            store.audit.record("repair", REPAIR_ACTOR, suspect, after, note)
            restored.append(suspect.id)
        else:
            after = store.set_status(suspect.id, InsightStatus.REJECTED, now)
            replaced = ", ".join(str(i) for i in learned) or "nothing"
            note = (
                f"not learned again from session {session_id} without faulty insight {faulty.id}; "
                f"replaced by {replaced}"
            )
            store.audit.record("repair", REPAIR_ACTOR, suspect, after, note)
            rejected.append(suspect.id)
    outcome = RepairOutcome(faulty.id, session_id, "ok", learned, restored, rejected)
    store.audit.record("repair", REPAIR_ACTOR, faulty, faulty, json.dumps(outcome.as_json(), ensure_ascii=False))
    return outcome


def _before_suspected(store: InsightStore, insight_id: uuid.UUID) -> InsightStatus | None:
    """The status the insight had when the repair made it suspect (from the audit trail)."""
    entries = [e for e in store.audit.of(insight_id) if e.action == "suspect" and e.actor == REPAIR_ACTOR]
    return Insight.model_validate_json(entries[-1].before).status if entries else None


def repair_steps(store: InsightStore, faulty_id: uuid.UUID | str) -> list[dict[str, Any]]:
    """The repair's steps so far, from the audit trail of the faulty insight (oldest first)."""
    faulty = store.get(faulty_id)
    steps: list[dict[str, Any]] = []
    for entry in store.audit.of(faulty.id):
        if entry.action == "repair":
            steps.append({"at": entry.at.isoformat(), "actor": entry.actor, **json.loads(entry.note)})
    return steps
