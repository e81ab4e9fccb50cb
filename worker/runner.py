"""The worker's core: scan the turn log for work, claim it, reflect, record. APScheduler calls `poll`, `nightly` and
`expire` (schedule.py); the CLI calls them too, and `reflect_now`. Every decision reads the injected clock.

    anomaly   each poll reads the signal turns since the last scan; a session with a correction, a dislike, a tool
              error or repeated stopped generations gets an anomaly task, due now; newer signals make a finished one
              due again, at most once per debounce window
    session   each poll reads the turns of the window that just passed the idle boundary (now - idle minutes); a
              session whose latest turn is in it, with no later turn and with a signal turn, gets a session task: it
              is reflected on once, ever
    nightly   nightly.py (NightlyRun, which calls back only through its TaskRunner protocol: run_due and
              conclude): per user active in the last day, their recent sessions in one reflection
    expiry    expiry.py: the sweep, and the TTL's retirements
    repair    a reviewer confirmed an insight faulty (reflection/repair.py plans it): each session it touched is
              reflected on again with that insight excluded, one task per session, claimed and budgeted like any
              other reflection; when it ends, reflection/repair.py resolves the session's suspects

Two polls run side by side, each every poll interval: one for anomalies, one for session ends (and the nightly tasks
and batches), so that a long session reflection never holds up an anomaly. Each starts due tasks until one poll
interval has passed; what is left waits for the next poll.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import Engine

from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError, NotFound
from hindsight_insights.reflection import (
    AnthropicReflector,
    Extractor,
    ReflectionBatch,
    ReflectionEngine,
    ReflectionReport,
    Reflector,
    Variant,
)
from hindsight_insights.reflection.repair import RepairPlan, conclude_repair
from hindsight_insights.store import InsightStore
from hindsight_insights.store.turns import TurnStamp
from hindsight_insights.suggestions import mine_suggestions
from worker.budget import CostGuard
from worker.clock import Clock, SystemClock, local_day, next_day_start
from worker.expiry import ExpiryReport, sweep
from worker.lease import Heartbeat, beat_interval
from worker.ledger import Ledger, Spend
from worker.logline import log_reflection, reflection_line
from worker.nightly import NightlyRun
from worker.tasks import Claim, Kind, Task, TaskBoard, backoff
from worker.tick import Progress, TickReport

__all__ = ["Busy", "Progress", "ReflectionWorker", "TickReport", "WorkerStatus"]

log = logging.getLogger(__name__)

FIRST_SCAN = timedelta(days=1)  # how far back a scan reads when it has never run
SCAN_OVERLAP = timedelta(seconds=60)  # each scan re-reads this much: turns stored late, clocks a little apart
SCAN_LIMIT = 5000  # signal turns per scan; a full scan goes on from the last one at the next poll
STOPPED_REPEATS = 2  # stopped generations in one session that make an anomaly


class Busy(HindsightError):
    """Another worker is reflecting on this session right now."""


@dataclass(frozen=True)
class WorkerStatus:
    """A day as the state database saw it: tokens spent, what was counted, where the tasks stand."""

    day: date
    spend: Spend
    budget: int
    counters: dict[str, int]
    tasks: dict[tuple[str, str], int]
    batches_in_flight: list[str]


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def anomalous(stamp: TurnStamp) -> bool:
    """A signal that alone makes an anomaly (a stopped generation needs company: STOPPED_REPEATS)."""
    signals = stamp.signals
    return signals.feedback == "dislike" or signals.tool_error or signals.correction or signals.detected.type != "none"


class ReflectionWorker:
    def __init__(
        self,
        store: InsightStore,
        source: Reflector | Extractor,
        state: Engine,
        *,
        settings: Settings | None = None,
        clock: Clock | None = None,
        owner: str | None = None,
        batch: ReflectionBatch | None = None,
    ) -> None:
        """`source` is what `load_reflector(settings)` gives, or an Extractor. `state` is the state database
        (db.open_engine). `batch` defaults to a ReflectionBatch when the source is Anthropic's."""
        self.settings = settings or store.settings
        self.store = store
        self.state = state
        self.engine = ReflectionEngine(store, source, settings=self.settings)
        self.clock: Clock = clock or SystemClock()
        self.owner = owner or worker_id()
        self.project = self.settings.project
        self.zone = ZoneInfo(self.settings.timezone)
        self.board = TaskBoard(
            state,
            self.project,
            self.owner,
            lease=timedelta(seconds=self.settings.worker_claim_lease_s),
            max_attempts=self.settings.worker_max_attempts,
        )
        self.ledger = Ledger(state, self.project)
        self.guard = CostGuard(self.settings.worker_token_budget, self.settings.worker_anomaly_reserve)
        if batch is None and isinstance(source, AnthropicReflector):
            batch = ReflectionBatch(self.engine, source)
        self.batch = batch
        self.night = NightlyRun(
            board=self.board,
            ledger=self.ledger,
            turns=store.turns,
            guard=self.guard,
            batch=batch,
            clock=self.clock,
            zone=self.zone,
            settings=self.settings,
            runner=self,
            mine=lambda now: mine_suggestions(store, now, self.settings),
        )

    # ---- the poll ---------------------------------------------------------------------------------------------

    def poll(self, progress: Progress | None = None) -> TickReport:
        """Both polls, one after the other (the CLI's `worker --once`; the schedule runs them side by side)."""
        return self.poll_anomalies(progress).add(self.poll_sessions(progress))

    def poll_anomalies(self, progress: Progress | None = None) -> TickReport:
        """New signals, then the due anomaly reflections. A job of its own, so that no session's or night's
        reflection, however long, delays an anomaly beyond one poll interval and the anomaly reflection in flight."""
        now = self.clock.now()
        report = TickReport(anomalies_noted=self.scan_anomalies(now))
        deadline = now + timedelta(seconds=self.settings.worker_poll_interval_s)
        self.run_due(["anomaly"], report, deadline=deadline, progress=progress)
        return report

    def poll_sessions(self, progress: Progress | None = None) -> TickReport:
        """Ended sessions, batches in flight, then the due session and nightly reflections (until one poll interval
        has passed: what is left waits for the next poll)."""
        now = self.clock.now()
        report = TickReport(sessions_ended=self.scan_idle(now))
        self.night.collect_batches(now, report)
        self.night.resume_plans(now, report)
        deadline = now + timedelta(seconds=self.settings.worker_poll_interval_s)
        self.run_due(["repair", "session", "nightly"], report, deadline=deadline, progress=progress)
        return report

    def enqueue_repair(self, plan: RepairPlan) -> int:
        """One repair task per session of the plan (due now); returns how many were added."""
        now = self.clock.now()
        added = 0
        for session_id in plan.sessions:
            turns = self.store.turns.session(session_id)
            detail = {
                "faulty": str(plan.faulty.id),
                "session": session_id,
                "suspects": [str(i.id) for i in [*plan.suspected, *plan.already_suspect]],
            }
            user = turns[0].user_id if turns else None
            added += self.board.ensure("repair", f"{plan.faulty.id}/{session_id}", now, user_id=user, detail=detail)
        if added:
            self.ledger.count(local_day(now, self.zone), "repair.planned", added)
        return added

    def run_repairs(self, progress: Progress | None = None) -> TickReport:
        """The due repair re-reflections now (the CLI's `insights faulty --now`), under the budget."""
        report = TickReport()
        self.run_due(["repair"], report, progress=progress)
        return report

    def scan_anomalies(self, now: datetime) -> int:
        since = (self.ledger.cursor("anomaly") or now - FIRST_SCAN) - SCAN_OVERLAP
        stamps = self.store.turns.signal_turns(since, limit=SCAN_LIMIT)
        by_session: dict[str, list[TurnStamp]] = {}
        for stamp in stamps:
            by_session.setdefault(stamp.session_id, []).append(stamp)
        noted = 0
        debounce = timedelta(seconds=self.settings.worker_anomaly_debounce_s)
        for session_id, found in by_session.items():
            strong = [stamp for stamp in found if anomalous(stamp)]
            stopped = [stamp for stamp in found if stamp.signals.stopped_generation]
            if not strong and not (stopped and self._stopped_repeatedly(session_id)):
                continue
            signal_at = max(stamp.created_at for stamp in [*strong, *stopped])
            self.board.note_signal(session_id, found[0].user_id, signal_at, now, debounce)
            noted += 1
        full = len(stamps) >= SCAN_LIMIT
        self.ledger.advance("anomaly", stamps[-1].created_at if full else now)
        return noted

    def _stopped_repeatedly(self, session_id: str) -> bool:
        turns = self.store.turns.session(session_id)
        return sum(turn.signals.stopped_generation for turn in turns) >= STOPPED_REPEATS

    def scan_idle(self, now: datetime) -> int:
        boundary = now - timedelta(minutes=self.settings.worker_idle_minutes)
        start = (self.ledger.cursor("idle") or boundary - FIRST_SCAN) - SCAN_OVERLAP
        if start >= boundary:
            return 0
        ended = self.store.turns.idle_sessions(start, boundary)
        added = sum(
            self.board.ensure("session", s.session_id, now, user_id=s.user_id, signal_at=s.last_turn_at) for s in ended
        )
        self.ledger.advance("idle", boundary)
        if added:
            self.ledger.count(local_day(now, self.zone), "session.found", added)
        return added

    # ---- running due tasks ------------------------------------------------------------------------------------

    def run_due(
        self,
        kinds: Sequence[Kind],
        report: TickReport,
        *,
        deadline: datetime | None = None,
        progress: Progress | None = None,
    ) -> None:
        due = self.board.due(kinds, self.clock.now())
        for done, task in enumerate(due):
            if progress is not None:
                progress("reflections", done, len(due))
            now = self.clock.now()
            if deadline is not None and now >= deadline:
                break
            if task.state == "due" and not self._admitted(task, now, report):
                continue
            claim = self.board.claim(task, now)
            if claim is None:  # another worker was first
                continue
            report.reflections.append(self.execute(claim))
        if progress is not None:
            progress("reflections", len(due), len(due))

    def _admitted(self, task: Task, now: datetime, report: TickReport) -> bool:
        """The cost guard's word on a due task; a task it stops is moved on and counted."""
        day = local_day(now, self.zone)
        decision = self.guard.decide(task.kind, self.ledger.spend(day).tokens)
        if decision == "run":
            return True
        if decision == "defer":
            reason = "deferred to the nightly run: the day's token budget is spent"
            if self.board.move(task, "deferred", now, error=reason):
                report.deferred += 1
                self.ledger.count(day, "session.deferred")
        elif decision == "hold":
            reason = "held until the next day's budget: the day's budget and its reserve for anomalies are spent"
            if self.board.move(task, "due", now, due_at=next_day_start(now, self.zone), error=reason):
                report.held += 1
                self.ledger.count(day, "anomaly.held")
        else:
            reason = "skipped: the day's token budget is spent; deferred sessions wait for the next night"
            if self.board.move(task, "skipped", now, error=reason):
                report.skipped += 1
                self.ledger.count(day, f"{task.kind}.skipped")
        return False

    def execute(self, claim: Claim) -> ReflectionReport:
        """Reflect on a claimed task, under a heartbeat, and record the outcome."""
        if claim.took_over:
            self.ledger.count(local_day(self.clock.now(), self.zone), "claims.taken_over")
        with Heartbeat(self.board, claim, self.clock, beat_interval(self.settings.worker_claim_lease_s)):
            report = self._reflect(claim)
        if report.user_id is None and claim.task.user_id is not None:  # a failure before the turns were read
            report = report.model_copy(update={"user_id": claim.task.user_id})
        self.conclude(claim.kind, claim.subject, claim.attempt, report, claim=claim)
        return report

    def _reflect(self, claim: Claim) -> ReflectionReport:
        variant: Variant = "nightly" if claim.kind == "nightly" else "anomaly" if claim.kind == "anomaly" else "session"
        if claim.kind == "nightly":
            sessions = list(claim.task.detail.get("sessions", []))
        elif claim.kind == "repair":
            sessions = [str(claim.task.detail["session"])]
        else:
            sessions = [claim.subject]
        try:
            if claim.kind == "repair":
                try:
                    faulty = self.store.get(str(claim.task.detail["faulty"]))
                except NotFound as gone:
                    return self.engine.failure(sessions, variant, f"the insight to repair is gone: {gone}")
                return self.engine.reflect_session(sessions[0], excluded=[faulty])
            if claim.kind == "anomaly":
                return self.engine.reflect_anomaly(claim.subject)
            if claim.kind == "session":
                return self.engine.reflect_session(claim.subject)
            return self.engine.reflect_user(sessions)
        except Exception as error:  # the engine reports what it expects; anything else must not stop the worker
            log.exception("reflection on %s %s raised", claim.kind, claim.subject)
            return self.engine.failure(sessions, variant, f"unexpected error: {error!r}")

    def conclude(
        self, kind: Kind, subject: str, attempt: int, report: ReflectionReport, *, claim: Claim | None = None
    ) -> None:
        """Log and record a reflection, and move its task on: done (an anomaly task due again after the debounce if
        newer signals came meanwhile), or due again after a backoff, or failed for good."""
        now = self.clock.now()
        day = local_day(now, self.zone)
        if kind == "repair" and claim is not None:
            detail = claim.task.detail
            suspects = [uuid.UUID(str(i)) for i in detail.get("suspects", [])]
            try:
                conclude_repair(
                    self.store, uuid.UUID(str(detail["faulty"])), str(detail["session"]), suspects, report, now
                )
            except HindsightError as error:  # the faulty insight deleted meanwhile, or Weaviate away: logged, retried
                log.warning("concluding the repair of %s failed: %s", subject, error)
                report = report.model_copy(update={"outcome": "failed", "reason": f"concluding the repair: {error}"})
        self.ledger.record(report, kind=kind, subject=subject, attempt=attempt, worker=self.owner, day=day, at=now)
        line = reflection_line(
            report,
            project=self.project,
            trigger=kind,
            subject=subject,
            attempt=attempt,
            worker=self.owner,
            day=day,
            spent=self.ledger.spend(day).tokens,
            budget=self.settings.worker_token_budget,
        )
        log_reflection(line, report.outcome == "failed")
        if claim is None:
            return
        if report.outcome == "ok":
            rearm = now + timedelta(seconds=self.settings.worker_anomaly_debounce_s) if kind == "anomaly" else None
            if self.board.succeed(claim, now, rearm_at=rearm) and kind == "nightly":
                self.board.cover_deferred(claim.task.detail, subject, now)
        else:
            retry_at = now + backoff(self.settings.worker_poll_interval_s, attempt)
            state = self.board.fail(claim, now, report.reason or "failed", retry_at=retry_at)
            if state == "failed":
                self.ledger.count(day, f"{kind}.given_up")

    # ---- the nightly run and the expiry sweep --------------------------------------------------------------------

    def nightly(self, progress: Progress | None = None) -> TickReport:
        """Plan the night (once per date, whichever worker claims it first) and run its users' reflections."""
        report = TickReport()
        self.night.run(report, progress)
        return report

    def expire(self, progress: Progress | None = None) -> ExpiryReport:
        now = self.clock.now()
        result = sweep(self.store, self.settings, now, progress)
        day = local_day(now, self.zone)
        self.ledger.count(day, "expiry.expired", result.expired)
        self.ledger.count(day, "expiry.retired", len(result.retired))
        # The server's idle projects too: any worker may keep the cap for all of them (store/tenancy.py).
        try:
            result.deactivated = len(self.store.tenancy.keep_active(self.settings.max_active_tenants))
        except HindsightError as error:  # the next sweep, or the next store opened, keeps the cap
            log.warning("could not deactivate idle projects: %s", error)
        return result

    def note_use(self) -> None:
        """A scheduled job is about to read or write the project: note its last use (at most once a minute)."""
        try:
            self.store.tenancy.touch()
        except HindsightError as error:  # bookkeeping only: the job itself meets the failure and reports it
            log.warning("could not note the use of project %r: %s", self.project, error)

    def status(self, day: date | None = None) -> WorkerStatus:
        day = day or local_day(self.clock.now(), self.zone)
        return WorkerStatus(
            day=day,
            spend=self.ledger.spend(day),
            budget=self.settings.worker_token_budget,
            counters=self.ledger.counters(day),
            tasks=self.board.counts(),
            batches_in_flight=[batch.job.batch_id for batch in self.ledger.open_batches()],
        )

    # ---- one reflection on request ----------------------------------------------------------------------------

    def reflect_now(self, session_id: str, variant: Variant = "session") -> ReflectionReport:
        """Reflect on one session now (the CLI's `reflect`), whether or not it was reflected on before, under a claim
        so that no worker reflects on it at the same time. Raises Busy when one is."""
        kind: Kind = "anomaly" if variant == "anomaly" else "session"
        now = self.clock.now()
        self.board.ensure(kind, session_id, now)
        task = self.board.get(kind, session_id)
        claim = None if task is None else self.board.claim(task, now, force=True)
        if claim is None:
            holder = self.board.get(kind, session_id)
            owner = holder.owner if holder is not None else "another worker"
            until = f" (its claim runs until {holder.lease_until:%Y-%m-%d %H:%M:%S} UTC)" if holder else ""
            raise Busy(f"session {session_id} is being reflected on by {owner}{until}; try again later")
        return self.execute(claim)
