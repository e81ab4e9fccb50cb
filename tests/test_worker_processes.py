"""Real worker processes (`python -m hindsight_cli worker`) against the real Weaviate, a state database and an
OpenAI-compatible endpoint on loopback that the test controls:

- a worker killed with SIGKILL in the middle of a reflection, then a new worker: nothing lost, nothing duplicated;
- two workers on one state database (a SQLite file, and PostgreSQL): every session reflected on exactly once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from hindsight_insights.config import Settings
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate
from tests.worker_support import NAMES, ChatStub, WorkerProcess, done, environment, lessons, record_sessions, wait_until
from worker.db import open_engine
from worker.ledger import Ledger
from worker.tasks import TaskBoard


@pytest.fixture
def stub() -> Iterator[ChatStub]:
    chat = ChatStub(lessons(len(NAMES)))
    yield chat
    chat.close()


@pytest.fixture
def started() -> Iterator[list[WorkerProcess]]:
    """Every worker a test starts; any still running at the end is killed (only ours, by pid)."""
    workers: list[WorkerProcess] = []
    yield workers
    for worker in workers:
        worker.ensure_stopped()


def test_a_worker_killed_mid_reflection_loses_nothing_and_duplicates_nothing(
    store: InsightStore,
    weaviate_server: LocalWeaviate,
    project_settings: Settings,
    stub: ChatStub,
    started: list[WorkerProcess],
    tmp_path: Path,
) -> None:
    sessions = record_sessions(store, 3)
    every = [(kind, s) for s in sessions for kind in ("anomaly", "session")]
    state = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    env = environment(weaviate_server, project_settings, state, stub)
    stub.hold_from = 3  # two reflections finish; from the third on, each waits mid-reflection with its claim taken
    first = WorkerProcess(env, tmp_path / "first.log")
    started.append(first)
    engine = open_engine(state)
    try:
        ledger = Ledger(engine, project_settings.project)
        board = TaskBoard(engine, project_settings.project, "observer", lease=timedelta(seconds=3), max_attempts=3)

        def stuck() -> bool:  # both polls wait on a model answer, or one does and the other has nothing left
            arrived = len(stub.prompts)
            return arrived >= 3 and len(ledger.reflections()) == 2 and len(board.tasks(state="running")) == arrived - 2

        wait_until(stuck, 90, "the first worker to be mid-reflection", first)

        first.kill()  # SIGKILL, mid-reflection: no handler, no cleanup, its claims left behind

        running = board.tasks(state="running")  # what it held when it died
        cut_short = list(stub.prompts[2:])  # the model requests it never got an answer to
        assert running and len(cut_short) >= 1

        stub.release()
        second = WorkerProcess(env, tmp_path / "second.log")
        started.append(second)
        wait_until(lambda: done(engine, project_settings.project, sessions), 90, "every reflection", second)
        assert second.stop() == 0, second.output()

        rows = ledger.reflections()
        counted = ledger.counters(datetime.now(UTC).date())  # the day in UTC, the settings' default timezone
    finally:
        engine.dispose()
    assert sorted((r["kind"], r["subject"]) for r in rows) == sorted(every)  # each once: none lost, none twice
    assert all(r["outcome"] == "ok" for r in rows)
    for task in running:
        (redone,) = [r for r in rows if (r["kind"], r["subject"]) == (task.kind, task.subject)]
        assert redone["attempt"] == 2 and redone["worker"] != task.owner
    assert counted["claims.taken_over"] == len(running) and counted["anomaly.ok"] == counted["session.ok"] == 3
    assert len(stub.prompts) == len(every) + len(cut_short)  # every reflection once, and those cut short again
    for asked in cut_short:
        assert Counter(stub.prompts)[asked] == 2
    for number in range(3):
        (insight,) = store.list_insights(user_id=f"u{number}")  # one insight per user: none duplicated
        assert insight.topic == "称呼"
    assert "took over" in second.output()


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_two_workers_on_one_state_database_reflect_each_session_exactly_once(
    store: InsightStore,
    weaviate_server: LocalWeaviate,
    project_settings: Settings,
    stub: ChatStub,
    started: list[WorkerProcess],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    database: str,
) -> None:
    sessions = record_sessions(store, 6)
    state = (
        f"sqlite:///{tmp_path / 'state.sqlite3'}" if database == "sqlite" else request.getfixturevalue("postgres_url")
    )
    # Answer nothing until both workers have a reflection in flight at once: one worker alone holds two at most (its
    # anomaly and session polls run side by side), so three in flight needs the second one too. (At two, one worker
    # could meet the wait alone and, on a loaded machine, take every session before the other started.)
    stub.concurrent_wanted = 3
    env = environment(weaviate_server, project_settings, state, stub)
    workers = [WorkerProcess(env, tmp_path / f"worker-{n}.log") for n in range(2)]
    started.extend(workers)
    engine = open_engine(state)
    try:
        wait_until(lambda: done(engine, project_settings.project, sessions), 120, "every reflection", *workers)
        assert [worker.stop() for worker in workers] == [0, 0]
        rows = Ledger(engine, project_settings.project).reflections()
    finally:
        engine.dispose()

    assert stub.most_in_flight >= 3  # the two really worked side by side
    reflected = Counter((r["kind"], r["subject"]) for r in rows)
    assert reflected == Counter({(kind, s): 1 for s in sessions for kind in ("anomaly", "session")})
    assert len({r["worker"] for r in rows}) == 2  # and both took a share
    for lesson in lessons(6):
        assert sorted(stub.asked(lesson.quote)) == ["anomaly", "session"]  # each asked once per variant
    for number in range(6):
        assert len(store.list_insights(user_id=f"u{number}")) == 1
