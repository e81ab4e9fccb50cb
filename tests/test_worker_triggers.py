"""The worker's triggers, driven by a clock the test moves (no sleeping), against a real Weaviate and a real SQLite
state file: anomalies within one poll interval and debounced per session, a session's end reflected on once, the
nightly run across a user's sessions, bounded retries with their reasons, re-runs that never duplicate an insight,
and one JSON log line per reflection."""

from __future__ import annotations

import json
import logging
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from hindsight_insights.errors import WeaviateUnavailable
from hindsight_insights.models import InsightStatus, TurnSignals
from hindsight_insights.store import InsightStore
from tests.worker_support import CORRECTION, STOPPED, FakeClock, RuleExtractor, running_worker, say


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'state.sqlite3'}"


def test_an_anomaly_is_reflected_within_one_poll_and_debounced_per_session(store: InsightStore, url: str) -> None:
    clock, rules = FakeClock(), RuleExtractor()
    with running_worker(store, url, clock, rules) as worker:
        say(store, clock, "s1", "u_wang", "查一下订单量")
        assert worker.poll().reflections == []  # no signal, nothing to do

        clock.advance(seconds=3)
        say(store, clock, "s1", "u_wang", "叫我老王就行，别叫王老师", CORRECTION)
        clock.advance(seconds=15)  # the next poll
        first = worker.poll()
        assert [(r.variant, r.session_ids, r.outcome) for r in first.reflections] == [("anomaly", ["s1"], "ok")]
        (name_id,) = first.reflections[0].created
        assert store.get(name_id).user_id == "u_wang"

        clock.advance(seconds=5)
        say(store, clock, "s1", "u_wang", "不对，叫我老王就行", CORRECTION)  # a burst of corrections
        clock.advance(seconds=10)
        say(store, clock, "s1", "u_wang", "还是不对", TurnSignals(feedback="dislike"))
        clock.advance(seconds=15)
        assert worker.poll().reflections == []  # within the debounce (60 s after the last reflection)
        clock.advance(seconds=30)  # 60 s after it
        second = worker.poll()
        assert [r.variant for r in second.reflections] == ["anomaly"]  # one reflection for the burst
        assert second.reflections[0].created == [] and set(second.reflections[0].unchanged) == {name_id}
        clock.advance(seconds=15)
        assert worker.poll().reflections == []

    assert rules.variants() == ["anomaly", "anomaly"]


def test_a_session_is_reflected_on_once_after_it_has_been_idle(store: InsightStore, url: str) -> None:
    clock, rules = FakeClock(), RuleExtractor()
    with running_worker(store, url, clock, rules, worker_idle_minutes=30) as worker:
        say(store, clock, "ends", "u_li", "帮我写个周报", STOPPED)  # one stopped generation: a signal, no anomaly
        say(store, clock, "plain", "u_zhang", "今天天气怎么样")  # nothing to learn from
        clock.advance(minutes=5)
        say(store, clock, "ends", "u_li", "叫我小李就行")
        clock.advance(minutes=29)
        assert worker.poll().reflections == []  # 29 minutes after its last turn: not over yet

        clock.advance(minutes=1, seconds=15)
        ended = worker.poll()
        assert [(r.variant, r.session_ids) for r in ended.reflections] == [("session", ["ends"])]
        assert len(ended.reflections[0].created) == 1
        for _ in range(3):
            clock.advance(minutes=10)
            assert worker.poll().reflections == []

        say(store, clock, "ends", "u_li", "再补充一句", STOPPED)  # the user comes back; a second stop: an anomaly
        clock.advance(seconds=15)
        assert [r.variant for r in worker.poll().reflections] == ["anomaly"]  # repeated stopped generations
        clock.advance(minutes=31)
        assert worker.poll().reflections == []  # its end was reflected on already: once, ever

    task = worker.board.get("session", "ends")
    assert task is not None and task.state == "done"
    assert worker.board.get("session", "plain") is None
    assert [row["kind"] for row in worker.ledger.reflections()] == ["session", "anomaly"]


