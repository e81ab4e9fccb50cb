"""Where an insight is written: the layered writes. Every writer saves through `learn`.

A draft keeps the scope it asks for, except project scope, which only two things grant:

- a reviewer (InsightStore.approve), for anything held for review;
- the correction rules, for a factual correction the detector rates 0.85 or more (a concrete value or a cited
  source) whose project slot holds no other rule: it is verified, and becomes project-wide at once.

Anything else that asks for project scope is written twice: for the user it came from (active at once), and
project-wide pending review, with the reason. A conflict with the project's current rule goes to review too; it never
overwrites. A model's own confidence (an LLM's JSON, a tool parameter an agent fills) can never make anything
project-wide: only the rule-based detector's confidence counts (`trusted_confidence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from hindsight_insights import ranking
from hindsight_insights.governance.admission import PROJECT_NEEDS_REVIEW, admit_insight
from hindsight_insights.models import InsightDraft, InsightKind, InsightStatus, SaveResult, Scope
from hindsight_insights.store import InsightStore
from hindsight_insights.store.chain import head


@dataclass(frozen=True)
class Placed:
    """One write of a learned insight."""

    scope: Scope
    result: SaveResult
    redacted: list[str]  # the kinds of secret or personal data removed before it was stored
    review_reason: str | None  # why it waits for a reviewer, when it does


def learn(store: InsightStore, draft: InsightDraft, *, trusted_confidence: bool = False) -> list[Placed]:
    """Save a draft where the rules put it; the first placement is the one for the user (or the only one)."""
    if draft.resolved_scope is not Scope.PROJECT or not draft.user_id:
        return [_save(store, draft)]
    conflict = _conflicting_rule(store, draft)
    promoted = (
        trusted_confidence
        and draft.kind is InsightKind.FACT
        and draft.confidence >= store.settings.project_fact_confidence
        and conflict is None
        and draft.status is InsightStatus.ACTIVE
    )
    if promoted:
        return [_save(store, draft, project_allowed=True)]
    reason = PROJECT_NEEDS_REVIEW if conflict is None else f"conflicts with the project's rule {conflict}"
    for_the_user = draft.model_copy(update={"scope": Scope.USER})
    for_review = draft.model_copy(update={"status": InsightStatus.PENDING_REVIEW, "review_reason": reason[:500]})
    return [_save(store, for_the_user), _save(store, for_review)]


def _save(store: InsightStore, draft: InsightDraft, *, project_allowed: bool = False) -> Placed:
    admitted = admit_insight(draft, project_allowed=project_allowed)
    result = store.save(admitted.draft)
    reason = admitted.draft.review_reason if result.insight_status is InsightStatus.PENDING_REVIEW else None
    return Placed(admitted.draft.resolved_scope, result, admitted.redacted, reason)


def _conflicting_rule(store: InsightStore, draft: InsightDraft) -> str | None:
    """The project slot's current rule, when it says something else (quoted for the reviewer)."""
    current = head(store.slot_versions_of(draft), datetime.now(UTC))
    if current is None or ranking.same_instruction(current.action, draft.action):
        return None
    return f"{current.id} “{current.action[:120]}”"
