"""The one way an insight is written. Every writer (the plugin's tools, record_turn's detector, reflection, the
worker, the CLI, benchmarks) calls `write` or `write_many` with a commands.WriteCommand; nothing else calls the
store's save or import.

A write is admitted first (admission.py: the poisoning screen, redaction, and the scope that scope.py decides from
the command's trusted provenance), then placed: the layered writes. A write asking for project scope is stored for
its user (active at once) and project-wide pending, with the reason. A conflict with the project's current rule goes
to review; it never overwrites. Project scope then comes only from a reviewer (InsightStore.approve) or, for a
factual correction the detector rated `project_fact_confidence` or more, from agreement: nothing in its project slot
says otherwise and `project_fact_agreement` users in all corrected it the same way. One user alone, who may be
wrong, never makes a project fact; a model's confidence never verifies anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from hindsight_insights import ranking
from hindsight_insights.admission import Admitted, admit, hold
from hindsight_insights.cascade import Cascade
from hindsight_insights.commands import WriteCommand
from hindsight_insights.models import InsightDraft, InsightStatus, SaveResult, Scope
from hindsight_insights.scope import AWAITING_AGREEMENT, promotable_by_agreement
from hindsight_insights.store.chain import head
from hindsight_insights.store.ports import LearningStore


@dataclass(frozen=True)
class Placed:
    """One write of an insight."""

    scope: Scope
    result: SaveResult
    redacted: list[str]  # the kinds of secret or personal data removed before it was stored
    review_reason: str | None  # why it waits for a reviewer, when it does
    topic: str = ""  # as stored (redacted): what a tool may echo


def write(
    store: LearningStore, command: WriteCommand, *, cascade: Cascade | None = None, now: datetime | None = None
) -> list[Placed]:
    """Admit a command (through the store's screen; what it is unsure of goes to the `cascade`'s workspace model, when
    the call has one, else is held) and save it where the rules put it; the first placement is the user's (or the only
    one)."""
    now = now or datetime.now(UTC)  # one clock for the whole write: the screen's day, the conflict check, the save
    placements = []
    for admitted in admit(command, store.settings, store.screen, cascade, now):
        if admitted.target.scope is Scope.PROJECT and command.provenance.user_id:
            conflict = _conflicting_rule(store, admitted.draft, now)
            if conflict is not None:
                admitted = hold(admitted, f"conflicts with the project's rule {conflict}")
        placed = _save(store, admitted, now)
        if promotable_by_agreement(admitted.target) and placed.review_reason == AWAITING_AGREEMENT:
            placed = _verified_by_agreement(store, admitted.draft, placed)  # else held: a reviewer decides
        placements.append(placed)
    return placements


def write_many(
    store: LearningStore, commands: Sequence[WriteCommand], *, batch_size: int = 256, now: datetime | None = None
) -> int:
    """Bulk load (migrations, seeding, benchmarks): every command admitted like one `write`, then imported all or
    nothing (InsightStore.import_many). Returns how many insights were written. Unlike `write`, no conflict is looked
    up and no agreement counted: a project-wide copy of a user's insight waits for a reviewer. No workspace model is
    asked: what the screen is unsure of is held."""
    admitted = [one for command in commands for one in admit(command, store.settings, store.screen, now=now)]
    return store.import_many(admitted, batch_size=batch_size, now=now)


def _save(store: LearningStore, admitted: Admitted, now: datetime) -> Placed:
    result = store.save(admitted, now=now)
    reason = admitted.draft.review_reason if result.insight_status is InsightStatus.PENDING_REVIEW else None
    return Placed(admitted.target.scope, result, admitted.redacted, reason, admitted.draft.topic)


def _verified_by_agreement(store: LearningStore, draft: InsightDraft, held: Placed) -> Placed:
    """A fact two users corrected the same way, independently, with nothing against it, holds for everyone: the
    newest of the agreeing pending versions becomes the project's rule."""
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
    return Placed(Scope.PROJECT, result, held.redacted, None, held.topic)


def _conflicting_rule(store: LearningStore, draft: InsightDraft, now: datetime) -> str | None:
    """The project slot's current rule, when it says something else (quoted for the reviewer)."""
    current = head(store.slot_versions_of(draft), now)
    if current is None or ranking.same_instruction(current.action, draft.action):
        return None
    return f"{current.id} “{current.action[:120]}”"
