"""APScheduler 3 over the worker: three jobs, kept in a SQLAlchemyJobStore on the state database (one table per
project), in the settings' timezone.

    anomalies   every worker_poll_interval_s: new signals, then the due anomaly reflections
    sessions    every worker_poll_interval_s: ended sessions, batches in flight, due session and nightly reflections
    nightly     daily at worker_nightly_time: the night's plan and its users' reflections
    expire      every worker_expire_interval_minutes: the expiry sweep and the TTL's retirements

Schedules survive a restart: a stored job whose trigger is unchanged keeps its next run time, so a run that fell due
while no worker was up runs once (coalesced) when one starts: at once for the poll and the expiry; for the nightly run
if it is less than NIGHTLY_GRACE late, else the next night covers it. Changed settings replace the job. Each job
runs in its own thread, one at a time: a poll still running when its next run is due skips that run.

APScheduler 3 does not coordinate schedulers that share a job store: each replica runs the jobs it finds due. That is
safe because the work is claimed (tasks.py): a replica that fires the same poll finds the tasks claimed, and the
night's plan is claimed per date.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import Engine

from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError
from hindsight_insights.store.schema import project_slug
from worker.db import create_tables

log = logging.getLogger(__name__)

NIGHTLY_GRACE = timedelta(hours=12)


class Jobs(Protocol):
    """What the scheduled jobs call: a ReflectionWorker."""

    def poll_anomalies(self) -> object: ...

    def poll_sessions(self) -> object: ...

    def nightly(self) -> object: ...

    def expire(self) -> object: ...

    def note_use(self) -> object: ...


# The worker this process runs, per project. Stored jobs name a function and a project, never an object, so that a
# job store row stays valid across restarts; the function finds the live worker here.
_serving: dict[str, Jobs] = {}


def _run(project: str, job: str) -> None:
    jobs = _serving.get(project)
    if jobs is None:  # a job of a project this process does not serve (a shared table): not ours to run
        log.warning("no worker for project %r in this process; job %s skipped", project, job)
        return
    try:
        jobs.note_use()  # the project's tenant is in use: not one to deactivate (store/tenancy.py)
        getattr(jobs, job)()
    except HindsightError as error:  # Weaviate or the model unreachable: one line, and the next run tries again
        log.warning("%s of project %r failed: %s", job, project, error)
    except Exception:
        log.exception("%s of project %r failed", job, project)


def run_anomalies(project: str) -> None:
    _run(project, "poll_anomalies")


def run_sessions(project: str) -> None:
    _run(project, "poll_sessions")


def run_nightly(project: str) -> None:
    _run(project, "nightly")


def run_expire(project: str) -> None:
    _run(project, "expire")


@dataclass(frozen=True)
class JobSpec:
    id: str
    func: str  # a textual reference: what the job store keeps
    trigger: IntervalTrigger | CronTrigger
    grace_s: int | None  # None: a late run always runs (once)


def job_table(project: str) -> str:
    """The project's job table: jobs_ + the project's slug (ASCII, lower case, at most 54 characters)."""
    return f"jobs_{project_slug(project)}".lower()


def job_specs(settings: Settings) -> list[JobSpec]:
    zone = ZoneInfo(settings.timezone)
    hour, minute = (int(part) for part in settings.worker_nightly_time.split(":"))
    poll_s = settings.worker_poll_interval_s
    return [
        JobSpec("anomalies", "worker.schedule:run_anomalies", IntervalTrigger(seconds=poll_s, timezone=zone), None),
        JobSpec("sessions", "worker.schedule:run_sessions", IntervalTrigger(seconds=poll_s, timezone=zone), None),
        JobSpec(
            "nightly",
            "worker.schedule:run_nightly",
            CronTrigger(hour=hour, minute=minute, timezone=zone),
            int(NIGHTLY_GRACE.total_seconds()),
        ),
        JobSpec(
            "expire",
            "worker.schedule:run_expire",
            IntervalTrigger(minutes=settings.worker_expire_interval_minutes, timezone=zone),
            None,
        ),
    ]


def same_trigger(stored: Any, wanted: IntervalTrigger | CronTrigger) -> bool:
    if isinstance(stored, IntervalTrigger) and isinstance(wanted, IntervalTrigger):
        # An interval trigger's start date is when it was made: only the interval and the zone say what it does.
        return bool(stored.interval == wanted.interval and str(stored.timezone) == str(wanted.timezone))
    if isinstance(stored, CronTrigger) and isinstance(wanted, CronTrigger):
        return repr(stored) == repr(wanted)  # the fields and the zone
    return False


class _PollStillRunning(logging.Filter):
    """A poll that outlasts its interval (one model call can take a minute) makes APScheduler skip the next ones and
    warn each time. The skip is what we want (max_instances=1: the running poll goes on with the due work), so the
    warning is dropped; APScheduler's other warnings pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not (message.startswith("Execution of job") and "maximum number of running instances" in message)


