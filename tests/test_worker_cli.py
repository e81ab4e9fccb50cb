"""The worker's commands (reflect, worker --once, nightly, expire, worker-status) against the real Weaviate, a SQLite
state file and an OpenAI-compatible endpoint on loopback, chosen by the settings as an operator would."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hindsight_cli.app import app
from hindsight_insights.config import Settings
from hindsight_insights.models import InsightDraft, InsightStatus, TurnDraft, TurnSignals
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate
from testkit.admitted import admitted_as_is
from tests.worker_support import ChatStub, Lesson
from worker.db import open_engine
from worker.tasks import TaskBoard

NAME = Lesson("叫我老王就行，别叫王老师", "称呼", "当你称呼这位用户时，叫他“老王”，不要叫“王老师”。")
Cli = Callable[..., str]


@pytest.fixture(autouse=True)
def logging_restored() -> Iterator[None]:
    """The commands set up the worker's loggers for a terminal; later tests capture them again."""
    names = ["", "worker", "worker.reflection", "worker.expiry"]
    saved = [
        (logging.getLogger(n).level, list(logging.getLogger(n).handlers), logging.getLogger(n).propagate) for n in names
    ]
    yield
    for name, (level, handlers, propagate) in zip(names, saved, strict=True):
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate = propagate


@pytest.fixture
def stub() -> Iterator[ChatStub]:
    chat = ChatStub([NAME])
    yield chat
    chat.close()


@pytest.fixture
def state_file(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'worker.sqlite3'}"


@pytest.fixture
def cli(weaviate_server: LocalWeaviate, project_settings: Settings, stub: ChatStub, state_file: str) -> Cli:
    environment = {
        "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
        "HINDSIGHT_PROJECT": project_settings.project,
        "HINDSIGHT_WORKER_STATE_URL": state_file,
        "COLUMNS": "200",
        **stub.environment(),
    }
    runner = CliRunner()

    def run(*arguments: str, code: int = 0, **extra: str) -> str:
        result = runner.invoke(app, list(arguments), env={**environment, **extra}, catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.stdout if "--json" in arguments else result.output  # the log lines go to stderr

    return run


def record(store: InsightStore, session: str, text: str, signals: TurnSignals, at: datetime) -> None:
    draft = TurnDraft(
        session_id=session, user_id="u_wang", user_message=text, assistant_message="好的", signals=signals
    )
    store.turns.append(draft, now=at)


def test_reflect_one_session_prints_its_report_and_records_it(cli: Cli, store: InsightStore, stub: ChatStub) -> None:
    record(store, "s1", NAME.quote, TurnSignals(correction=True), datetime.now(UTC))

    shown = cli("reflect", "--session", "s1")

    assert "session reflection on s1 (user u_wang): ok" in shown
    (saved,) = store.list_insights(user_id="u_wang")
    # Active, or held by the learned screen (whose band a retrained model moves); the report says which, as stored.
    said = "pending_review 1" if saved.status is InsightStatus.PENDING_REVIEW else "created 1"
    assert saved.topic == "称呼" and str(saved.id) in shown and said in shown, shown
    again = json.loads(cli("reflect", "--session", "s1", "--json"))
    assert again["outcome"] == "ok" and again["unchanged"] == [str(saved.id)]  # a re-run adds nothing
    anomaly = json.loads(cli("reflect", "--session", "s1", "--anomaly", "--json"))
    assert anomaly["variant"] == "anomaly" and stub.asked(NAME.quote) == ["session", "session", "anomaly"]

    status = json.loads(cli("worker-status", "--json"))
    assert (status["reflections"], status["tokens"]) == (3, 3000)
    assert status["counters"] == {"session.ok": 2, "anomaly.ok": 1}
    assert status["tasks"] == {"session.done": 1, "anomaly.done": 1}
    assert "3 reflections, 3,000 tokens of 2,000,000" in cli("worker-status")


def test_reflect_waits_for_no_one_but_never_runs_beside_a_worker(
    cli: Cli, store: InsightStore, state_file: str, project_settings: Settings
) -> None:
    record(store, "s1", NAME.quote, TurnSignals(correction=True), datetime.now(UTC))
    engine = open_engine(state_file)
    try:
        other = TaskBoard(engine, project_settings.project, "replica-2", lease=timedelta(minutes=2), max_attempts=3)
        other.ensure("session", "s1", datetime.now(UTC))
        task = other.get("session", "s1")
        assert task is not None and other.claim(task, datetime.now(UTC)) is not None

        shown = cli("reflect", "--session", "s1", code=1)
    finally:
        engine.dispose()
    assert "session s1 is being reflected on by replica-2" in shown
    assert store.list_insights(user_id="u_wang") == []


def test_worker_once_reflects_what_is_due(cli: Cli, store: InsightStore, stub: ChatStub) -> None:
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    record(store, "s1", "查一下订单量", TurnSignals(), an_hour_ago)
    record(store, "s1", NAME.quote, TurnSignals(correction=True), an_hour_ago + timedelta(seconds=30))

    report = json.loads(cli("worker", "--once", "--json"))

    assert [(r["variant"], r["session_ids"], r["outcome"]) for r in report["reflections"]] == [
        ("anomaly", ["s1"], "ok"),  # the correction, first
        ("session", ["s1"], "ok"),  # and the session, idle for an hour
    ]
    assert report["anomalies_noted"] == 1 and report["sessions_ended"] == 1
    assert len(store.list_insights(user_id="u_wang")) == 1
    assert "0 reflections" in cli("worker", "--once")  # nothing is due twice


def test_expire_marks_expired_insights(cli: Cli, store: InsightStore) -> None:
    soon = datetime.now(UTC) + timedelta(seconds=1)
    data = {"topic": "holiday hours", "kind": "fact", "action": "Say we open at 10.", "evidence": "we open at 10"}
    saved = store.save(admitted_as_is(InsightDraft.parse({**data, "expire_at": soon})))
    store.save(
        admitted_as_is(InsightDraft.parse({**data, "topic": "tone", "action": "Be brief.", "evidence": "be brief"}))
    )
    while datetime.now(UTC) <= soon:  # let the expiry pass (at most a second)
        pass

    report = json.loads(cli("expire", "--json", HINDSIGHT_REFLECTION_LLM="offline"))  # no model needed

    assert (report["expired"], report["retired"]) == (1, [])
    assert store.get(saved.id).status is InsightStatus.EXPIRED
    assert "0 expired; 0 retired" in cli("expire")


def test_a_reflector_that_cannot_be_made_is_one_line(cli: Cli) -> None:
    shown = cli("reflect", "--session", "s1", code=1, HINDSIGHT_REFLECTION_MODEL="")  # openai without a model
    assert "error:" in shown and "HINDSIGHT_REFLECTION_MODEL" in shown and "Traceback" not in shown


def test_a_session_without_turns_fails_its_reflection_and_says_why(cli: Cli) -> None:
    report = json.loads(cli("reflect", "--session", "s-none", "--json", code=1, HINDSIGHT_REFLECTION_LLM="offline"))
    assert report["outcome"] == "failed" and report["reason"] == "no stored turns for session s-none"
