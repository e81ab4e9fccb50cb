"""What one poll or nightly run reports, and the CLI's progress callback: shared by runner.py and nightly.py, so
that neither imports the other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hindsight_insights.reflection import ReflectionReport

Progress = Callable[[str, int, int], None]  # (what, done, total): the CLI draws a progress bar from it


@dataclass
class TickReport:
    """What one poll or nightly run did."""

    anomalies_noted: int = 0
    sessions_ended: int = 0
    reflections: list[ReflectionReport] = field(default_factory=list)
    deferred: int = 0
    held: int = 0
    skipped: int = 0
    batches_submitted: int = 0
    batches_collected: int = 0

    @property
    def failed(self) -> int:
        return sum(report.outcome == "failed" for report in self.reflections)

    def add(self, other: TickReport) -> TickReport:
        return TickReport(
            anomalies_noted=self.anomalies_noted + other.anomalies_noted,
            sessions_ended=self.sessions_ended + other.sessions_ended,
            reflections=[*self.reflections, *other.reflections],
            deferred=self.deferred + other.deferred,
            held=self.held + other.held,
            skipped=self.skipped + other.skipped,
            batches_submitted=self.batches_submitted + other.batches_submitted,
            batches_collected=self.batches_collected + other.batches_collected,
        )