_quiet_skips = _PollStillRunning()


def build_scheduler(settings: Settings, state: Engine) -> BackgroundScheduler:
    scheduler_log = logging.getLogger("apscheduler.scheduler")
    if _quiet_skips not in scheduler_log.filters:
        scheduler_log.addFilter(_quiet_skips)
    jobs = SQLAlchemyJobStore(engine=state, tablename=job_table(settings.project))
    create_tables(state, [jobs.jobs_t])  # before APScheduler's own check-then-create, which replicas would race
    return BackgroundScheduler(
        jobstores={"default": jobs},
        # A thread per job: a long nightly run or session reflection does not hold up the anomalies.
        executors={"default": ThreadPoolExecutor(max_workers=4)},
        job_defaults={"coalesce": True, "max_instances": 1},
        timezone=ZoneInfo(settings.timezone),
    )


def schedule(scheduler: BackgroundScheduler, settings: Settings, now: datetime | None = None) -> list[str]:
    """Add the jobs the settings describe to a started (or paused) scheduler, keeping each stored job whose trigger
    is unchanged. Returns the ids of the jobs added or replaced. A new poll runs at once."""
    changed = []
    for spec in job_specs(settings):
        stored = scheduler.get_job(spec.id)
        if (
            stored is not None
            and stored.func_ref == spec.func
            and same_trigger(stored.trigger, spec.trigger)
            and stored.misfire_grace_time == spec.grace_s
            and list(stored.args) == [settings.project]
        ):
            continue
        extra: dict[str, Any] = {}
        if spec.id in ("anomalies", "sessions"):
            extra["next_run_time"] = now or datetime.now(ZoneInfo(settings.timezone))
        scheduler.add_job(
            spec.func,
            trigger=spec.trigger,
            id=spec.id,
            name=f"{spec.id} ({settings.project})",
            args=[settings.project],
            replace_existing=True,
            misfire_grace_time=spec.grace_s,
            coalesce=True,
            max_instances=1,
            **extra,
        )
        changed.append(spec.id)
    return changed


def shut_down(scheduler: BackgroundScheduler) -> None:
    """Stop the scheduler, a running job finishing first, without touching the stored schedule. (APScheduler 3's
    scheduler thread processes the due jobs once more as it wakes for the shutdown, with the executor already closed:
    the submission fails and the job's next run time moves on, so a run due at that moment would be lost, not
    missed. With the job store detached first it finds nothing to process.)"""
    if not scheduler.running:
        return
    scheduler.remove_jobstore("default", shutdown=False)
    scheduler.shutdown(wait=True)


@contextlib.contextmanager
def serving(project: str, jobs: Jobs) -> Iterator[None]:
    """Make `jobs` the worker that this process's scheduled jobs of `project` call."""
    if project in _serving:
        raise HindsightError(f"a worker for project {project!r} already runs in this process")
    _serving[project] = jobs
    try:
        yield
    finally:
        _serving.pop(project, None)


def serve(jobs: Jobs, settings: Settings, state: Engine, stop: threading.Event) -> None:
    """Run the schedule until `stop` is set; a job running then finishes first."""
    scheduler = build_scheduler(settings, state)
    with serving(settings.project, jobs):
        try:
            scheduler.start(paused=True)
            changed = schedule(scheduler, settings)
            if changed:
                log.info("scheduled %s", ", ".join(changed))
            scheduler.resume()
            stop.wait()
        finally:
            shut_down(scheduler)
