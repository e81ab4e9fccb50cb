"""The worker's state database: one SQL database through SQLAlchemy, a SQLite file by default or any URL (PostgreSQL
when several replicas share the work). It holds APScheduler's jobs (its own table, see schedule.py) and these:

    worker_tasks        one row per unit of work (a session's end, a session's anomalies, a user's night, a nightly
                        plan, a batch to collect): its state and the claim on it (owner, lease, version)
    worker_reflections  the reflection log: one row per reflection, with its outcome, counts and tokens
    worker_counters     per project and day: everything else that is counted (deferrals, holds, takeovers, ...)
    worker_cursors      how far each scan of the turn log has read
    worker_batches      submitted Message Batches, kept until their results are collected

Times are stored as UTC without a zone (readable in both databases; compared as stored) and read back as UTC.
Every row carries its project, so workers of several projects may share one database.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.types import TypeDecorator

from hindsight_insights.config import Settings

STATE_FILE = "hindsight-worker.sqlite3"
_DDL_LOCK = 0x48494E5349474854  # "HINSIGHT": the advisory lock key under which replicas create tables


class UtcDateTime(TypeDecorator[datetime]):
    """An aware datetime in, stored as naive UTC, an aware UTC datetime out."""

    impl = DateTime(timezone=False)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("the worker's state stores aware datetimes only")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


metadata = MetaData()

tasks = Table(
    "worker_tasks",
    metadata,
    Column("project", String(100), primary_key=True),
    Column("kind", String(16), primary_key=True),  # anomaly | session | nightly | plan | batch
    Column("subject", String(300), primary_key=True),  # session id, user@date, date, batch id
    Column("user_id", String(128)),
    Column("state", String(16), nullable=False),  # due | running | done | failed | deferred | batched | skipped
    Column("due_at", UtcDateTime(), nullable=False),
    Column("owner", String(200)),
    Column("lease_until", UtcDateTime()),
    Column("version", Integer, nullable=False, default=0),  # bumped by every claim and state change: the CAS
    Column("attempts", Integer, nullable=False, default=0),  # tries since the last success
    Column("last_error", Text),
    Column("signal_at", UtcDateTime()),  # anomaly: the newest signal turn seen; session: its last turn when found
    Column("covered_at", UtcDateTime()),  # anomaly: the newest signal turn a finished reflection read
    Column("detail", Text),  # JSON: a nightly task's sessions; a batched task's batch id
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
    Column("finished_at", UtcDateTime()),
    Index("worker_tasks_due", "project", "state", "due_at"),
)

reflections = Table(
    "worker_reflections",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(100), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("subject", String(300), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("worker", String(200), nullable=False),
    Column("variant", String(16), nullable=False),
    Column("user_id", String(128)),
    Column("session_ids", Text, nullable=False),  # JSON list
    Column("outcome", String(8), nullable=False),
    Column("reason", Text),
    Column("created", Integer, nullable=False),
    Column("merged", Integer, nullable=False),
    Column("superseded", Integer, nullable=False),
    Column("updated", Integer, nullable=False),
    Column("unchanged", Integer, nullable=False),
    Column("pending_review", Integer, nullable=False),
    Column("dropped", Integer, nullable=False),
    Column("saved_ids", Text, nullable=False),  # JSON list
    Column("llm_calls", Integer, nullable=False),
    Column("tokens_in", BigInteger, nullable=False),
    Column("tokens_out", BigInteger, nullable=False),
    Column("cached_tokens", BigInteger, nullable=False),
    Column("cache_write_tokens", BigInteger, nullable=False),
    Column("model", String(200)),
    Column("via_batch", Boolean, nullable=False),
    Column("duration_s", Float, nullable=False),
    Column("day", String(10), nullable=False),  # the budget's day, in the settings' timezone
    Column("finished_at", UtcDateTime(), nullable=False),
    Index("worker_reflections_day", "project", "day"),
    Index("worker_reflections_subject", "project", "kind", "subject"),
)

counters = Table(
    "worker_counters",
    metadata,
    Column("project", String(100), primary_key=True),
    Column("day", String(10), primary_key=True),
    Column("name", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)

cursors = Table(
    "worker_cursors",
    metadata,
    Column("project", String(100), primary_key=True),
    Column("name", String(32), primary_key=True),
    Column("value", UtcDateTime(), nullable=False),
)

batches = Table(
    "worker_batches",
    metadata,
    Column("project", String(100), primary_key=True),
    Column("batch_id", String(200), primary_key=True),
    Column("job", Text, nullable=False),  # the BatchJob as JSON: enough for any process to collect it
    Column("state", String(16), nullable=False),  # submitted | collected | given_up
    Column("processing_status", String(32)),  # the API's, as last seen
    Column("submitted_at", UtcDateTime(), nullable=False),
    Column("checked_at", UtcDateTime()),
    Column("collected_at", UtcDateTime()),
)


def state_url(settings: Settings) -> str:
    """The configured URL, else a SQLite file in the data directory."""
    if settings.worker_state_url:
        return settings.worker_state_url
    return f"sqlite:///{Path(settings.data_dir).expanduser() / STATE_FILE}"


def open_engine(url: str) -> Engine:
    """An engine for the state database, with its tables created if missing.

    SQLite: WAL (readers never wait for the writer), a 30 s busy timeout (several processes share the file), and
    every transaction begins IMMEDIATE, so a transaction that reads and then writes never fails with "database is
    locked" halfway: transactions on the file simply take turns. PostgreSQL needs nothing special: every claim is
    one conditional UPDATE, which PostgreSQL re-checks against the row it locks."""
    if url.startswith("sqlite"):
        database = url.split("///", 1)[1] if "///" in url else ""
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30})
        _sqlite_immediate(engine)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    create_tables(engine, metadata.sorted_tables)
    return engine


def create_tables(engine: Engine, tables: Sequence[Table]) -> None:
    """Create the tables that are missing. Replicas that start together would race between "is it there?" and
    "create it" (PostgreSQL: a duplicate type or relation error), so creating is serialised: by a transaction-scoped
    advisory lock on PostgreSQL, by the IMMEDIATE transaction on SQLite."""
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _DDL_LOCK})
        for table in tables:
            table.create(connection, checkfirst=True)


def _sqlite_immediate(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we send BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=30000")
        _wal(cursor)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def _wal(cursor: Any) -> None:
    """Switch the file to WAL (it stays so). Switching needs the file to itself and SQLite does not wait for that,
    so processes opening a new file together retry until one of them has switched it."""
    deadline = time.monotonic() + 30
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] == "wal" or time.monotonic() > deadline:
                return
            time.sleep(0.05)


def insert_ignoring_conflict(connection: Connection, table: Table, values: dict[str, Any]) -> bool:
    """INSERT unless a row with the same key exists; True when this call inserted it (told by RETURNING: psycopg
    reports no row count for INSERT ... ON CONFLICT)."""
    name = connection.dialect.name
    if name == "postgresql":
        statement: Any = postgresql.insert(table).values(**values).on_conflict_do_nothing()
    elif name == "sqlite":
        statement = sqlite.insert(table).values(**values).on_conflict_do_nothing()
    else:
        raise ValueError(f"the worker's state supports SQLite and PostgreSQL, not {name}")
    first_key = next(iter(table.primary_key.columns))
    return connection.execute(statement.returning(first_key)).first() is not None


def add_to(connection: Connection, table: Table, key: dict[str, Any], column: str, amount: int) -> None:
    """Add `amount` to a counter row, creating it at `amount`: one atomic upsert."""
    name = connection.dialect.name
    values = {**key, column: amount}
    if name == "postgresql":
        pg = postgresql.insert(table).values(**values)
        statement: Any = pg.on_conflict_do_update(
            index_elements=list(key), set_={column: table.c[column] + pg.excluded[column]}
        )
    elif name == "sqlite":
        lite = sqlite.insert(table).values(**values)
        statement = lite.on_conflict_do_update(
            index_elements=list(key), set_={column: table.c[column] + lite.excluded[column]}
        )
    else:
        raise ValueError(f"the worker's state supports SQLite and PostgreSQL, not {name}")
    connection.execute(statement)
