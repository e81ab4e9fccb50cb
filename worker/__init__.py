"""The reflection worker: tasks claimed under leases in a SQL state database, fired by APScheduler, reflected on by the
core's engine (docs/architecture.md, "The worker").

`open_worker(settings)` builds a `ReflectionWorker` from the settings; `run(worker, stop)` runs its schedule. The CLI
(`python -m hindsight_cli worker | reflect | nightly | expire | worker-status`) is the operator's way in.
"""

from __future__ import annotations

from worker.runner import Busy, ReflectionWorker, TickReport, WorkerStatus
from worker.service import open_worker, run

__all__ = ["Busy", "ReflectionWorker", "TickReport", "WorkerStatus", "open_worker", "run"]
