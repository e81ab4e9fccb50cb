"""Where an insight is written: the layered writes. Every writer saves through `learn`.

A draft keeps the scope it asks for, except project scope, which only two things grant:

- a reviewer (InsightStore.approve), for anything held for review;
- verification, for a factual correction the detector rates 0.85 or more (a concrete value or a cited source):
  nothing in its project slot says otherwise, and another user has independently corrected it the same way
  (`project_fact_agreement` users in all). One user alone, who may be wrong, never makes a project fact.

Anything that asks for project scope is written twice: for the user it came from (active at once), and project-wide
pending, with the reason. A conflict with the project's current rule goes to review; it never overwrites. A model's
own confidence (an LLM's JSON, a tool parameter an agent fills) can never verify anything: only the rule-based
detector's confidence counts (`trusted_confidence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from hindsight_insights import ranking
from hindsight_insights.governance.admission import PROJECT_NEEDS_REVIEW, admit_insight
from hindsight_insights.models import InsightDraft, InsightKind, InsightStatus, SaveResult, Scope
from hindsight_insights.store.chain import head
from hindsight_insights.store.ports import LearningStore


@dataclass(frozen=True)
class Placed:
    """One write of a learned insight."""

    scope: Scope
    result: SaveResult
    redacted: list[str]  # the kinds of secret or personal data removed before it was stored
    review_reason: str | None  # why it waits for a reviewer, when it does


def learn(store: LearningStore, draft: InsightDraft, *, trusted_confidence: bool = False) -> list[Placed]:
    """Save a draft where the rules put it; the first placement is the one for the user (or the only one)."""
    if draft.resolved_scope is not Scope.PROJECT or not draft.user_id:
        return [_save(store, draft)]
    conflict = _conflicting_rule(store, draft)
    verifiable = (
        trusted_confidence
        and draft.kind is InsightKind.FACT
        and draft.confidence >= store.settings.project_fact_confidence
        and conflict is None
        and draft.status is InsightStatus.ACTIVE
    )
    if conflict is not None:
        reason = f"conflicts with the project's rule {conflict}"
    elif verifiable:
        reason = AWAITING_AGREEMENT
    else:
        reason = PROJECT_NEEDS_REVIEW
    for_the_user = draft.model_copy(update={"scope": Scope.USER})
    for_review = draft.model_copy(update={"status": InsightStatus.PENDING_REVIEW, "review_reason": reason[:500]})
    placements = [_save(store, for_the_user), _save(store, for_review)]
    if verifiable and placements[1].review_reason == AWAITING_AGREEMENT:  # else the screen held it: a reviewer decides
        placements[1] = _verified_by_agreement(store, for_review, placements[1])
    return placements


AWAITING_AGREEMENT = (
    "a factual correction: project-wide once another user confirms it independently, or a reviewer approves it"
)


def _verified_by_agreement(store: LearningStore, draft: InsightDraft, held: Placed) -> Placed:
    """A fact two users corrected the same way, independently, with nothing against it, holds for everyone: the
    newest of the agreeing pending versions becomes the project's rule. One user alone, who may be wrong, never
    makes a project fact."""
    agreeing = [
        version
        for version in store.slot_versions_of(draft)
        if version.status is InsightStatus.PENDING_REVIEW
        and version.review_reason == AWAITING_AGREEMENT
        and ranking.same_instruction(version.action, draft.action)
    ]
    users = {supporter for version in agreeing for supporter in version.supporters if ":" not in supporter}
    if len(users) < store.settings.project_fact_agreement:
        return held
    newest = max(agreeing, key=lambda version: (version.asserted_at, str(version.id)))
    approved = store.approve(newest.id, reviewer=f"agreement of {len(users)} users")
    result = SaveResult(
        id=approved.id,
        status="superseded" if approved.supersedes else "created",
        insight_status=approved.status,
        supersedes=approved.supersedes,
    )
    return Placed(Scope.PROJECT, result, held.redacted, None)


def _save(store: LearningStore, draft: InsightDraft, *, project_allowed: bool = False) -> Placed:
    admitted = admit_insight(draft, project_allowed=project_allowed)
    result = store.save(admitted.draft)
    reason = admitted.draft.review_reason if result.insight_status is InsightStatus.PENDING_REVIEW else None
    return Placed(admitted.draft.resolved_scope, result, admitted.redacted, reason)


def _conflicting_rule(store: LearningStore, draft: InsightDraft) -> str | None:
    """The project slot's current rule, when it says something else (quoted for the reviewer)."""
    current = head(store.slot_versions_of(draft), datetime.now(UTC))
    if current is None or ranking.same_instruction(current.action, draft.action):
        return None
    return f"{current.id} “{current.action[:120]}”"
