"""For the store's own tests of its save policy (slots, chains, merging), which need drafts in exact states: a draft
sealed as `Admitted` as it is, without admission's screening, redaction or scope decision.

Product code never does this: every write goes through governance.writing.write or write_many, which admit it
(tests/test_write_trust.py checks that no module outside admission.py and this one reaches for the seal).
"""

from __future__ import annotations

from collections.abc import Sequence

from hindsight_insights import admission
from hindsight_insights.models import InsightDraft
from hindsight_insights.scope import Target


def admitted_as_is(draft: InsightDraft) -> admission.Admitted:
    target = Target(draft.resolved_scope, draft.review_reason)
    return admission.Admitted(draft, [], target, False, _made_by=admission._ADMISSION)


def all_admitted_as_is(drafts: Sequence[InsightDraft]) -> list[admission.Admitted]:
    return [admitted_as_is(draft) for draft in drafts]
