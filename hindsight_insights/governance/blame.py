"""Blame: what a recorded turn says about the insights that shaped the answers it judges (ExpeL-style bookkeeping).

    a correction     the user's message corrects the previous answer (the detector, or the flow's `correction`
                     flag): each insight injected into that answer is blamed, weighted by how closely the
                     correction touches it (the cosine of the embedder's vectors of the user's message, with the
                     part of the answer the detector found corrected, and of the insight's text, mapped to 0-1 by
                     `blame_weight`); the answer as a whole is left out: it echoes every rule it was given
    a dislike        the user disliked this turn's answer: its injected insights are blamed the same way, against the
                     turn's own messages
    no complaint     the next message is no correction (or the answer was liked): each insight given gets support

An active insight whose blame reaches `Settings.blame_suspect_at` and outweighs its support becomes `suspect`:
never injected (search reads only active rules), and in the review queue with the turns that blamed it. A reviewer
who approves a suspect makes it the rule again, and its blame counts afresh from then on. The marks
live in the blame ledger (store/blame.py); the change of status in the audit trail, actor "blame".
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from hindsight_insights.detection.correction_types import Correction
from hindsight_insights.models import InsightStatus, Turn
from hindsight_insights.store.blame import BlameMark, BlameTally
from hindsight_insights.store.ports import BlamingStore

# Cosine of the built-in embedder between a complaint and an insight: at or below UNRELATED the complaint is about
# something else (an unrelated rule scores 0.0-0.2 against a correction), at or above FULL it is about this insight
# (0.55-0.8 for a correction of the rule's own claim); in between, a share. Read off a handful of zh/en pairs, not
# tuned on any evaluation set.
UNRELATED = 0.2
FULL = 0.5
SUSPECT_ACTOR = "blame"


def blame_weight(cosine: float) -> float:
    return float(min(1.0, max(0.0, (cosine - UNRELATED) / (FULL - UNRELATED))))


@dataclass(frozen=True)
class Judged:
    """One insight's mark from this turn, its tally after a blame, and whether it became suspect now."""

    insight_id: uuid.UUID
    kind: str
    weight: float
    tally: BlameTally | None  # read after a blame only
    suspected: bool

    def as_json(self) -> dict[str, object]:
        tally = {} if self.tally is None else {"blame": round(self.tally.blame, 3), "support": self.tally.support}
        return {
            "insight_id": str(self.insight_id),
            "kind": self.kind,
            "weight": round(self.weight, 3),
            **tally,
            "suspected": self.suspected,
        }


def judge_turn(
    store: BlamingStore,
    turn: Turn,
    previous: Turn | None,
    correction: Correction,
    now: datetime,
) -> list[Judged]:
    """Mark the insights `previous` and `turn` were given, and make suspect those that crossed the threshold."""
    marks: list[BlameMark] = []
    complained = correction.is_correction or turn.signals.correction
    if previous is not None and previous.injected_insight_ids:
        if complained:
            text = "\n".join(part for part in (turn.user_message, correction.original) if part)
            reason = f"correction:{correction.type.value}" if correction.is_correction else "correction:flow"
            marks += _blame(store, previous, turn, previous.injected_insight_ids, text, reason, now)
        else:
            marks += _support(previous, turn, previous.injected_insight_ids, now)
    if turn.injected_insight_ids and turn.signals.feedback == "dislike":
        text = f"{turn.user_message}\n{turn.assistant_message}"
        marks += _blame(store, turn, turn, turn.injected_insight_ids, text, "dislike", now)
    elif turn.injected_insight_ids and turn.signals.feedback == "like":
        marks += _support(turn, turn, turn.injected_insight_ids, now)
    added = store.blame_ledger.add(marks)
    judged: list[Judged] = []
    for mark in added:
        if mark.kind == "support":  # support never makes anything suspect: no tally read for it
            judged.append(Judged(mark.insight_id, mark.kind, mark.weight, None, False))
            continue
        tally = standing_blame(store, mark.insight_id)
        suspected = _make_suspect(store, mark.insight_id, tally, now)
        judged.append(Judged(mark.insight_id, mark.kind, mark.weight, tally, suspected))
    return judged


def crosses(tally: BlameTally, threshold: float) -> bool:
    """Blamed enough, and more than it was used without complaint."""
    return tally.blame >= threshold and tally.blame > tally.support


def standing_blame(store: BlamingStore, insight_id: uuid.UUID) -> BlameTally:
    """The insight's blame and support since a reviewer last cleared it: what counts towards `suspect` now."""
    return store.blame_ledger.tally(insight_id, since=_cleared_at(store, insight_id))


def _cleared_at(store: BlamingStore, insight_id: uuid.UUID) -> datetime | None:
    """When a reviewer last approved the insight (a suspect found innocent): blame before that is answered."""
    approvals = [entry.at for entry in store.audit.of(insight_id) if entry.action == "approve"]
    return max(approvals) if approvals else None


def _make_suspect(store: BlamingStore, insight_id: uuid.UUID, tally: BlameTally, now: datetime) -> bool:
    if not crosses(tally, store.settings.blame_suspect_at):
        return False
    before = store.get(insight_id)
    if before.status not in (InsightStatus.ACTIVE, InsightStatus.SUPERSEDED):
        return False  # pending, rejected or already suspect: a reviewer has it, or had it
    after = store.set_status(insight_id, InsightStatus.SUSPECT, now)
    turns = ", ".join(str(mark.by_turn) for mark in tally.blamed_by)
    note = (
        f"blame {tally.blame:.2f} reached {store.settings.blame_suspect_at:g} against support {tally.support}; "
        f"blamed by turns {turns}"
    )
    store.audit.record("suspect", SUSPECT_ACTOR, before, after, note)
    return True


def _blame(
    store: BlamingStore,
    judged: Turn,
    by: Turn,
    insight_ids: list[uuid.UUID],
    text: str,
    reason: str,
    now: datetime,
) -> list[BlameMark]:
    # The stored vectors of the insights (of their embedding_text): only the complaint is embedded.
    found = store.insight_table.with_vectors(list(dict.fromkeys(insight_ids)))  # a deleted one has nothing to blame
    if not found:
        return []
    insights = [insight for insight, _ in found]
    others = np.stack([vector for _, vector in found])
    complaint = store.embedder.embed([text])[0]
    norms = np.linalg.norm(others, axis=1) * max(float(np.linalg.norm(complaint)), 1e-9)
    cosines = (others @ complaint) / np.maximum(norms, 1e-9)
    marks = []
    for insight, cosine in zip(insights, cosines, strict=True):
        weight = blame_weight(float(cosine))
        if weight > 0:  # a complaint about something else neither blames nor supports this one
            marks.append(_mark(insight.id, judged, by, "blame", weight, reason, now))
    return marks


def _support(judged: Turn, by: Turn, insight_ids: list[uuid.UUID], now: datetime) -> list[BlameMark]:
    return [_mark(i, judged, by, "support", 1.0, "used", now) for i in dict.fromkeys(insight_ids)]


def _mark(
    insight_id: uuid.UUID, judged: Turn, by: Turn, kind: str, weight: float, reason: str, now: datetime
) -> BlameMark:
    return BlameMark(
        insight_id=insight_id,
        turn_id=judged.id,
        by_turn=by.id,
        session_id=judged.session_id,
        user_id=judged.user_id,
        kind="blame" if kind == "blame" else "support",
        weight=weight,
        reason=reason,
        at=now,
    )
