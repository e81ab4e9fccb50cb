"""Scope that cannot leak: what one user's conversation teaches stays with that user until it is promoted.

An insight with a user and no explicit scope is already that user's (models.InsightDraft). A draft learned from a
user that asks for project scope is a request, not a decision: it is stored pending review, never injected, until a
reviewer approves it (InsightStore.approve).
"""

from __future__ import annotations

from hindsight_insights.models import InsightDraft, InsightStatus, Scope


def admit(draft: InsightDraft) -> InsightDraft:
    """The draft as it may be stored: a user's request for project scope waits for review."""
    if draft.resolved_scope is Scope.PROJECT and draft.user_id and draft.status is InsightStatus.ACTIVE:
        return draft.model_copy(update={"status": InsightStatus.PENDING_REVIEW})
    return draft
