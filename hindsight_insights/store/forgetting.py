"""Forgetting a user: their own insights and turns go, and their words leave project-wide insights. Idempotent: if
interrupted, running it again finishes the job."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol

from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import Evidence, ForgetResult, Insight
from hindsight_insights.store.settling import settle
from hindsight_insights.store.table import SCRUBBED_QUOTE, InsightTable, slot_of


class ForgettableTurns(Protocol):
    def forget_user(self, user_id: str) -> int: ...


class Forgetting:
    def __init__(self, table: InsightTable, turns: ForgettableTurns) -> None:
        self._table = table
        self._turns = turns

    def forget_user(self, user_id: str, now: datetime | None = None) -> ForgetResult:
        """Delete one user's insights and turns, and their words in project-wide insights.

        A project-wide insight that only this user's conversations support is derived from their data alone and is
        deleted (its slot settles to the previous rule). One that others support too stays, without this user in
        its support, and without their quote and observation if it was learned from them.
        """
        if not user_id.strip():
            raise InvalidInput([("user_id", "must not be empty")])
        now = now or datetime.now(UTC)
        deleted = scrubbed = 0
        with self._table.failures("forgetting a user", safe_to_rerun=True):
            deleted += self._table.delete_owned_by(user_id)
            while batch := self._table.supported_by(user_id, limit=1000):
                for insight in batch:
                    if set(insight.supporters) <= {user_id}:
                        self._table.delete(insight.id)
                        settle(self._table, slot_of(insight), now)
                        deleted += 1
                    else:
                        self.scrub(insight, user_id, now)
                        scrubbed += 1
        turns = self._turns.forget_user(user_id)
        return ForgetResult(insights_deleted=deleted, insights_scrubbed=scrubbed, turns_deleted=turns)

    def scrub(self, insight: Insight, user_id: str, now: datetime) -> None:
        """Take the user out of an insight's support, and their words out of it if it was learned from them (the
        table makes what search reads again without them)."""
        supporters = [s for s in insight.supporters if s != user_id]
        update: dict[str, Any] = {"supporters": supporters, "support_count": len(supporters), "updated_at": now}
        if insight.learned_from == user_id:
            update |= {"evidence": Evidence(quote=SCRUBBED_QUOTE), "observation": "", "learned_from": None}
        self._table.update(insight.model_copy(update=update), update.keys())
