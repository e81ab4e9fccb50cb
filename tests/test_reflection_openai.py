"""Reflection through the openai SDK against a loopback HTTP server that answers as OpenAI-compatible servers do
(vLLM, DeepSeek, Qwen): their response bodies, usage fields and error envelopes; into the in-memory store."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai._base_client
import pytest
from pydantic import SecretStr

from hindsight_insights.config import Settings
from hindsight_insights.reflection import REFLECTION_SCHEMA, OpenAICompatibleReflector, ReflectionEngine
from hindsight_insights.weaviate_server import free_port
from testkit.memory_store import MemoryStore
from tests.reflection_support import insight_json, record_labelled


@pytest.fixture
def store(project_settings: Settings) -> MemoryStore:
    """The store in memory (testkit/memory_store.py): reflection needs the turn log and the saving, not Weaviate."""
    return MemoryStore(project_settings)


QUOTE = "以后先说结论，选哪个，然后最多给三个理由"


@dataclass
class ChatServer:
    """A scripted /v1/chat/completions: each request gets the next (status, body) and is kept for the asserts."""

    url: str
    replies: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    port = free_port()
    chat = ChatServer(url=f"http://127.0.0.1:{port}/v1")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            chat.requests.append(json.loads(self.rfile.read(length)))
            chat.headers.append({name.lower(): value for name, value in self.headers.items()})
            assert self.path == "/v1/chat/completions", self.path
            status, body = chat.replies.pop(0)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield chat
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai._base_client, "INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr(openai._base_client, "MAX_RETRY_DELAY", 0.002)


def completion(
    content: str | None = None,
    *,
    tool_arguments: str | None = None,
    model: str = "Qwen/Qwen3-32B",
    usage: dict[str, Any] | None = None,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "reasoning_content": None}
    if tool_arguments is not None:
        message["tool_calls"] = [
            {
                "id": "chatcmpl-tool-6f1f0c9a3b2e4d5c",
                "type": "function",
                "function": {"name": "record_insights", "arguments": tool_arguments},
            }
        ]
        finish_reason = "tool_calls"
    return {
        "id": "chatcmpl-9d2c6f4b8e1a4f0b",
        "object": "chat.completion",
        "created": 1764468000,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": usage
        or {
            "prompt_tokens": 3412,
            "completion_tokens": 188,
            "total_tokens": 3600,
            "prompt_tokens_details": {"cached_tokens": 3072},
        },
    }


def settings_for(settings: Settings, url: str, **changes: Any) -> Settings:
    return settings.model_copy(
        update={
            "reflection_llm": "openai",
            "reflection_base_url": url,
            "reflection_model": "Qwen/Qwen3-32B",
            "reflection_api_key": SecretStr("sk-local"),
            "llm_max_retries": 2,
            **changes,
        }
    )


def engine_for(store: MemoryStore, url: str, **changes: Any) -> tuple[ReflectionEngine, OpenAICompatibleReflector]:
    settings = settings_for(store.settings, url, **changes)
    reflector = OpenAICompatibleReflector.from_settings(settings)
    return ReflectionEngine(store, reflector, settings=settings), reflector


GOOD = json.dumps({"insights": [insight_json(QUOTE)]}, ensure_ascii=False)


def test_json_schema_response_format_like_vllm(store: MemoryStore, server: ChatServer) -> None:
    record_labelled(store, "rs002", "conv-vllm")
    server.replies.append((200, completion(GOOD)))
    engine, _ = engine_for(store, server.url)

    report = engine.reflect_session("conv-vllm")

    assert report.outcome == "ok" and len(report.created) == 1 and report.source == "reflection:openai"
    assert (report.tokens_in, report.tokens_out, report.cached_tokens) == (3412, 188, 3072)
    assert report.cached_share == round(3072 / 3412, 4) and report.model == "Qwen/Qwen3-32B"
    (body,) = server.requests
    assert body["model"] == "Qwen/Qwen3-32B" and body["max_tokens"] == store.settings.reflection_max_output_tokens
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "record_insights", "schema": REFLECTION_SCHEMA.json_schema, "strict": True},
    }
    system, user = body["messages"]
    assert system["role"] == "system" and system["content"].startswith("你是 Hindsight Insights")
    assert user["role"] == "user" and QUOTE in user["content"]
    assert server.headers[0]["authorization"] == "Bearer sk-local"
    assert store.get(report.created[0]).user_id == "u_lizong"


def test_auto_falls_back_to_a_tool_call_once_like_deepseek(store: MemoryStore, server: ChatServer) -> None:
    record_labelled(store, "rs002", "conv-ds-1")
    record_labelled(store, "rs002", "conv-ds-2")
    unavailable = {
        "error": {
            "message": "This response_format type is unavailable now",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request_error",
        }
    }
    deepseek_usage = {
        "prompt_tokens": 3390,
        "completion_tokens": 201,
        "total_tokens": 3591,
        "prompt_tokens_details": {"cached_tokens": 0},
        "prompt_cache_hit_tokens": 3328,
        "prompt_cache_miss_tokens": 62,
    }
    arguments = json.dumps({"insights": [insight_json(QUOTE)]}, ensure_ascii=False)
    server.replies += [
        (400, unavailable),
        (200, completion(tool_arguments=arguments, model="deepseek-chat", usage=deepseek_usage)),
        (200, completion(tool_arguments='{"insights": []}', model="deepseek-chat", usage=deepseek_usage)),
    ]
    engine, reflector = engine_for(store, server.url, reflection_model="deepseek-chat")

    first = engine.reflect_session("conv-ds-1")
    second = engine.reflect_session("conv-ds-2")

    assert first.outcome == "ok" and len(first.created) == 1 and first.cached_tokens == 3328
    assert second.outcome == "ok" and reflector.mode == "tool"
    assert [("response_format" in r, "tools" in r) for r in server.requests] == [
        (True, False),
        (False, True),
        (False, True),  # the fallback is remembered: no rejected request the second time
    ]
    assert server.requests[1]["tool_choice"] == {"type": "function", "function": {"name": "record_insights"}}
    assert server.requests[1]["tools"][0]["function"]["parameters"] == REFLECTION_SCHEMA.json_schema


def test_json_mode_when_neither_schema_nor_tools_are_served(store: MemoryStore, server: ChatServer) -> None:
    record_labelled(store, "rs002", "conv-json-mode")
    vllm_error = {"object": "error", "message": "tool_choice is not supported", "type": "BadRequestError", "code": 400}
    server.replies += [
        (400, {"object": "error", "message": "json_schema is not supported", "type": "BadRequestError", "code": 400}),
        (400, vllm_error),
        (200, completion(f"```json\n{GOOD}\n```")),
    ]
    engine, reflector = engine_for(store, server.url)

    report = engine.reflect_session("conv-json-mode")

    assert report.outcome == "ok" and len(report.created) == 1 and reflector.mode == "json_object"
    last = server.requests[-1]
    assert last["response_format"] == {"type": "json_object"} and "tools" not in last
    assert last["messages"][0]["content"].endswith(json.dumps(REFLECTION_SCHEMA.json_schema, ensure_ascii=False))


def test_an_explicit_mode_never_falls_back(store: MemoryStore, server: ChatServer) -> None:
    record_labelled(store, "rs002", "conv-strict")
    server.replies.append((400, {"error": {"message": "This response_format type is unavailable now"}}))
    engine, _ = engine_for(store, server.url, reflection_output="json_schema")

    report = engine.reflect_session("conv-strict")

    assert report.outcome == "failed" and len(server.requests) == 1
    assert (
        report.reason
        == "the model call failed: the chat endpoint answered 400: This response_format type is unavailable now"
    )


def test_server_errors_are_retried_by_the_sdk_then_a_malformed_answer_once_by_the_engine(
    store: MemoryStore, server: ChatServer
) -> None:
    record_labelled(store, "rs002", "conv-503")
    busy = {"object": "error", "message": "The server is overloaded", "type": "ServiceUnavailableError", "code": 503}
    server.replies += [
        (503, busy),
        (200, completion('{"insights": [{"topic": "回答结构"}]}')),
        (200, completion(GOOD)),
    ]
    engine, _ = engine_for(store, server.url)

    report = engine.reflect_session("conv-503")

    assert report.outcome == "ok" and len(report.created) == 1
    assert report.llm_calls == 2 and len(server.requests) == 3
    assert "insights.0.kind: Field required" in server.requests[2]["messages"][1]["content"]


def test_an_unreachable_endpoint_fails_with_the_reason(store: MemoryStore) -> None:
    record_labelled(store, "rs002", "conv-down")
    engine, _ = engine_for(store, f"http://127.0.0.1:{free_port()}/v1", llm_max_retries=0)

    report = engine.reflect_session("conv-down")

    assert report.outcome == "failed" and report.reason is not None
    assert report.reason.startswith("the model call failed: the chat endpoint is unreachable")


def test_the_settings_must_name_an_endpoint(settings: Settings) -> None:
    with pytest.raises(Exception, match="HINDSIGHT_REFLECTION_BASE_URL"):
        OpenAICompatibleReflector.from_settings(settings.model_copy(update={"reflection_llm": "openai"}))
