"""The stand-in for Dify's inner API (testkit/inner_api.py), over real HTTP: framing, authentication, and LLM answers
the Dify SDK accepts. The daemon tests show the daemon reaching it; these pin the request/response handling."""

from __future__ import annotations

import http.client
import json
import struct
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from testkit.inner_api import InnerApi, ModelFailure, ReplyQueue, frame, unframe
from testkit.recording_llm import ScoresByWords
from testkit.sdk import LLMResultChunk, RerankResult

KEY = "inner-key"
LLM_REQUEST: dict[str, Any] = {
    "tenant_id": "tenant-1",
    "user_id": "lao-wang",
    "type": "llm",
    "provider": "langgenius/openai/openai",
    "model": "gpt-4o-mini",
    "mode": "chat",
    "completion_params": {},
    "prompt_messages": [{"role": "user", "content": "叫我老王", "name": "", "tool_calls": None, "tool_call_id": ""}],
    "tools": None,
    "stop": None,
}


@pytest.fixture
def inner_api() -> Iterator[InnerApi]:
    api = InnerApi(key=KEY, reply=lambda request: "好的，老王。以后都这样称呼您。")
    yield api
    api.close()


def post(api: InnerApi, path: str, body: dict[str, Any], key: str = KEY) -> httpx.Response:
    return httpx.post(f"{api.url}/inner/api/{path}", json=body, headers={"X-Inner-Api-Key": key})


def test_frames_are_dify_length_prefixed() -> None:
    packed = frame({"data": "你好", "error": ""})
    magic, reserved, header_length, length = struct.unpack_from("<BBHI", packed)
    assert (magic, reserved, header_length) == (0x0F, 0, 0x0A) and packed[8:14] == b"\x00" * 6
    assert length == len(packed) - 14 and json.loads(packed[14:]) == {"data": "你好", "error": ""}
    assert list(unframe(packed + frame({"n": 2}))) == [{"data": "你好", "error": ""}, {"n": 2}]
    with pytest.raises(ValueError, match="bad frame header"):
        list(unframe(b"\x01" + packed[1:]))


def test_non_streaming_answer_is_one_chunk_with_usage(inner_api: InnerApi) -> None:
    response = post(inner_api, "invoke/llm", {**LLM_REQUEST, "stream": False})
    assert response.status_code == 200 and response.headers["content-type"] == "text/event-stream"
    (only,) = list(unframe(response.content))
    assert only["error"] == ""
    chunk = LLMResultChunk.model_validate(only["data"])  # the SDK's own model parses it
    assert chunk.model == "gpt-4o-mini" and chunk.delta.message.content == "好的，老王。以后都这样称呼您。"
    assert chunk.delta.finish_reason == "" and chunk.delta.usage is not None
    assert chunk.delta.usage.total_tokens == chunk.delta.usage.prompt_tokens + chunk.delta.usage.completion_tokens


def test_streaming_answer_is_pieces_then_a_stop_chunk(inner_api: InnerApi) -> None:
    response = post(inner_api, "invoke/llm", {**LLM_REQUEST, "stream": True})
    chunks = [LLMResultChunk.model_validate(item["data"]) for item in unframe(response.content)]
    assert len(chunks) > 2
    assert "".join(str(c.delta.message.content) for c in chunks) == "好的，老王。以后都这样称呼您。"
    assert [c.delta.index for c in chunks] == list(range(len(chunks)))
    assert [c.delta.finish_reason for c in chunks][-1] == "stop" and chunks[-1].delta.usage is not None
    assert all(c.delta.usage is None and c.delta.finish_reason is None for c in chunks[:-1])


def test_every_call_is_recorded(inner_api: InnerApi) -> None:
    post(inner_api, "invoke/llm", {**LLM_REQUEST, "stream": False})
    (call,) = inner_api.calls_to("invoke/llm")
    assert call.body["prompt_messages"][0]["content"] == "叫我老王" and call.headers["x-inner-api-key"] == KEY


