"""The nightly run, and its batches.

    plan     one worker claims the night's plan (a task per local date): for each user active in the last day, and
             each user with sessions the budget deferred, a task with their sessions: the deferred ones first, then
             their newest of the last `worker_nightly_lookback_days`, at most 8 (the engine's cap). A user with one
             session and nothing deferred is left out: nothing can repeat across sessions, and its end had its own
             reflection.
    suggest  the plan also mines the correction records for prompt suggestions (hindsight_insights/suggestions.py):
             created or updated per (topic, scene, type), for a human to accept or dismiss, never applied; a failure
             fails the plan, which is tried again (the suggestions' ids are deterministic, so nothing doubles).
    run      each user's task is one reflect_user (nightly variant: requests repeated across sessions, duplicates and
             conflicts consolidated), claimed like any task: every replica's poll helps.
    batch    when the source is Anthropic's and more users than `worker_batch_threshold` have a task, the tasks go
             into one Message Batch instead: the BatchJob is kept in the state database before the tasks are marked
             batched, and every poll (of any worker, after a restart too) checks it at most every
             `reflection_batch_poll_s`; when it has ended, one worker claims its collection, and each result is
             verified, saved and recorded like a direct reflection. A request that failed in the batch is retried
             directly, within the task's attempts.

`NightlyRun` holds what the night needs (the task board, the ledger, the turn log, the cost guard, the batch API) and
reaches the worker only through `TaskRunner`: run the due tasks of some kinds, and record a reflection.

A worker killed while submitting, after the API created the batch and before the job was stored, leaves a batch
nobody collects; the plan's lapsed claim is taken over and the users are submitted again (saving is idempotent).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from hindsight_insights.config import Settings
from hindsight_insights.reflection import BatchJob, ReflectionBatch, ReflectionReport
from hindsight_insights.reflection.transcript import MAX_NIGHTLY_SESSIONS
from hindsight_insights.store.turns import TurnLog
from hindsight_insights.suggestions import MiningReport
from worker.budget import CostGuard
from worker.clock import Clock, local_day
from worker.lease import Heartbeat, beat_interval
from worker.ledger import Ledger
from worker.tasks import Claim, Kind, State, Task, TaskBoard, backoff
from worker.tick import Progress, TickReport

log = logging.getLogger(__name__)

ACTIVE_WINDOW = timedelta(days=1)


def night_of(user_id: str, day: date) -> str:
    return f"{user_id}@{day.isoformat()}"


class TaskRunner(Protocol):
    """What the night asks of the worker (ReflectionWorker is one): run the due tasks of some kinds under claims, and
    log and record a reflection made elsewhere (a batch's result), with no claim to finish."""

    def run_due(
        self,
        kinds: Sequence[Kind],
        report: TickReport,
        *,
        deadline: datetime | None = None,
        progress: Progress | None = None,
    ) -> None: ...

    def conclude(
        self, kind: Kind, subject: str, attempt: int, report: ReflectionReport, *, claim: Claim | None = None
    ) -> None: ...


@dataclass
class NightlyRun:
    """The night's plan, its users' tasks and its batches, for one project."""

    board: TaskBoard
    ledger: Ledger
    turns: TurnLog
    guard: CostGuard
    batch: ReflectionBatch | None
    clock: Clock
    zone: ZoneInfo
    settings: Settings
    runner: TaskRunner
    mine: Callable[[datetime], MiningReport] | None = None  # prompt suggestions (suggestions.mine_suggestions)

    def run(self, report: TickReport, progress: Progress | None = None) -> None:
        """Plan tonight (unless a worker has) and run the night's due user reflections."""
        now = self.clock.now()
        day = local_day(now, self.zone)
        self.board.ensure("plan", day.isoformat(), now)
        task = self.board.get("plan", day.isoformat())
        if task is not None:
            self._plan_night(task, now, report)
        self.runner.run_due(["nightly"], report, progress=progress)

    def resume_plans(self, now: datetime, report: TickReport) -> None:
        """A plan that failed (Weaviate down at 03:00), or whose worker died, is tried again by a poll of any worker."""
        for task in self.board.due(["plan"], now):
            self._plan_night(task, now, report)

    def _plan_night(self, task: Task, now: datetime, report: TickReport) -> None:
        claim = self.board.claim(task, now)
        if claim is None:  # planned already, or another worker plans it
            return
        with Heartbeat(self.board, claim, self.clock, beat_interval(self.settings.worker_claim_lease_s)):
            try:
                self._plan(date.fromisoformat(task.subject), now, report)
            except Exception as error:
                log.exception("the nightly plan of %s failed", task.subject)
                retry_at = now + backoff(self.settings.worker_poll_interval_s, claim.attempt)
                self.board.fail(claim, self.clock.now(), f"planning failed: {error!r}", retry_at=retry_at)
            else:
                self.board.succeed(claim, self.clock.now())

    def _plan(self, day: date, now: datetime, report: TickReport) -> None:
        active = self.turns.active_users(now - ACTIVE_WINDOW)
        waiting: dict[str, list[str]] = defaultdict(list)
        for deferred in self.board.tasks("session", "deferred"):
            if deferred.user_id:
                waiting[deferred.user_id].append(deferred.subject)
        lookback = now - timedelta(days=self.settings.worker_nightly_lookback_days)
        groups: dict[str, dict[str, Any]] = {}
        for user_id in sorted(set(active) | set(waiting)):
            deferred_ids = waiting.get(user_id, [])[:MAX_NIGHTLY_SESSIONS]
            recent = [
                s.session_id for s in self.turns.sessions_of(user_id, lookback) if s.session_id not in deferred_ids
            ]
            room = MAX_NIGHTLY_SESSIONS - len(deferred_ids)
            sessions = deferred_ids + (recent[-room:] if room > 0 else [])
            if len(sessions) < 2 and not deferred_ids:
                continue
            groups[user_id] = {"sessions": sessions, "deferred": deferred_ids}
        batched = self.batch is not None and len(groups) > self.settings.worker_batch_threshold
        for user_id, detail in groups.items():
            state: State = "batched" if batched else "due"
            self.board.ensure("nightly", night_of(user_id, day), now, user_id=user_id, state=state, detail=detail)
        self.ledger.count(day, "nightly.planned", len(groups))
        if self.mine is not None:
            mined = self.mine(now)
            self.ledger.count(day, "suggestions.mined", mined.suggested)
            log.info(
                "prompt suggestions: %d corrections read, %d groups (%d new)",
                mined.read,
                mined.suggested,
                mined.created,
            )
        if batched:
            self._submit(day, now, report)

    def _submit(self, day: date, now: datetime, report: TickReport) -> None:
        """Send the night's batched tasks that no batch holds yet (all of them, unless a plan was cut short)."""
        assert self.batch is not None
        suffix = f"@{day.isoformat()}"
        unsent = [
            t
            for t in self.board.tasks("nightly", "batched")
            if t.subject.endswith(suffix) and "batch_id" not in t.detail
        ]
        if not unsent:
            return
        if self.guard.decide("nightly", self.ledger.spend(day).tokens) != "run":
            for task in unsent:
                self.board.move(task, "skipped", now, error="skipped: the day's token budget is spent")
            self.ledger.count(day, "nightly.skipped", len(unsent))
            report.skipped += len(unsent)
            return
        groups = [list(task.detail["sessions"]) for task in unsent]
        job, failed = self.batch.submit(groups, "nightly")
        by_sessions = {tuple(task.detail["sessions"]): task for task in unsent}
        if job is not None:
            self.ledger.add_batch(job, now)  # first: from here on any worker can collect it
            for request in job.requests:
                task = by_sessions[tuple(request.session_ids)]
                detail = {**task.detail, "batch_id": job.batch_id, "custom_id": request.custom_id}
                self.board.move(task, "batched", now, detail=detail)
            report.batches_submitted += 1
            self.ledger.count(day, "batch.submitted")
            self.ledger.count(day, "batch.requests", len(job.requests))
            log.info("nightly batch %s: %d users", job.batch_id, len(job.requests))
        for failure in failed:  # no turns left, or turns of several users: nothing was sent for them
            self._settle(by_sessions[tuple(failure.session_ids)], failure, now, report)

    def collect_batches(self, now: datetime, report: TickReport) -> None:
        """Check the batches in flight (at most every reflection_batch_poll_s) and collect those that have ended."""
        if self.batch is None:
            return
        every = timedelta(seconds=self.settings.reflection_batch_poll_s)
        for open_batch in self.ledger.open_batches():
            if open_batch.checked_at is not None and now - open_batch.checked_at < every:
                continue
            job = open_batch.job
            try:
                status = self.batch.status(job).processing_status
            except Exception:  # the API is unreachable now: the next poll asks again
                log.warning("could not check batch %s", job.batch_id, exc_info=True)
                continue
            self.ledger.batch_checked(job.batch_id, status, now)
            if status == "ended":
                self._collect(self.batch, job, now, report)

    def _collect(self, batch: ReflectionBatch, job: BatchJob, now: datetime, report: TickReport) -> None:
        self.board.ensure("batch", job.batch_id, now)
        task = self.board.get("batch", job.batch_id)
        if task is not None and task.state == "failed":  # collecting it failed max_attempts times: stop asking the API
            self.ledger.batch_given_up(job.batch_id, now)
            return
        claim = None if task is None else self.board.claim(task, now)
        if claim is None:  # another worker collects it
            return
        with Heartbeat(self.board, claim, self.clock, beat_interval(self.settings.worker_claim_lease_s)):
            waiting = {
                t.detail.get("custom_id"): t
                for t in self.board.tasks("nightly", "batched")
                if t.detail.get("batch_id") == job.batch_id
            }
            # After a collection cut short, only what is still waiting is collected again.
            requests = [request for request in job.requests if request.custom_id in waiting]
            try:
                reports = batch.collect(job.model_copy(update={"requests": requests})) if requests else []
            except Exception as error:
                log.exception("collecting batch %s failed", job.batch_id)
                self.board.fail(claim, self.clock.now(), f"collecting failed: {error!r}", retry_at=now)
                return
            for request, result in zip(requests, reports, strict=True):
                self._settle(waiting[request.custom_id], result, self.clock.now(), report)
        self.ledger.batch_collected(job.batch_id, self.clock.now())
        self.ledger.count(local_day(now, self.zone), "batch.collected")
        self.board.succeed(claim, self.clock.now())
        report.batches_collected += 1

    def _settle(self, task: Task, result: ReflectionReport, now: datetime, report: TickReport) -> None:
        """Record a batched user's reflection and move its task on: done, or due for a direct retry, or failed."""
        attempt = task.attempts + 1
        if result.user_id is None:  # a request that failed in the batch: its report has no turns read
            result = result.model_copy(update={"user_id": task.user_id})
        self.runner.conclude("nightly", task.subject, attempt, result)
        report.reflections.append(result)
        if result.outcome == "ok":
            if self.board.move(task, "done", now, attempts=0):
                self.board.cover_deferred(task.detail, task.subject, now)
            return
        final = attempt >= self.settings.worker_max_attempts
        reason = result.reason or "failed"
        self.board.move(
            task,
            "failed" if final else "due",
            now,
            due_at=now + backoff(self.settings.worker_poll_interval_s, attempt),
            attempts=attempt,
            error=f"given up after {attempt} attempts; last: {reason}" if final else reason,
        )