def test_the_nightly_run_reflects_across_each_active_users_sessions(store: InsightStore, url: str) -> None:
    clock = FakeClock(datetime(2026, 11, 28, 2, 0, tzinfo=UTC))  # 10:00 in Shanghai
    rules = RuleExtractor()
    with running_worker(store, url, clock, rules, worker_nightly_time="03:00") as worker:
        say(store, clock, "grace-mon", "u_grace", "比较一下 Redis 和 Memcached，用表格", scene="方案对比")
        clock.advance(days=1)
        say(store, clock, "grace-tue", "u_grace", "再比较 Kafka 和 RabbitMQ，还是用表格", scene="方案对比")
        say(store, clock, "kate-1", "u_kate", "hello, one question")
        say(store, clock, "old-1", "u_old", "first")
        clock.set(datetime(2026, 11, 29, 19, 0, tzinfo=UTC))  # 03:00 in Shanghai, 33 h after u_old's turn
        say(store, clock, "old-1", "u_old", "second")  # u_old is active, but in one session only

        night = worker.nightly()

        assert [(r.variant, r.session_ids) for r in night.reflections] == [("nightly", ["grace-mon", "grace-tue"])]
        (table_id,) = night.reflections[0].created
        table = store.get(table_id)
        assert (table.topic, table.user_id, table.evidence.session_id) == ("对比格式", "u_grace", "grace-tue")
        clock.advance(minutes=5)
        assert worker.nightly().reflections == []  # the night was planned and run: not again
        assert worker.poll().reflections == []

    plan = worker.board.get("plan", "2026-11-30")  # the night's date, in Asia/Shanghai
    assert plan is not None and plan.state == "done"
    assert [t.subject for t in worker.board.tasks("nightly")] == ["u_grace@2026-11-30"]


def test_a_failed_reflection_is_retried_a_bounded_number_of_times_with_its_reason(
    store: InsightStore, url: str
) -> None:
    clock = FakeClock()
    rules = RuleExtractor(failures=["the model is overloaded", "the model is overloaded again"])
    with running_worker(store, url, clock, rules, worker_max_attempts=3, worker_poll_interval_s=15) as worker:
        say(store, clock, "s1", "u_wang", "叫我老王就行", CORRECTION)
        clock.advance(seconds=15)
        assert [r.outcome for r in worker.poll().reflections] == ["failed"]
        clock.advance(seconds=59)
        assert worker.poll().reflections == []  # the first retry waits 4 poll intervals
        clock.advance(seconds=1)
        assert [r.outcome for r in worker.poll().reflections] == ["failed"]
        clock.advance(seconds=15 * 16)
        assert [r.outcome for r in worker.poll().reflections] == ["ok"]

    rows = worker.ledger.reflections("anomaly", "s1")
    assert [(r["attempt"], r["outcome"], r["reason"]) for r in rows] == [
        (1, "failed", "the extractor failed: the model is overloaded"),
        (2, "failed", "the extractor failed: the model is overloaded again"),
        (3, "ok", None),
    ]
    task = worker.board.get("anomaly", "s1")
    assert task is not None and (task.state, task.attempts, task.last_error) == ("done", 0, None)


def test_a_reflection_that_keeps_failing_is_given_up_with_the_last_reason(store: InsightStore, url: str) -> None:
    clock = FakeClock()
    rules = RuleExtractor(failures=["bad gateway"] * 5)
    with running_worker(store, url, clock, rules, worker_max_attempts=2) as worker:
        say(store, clock, "s1", "u_wang", "叫我老王就行", CORRECTION)
        for _ in range(4):
            clock.advance(minutes=20)
            worker.poll()

    task = worker.board.get("anomaly", "s1")
    assert task is not None and task.state == "failed"
    assert task.last_error == "given up after 2 attempts; last: the extractor failed: bad gateway"
    assert rules.calls.count(("anomaly", ["s1"])) == 2
    counted = worker.ledger.counters(date(2026, 11, 30))
    assert (counted["anomaly.failed"], counted["anomaly.given_up"]) == (2, 1)


