"""For whom an insight holds: the one place that decides it, from the writer's trusted context alone.

  writer (commands.Provenance)                asks for   written as
  no end user (an operator's import)          project     project-wide, active
  builder's scope setting empty or "user"     user        for the user, active
  builder's scope setting "project"           project     for the user, active; project-wide pending review
  detector: preference                        user        for the user, active
  detector: process                           project     for the user, active; project-wide pending review
  detector: factual, 0.85 or more             project     for the user, active; project-wide pending, until
                                                          another user agrees (governance/writing.py) or a
                                                          reviewer approves
  detector: factual, 0.7 to 0.85              user        for the user, active
  detector: factual stating a change below    user        for the user, active ("运费现在 15 元", "X is Y now",
    0.7                                                   "X 已经改成 Y 了": the user says what holds from now on)
  detector: factual marked standing below     user        for the user, active (以后都照这个来, "from now on":
    0.7                                                   the user says how long it holds)
  detector: factual below 0.7, negative       session     for the user in this session only, active
  detector: any, worded for this conversation session     for the user in this session only, active, whatever the
    (这次, this time: periods.py)                          confidence ("这次先按 60 天算")

A model never asks: a `scope` it writes (insight_json, a reflection's answer) is dropped and reported as ignored
(llm_json.py), and what it teaches stays with the user. Project scope with an end user is never active at once:
only a reviewer (InsightStore.approve) or the detector's verified agreement makes it the project's rule. The
thresholds are the settings' `project_fact_confidence` and `user_fact_confidence`.
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight_insights.commands import Provenance
from hindsight_insights.config import Settings
from hindsight_insights.detection.correction_types import Correction, CorrectionType
from hindsight_insights.detection.periods import this_conversation_only
from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import Condition, Scope

PROJECT_NEEDS_REVIEW = "project-wide: learned from one user's conversation, it applies to everyone once reviewed"
AWAITING_AGREEMENT = (
    "a factual correction: project-wide once another user confirms it independently, or a reviewer approves it"
)


@dataclass(frozen=True)
class Target:
    """One write of an insight: its scope, and why it waits for a reviewer (None: active at once)."""

    scope: Scope
    review_reason: str | None = None


def decide_scope(provenance: Provenance, settings: Settings) -> list[Target]:
    """Where a write goes, by the table above; the first target is the user's (or the only one)."""
    asked = _asked(provenance, settings)
    if provenance.user_id is None:
        if asked is not Scope.PROJECT:
            raise InvalidInput([("user_id", f"a {asked.value}-scope insight needs the end user it is for")])
        return [Target(Scope.PROJECT)]
    if asked is Scope.SESSION and not provenance.session_id:
        raise InvalidInput([("session_id", "a session-scope insight needs the conversation it holds in")])
    if asked is not Scope.PROJECT:
        return [Target(asked)]
    return [Target(Scope.USER), Target(Scope.PROJECT, _why_held(provenance.correction, settings))]


def promotable_by_agreement(target: Target) -> bool:
    """A project-wide write that agreement (not only a reviewer) may make the project's rule."""
    return target.scope is Scope.PROJECT and target.review_reason == AWAITING_AGREEMENT


def _asked(provenance: Provenance, settings: Settings) -> Scope:
    if provenance.correction is not None:
        return _asked_by_correction(provenance.correction, settings)
    if provenance.scope is not None:
        return provenance.scope
    return Scope.USER if provenance.user_id else Scope.PROJECT


def _asked_by_correction(correction: Correction, settings: Settings) -> Scope:
    if correction.condition is Condition.TEMPORAL and this_conversation_only(correction.condition_detail or ""):
        return Scope.SESSION
    if correction.type is CorrectionType.PREFERENCE:
        return Scope.USER
    if correction.type is CorrectionType.PROCESS:
        return Scope.PROJECT
    if correction.type is CorrectionType.FACTUAL and correction.confidence >= settings.project_fact_confidence:
        return Scope.PROJECT
    if correction.type is CorrectionType.FACTUAL and correction.confidence >= settings.user_fact_confidence:
        return Scope.USER
    if correction.type is CorrectionType.FACTUAL and (states_a_change(correction) or kept_from_now_on(correction)):
        return Scope.USER
    return Scope.SESSION


def states_a_change(correction: Correction) -> bool:
    """The user says the fact changed (现在, 已经改成, now, changed to): an explicit correction of what holds from now
    on, not a value that only differs from the assistant's (which may be about another thing)."""
    return any(signal.startswith(("update:", "implicit:update_")) for signal in correction.signals)


def kept_from_now_on(correction: Correction) -> bool:
    """The rules found the user's own mark that it holds from now on (以后都照这个来, "answer everyone this way from now
    on"), in a message the learned model reads as a fact put right: however sure the model is of the type, the user
    said how long it holds."""
    return any(signal == "standing" or signal.startswith("standing:") for signal in correction.signals)


def _why_held(correction: Correction | None, settings: Settings) -> str:
    verifiable = (
        correction is not None
        and correction.type is CorrectionType.FACTUAL
        and correction.confidence >= settings.project_fact_confidence
    )
    return AWAITING_AGREEMENT if verifiable else PROJECT_NEEDS_REVIEW
