"""Reflection through the real anthropic SDK (its HTTP client on a mock transport) into the in-memory store: what the
SDK sends, what each kind of answer leads to, retries, and the whole Message Batches lifecycle."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import anthropic._base_client
import httpx2
import pytest

from hindsight_insights.config import Settings
from hindsight_insights.models import InsightStatus, Scope
from hindsight_insights.reflection import REFLECTION_SCHEMA, BatchJob, BatchNotReady, ReflectionBatch
from testkit.memory_store import MemoryStore
from tests.reflection_support import (
    FakeAnthropicApi,
    Reply,
    anthropic_engine,
    error_body,
    insight_json,
    jsonl,
    message,
    ok,
    record_labelled,
    text,
    thinking,
    tool_use,
    usage,
)


@pytest.fixture
def store(project_settings: Settings) -> MemoryStore:
    """The store in memory (testkit/memory_store.py): reflection needs the turn log and the saving, not Weaviate."""
    return MemoryStore(project_settings)


# rs002 (tune): the user asks for the conclusion first and at most three reasons, in turn 1.
QUOTE = "以后先说结论，选哪个，然后最多给三个理由"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's own exponential backoff, shrunk so that retry tests take milliseconds."""
    monkeypatch.setattr(anthropic._base_client, "INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr(anthropic._base_client, "MAX_RETRY_DELAY", 0.002)


@pytest.fixture
def api() -> FakeAnthropicApi:
    return FakeAnthropicApi()


def test_forced_tool_use_creates_insights_and_the_request_is_what_the_api_expects(
    store: MemoryStore, api: FakeAnthropicApi
) -> None:
    turns = record_labelled(store, "rs002", "conv-rs002")
    api.on(
        "POST",
        "/v1/messages",
        ok(
            message(
                [text("I'll record what this conversation teaches."), tool_use([insight_json(QUOTE)])],
                model="claude-haiku-4-5-20251001",
                stop_reason="tool_use",
                message_usage=usage(input_tokens=1012, cache_read=2874, cache_write=0, output_tokens=236),
            )
        ),
    )
    engine, _ = anthropic_engine(
        store, api, anthropic_output="tool", anthropic_model="claude-haiku-4-5", anthropic_effort=None
    )

    report = engine.reflect_session("conv-rs002")

    assert report.outcome == "ok" and report.reason is None
    assert report.counts == {
        "created": 1,
        "merged": 0,
        "superseded": 0,
        "updated": 0,
        "unchanged": 0,
        "pending_review": 0,
        "dropped": 0,
    }
    assert (report.tokens_in, report.tokens_out, report.cached_tokens) == (1012 + 2874, 236, 2874)
    assert report.cached_share == round(2874 / 3886, 4)
    assert report.model == "claude-haiku-4-5-20251001" and report.llm_calls == 1
    assert report.session_id == "conv-rs002" and report.user_id == "u_lizong"

    saved = store.get(report.created[0])
    assert saved.user_id == "u_lizong" and saved.scope is Scope.USER and saved.status is InsightStatus.ACTIVE
    assert saved.source == "reflection:anthropic"
    assert saved.evidence.quote == QUOTE and saved.evidence.session_id == "conv-rs002" and saved.evidence.turn == 1
    assert QUOTE in turns[1].user_message

    (body,) = api.bodies()
    assert body["model"] == "claude-haiku-4-5"
    assert body["max_tokens"] == store.settings.reflection_max_output_tokens
    assert body["tool_choice"] == {"type": "tool", "name": "record_insights", "disable_parallel_tool_use": True}
    assert body["tools"] == [
        {
            "name": "record_insights",
            "description": REFLECTION_SCHEMA.description,
            "input_schema": REFLECTION_SCHEMA.json_schema,
            "strict": True,
        }
    ]
    assert "output_config" not in body
    (system,) = body["system"]
    assert system["cache_control"] == {"type": "ephemeral"}
    assert system["text"].startswith("你是 Hindsight Insights 的“反思”步骤。")
    assert "conv-rs002" not in system["text"] and QUOTE not in system["text"]  # the cached prefix is static
    (user,) = body["messages"]
    assert user["role"] == "user" and QUOTE in user["content"]
    sent = api.requests[0]
    assert sent.headers["authorization"] == "Bearer sk-ant-api03-test" and "anthropic-version" in sent.headers


def test_structured_output_is_the_default_for_the_current_sonnet(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs002", "conv-json")
    answer = json.dumps({"insights": [insight_json(QUOTE)]}, ensure_ascii=False)
    api.on("POST", "/v1/messages", ok(message([thinking(), text(answer)])))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("conv-json")

    assert report.outcome == "ok" and len(report.created) == 1 and report.model == "claude-sonnet-5-5"
    (body,) = api.bodies()
    assert body["model"] == "claude-sonnet-5-5"
    assert body["output_config"] == {
        "effort": "medium",
        "format": {"type": "json_schema", "schema": REFLECTION_SCHEMA.json_schema},
    }
    assert "tools" not in body and "tool_choice" not in body  # Sonnet 5.5 answers forced tool use with a 400
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_a_malformed_answer_is_asked_again_once_with_the_problem(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs002", "conv-retry")
    cut = '{"insights": [{"topic": "回答结构", "kind": "preference", "scene": "方案对比", "observation": "用户说'
    good = json.dumps({"insights": [insight_json(QUOTE)]}, ensure_ascii=False)
    api.on(
        "POST",
        "/v1/messages",
        ok(message([text(cut)], stop_reason="max_tokens", message_usage=usage(389, 0, 2874, 4096))),
        ok(message([text(good)], message_usage=usage(455, 2874, 0, 230))),
    )
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("conv-retry")

    assert report.outcome == "ok" and len(report.created) == 1
    assert report.llm_calls == 2
    assert (report.tokens_in, report.tokens_out) == (389 + 2874 + 455 + 2874, 4096 + 230)
    assert report.cached_tokens == 2874 and report.cache_write_tokens == 2874
    first, second = api.bodies()
    assert second["system"] == first["system"]  # the cached prefix is reused by the retry
    assert second["messages"][0]["content"].startswith(first["messages"][0]["content"])
    feedback = second["messages"][0]["content"][len(first["messages"][0]["content"]) :]
    assert "你上一次的回答无法使用：answer: is not valid JSON" in feedback
    assert "回答在长度上限处被截断了" in feedback


def test_malformed_twice_fails_and_saves_nothing(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs002", "conv-bad")
    # A real failure of tool use: the list arrives as a string holding JSON.
    as_string = json.dumps([insight_json(QUOTE)], ensure_ascii=False)
    api.on(
        "POST",
        "/v1/messages",
        ok(message([tool_use(as_string)], model="claude-sonnet-4-6", stop_reason="tool_use")),
        ok(message([tool_use(as_string)], model="claude-sonnet-4-6", stop_reason="tool_use")),
    )
    engine, _ = anthropic_engine(store, api, anthropic_output="tool", anthropic_model="claude-sonnet-4-6")

    report = engine.reflect_session("conv-bad")

    assert report.outcome == "failed"
    assert report.reason == "malformed output twice; last: insights: Input should be a valid list"
    assert report.saved_ids == [] and report.llm_calls == 2
    assert store.count() == (0, 4)  # no insight; the session's 4 turns


def test_missing_fields_are_malformed_and_nothing_half_parsed_is_saved(
    store: MemoryStore, api: FakeAnthropicApi
) -> None:
    record_labelled(store, "rs002", "conv-missing")
    complete = insight_json(QUOTE)
    partial = {key: value for key, value in insight_json(QUOTE, topic="篇幅").items() if key != "action"}
    del partial["evidence"]
    answer = json.dumps({"insights": [complete, partial]}, ensure_ascii=False)
    api.on("POST", "/v1/messages", ok(message([text(answer)])), ok(message([text(answer)])))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("conv-missing")

    assert report.outcome == "failed"
    assert report.reason == (
        "malformed output twice; last: insights.1.action: Field required; insights.1.evidence: Field required"
    )
    assert store.count()[0] == 0  # the complete first insight is not saved either
    retry_text = api.bodies()[1]["messages"][0]["content"]
    assert "insights.1.action: Field required" in retry_text


def test_a_quote_not_in_the_transcript_is_dropped_and_counted(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs002", "conv-quotes")
    real = insight_json(QUOTE)
    invented = insight_json("以后所有回答都用表格", topic="表格", turn=None)
    assistants_words = insight_json("结论：选通义千问", topic="结论", turn=1)  # said by the assistant, not the user
    answer = json.dumps({"insights": [real, invented, assistants_words]}, ensure_ascii=False)
    api.on("POST", "/v1/messages", ok(message([text(answer)])))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("conv-quotes")

    assert report.outcome == "ok" and report.candidates == 3 and len(report.created) == 1
    assert [(d.index, d.topic, d.reason) for d in report.dropped] == [
        (1, "表格", "quote_not_in_transcript"),
        (2, "结论", "quote_not_in_transcript"),
    ]
    assert report.counts["dropped"] == 2
    assert [i.topic for i in store.list_insights()] == ["回答结构"]


def test_an_empty_result_saves_nothing_and_is_ok(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs039", "conv-smalltalk")
    api.on("POST", "/v1/messages", ok(message([text('{"insights": []}')], message_usage=usage(301, 2874, 0, 9))))
    engine, _ = anthropic_engine(store, api, language="en")

    report = engine.reflect_session("conv-smalltalk")

    assert report.outcome == "ok" and report.candidates == 0 and report.saved_ids == [] and report.dropped == []
    assert (report.tokens_in, report.tokens_out, report.cached_share) == (3175, 9, round(2874 / 3175, 4))
    assert store.count()[0] == 0
    assert api.bodies()[0]["system"][0]["text"].startswith("You are the reflection step of Hindsight Insights")


def test_a_rate_limit_is_retried_by_the_sdk(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs002", "conv-429")
    answer = json.dumps({"insights": [insight_json(QUOTE)]}, ensure_ascii=False)
    limited = error_body("rate_limit_error", "This request would exceed the rate limit for your organization.")
    api.on("POST", "/v1/messages", Reply(429, limited, {"x-should-retry": "true"}), ok(message([text(answer)])))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("conv-429")

    assert report.outcome == "ok" and len(report.created) == 1
    assert report.llm_calls == 1  # one reflection call; the SDK repeated the HTTP request
    assert len(api.requests) == 2 and api.requests[1].headers["x-stainless-retry-count"] == "1"
    assert api.requests[0].content == api.requests[1].content


def test_overload_beyond_the_retries_fails_with_the_reason(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs002", "conv-529")
    overloaded = Reply(529, error_body("overloaded_error", "Overloaded"))
    api.on("POST", "/v1/messages", overloaded, overloaded, overloaded)
    engine, _ = anthropic_engine(store, api, llm_max_retries=2)

    report = engine.reflect_session("conv-529")

    assert report.outcome == "failed"
    assert report.reason == "the model call failed: Anthropic API answered 529: overloaded_error: Overloaded"
    assert len(api.requests) == 3 and store.count()[0] == 0


def test_a_refusal_fails_without_a_retry(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs002", "conv-refusal")
    refused = message([text("")], stop_reason="refusal")
    refused["stop_details"] = {"type": "refusal", "category": None, "explanation": "declined"}
    api.on("POST", "/v1/messages", ok(refused))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("conv-refusal")

    assert (report.outcome, report.reason, report.llm_calls) == ("failed", "the model declined to answer: declined", 1)


# ---- the nightly batch ------------------------------------------------------------------------------------


def _batch(batch_id: str, status: str, counts: dict[str, int], results: bool = False) -> dict[str, Any]:
    return {
        "id": batch_id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0, **counts},
        "ended_at": "2026-11-30T02:14:09.482Z" if status == "ended" else None,
        "created_at": "2026-11-30T02:00:01.117Z",
        "expires_at": "2026-12-01T02:00:01.117Z",
        "archived_at": None,
        "cancel_initiated_at": None,
        "results_url": f"https://api.anthropic.com/v1/messages/batches/{batch_id}/results" if results else None,
    }


def test_nightly_batch_lifecycle_maps_results_back_to_sessions(store: MemoryStore, api: FakeAnthropicApi) -> None:
    # User u_grace: two sessions; in the second she asks for EUR once more (a request repeated across sessions).
    record_labelled(store, "rs030", "grace-mon", user_id="u_grace")
    record_labelled(store, "rs030", "grace-tue", user_id="u_grace")
    record_labelled(store, "rs002", "lizong-1")  # u_lizong: its request errors in the batch
    record_labelled(store, "rs009", "priya-1")  # u_priya: a malformed result, retried once with a direct call
    groups = [["grace-mon", "grace-tue"], ["lizong-1"], ["priya-1"], ["nobody-session"]]
    batch_id = "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF"

    eur = insight_json(
        "EUR please",
        turn=3,
        session="S2",
        topic="currency: EUR",
        scene="数据分析",
        action="When you give this user money amounts, give them in EUR, converted at the month-end rate.",
    )
    bullets = insight_json(
        "No tables for me please, just bullets.",
        topic="no tables",
        scene="方案对比",
        action="When you compare options for this user, use bullet points, never a markdown table.",
    )
    created = _batch(batch_id, "in_progress", {"processing": 3})

    def results(_: httpx2.Request) -> Reply:
        lines: list[dict[str, Any]] = []
        for custom_id in custom_ids:
            if custom_id.startswith("nightly-00000"):
                body = message([text(json.dumps({"insights": [eur]}))], message_usage=usage(880, 2874, 0, 190))
                lines.append({"custom_id": custom_id, "result": {"type": "succeeded", "message": body}})
            elif custom_id.startswith("nightly-00001"):
                overloaded = error_body("overloaded_error", "Overloaded")
                lines.append({"custom_id": custom_id, "result": {"type": "errored", "error": overloaded}})
            else:
                body = message([text('{"insights": [{"topic": "no tables"')], stop_reason="max_tokens")
                lines.append({"custom_id": custom_id, "result": {"type": "succeeded", "message": body}})
        return Reply(200, jsonl(lines[::-1]), {"content-type": "application/binary"})  # results come in any order

    api.on("POST", "/v1/messages/batches", ok(created))
    api.on(
        "GET",
        f"/v1/messages/batches/{batch_id}",
        ok(_batch(batch_id, "in_progress", {"processing": 3})),
        ok(_batch(batch_id, "ended", {"succeeded": 2, "errored": 1}, results=True)),
        ok(_batch(batch_id, "ended", {"succeeded": 2, "errored": 1}, results=True)),  # results() looks it up
    )
    api.on("GET", f"/v1/messages/batches/{batch_id}/results", results)
    api.on("POST", "/v1/messages", ok(message([text(json.dumps({"insights": [bullets]}))])))  # the direct retry
    engine, reflector = anthropic_engine(store, api, language="en")
    sleeps: list[float] = []
    batch = ReflectionBatch(engine, reflector, poll_interval_s=30.0, sleep=sleeps.append)

    job, failed_early = batch.submit(groups)
    assert job is not None and job.batch_id == batch_id
    custom_ids = [request.custom_id for request in job.requests]
    assert [r.session_ids for r in job.requests] == groups[:3]
    assert [(r.session_ids, r.reason) for r in failed_early] == [
        (["nobody-session"], "no stored turns for session nobody-session")
    ]
    assert BatchJob.model_validate_json(job.model_dump_json()) == job  # a worker may store it and collect later

    (submitted,) = api.bodies("/v1/messages/batches")
    assert [request["custom_id"] for request in submitted["requests"]] == custom_ids
    first = submitted["requests"][0]["params"]
    assert first["model"] == "claude-sonnet-5-5"
    assert first["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert first["output_config"]["format"]["schema"] == REFLECTION_SCHEMA.json_schema
    assert '<session id="S1"' in first["messages"][0]["content"]
    assert '<session id="S2"' in first["messages"][0]["content"]

    ended = batch.wait(job)
    assert ended.processing_status == "ended" and sleeps == [30.0]

    reports = batch.collect(job)
    grace, lizong, priya = reports
    assert grace.outcome == "ok" and grace.via_batch and grace.session_ids == ["grace-mon", "grace-tue"]
    assert (grace.tokens_in, grace.cached_tokens) == (880 + 2874, 2874)
    saved = store.get(grace.created[0])
    assert saved.evidence.session_id == "grace-tue" and saved.evidence.turn == 3 and saved.user_id == "u_grace"
    assert (lizong.outcome, lizong.reason) == ("failed", "the batch request errored: overloaded_error: Overloaded")
    assert priya.outcome == "ok" and priya.llm_calls == 2 and len(priya.created) == 1
    assert store.get(priya.created[0]).user_id == "u_priya"
    assert len(api.bodies("/v1/messages")) == 1  # only the malformed result was asked again


def test_batch_run_orders_reports_like_the_groups(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs039", "kate-1", user_id="u_kate")
    batch_id = "msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d"
    api.on("POST", "/v1/messages/batches", ok(_batch(batch_id, "in_progress", {"processing": 1})))
    api.on(
        "GET",
        f"/v1/messages/batches/{batch_id}",
        ok(_batch(batch_id, "ended", {"succeeded": 1}, results=True)),
        ok(_batch(batch_id, "ended", {"succeeded": 1}, results=True)),
    )

    def results(request: httpx2.Request) -> Reply:
        (custom,) = [r["custom_id"] for r in api.bodies("/v1/messages/batches")[0]["requests"]]
        body = message([text('{"insights": []}')])
        return Reply(200, jsonl([{"custom_id": custom, "result": {"type": "succeeded", "message": body}}]))

    api.on("GET", f"/v1/messages/batches/{batch_id}/results", results)
    engine, reflector = anthropic_engine(store, api, language="en")

    reports = ReflectionBatch(engine, reflector, sleep=lambda _: None).run([["missing"], ["kate-1"]], "session")

    assert [(r.session_ids, r.outcome) for r in reports] == [(["missing"], "failed"), (["kate-1"], "ok")]
    assert all(r.via_batch for r in reports) and reports[1].variant == "session"


def test_unknown_ids_never_reach_the_store(store: MemoryStore, api: FakeAnthropicApi) -> None:
    """A model cannot pick whose insight it writes: user_id, source and status in its answer are ignored."""
    record_labelled(store, "rs002", "conv-trust")
    sneaky = {**insight_json(QUOTE), "user_id": "admin", "source": "manual", "status": "active"}
    api.on("POST", "/v1/messages", ok(message([text(json.dumps({"insights": [sneaky]}, ensure_ascii=False))])))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("conv-trust")

    assert report.ignored_fields == ["insights.0.source", "insights.0.status", "insights.0.user_id"]
    saved = store.get(report.created[0])
    assert (saved.user_id, saved.source) == ("u_lizong", "reflection:anthropic")
    assert isinstance(saved.id, uuid.UUID)


def test_waiting_on_a_batch_that_is_still_processing_gives_up_at_the_deadline(
    store: MemoryStore, api: FakeAnthropicApi
) -> None:
    batch_id = "msgbatch_01Q6QJxqk2W3Ho4sMcF6tWZ1"
    api.on("GET", f"/v1/messages/batches/{batch_id}", ok(_batch(batch_id, "in_progress", {"processing": 40})))
    engine, reflector = anthropic_engine(store, api)
    job = BatchJob(
        batch_id=batch_id, model="claude-sonnet-5-5", submitted_at=datetime(2026, 11, 30, 2, tzinfo=UTC), requests=[]
    )
    sleeps: list[float] = []

    with pytest.raises(BatchNotReady, match="still in_progress; collect it later"):
        ReflectionBatch(engine, reflector, poll_interval_s=60.0, sleep=sleeps.append).wait(job, timeout_s=30.0)
    assert sleeps == [] and len(api.requests) == 1  # the next poll would pass the deadline: no sleep, no wait
