"""The APScheduler wiring on a real SQLite state file: the jobs and their triggers in the settings' timezone, schedules
that survive a restart, and a run missed while no worker was up: run once if it is not too late, else skipped."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import Engine

from hindsight_insights.config import Settings
from worker.db import open_engine
from worker.schedule import NIGHTLY_GRACE, build_scheduler, job_table, schedule, serving, shut_down

SHANGHAI = ZoneInfo("Asia/Shanghai")


class Recorder:
    """Stands in for the worker: counts the jobs' calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def poll_anomalies(self) -> None:
        self.calls.append("anomalies")

    def poll_sessions(self) -> None:
        self.calls.append("sessions")

    def nightly(self) -> None:
        self.calls.append("nightly")

    def note_use(self) -> None:
        self.calls.append("note_use")

    def expire(self) -> None:
        self.calls.append("expire")


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Engine]:
    engine = open_engine(f"sqlite:///{tmp_path / 'state.sqlite3'}")
    yield engine
    engine.dispose()


def worker_settings(settings: Settings, **changes: object) -> Settings:
    return settings.model_copy(update={"project": "售后客服", "timezone": "Asia/Shanghai", **changes})


def paused(settings: Settings, state: Engine) -> BackgroundScheduler:
    scheduler = build_scheduler(settings, state)
    scheduler.start(paused=True)
    return scheduler


def test_the_jobs_and_their_triggers_in_the_settings_timezone(settings: Settings, state: Engine) -> None:
    config = worker_settings(settings, worker_poll_interval_s=15, worker_nightly_time="03:00")
    scheduler = paused(config, state)
    try:
        assert schedule(scheduler, config) == ["anomalies", "sessions", "nightly", "expire"]
        jobs = {job.id: job for job in scheduler.get_jobs()}
        assert jobs["anomalies"].trigger.interval == jobs["sessions"].trigger.interval == timedelta(seconds=15)
        assert jobs["expire"].trigger.interval == timedelta(minutes=60)
        assert jobs["nightly"].misfire_grace_time == NIGHTLY_GRACE.total_seconds()
        assert jobs["anomalies"].misfire_grace_time is None and jobs["anomalies"].coalesce
        nightly = jobs["nightly"].trigger
        after = datetime(2026, 11, 30, 17, 0, tzinfo=SHANGHAI)  # the trigger's answer for a time the test chooses
        assert nightly.get_next_fire_time(None, after) == datetime(2026, 12, 1, 3, 0, tzinfo=SHANGHAI)
        assert jobs["nightly"].next_run_time.astimezone(SHANGHAI).hour == 3
        assert jobs["sessions"].args == ("售后客服",)
    finally:
        shut_down(scheduler)
    assert job_table("售后客服").startswith("jobs_") and job_table("Shop-CN").startswith("jobs_shop_cn_")


def test_schedules_survive_a_restart_and_changed_settings_replace_a_job(settings: Settings, state: Engine) -> None:
    config = worker_settings(settings)
    first = paused(config, state)
    schedule(first, config)
    before = {job.id: job.next_run_time for job in first.get_jobs()}
    shut_down(first)

    again = paused(config, state)
    try:
        assert schedule(again, config) == []  # unchanged: the stored next run times stand
        assert {job.id: job.next_run_time for job in again.get_jobs()} == before
        assert schedule(again, worker_settings(settings, worker_nightly_time="04:30")) == ["nightly"]
        assert schedule(again, worker_settings(settings, timezone="UTC", worker_nightly_time="04:30")) == [
            "anomalies",
            "sessions",
            "nightly",
            "expire",
        ]
    finally:
        shut_down(again)


@pytest.mark.parametrize(("late", "runs"), [(timedelta(hours=2), True), (NIGHTLY_GRACE + timedelta(hours=1), False)])
def test_a_nightly_run_missed_while_no_worker_was_up(
    settings: Settings, state: Engine, late: timedelta, runs: bool
) -> None:
    # The nightly time is six hours from now, so the missed run is the only one between it and now.
    now = datetime.now(UTC)
    config = worker_settings(
        settings,
        worker_nightly_time=(now + timedelta(hours=6)).astimezone(SHANGHAI).strftime("%H:%M"),
        worker_poll_interval_s=3600,
        worker_expire_interval_minutes=600,
    )
    first = paused(config, state)
    schedule(first, config)
    first.modify_job("nightly", next_run_time=now - late)  # the worker was down when it fell due
    shut_down(first)

    recorder, seen = Recorder(), threading.Event()
    outcome: list[int] = []

    def listen(event: JobExecutionEvent) -> None:
        if event.job_id == "nightly":
            outcome.append(event.code)
            seen.set()

    restarted = build_scheduler(config, state)
    restarted.add_listener(listen, EVENT_JOB_EXECUTED | EVENT_JOB_MISSED)
    with serving(config.project, recorder):
        restarted.start()
        try:
            assert seen.wait(10), "the restarted scheduler did not process the missed nightly run"
        finally:
            shut_down(restarted)

    assert outcome == [EVENT_JOB_EXECUTED if runs else EVENT_JOB_MISSED]
    assert recorder.calls.count("nightly") == (1 if runs else 0)
    assert "anomalies" in recorder.calls and "sessions" in recorder.calls  # their run times had passed: run at start
    again = paused(config, state)
    try:
        (nightly,) = [job for job in again.get_jobs() if job.id == "nightly"]
        assert nightly.next_run_time > now + timedelta(hours=5)  # on to the next night, once
    finally:
        shut_down(again)
