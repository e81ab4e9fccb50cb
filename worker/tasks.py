"""Units of work and the claims on them (worker_tasks).

A task is one thing to do once: a session's end, a session's anomalies (again after newer signals), one user's
night, the nightly plan of a date, the collection of a batch. Its row holds its state and the claim:

    claim    read the row; if it is due (and its time has come), or running under a lease that has lapsed, UPDATE it
             to running for this worker WHERE its version is still the one read (compare-and-swap). One UPDATE wins;
             the others match no row. On PostgreSQL the loser's UPDATE waits for the winner's row lock and then
             re-checks the version; on SQLite transactions on the file take turns (db.py).
    renew    while the work runs, a heartbeat moves lease_until on (lease.py); only the owner, at its version.
    finish   the owner moves the row on (done, due again, failed, deferred), again only at its version: a worker whose
             lease lapsed and was taken over cannot overwrite its successor's state.

A lapsed lease means its worker stopped mid-work (killed, or cut off longer than the lease): the next claim takes the
task over, counts the lost try as an attempt and keeps why. After `max_attempts` tries without success a task fails
for good, with the last reason.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Engine, Row, and_, case, func, or_, select, update

from worker.db import insert_ignoring_conflict, tasks

log = logging.getLogger(__name__)

Kind = Literal["anomaly", "session", "nightly", "plan", "batch", "repair"]
State = Literal["due", "running", "done", "failed", "deferred", "batched", "skipped"]
PRIORITY: dict[str, int] = {"anomaly": 0, "repair": 1, "session": 2, "nightly": 3, "plan": 4, "batch": 5}
MAX_BACKOFF = timedelta(hours=1)


def backoff(poll_interval_s: float, attempt: int) -> timedelta:
    """Before a failed task's next try: 4, 16, 64 poll intervals ..., at most an hour."""
    return min(timedelta(seconds=poll_interval_s * 4**attempt), MAX_BACKOFF)


@dataclass(frozen=True)
class Task:
    """A row of worker_tasks as read."""

    kind: Kind
    subject: str
    user_id: str | None
    state: State
    due_at: datetime
    owner: str | None
    lease_until: datetime | None
    version: int
    attempts: int
    last_error: str | None
    signal_at: datetime | None
    covered_at: datetime | None
    detail: dict[str, Any]
    finished_at: datetime | None

    @classmethod
    def of(cls, row: Row[Any]) -> Task:
        return cls(
            kind=row.kind,
            subject=row.subject,
            user_id=row.user_id,
            state=row.state,
            due_at=row.due_at,
            owner=row.owner,
            lease_until=row.lease_until,
            version=row.version,
            attempts=row.attempts,
            last_error=row.last_error,
            signal_at=row.signal_at,
            covered_at=row.covered_at,
            detail=json.loads(row.detail) if row.detail else {},
            finished_at=row.finished_at,
        )

    def claimable(self, now: datetime) -> bool:
        if self.state == "due":
            return self.due_at <= now
        return self.state == "running" and self.lease_until is not None and self.lease_until <= now


@dataclass(frozen=True)
class Claim:
    """A task this worker holds: only its owner, at this version, may renew or finish it."""

    task: Task  # as it was before the claim
    owner: str
    version: int
    attempt: int  # this try, counted from the last success
    took_over: bool  # the previous owner's lease had lapsed

    @property
    def kind(self) -> Kind:
        return self.task.kind

    @property
    def subject(self) -> str:
        return self.task.subject


