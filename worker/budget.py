"""The cost guard: a daily token budget per project (tokens in + out of every reflection, counted in the reflection
log, the day in the settings' timezone).

    below the budget           everything runs
    past the budget            a session's end is deferred to the nightly run (which reads its sessions), a user's
                               night is skipped (their deferred sessions wait for the next night)
    past budget + reserve      anomalies wait too, until the next day's budget opens
    repair                     a repair's re-reflection runs below the budget; past it, it waits for the next day

A reflection's cost is known only after it ran, so the day can end past its budget by what the reflections already
running cost (one per worker thread). A budget of 0 means no limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Decision = Literal["run", "defer", "hold", "skip"]


@dataclass(frozen=True)
class CostGuard:
    budget: int
    reserve: int

    def decide(self, kind: str, spent: int) -> Decision:
        if self.budget <= 0:
            return "run"
        if kind == "anomaly":
            return "run" if spent < self.budget + self.reserve else "hold"
        if kind == "repair":  # a reviewer asked for it: it waits, it is never dropped
            return "run" if spent < self.budget else "hold"
        if spent < self.budget:
            return "run"
        return "defer" if kind == "session" else "skip"
