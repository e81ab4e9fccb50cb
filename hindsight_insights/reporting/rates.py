"""The rates of a period's answers, for the report and the metrics (docs/metrics.md).

    error rate         answers flagged as errors (corrected by the user, disliked, or a tool error) / answers
    correction rate    answers the user corrected / answers
    knowledge gap      answers corrected while no insight had been injected into them / answers

The knowledge-gap score reads what the turn log keeps: `injected_insight_ids` is empty when search found nothing above
its gate for the turn (or the flow did not search). A correction of such an answer is something the memory did not
know; a correction of an answer that had insights is a matter for blame instead. None when there were no answers.
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight_insights.store.turns import TurnTally


@dataclass(frozen=True)
class Rates:
    error_rate: float | None
    correction_rate: float | None
    knowledge_gap: float | None


def rates_of(tally: TurnTally) -> Rates:
    if tally.turns == 0:
        return Rates(None, None, None)
    return Rates(
        error_rate=tally.errors / tally.turns,
        correction_rate=tally.corrected / tally.turns,
        knowledge_gap=tally.corrected_uninformed / tally.turns,
    )
