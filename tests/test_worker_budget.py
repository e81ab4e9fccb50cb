"""The cost guard and the nightly Message Batch, through the Anthropic SDK on a mock transport, a real Weaviate and a
real SQLite state file, on a controllable clock: past the budget a session's end waits for the night and anomalies go
on up to the reserve; a batch in flight survives a restart and is collected by the next worker."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import anthropic._base_client
import httpx2
import pytest

from hindsight_insights.reflection import AnthropicReflector
from hindsight_insights.store import InsightStore
from tests.reflection_support import (
    FakeAnthropicApi,
    Reply,
    anthropic_settings,
    error_body,
    insight_json,
    jsonl,
    message,
    ok,
    text,
    usage,
)
from tests.worker_support import CORRECTION, STOPPED, FakeClock, running_worker, say

EMPTY = message([text('{"insights": []}')], message_usage=usage(800, 0, 0, 200))  # 1,000 tokens


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anthropic._base_client, "INITIAL_RETRY_DELAY", 0.001)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'state.sqlite3'}"


def reflector(store: InsightStore, api: FakeAnthropicApi) -> AnthropicReflector:
    return AnthropicReflector.from_settings(anthropic_settings(store.settings), http_client=api.client())


def test_past_the_budget_session_ends_wait_for_the_night_and_anomalies_use_the_reserve(
    store: InsightStore, url: str
) -> None:
    api = FakeAnthropicApi()
    api.on("POST", "/v1/messages", *[ok(EMPTY)] * 5)
    clock = FakeClock(datetime(2026, 11, 30, 9, 0, tzinfo=UTC))  # 17:00 in Shanghai
    budget: dict[str, Any] = {"worker_token_budget": 1500, "worker_anomaly_reserve": 1000}
    with running_worker(store, url, clock, reflector(store, api), **budget) as worker:
        for name in (
            "a",
            "b",
            "c",
        ):  # session ids that are not English stopwords: Weaviate 1.27 refuses to filter by those
            say(store, clock, f"s-{name}", f"u_{name}", "写个周报", STOPPED)
        clock.advance(minutes=31)
        ended = worker.poll()  # a: 0 -> 1,000; b: 1,000 -> 2,000; c: past 1,500, deferred
        assert [r.session_ids for r in ended.reflections] == [["s-a"], ["s-b"]] and ended.deferred == 1

        say(store, clock, "s-d", "u_d", "叫我老王就行", CORRECTION)
        clock.advance(seconds=15)
        assert [r.session_ids for r in worker.poll().reflections] == [["s-d"]]  # 2,000 < 2,500: from the reserve
        say(store, clock, "s-e", "u_e", "叫我小李就行", CORRECTION)
        clock.advance(seconds=15)
        held = worker.poll()  # 3,000: the reserve is spent too
        assert held.reflections == [] and held.held == 1

        today = date(2026, 11, 30)
        assert worker.ledger.spend(today).tokens == 3000 and worker.ledger.spend(today).reflections == 3
        counted = worker.ledger.counters(today)
        assert (counted["session.deferred"], counted["anomaly.held"], counted["session.ok"]) == (1, 1, 2)
        deferred = worker.board.get("session", "s-c")
        assert deferred is not None and deferred.state == "deferred"
        assert deferred.last_error == "deferred to the nightly run: the day's token budget is spent"

        clock.set(datetime(2026, 11, 30, 15, 59, tzinfo=UTC))
        assert worker.poll().reflections == []  # 23:59 in Shanghai: still held
        clock.set(datetime(2026, 11, 30, 16, 0, 15, tzinfo=UTC))  # past midnight in Shanghai: a new budget
        assert [r.session_ids for r in worker.poll().reflections] == [["s-e"]]

        clock.set(datetime(2026, 11, 30, 19, 0, tzinfo=UTC))  # 03:00
        night = worker.nightly()
        assert [(r.variant, r.session_ids) for r in night.reflections] == [("nightly", ["s-c"])]

    covered = worker.board.get("session", "s-c")
    assert covered is not None and covered.state == "done"
    assert covered.last_error == "covered by the nightly reflection u_c@2026-12-01"
    assert worker.ledger.spend(date(2026, 12, 1)).tokens == 2000
    assert len(api.bodies()) == 5


def _batch(batch_id: str, status: str, counts: dict[str, int]) -> dict[str, Any]:
    ended = status == "ended"
    return {
        "id": batch_id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0, **counts},
        "ended_at": "2026-11-30T20:14:09.482Z" if ended else None,
        "created_at": "2026-11-30T19:00:01.117Z",
        "expires_at": "2026-12-01T19:00:01.117Z",
        "archived_at": None,
        "cancel_initiated_at": None,
        "results_url": f"https://api.anthropic.com/v1/messages/batches/{batch_id}/results" if ended else None,
    }


def test_a_nightly_batch_in_flight_survives_a_restart_and_is_collected_once(store: InsightStore, url: str) -> None:
    batch_id = "msgbatch_01WorkerNightlyRestart0001"
    quote = "再比较 Kafka 和 RabbitMQ，还是用表格"
    table = insight_json(quote, turn=0, session="S2", topic="对比格式", scene="方案对比")
    api = FakeAnthropicApi()

    def results(_: httpx2.Request) -> Reply:
        (submitted,) = api.bodies("/v1/messages/batches")
        lines = []
        for request in submitted["requests"]:
            if "Kafka" in request["params"]["messages"][0]["content"]:
                body = message([text(json.dumps({"insights": [table]}, ensure_ascii=False))])
                lines.append({"custom_id": request["custom_id"], "result": {"type": "succeeded", "message": body}})
            else:
                overloaded = error_body("overloaded_error", "Overloaded")
                lines.append({"custom_id": request["custom_id"], "result": {"type": "errored", "error": overloaded}})
        return Reply(200, jsonl(lines), {"content-type": "application/binary"})

    api.on("POST", "/v1/messages/batches", ok(_batch(batch_id, "in_progress", {"processing": 2})))
    api.on(
        "GET",
        f"/v1/messages/batches/{batch_id}",
        ok(_batch(batch_id, "in_progress", {"processing": 2})),
        ok(_batch(batch_id, "ended", {"succeeded": 1, "errored": 1})),
        ok(_batch(batch_id, "ended", {"succeeded": 1, "errored": 1})),  # results() looks it up
    )
    api.on("GET", f"/v1/messages/batches/{batch_id}/results", results)
    api.on("POST", "/v1/messages", ok(EMPTY))  # the direct retry of the errored request
    clock = FakeClock(datetime(2026, 11, 30, 2, 0, tzinfo=UTC))
    settings: dict[str, Any] = {
        "worker_batch_threshold": 1,
        "reflection_batch_poll_s": 60.0,
        "worker_poll_interval_s": 15.0,
    }
    with running_worker(store, url, clock, reflector(store, api), owner="worker-a", **settings) as first:
        say(store, clock, "grace-mon", "u_grace", "比较一下 Redis 和 Memcached，用表格", scene="方案对比")
        say(store, clock, "kate-1", "u_kate", "What is our refund policy?")
        clock.advance(hours=5)
        say(store, clock, "grace-tue", "u_grace", quote, scene="方案对比")
        say(store, clock, "kate-2", "u_kate", "And for damaged goods?")
        clock.set(datetime(2026, 11, 30, 19, 0, tzinfo=UTC))  # 03:00 in Shanghai

        night = first.nightly()

        assert night.batches_submitted == 1 and night.reflections == []
        assert {t.subject: t.state for t in first.board.tasks("nightly")} == {
            "u_grace@2026-12-01": "batched",
            "u_kate@2026-12-01": "batched",
        }
    # worker-a stops here; worker-b starts on the same state database
    with running_worker(store, url, clock, reflector(store, api), owner="worker-b", **settings) as second:
        assert second.poll().batches_collected == 0  # still in progress
        clock.advance(seconds=30)
        assert second.poll().batches_collected == 0  # not asked again within reflection_batch_poll_s
        clock.advance(seconds=31)
        collected = second.poll()
        assert collected.batches_collected == 1
        assert [(r.user_id, r.outcome, r.via_batch) for r in collected.reflections] == [
            ("u_grace", "ok", True),
            ("u_kate", "failed", True),
        ]
        clock.advance(seconds=60)  # the errored request's retry: direct, after its backoff
        retried = second.poll()
        assert [(r.user_id, r.outcome, r.via_batch) for r in retried.reflections] == [("u_kate", "ok", False)]
        clock.advance(minutes=5)
        assert second.poll().reflections == []

    saved = store.list_insights(user_id="u_grace")
    assert [(i.topic, i.evidence.session_id) for i in saved] == [("对比格式", "grace-tue")]
    rows = second.ledger.reflections("nightly")
    assert [(r["subject"], r["attempt"], r["outcome"], r["via_batch"], r["worker"]) for r in rows] == [
        ("u_grace@2026-12-01", 1, "ok", True, "worker-b"),
        ("u_kate@2026-12-01", 1, "failed", True, "worker-b"),
        ("u_kate@2026-12-01", 2, "ok", False, "worker-b"),
    ]
    assert second.ledger.open_batches() == []
    counted = second.ledger.counters(date(2026, 12, 1))
    assert (counted["batch.submitted"], counted["batch.requests"], counted["batch.collected"]) == (1, 2, 1)
    assert len(api.bodies("/v1/messages")) == 1 and len(api.bodies("/v1/messages/batches")) == 1
