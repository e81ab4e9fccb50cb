"""The claim protocol on a real SQLite file and a real PostgreSQL: one winner per claim however many race for it,
a lapsed lease is taken over (and the lost try counted, with why), the loser of a lapsed lease cannot overwrite its
successor, bounded retries, and an anomaly task that comes due again after newer signals."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from sqlalchemy import Engine

from tests.worker_support import FakeClock
from worker.db import create_tables, open_engine
from worker.schedule import job_table
from worker.tasks import Claim, TaskBoard

LEASE = timedelta(seconds=120)


@pytest.fixture
def engine(state_url: str) -> Iterator[Engine]:
    engine = open_engine(state_url)
    yield engine
    engine.dispose()


def board(engine: Engine, owner: str, max_attempts: int = 3) -> TaskBoard:
    return TaskBoard(engine, "proj", owner, lease=LEASE, max_attempts=max_attempts)


def claim_once(tasks: TaskBoard, kind: str, subject: str, clock: FakeClock) -> Claim | None:
    task = tasks.get("session" if kind == "session" else "anomaly", subject)
    assert task is not None
    return tasks.claim(task, clock.now())


def test_a_claim_is_exclusive_and_a_lapsed_one_is_taken_over(engine: Engine) -> None:
    clock = FakeClock()
    a, b = board(engine, "worker-a"), board(engine, "worker-b")
    assert a.ensure("session", "s1", clock.now(), user_id="u1")
    assert not b.ensure("session", "s1", clock.now(), user_id="u1")  # one task per session, whoever finds it

    mine = claim_once(a, "session", "s1", clock)
    assert mine is not None and (mine.attempt, mine.took_over) == (1, False)
    assert claim_once(b, "session", "s1", clock) is None
    clock.advance(seconds=100)
    assert a.renew(mine, clock.now())  # a heartbeat keeps it
    clock.advance(seconds=100)
    assert claim_once(b, "session", "s1", clock) is None

    clock.advance(seconds=21)  # 120 s after the last renewal: worker-a is gone
    theirs = claim_once(b, "session", "s1", clock)
    assert theirs is not None and (theirs.attempt, theirs.took_over) == (2, True)
    task = b.get("session", "s1")
    assert task is not None and task.owner == "worker-b"
    assert task.last_error is not None and "the claim of worker-a lapsed" in task.last_error

    assert not a.succeed(mine, clock.now())  # too late: worker-b holds it now
    assert not a.renew(mine, clock.now())
    assert b.succeed(theirs, clock.now())
    done = b.get("session", "s1")
    assert done is not None and (done.state, done.owner, done.attempts, done.last_error) == ("done", None, 0, None)
    assert b.due(["session"], clock.advance(days=1)) == []
    assert not a.ensure("session", "s1", clock.now())  # found idle again: it stays done


def test_racing_claims_have_exactly_one_winner(engine: Engine) -> None:
    clock = FakeClock()
    subjects = [f"s{n}" for n in range(12)]
    for subject in subjects:
        board(engine, "setup").ensure("session", subject, clock.now())
    boards = [board(engine, f"worker-{n}") for n in range(6)]
    won: list[tuple[str, str]] = []
    start = threading.Barrier(len(boards))

    def race(tasks: TaskBoard) -> None:
        start.wait()
        for subject in subjects:
            task = tasks.get("session", subject)
            assert task is not None
            if tasks.claim(task, clock.now()) is not None:
                won.append((subject, tasks.owner))

    threads = [threading.Thread(target=race, args=(tasks,)) for tasks in boards]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(subject for subject, _ in won) == sorted(subjects)  # every task claimed, none twice


def test_failures_are_retried_a_bounded_number_of_times_with_the_reason(engine: Engine) -> None:
    clock = FakeClock()
    tasks = board(engine, "worker-a", max_attempts=2)
    tasks.ensure("session", "s1", clock.now())

    first = claim_once(tasks, "session", "s1", clock)
    assert first is not None
    assert tasks.fail(first, clock.now(), "the model call failed: 529", retry_at=clock.now() + LEASE) == "due"
    assert claim_once(tasks, "session", "s1", clock) is None  # not before its retry time
    clock.advance(seconds=121)
    second = claim_once(tasks, "session", "s1", clock)
    assert second is not None and second.attempt == 2
    assert tasks.fail(second, clock.now(), "the model call failed: 529 again", retry_at=clock.now()) == "failed"

    task = tasks.get("session", "s1")
    assert task is not None and task.state == "failed"
    assert task.last_error == "given up after 2 attempts; last: the model call failed: 529 again"
    assert tasks.due(["session"], clock.advance(days=1)) == []


def test_a_task_that_stops_every_worker_is_given_up(engine: Engine) -> None:
    clock = FakeClock()
    tasks = board(engine, "worker-a", max_attempts=2)
    tasks.ensure("session", "poison", clock.now())
    for _ in range(2):
        assert claim_once(tasks, "session", "poison", clock) is not None
        clock.advance(seconds=121)  # and the worker dies

    assert claim_once(tasks, "session", "poison", clock) is None
    task = tasks.get("session", "poison")
    assert task is not None and (task.state, task.owner, task.lease_until) == ("failed", None, None)
    assert task.last_error is not None and task.last_error.startswith("given up after 2 attempts; last: the claim")


def test_an_anomaly_comes_due_again_after_newer_signals_but_not_before_the_debounce(engine: Engine) -> None:
    clock = FakeClock()
    tasks = board(engine, "worker-a")
    debounce = timedelta(seconds=60)
    first_signal = clock.now()
    tasks.note_signal("s1", "u1", first_signal, clock.now(), debounce)

    running = claim_once(tasks, "anomaly", "s1", clock)
    assert running is not None
    tasks.note_signal("s1", "u1", clock.advance(seconds=5), clock.now(), debounce)  # during the reflection
    assert tasks.succeed(running, clock.advance(seconds=5), rearm_at=clock.now() + debounce)

    again = tasks.get("anomaly", "s1")
    assert again is not None and (again.state, again.covered_at) == ("due", first_signal)
    assert again.due_at == clock.now() + debounce
    assert tasks.due(["anomaly"], clock.now()) == []
    clock.advance(seconds=60)
    second = claim_once(tasks, "anomaly", "s1", clock)
    assert second is not None
    assert tasks.succeed(second, clock.now(), rearm_at=clock.now() + debounce)
    settled = tasks.get("anomaly", "s1")
    assert settled is not None and settled.state == "done" and settled.covered_at == settled.signal_at

    tasks.note_signal("s1", "u1", settled.signal_at or clock.now(), clock.now(), debounce)  # nothing new: stays done
    assert (tasks.get("anomaly", "s1") or settled).state == "done"
    clock.advance(seconds=10)
    tasks.note_signal("s1", "u1", clock.now(), clock.now(), debounce)  # a new signal, 10 s after the reflection
    rearmed = tasks.get("anomaly", "s1")
    assert rearmed is not None and rearmed.state == "due" and rearmed.due_at == clock.now() + timedelta(seconds=50)


def test_replicas_starting_together_create_the_tables_once(state_url: str) -> None:
    start, failures, engines = threading.Barrier(6), list[Exception](), list[Engine]()
    lock = threading.Lock()

    def open_one() -> None:
        start.wait()
        try:
            engine = open_engine(state_url)
            create_tables(engine, [SQLAlchemyJobStore(engine=engine, tablename=job_table("proj")).jobs_t])
        except Exception as error:
            failures.append(error)
        else:
            with lock:
                engines.append(engine)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for engine in engines:
        engine.dispose()
    assert failures == []
