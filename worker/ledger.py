"""What the worker keeps besides its tasks: the reflection log, the day's counters, the scans' cursors and the batches
in flight (tables in db.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import Engine, and_, func, insert, select, update

from hindsight_insights.reflection import BatchJob, ReflectionReport
from worker.db import add_to, batches, counters, cursors, insert_ignoring_conflict, reflections


@dataclass(frozen=True)
class Spend:
    """A day's reflections and their tokens."""

    reflections: int
    tokens_in: int
    tokens_out: int
    cached_tokens: int

    @property
    def tokens(self) -> int:
        """What the budget counts: every prompt token (cached ones included) and every output token."""
        return self.tokens_in + self.tokens_out


@dataclass(frozen=True)
class OpenBatch:
    job: BatchJob
    processing_status: str | None
    checked_at: datetime | None


class Ledger:
    def __init__(self, engine: Engine, project: str) -> None:
        self._engine = engine
        self._project = project

    # ---- the reflection log ---------------------------------------------------------------------------------

    def record(
        self, report: ReflectionReport, *, kind: str, subject: str, attempt: int, worker: str, day: date, at: datetime
    ) -> None:
        counts = report.counts
        row: dict[str, Any] = {
            "project": self._project,
            "kind": kind,
            "subject": subject,
            "attempt": attempt,
            "worker": worker,
            "variant": report.variant,
            "user_id": report.user_id,
            "session_ids": json.dumps(report.session_ids, ensure_ascii=False),
            "outcome": report.outcome,
            "reason": report.reason,
            **{name: counts[name] for name in ("created", "merged", "superseded", "updated", "unchanged")},
            "pending_review": counts["pending_review"],
            "dropped": counts["dropped"],
            "saved_ids": json.dumps([str(i) for i in report.saved_ids]),
            "llm_calls": report.llm_calls,
            "tokens_in": report.tokens_in,
            "tokens_out": report.tokens_out,
            "cached_tokens": report.cached_tokens,
            "cache_write_tokens": report.cache_write_tokens,
            "model": report.model,
            "via_batch": report.via_batch,
            "duration_s": report.duration_s,
            "day": day.isoformat(),
            "finished_at": at,
        }
        with self._engine.begin() as connection:
            connection.execute(insert(reflections).values(**row))
            add_to(connection, counters, self._counter(day, f"{kind}.{report.outcome}"), "value", 1)

    def reflections(self, kind: str | None = None, subject: str | None = None) -> list[dict[str, Any]]:
        """The log's rows, oldest first (for the status command and the tests)."""
        where = [reflections.c.project == self._project]
        if kind is not None:
            where.append(reflections.c.kind == kind)
        if subject is not None:
            where.append(reflections.c.subject == subject)
        with self._engine.connect() as connection:
            rows = connection.execute(select(reflections).where(*where).order_by(reflections.c.id))
            return [dict(row._mapping) for row in rows]

    def spend(self, day: date) -> Spend:
        with self._engine.connect() as connection:
            row = connection.execute(
                select(
                    func.count(),
                    func.coalesce(func.sum(reflections.c.tokens_in), 0),
                    func.coalesce(func.sum(reflections.c.tokens_out), 0),
                    func.coalesce(func.sum(reflections.c.cached_tokens), 0),
                ).where(reflections.c.project == self._project, reflections.c.day == day.isoformat())
            ).one()
        return Spend(reflections=int(row[0]), tokens_in=int(row[1]), tokens_out=int(row[2]), cached_tokens=int(row[3]))

    def outcomes(self) -> dict[tuple[str, str], int]:
        """Every reflection ever logged, counted by trigger (kind) and outcome (the metrics' counter)."""
        with self._engine.connect() as connection:
            rows = connection.execute(
                select(reflections.c.kind, reflections.c.outcome, func.count())
                .where(reflections.c.project == self._project)
                .group_by(reflections.c.kind, reflections.c.outcome)
            )
            return {(str(row[0]), str(row[1])): int(row[2]) for row in rows}

    def spend_ever(self) -> Spend:
        """Every reflection's tokens, all days together (the metrics' counters)."""
        with self._engine.connect() as connection:
            row = connection.execute(
                select(
                    func.count(),
                    func.coalesce(func.sum(reflections.c.tokens_in), 0),
                    func.coalesce(func.sum(reflections.c.tokens_out), 0),
                    func.coalesce(func.sum(reflections.c.cached_tokens), 0),
                ).where(reflections.c.project == self._project)
            ).one()
        return Spend(reflections=int(row[0]), tokens_in=int(row[1]), tokens_out=int(row[2]), cached_tokens=int(row[3]))

    # ---- counters -------------------------------------------------------------------------------------------

    def _counter(self, day: date, name: str) -> dict[str, Any]:
        return {"project": self._project, "day": day.isoformat(), "name": name}

    def count(self, day: date, name: str, amount: int = 1) -> None:
        if amount:
            with self._engine.begin() as connection:
                add_to(connection, counters, self._counter(day, name), "value", amount)

    def counters(self, day: date) -> dict[str, int]:
        with self._engine.connect() as connection:
            rows = connection.execute(
                select(counters.c.name, counters.c.value).where(
                    counters.c.project == self._project, counters.c.day == day.isoformat()
                )
            )
            return {row.name: int(row.value) for row in rows}

    # ---- cursors --------------------------------------------------------------------------------------------

    def cursor(self, name: str) -> datetime | None:
        with self._engine.connect() as connection:
            value: datetime | None = connection.execute(
                select(cursors.c.value).where(cursors.c.project == self._project, cursors.c.name == name)
            ).scalar()
        return value

    def advance(self, name: str, value: datetime) -> None:
        """Move a cursor forward, never back (replicas scanning at once may finish out of order)."""
        key = and_(cursors.c.project == self._project, cursors.c.name == name)
        with self._engine.begin() as connection:
            if not insert_ignoring_conflict(
                connection, cursors, {"project": self._project, "name": name, "value": value}
            ):
                connection.execute(update(cursors).where(key, cursors.c.value < value).values(value=value))

    # ---- batches in flight ----------------------------------------------------------------------------------

    def add_batch(self, job: BatchJob, now: datetime) -> None:
        with self._engine.begin() as connection:
            insert_ignoring_conflict(
                connection,
                batches,
                {
                    "project": self._project,
                    "batch_id": job.batch_id,
                    "job": job.model_dump_json(),
                    "state": "submitted",
                    "submitted_at": now,
                },
            )

    def open_batches(self) -> list[OpenBatch]:
        with self._engine.connect() as connection:
            rows = connection.execute(
                select(batches)
                .where(batches.c.project == self._project, batches.c.state == "submitted")
                .order_by(batches.c.submitted_at)
            )
            return [
                OpenBatch(BatchJob.model_validate_json(row.job), row.processing_status, row.checked_at) for row in rows
            ]

    def batch_checked(self, batch_id: str, status: str, now: datetime) -> None:
        self._set_batch(batch_id, processing_status=status, checked_at=now)

    def batch_collected(self, batch_id: str, now: datetime) -> None:
        self._set_batch(batch_id, state="collected", collected_at=now)

    def batch_given_up(self, batch_id: str, now: datetime) -> None:
        self._set_batch(batch_id, state="given_up", collected_at=now)

    def _set_batch(self, batch_id: str, **values: Any) -> None:
        with self._engine.begin() as connection:
            connection.execute(
                update(batches)
                .where(batches.c.project == self._project, batches.c.batch_id == batch_id)
                .values(**values)
            )