class TaskBoard:
    """The tasks of one project, claimed by one worker (`owner`)."""

    def __init__(self, engine: Engine, project: str, owner: str, *, lease: timedelta, max_attempts: int) -> None:
        self._engine = engine
        self._project = project
        self.owner = owner
        self.lease = lease
        self._max_attempts = max_attempts

    def _key(self, kind: Kind, subject: str) -> Any:
        return and_(tasks.c.project == self._project, tasks.c.kind == kind, tasks.c.subject == subject)

    # ---- reading --------------------------------------------------------------------------------------------

    def get(self, kind: Kind, subject: str) -> Task | None:
        with self._engine.connect() as connection:
            row = connection.execute(select(tasks).where(self._key(kind, subject))).one_or_none()
        return None if row is None else Task.of(row)

    def tasks(self, kind: Kind | None = None, state: State | None = None) -> list[Task]:
        where = [tasks.c.project == self._project]
        if kind is not None:
            where.append(tasks.c.kind == kind)
        if state is not None:
            where.append(tasks.c.state == state)
        with self._engine.connect() as connection:
            rows = connection.execute(select(tasks).where(*where).order_by(tasks.c.created_at, tasks.c.subject))
            return [Task.of(row) for row in rows]

    def counts(self) -> dict[tuple[str, str], int]:
        """How many tasks of each kind are in each state."""
        with self._engine.connect() as connection:
            rows = connection.execute(
                select(tasks.c.kind, tasks.c.state, func.count())
                .where(tasks.c.project == self._project)
                .group_by(tasks.c.kind, tasks.c.state)
            )
            return {(row[0], row[1]): int(row[2]) for row in rows}

    def due(self, kinds: Sequence[Kind], now: datetime, limit: int = 500) -> list[Task]:
        """Tasks that may be claimed now, by priority (anomalies first), then oldest due first."""
        ready = or_(
            and_(tasks.c.state == "due", tasks.c.due_at <= now),
            and_(tasks.c.state == "running", tasks.c.lease_until <= now),
        )
        with self._engine.connect() as connection:
            rows = connection.execute(
                select(tasks)
                .where(tasks.c.project == self._project, tasks.c.kind.in_(kinds), ready)
                .order_by(tasks.c.due_at)
                .limit(limit)
            )
            found = [Task.of(row) for row in rows]
        return sorted(found, key=lambda task: (PRIORITY[task.kind], task.due_at))

    # ---- writing --------------------------------------------------------------------------------------------

    def ensure(
        self,
        kind: Kind,
        subject: str,
        now: datetime,
        *,
        user_id: str | None = None,
        state: State = "due",
        due_at: datetime | None = None,
        signal_at: datetime | None = None,
        detail: dict[str, Any] | None = None,
    ) -> bool:
        """Add the task unless it exists (in whatever state): True when this call added it."""
        with self._engine.begin() as connection:
            return insert_ignoring_conflict(
                connection,
                tasks,
                {
                    "project": self._project,
                    "kind": kind,
                    "subject": subject,
                    "user_id": user_id,
                    "state": state,
                    "due_at": due_at or now,
                    "version": 0,
                    "attempts": 0,
                    "signal_at": signal_at,
                    "detail": json.dumps(detail, ensure_ascii=False) if detail is not None else None,
                    "created_at": now,
                    "updated_at": now,
                },
            )

    def note_signal(self, subject: str, user_id: str, signal_at: datetime, now: datetime, debounce: timedelta) -> None:
        """A session has anomaly signals up to `signal_at`. A new session's task is due now; a finished one whose
        reflection did not read this signal is due again, but not before `debounce` after that reflection."""
        self.ensure("anomaly", subject, now, user_id=user_id, signal_at=signal_at)
        key = self._key("anomaly", subject)
        with self._engine.begin() as connection:
            connection.execute(
                update(tasks)
                .where(key, or_(tasks.c.signal_at.is_(None), tasks.c.signal_at < signal_at))
                .values(signal_at=signal_at, updated_at=now)
            )
        task = self.get("anomaly", subject)
        if task is None or task.state != "done" or task.signal_at is None:
            return
        if task.covered_at is not None and task.signal_at <= task.covered_at:
            return
        due_at = max(now, (task.finished_at or now) + debounce)
        self.move(task, "due", now, due_at=due_at)

    def claim(self, task: Task, now: datetime, *, force: bool = False) -> Claim | None:
        """Claim a task read from the board. None when it is not claimable any more (another worker claimed it first,
        or it moved on). `force` also claims a finished task (an operator's `reflect`), never a live claim."""
        fresh = self.get(task.kind, task.subject)
        if fresh is None:
            return None
        live = fresh.state == "running" and fresh.lease_until is not None and fresh.lease_until > now
        if not (fresh.claimable(now) or (force and not live)):
            return None
        took_over = fresh.state == "running"
        note = fresh.last_error
        if took_over:
            note = (
                f"the claim of {fresh.owner} lapsed at {fresh.lease_until:%Y-%m-%d %H:%M:%S} UTC: "
                "its worker stopped before it finished"
            )
        attempts = fresh.attempts + 1 if fresh.state in ("due", "running") else 1
        if took_over and fresh.attempts >= self._max_attempts:
            # A task that stops its worker every time must not stop every worker after it.
            self.move(fresh, "failed", now, error=f"given up after {fresh.attempts} attempts; last: {note}")
            return None
        with self._engine.begin() as connection:
            result = connection.execute(
                update(tasks)
                .where(self._key(fresh.kind, fresh.subject), tasks.c.version == fresh.version)
                .values(
                    state="running",
                    owner=self.owner,
                    lease_until=now + self.lease,
                    version=fresh.version + 1,
                    attempts=attempts,
                    last_error=note,
                    updated_at=now,
                )
            )
        if result.rowcount != 1:
            return None
        if took_over:
            log.warning("took over %s %s: %s", fresh.kind, fresh.subject, note)
        return Claim(task=fresh, owner=self.owner, version=fresh.version + 1, attempt=attempts, took_over=took_over)

    def renew(self, claim: Claim, now: datetime) -> bool:
        """Move the lease on; False when the claim was lost (it lapsed and another worker took the task)."""
        with self._engine.begin() as connection:
            result = connection.execute(
                update(tasks).where(self._held(claim)).values(lease_until=now + self.lease, updated_at=now)
            )
        return result.rowcount == 1

    def _held(self, claim: Claim) -> Any:
        return and_(
            self._key(claim.kind, claim.subject),
            tasks.c.owner == claim.owner,
            tasks.c.state == "running",
            tasks.c.version == claim.version,
        )

    def succeed(self, claim: Claim, now: datetime, *, rearm_at: datetime | None = None) -> bool:
        """The work is done. An anomaly task records the newest signal it read (as seen at claim time); if a newer
        one came meanwhile, it is due again at `rearm_at` (the debounce). False when the claim was lost."""
        covered = claim.task.signal_at
        values: dict[str, Any] = {
            "state": "done",
            "owner": None,
            "lease_until": None,
            "version": claim.version + 1,
            "attempts": 0,
            "last_error": None,
            "covered_at": covered,
            "updated_at": now,
            "finished_at": now,
        }
        if rearm_at is not None and covered is not None:
            newer = tasks.c.signal_at > covered  # decided in the UPDATE itself: a scan may note a signal meanwhile
            values["state"] = case((newer, "due"), else_="done")
            values["due_at"] = case((newer, rearm_at), else_=tasks.c.due_at)
        return self._finish(claim, values)

    def fail(self, claim: Claim, now: datetime, reason: str, *, retry_at: datetime) -> State | None:
        """The work failed: due again at `retry_at`, or failed for good after max_attempts. Returns the new state
        (None when the claim was lost)."""
        final = claim.attempt >= self._max_attempts
        state: State = "failed" if final else "due"
        values: dict[str, Any] = {
            "state": state,
            "owner": None,
            "lease_until": None,
            "version": claim.version + 1,
            "last_error": f"given up after {claim.attempt} attempts; last: {reason}" if final else reason,
            "due_at": retry_at,
            "updated_at": now,
            "finished_at": now if final else None,
        }
        return state if self._finish(claim, values) else None

    def _finish(self, claim: Claim, values: dict[str, Any]) -> bool:
        with self._engine.begin() as connection:
            result = connection.execute(update(tasks).where(self._held(claim)).values(**values))
        if result.rowcount != 1:
            log.warning(
                "lost the claim on %s %s before finishing: another worker took it over", claim.kind, claim.subject
            )
            return False
        return True

    def move(
        self,
        task: Task,
        state: State,
        now: datetime,
        *,
        due_at: datetime | None = None,
        error: str | None = None,
        attempts: int | None = None,
        detail: dict[str, Any] | None = None,
    ) -> bool:
        """Move an unclaimed task on, if nobody changed it since it was read (its version): a session deferred by the
        budget, a deferred one a nightly reflection covered, a user's night sent in a batch or come back from it."""
        values: dict[str, Any] = {"state": state, "version": task.version + 1, "updated_at": now}
        if task.state == "running":  # a lapsed claim given up: it has no owner any more
            values |= {"owner": None, "lease_until": None}
        if due_at is not None:
            values["due_at"] = due_at
        if error is not None:
            values["last_error"] = error
        if attempts is not None:
            values["attempts"] = attempts
        if detail is not None:
            values["detail"] = json.dumps(detail, ensure_ascii=False)
        if state in ("done", "failed", "skipped", "deferred"):
            values["finished_at"] = now
        with self._engine.begin() as connection:
            result = connection.execute(
                update(tasks)
                .where(self._key(task.kind, task.subject), tasks.c.version == task.version)
                .values(**values)
            )
        return result.rowcount == 1

    def cover_deferred(self, detail: dict[str, Any], subject: str, now: datetime) -> None:
        """Sessions whose end was deferred by the budget and that a nightly reflection (`subject`) read are done."""
        waiting = detail.get("deferred")
        for session_id in waiting if isinstance(waiting, list) else []:
            task = self.get("session", str(session_id))
            if task is not None and task.state == "deferred":
                self.move(task, "done", now, error=f"covered by the nightly reflection {subject}")