def test_a_reply_queue_answers_in_order_and_a_model_failure_is_an_error_frame(inner_api: InnerApi) -> None:
    inner_api.reply = ReplyQueue(["{not json", ModelFailure("[openai] Rate Limit Error: quota exceeded"), "{}"])
    answers = [list(unframe(post(inner_api, "invoke/llm", {**LLM_REQUEST, "stream": False}).content)) for _ in "1234"]
    assert [LLMResultChunk.model_validate(a[0]["data"]).delta.message.content for a in (answers[0], answers[2])] == [
        "{not json",
        "{}",
    ]
    # Dify's convert_to_event_stream: BaseBackwardsInvocationResponse(error=str(e)), data left null.
    assert answers[1] == [{"data": None, "error": "[openai] Rate Limit Error: quota exceeded"}]
    assert answers[3] == [{"data": None, "error": "the test stand-in has no reply left for this call"}]


def test_a_wrong_key_gets_404_as_from_dify(inner_api: InnerApi) -> None:
    assert post(inner_api, "invoke/llm", LLM_REQUEST, key="wrong").status_code == 404
    assert len(inner_api.calls) == 1  # still recorded, for the test to see what was sent


def test_tenant_and_user_are_required(inner_api: InnerApi) -> None:
    assert post(inner_api, "invoke/llm", {**LLM_REQUEST, "tenant_id": ""}).status_code == 400


def test_other_backwards_calls_fail_as_dify_reports_a_failure(inner_api: InnerApi) -> None:
    response = post(inner_api, "invoke/tool", {"tenant_id": "t", "user_id": "u", "provider": "x", "tool": "y"})
    assert response.json() == {"data": None, "error": "invoke/tool is not answered by the test stand-in"}


def test_a_chunked_request_body_is_read(inner_api: InnerApi) -> None:
    """Go's HTTP client (the daemon) sends bodies of unknown length chunked."""
    host, port = inner_api.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    body = json.dumps({**LLM_REQUEST, "stream": False}).encode()
    connection.request(
        "POST",
        "/inner/api/invoke/llm",
        body=iter([body[:40], body[40:]]),
        headers={"X-Inner-Api-Key": KEY, "Content-Type": "application/json"},
        encode_chunked=True,
    )
    response = connection.getresponse()
    assert response.status == 200 and len(list(unframe(response.read()))) == 1
    connection.close()
    assert inner_api.calls_to("invoke/llm")[0].body["user_id"] == "lao-wang"


RERANK_REQUEST: dict[str, Any] = {
    "tenant_id": "tenant-1",
    "user_id": "lao-wang",
    "type": "rerank",
    "provider": "langgenius/cohere/cohere",
    "model": "rerank-multilingual-v3.0",
    "model_type": "rerank",
    "query": "退款多久到账？",
    "docs": ["退货寄回地址", "退款到账时间", "七天无理由退货"],
    "score_threshold": 0.1,
    "top_n": 2,
}


def test_a_rerank_is_answered_as_dify_answers_it(inner_api: InnerApi) -> None:
    """Plain JSON (not frames): the documents at the threshold or more, best first, at most top_n, each with its
    index in the request; the SDK's RerankResult reads it."""
    inner_api.rerank = lambda request: ScoresByWords({"退款": 0.91, "七天": 0.4}, otherwise=0.05)(request["docs"])
    response = post(inner_api, "invoke/rerank", RERANK_REQUEST)
    assert response.status_code == 200 and response.json()["error"] == ""
    result = RerankResult.model_validate(response.json()["data"])
    assert result.model == "rerank-multilingual-v3.0"
    assert [(doc.index, doc.text, doc.score) for doc in result.docs] == [
        (1, "退款到账时间", 0.91),
        (2, "七天无理由退货", 0.4),
    ]
    everything = post(inner_api, "invoke/rerank", {**RERANK_REQUEST, "score_threshold": 0.0, "top_n": 3}).json()
    assert [doc["index"] for doc in everything["data"]["docs"]] == [1, 2, 0]


def test_a_missing_rerank_model_is_reported_as_dify_reports_it(inner_api: InnerApi) -> None:
    response = post(inner_api, "invoke/rerank", RERANK_REQUEST)  # the default: no rerank model in the workspace
    assert response.json() == {"data": None, "error": "Model rerank-multilingual-v3.0 credentials is not initialized."}
