"""The dependency graph, read from what is stored (nothing of it is stored on its own):

    insight -> turns       the turns it was injected into (turns keep `injected_insight_ids`)
    session -> insights    what was learned from a session, at once or by reflection (an insight's evidence names
                           its session)
    insight -> insights    what was learned from the sessions that used it: derived, perhaps from its advice

`python -m hindsight_cli insights show ID` prints it, `--json` gives it as JSON; repair walks it
(governance/repair.py).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hindsight_insights.models import Insight
from hindsight_insights.store.blame import BlameLedger, BlameTally
from hindsight_insights.store.reads import InsightReads
from hindsight_insights.store.turns import TurnLog
from hindsight_insights.store.weaviate_table import WeaviateInsightTable


@dataclass(frozen=True)
class TurnUse:
    """A turn an insight was injected into."""

    turn_id: uuid.UUID
    session_id: str
    user_id: str
    turn_index: int
    at: datetime
    corrected: bool  # the answer was corrected by the user's next message


@dataclass(frozen=True)
class InsightGraph:
    insight: Insight
    learned_in: str | None  # the session its evidence is from
    injected_into: list[TurnUse]
    derived: list[Insight]  # learned from the sessions that used it (itself left out)
    blame: BlameTally

    @property
    def used_in(self) -> list[str]:
        """The sessions it was injected into, in the order first used."""
        return list(dict.fromkeys(use.session_id for use in self.injected_into))

    @property
    def sessions(self) -> list[str]:
        """Every session it touched: where it was learned, then where it was used."""
        return list(dict.fromkeys([*([self.learned_in] if self.learned_in else []), *self.used_in]))

    def as_json(self) -> dict[str, Any]:
        return {
            "insight": self.insight.model_dump(mode="json"),
            "learned_in": self.learned_in,
            "injected_into": [
                {
                    "turn_id": str(use.turn_id),
                    "session_id": use.session_id,
                    "turn_index": use.turn_index,
                    "at": use.at.isoformat(),
                    "corrected": use.corrected,
                }
                for use in self.injected_into
            ],
            "used_in_sessions": self.used_in,
            "derived": [
                {
                    "id": str(other.id),
                    "topic": other.topic,
                    "action": other.action,
                    "status": other.status.value,
                    "source": other.source,
                    "session_id": other.evidence.session_id,
                }
                for other in self.derived
            ],
            "blame": self.blame.as_json(),
        }


class DependencyGraph:
    def __init__(self, reads: InsightReads, table: WeaviateInsightTable, turns: TurnLog, ledger: BlameLedger) -> None:
        self._reads = reads
        self._table = table
        self._turns = turns
        self._ledger = ledger

    def of(self, insight_id: uuid.UUID | str) -> InsightGraph:
        """What this insight touched. Raises NotFound for an unknown id."""
        insight = self._reads.get(insight_id)
        uses = [
            TurnUse(
                turn_id=turn.id,
                session_id=turn.session_id,
                user_id=turn.user_id,
                turn_index=self._index(turn.session_id, turn.id),
                at=turn.created_at,
                corrected=turn.error_status == "corrected",
            )
            for turn in self._turns.injected_into(insight.id)
        ]
        used_in = list(dict.fromkeys(use.session_id for use in uses))
        derived = [other for other in self.reflected_from(used_in) if other.id != insight.id]
        return InsightGraph(insight, insight.evidence.session_id, uses, derived, self._ledger.tally(insight.id))

    def reflected_from(self, session_ids: list[str]) -> list[Insight]:
        """session -> insights: what was learned from these sessions, oldest first."""
        with self._table.failures("reading what was learned from sessions"):
            return self._table.from_sessions(session_ids)

    def _index(self, session_id: str, turn_id: uuid.UUID) -> int:
        turns = self._turns.session(session_id)
        return next((turn.turn_index for turn in turns if turn.id == turn_id), 0)