def test_re_running_a_reflection_never_duplicates_an_insight(store: InsightStore, url: str) -> None:
    clock, rules = FakeClock(), RuleExtractor()
    with running_worker(store, url, clock, rules, worker_claim_lease_s=120) as worker:
        say(store, clock, "s1", "u_wang", "叫我老王就行", CORRECTION)
        clock.advance(seconds=15)
        worker.scan_anomalies(clock.now())
        (task,) = worker.board.due(["anomaly"], clock.now())
        claim = worker.board.claim(task, clock.now())
        assert claim is not None
        saved = worker.engine.reflect_anomaly("s1")  # the insight is saved, then the worker dies before recording
        clock.advance(seconds=121)

        again = worker.poll()

        assert [(r.variant, r.unchanged, r.created) for r in again.reflections] == [("anomaly", saved.created, [])]
        assert worker.reflect_now("s1").unchanged == saved.created  # an operator's re-run, too
    assert len(store.list_insights(user_id="u_wang")) == 1
    assert store.get(saved.created[0]).status is InsightStatus.ACTIVE
    task_now = worker.board.get("anomaly", "s1")
    assert task_now is not None and task_now.state == "done"


def test_one_json_log_line_per_reflection(store: InsightStore, url: str, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    caplog.set_level(logging.INFO, logger="worker.reflection")
    with running_worker(store, url, clock, RuleExtractor(failures=["timeout"])) as worker:
        say(store, clock, "s1", "u_wang", "叫我老王就行", CORRECTION)
        say(store, clock, "s2", "u_li", "叫我小李就行", CORRECTION)
        clock.advance(seconds=15)
        worker.poll()

    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "worker.reflection"]
    assert [(line["subject"], line["outcome"]) for line in lines] == [("s1", "failed"), ("s2", "ok")]
    failed, ok = lines
    assert failed["reason"] == "the extractor failed: timeout" and failed["attempt"] == 1
    assert ok["event"] == "reflection" and ok["trigger"] == "anomaly" and ok["user_id"] == "u_li"
    assert ok["counts"]["created"] == 1 and ok["tokens_in"] == 0 and ok["worker"] == "worker-test"
    assert ok["day"] == "2026-11-30" and ok["budget"] == 2_000_000
    assert all("\n" not in r.getMessage() for r in caplog.records if r.name == "worker.reflection")


def test_a_nightly_plan_that_failed_is_planned_again_by_a_later_poll(
    store: InsightStore, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(datetime(2026, 11, 29, 20, 0, tzinfo=UTC))
    rules = RuleExtractor()
    with running_worker(store, url, clock, rules) as worker:
        say(store, clock, "grace-mon", "u_grace", "比较一下 Redis 和 Memcached，用表格", scene="方案对比")
        say(store, clock, "grace-tue", "u_grace", "再比较 Kafka 和 RabbitMQ，还是用表格", scene="方案对比")
        clock.set(datetime(2026, 11, 30, 19, 0, tzinfo=UTC))  # 03:00 in Shanghai
        reads = store.turns.active_users

        def down(*args: object, **kwargs: object) -> object:
            raise WeaviateUnavailable("Weaviate did not answer in time")

        monkeypatch.setattr(store.turns, "active_users", down)
        assert worker.nightly().reflections == []
        plan = worker.board.get("plan", "2026-12-01")
        assert plan is not None and plan.state == "due" and plan.attempts == 1
        assert plan.last_error is not None and "Weaviate did not answer in time" in plan.last_error

        monkeypatch.setattr(store.turns, "active_users", reads)  # Weaviate is back
        clock.advance(seconds=59)
        assert worker.poll().reflections == []  # the plan's retry waits for its backoff (4 poll intervals)
        clock.advance(seconds=1)
        again = worker.poll()

    assert [(r.variant, r.session_ids) for r in again.reflections] == [("nightly", ["grace-mon", "grace-tue"])]
    planned = worker.board.get("plan", "2026-12-01")
    assert planned is not None and planned.state == "done"
