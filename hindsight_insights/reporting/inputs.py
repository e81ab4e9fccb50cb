"""What the daily report is built from: plain values, read from the store (gather.py) or handed in by the caller
(the worker's reflection cost; the prompt suggestions, through the SuggestionSource port)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol

from hindsight_insights.models import Insight
from hindsight_insights.store.audit import AuditEntry
from hindsight_insights.store.turns import TurnTally


@dataclass(frozen=True)
class CorrectionFact:
    """One corrected answer (a turn's CorrectionRecord), with what the report groups it by."""

    at: datetime  # when the correction came
    type: str  # factual, preference, process, negative
    topic: str  # the detector's topic of the correcting message; "" when it named none
    scene: str
    user_id: str
    session_id: str
    sources: tuple[str, ...] = ()
    original: str | None = None
    corrected: str | None = None


@dataclass(frozen=True)
class ReflectionCost:
    """The day's reflections and tokens, from the worker's ledger (the core never imports the worker: the caller
    reads it and passes it in)."""

    reflections: int
    tokens_in: int
    tokens_out: int
    cached_tokens: int
    budget: int  # tokens per day; 0: no limit

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    @property
    def budget_left(self) -> int | None:
        return None if self.budget <= 0 else max(0, self.budget - self.tokens)


class Suggestion(Protocol):
    """A suggested system-prompt change, as the report shows it."""

    @property
    def id(self) -> uuid.UUID | str: ...

    @property
    def title(self) -> str: ...

    @property
    def change(self) -> str: ...

    @property
    def count(self) -> int: ...  # the corrections behind it

    @property
    def status(self) -> str: ...


class SuggestionSource(Protocol):
    """Where the prompt suggestions come from (the nightly mining of corrections); None of them: "none yet"."""

    def list_suggestions(self, status: str | None = None) -> Sequence[Suggestion]: ...


@dataclass(frozen=True)
class ReportInput:
    day: date
    timezone: str  # IANA: the day's bounds, and the chart's days
    corrections: Sequence[CorrectionFact]  # the 30 days ending with `day`
    tally: TurnTally  # the day's answers
    suspects: Sequence[Insight]
    trail: Sequence[AuditEntry]  # the day's suspect marks and repair steps
    review_queue: int
    cost: ReflectionCost | None = None  # None: the worker's ledger was not read
    suggestions: Sequence[Suggestion] | None = None  # None: no suggestion source
