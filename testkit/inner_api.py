"""A stand-in for Dify's inner API, where the plugin daemon sends a plugin's backwards calls (DIFY_INNER_API_URL).

It records every call and answers an LLM invocation as Dify's API server does (api/controllers/inner_api/plugin/
plugin.py, PluginInvokeLLMApi; the daemon's internal/core/dify_invocation/calldify):

- request: `POST {url}/inner/api/invoke/llm`, header `X-Inner-Api-Key`, JSON body `{tenant_id, user_id, type: "llm",
  provider, model, mode, completion_params, prompt_messages, tools, stop, stream}`; a wrong key gets 404 (Dify's
  plugin_inner_api_only), a body without tenant or user 400;
- response: a stream of length-prefixed frames (magic 0x0F, reserved byte, header length 0x000A, data length, six
  reserved bytes, little endian: libs/helper.py length_prefixed_response), each holding
  `{"data": LLMResultChunk, "error": ""}`. Streaming sends one chunk per piece of text and then one with usage and
  finish_reason "stop"; non-streaming sends the whole message in one chunk with usage and finish_reason "", as
  PluginModelBackwardsInvocation.invoke_llm does.

A model that fails (the provider's quota, a rate limit, a timeout) is answered as Dify's
BaseBackwardsInvocation.convert_to_event_stream reports an exception: one frame `{"data": null, "error": message}`.
A test chooses the answers: `reply` is called with each request; `ReplyQueue` answers with the next of a list of
texts and `ModelFailure`s.

A rerank invocation (PluginInvokeRerankApi) is answered as Dify answers it: `POST {url}/inner/api/invoke/rerank`, body
`{tenant_id, user_id, type: "rerank", provider, model, model_type: "rerank", query, docs, score_threshold, top_n}`;
the response is plain JSON, `{"data": RerankResult, "error": ""}` (BaseBackwardsInvocationResponse), where
RerankResult is `{model, docs: [{index, text, score}]}`: the documents scoring `score_threshold` or more, best first,
at most `top_n` (as ModelInstance.invoke_rerank's providers filter them). A failure (the model not configured in the
workspace, its quota) is `{"data": null, "error": message}`. `rerank` gives one score per document, or raises
ModelFailure. Other backwards calls are recorded and answered `{"data": null, "error": ...}`, as Dify answers a failed
call.
"""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAGIC = 0x0F
HEADER_LENGTH = 0x0A
PREFIX = "/inner/api/"

LLMReply = Callable[[dict[str, Any]], str]
RerankReply = Callable[[dict[str, Any]], list[float]]


class ModelFailure(Exception):
    """Raised by a reply: the workspace's model failed, and Dify streams its message back as an error frame."""


@dataclass
class ReplyQueue:
    """Answers each LLM invocation with the next reply in order: a text, or a ModelFailure to report."""

    replies: list[str | ModelFailure]

    def __call__(self, request: dict[str, Any]) -> str:
        if not self.replies:
            raise ModelFailure("the test stand-in has no reply left for this call")
        reply = self.replies.pop(0)
        if isinstance(reply, ModelFailure):
            raise reply
        return reply


def frame(payload: dict[str, Any]) -> bytes:
    """One length-prefixed frame, as Dify's length_prefixed_response packs it."""
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return struct.pack("<BBHI", MAGIC, 0, HEADER_LENGTH, len(data)) + b"\x00" * 6 + data


def unframe(stream: bytes) -> Iterator[dict[str, Any]]:
    """The frames of a response body, as the daemon's LengthPrefixedChunking reads them."""
    offset = 0
    while offset < len(stream):
        magic, _, header_length, length = struct.unpack_from("<BBHI", stream, offset)
        if magic != MAGIC or header_length != HEADER_LENGTH:
            raise ValueError(f"bad frame header at byte {offset}: magic {magic:#x}, header length {header_length}")
        start = offset + 4 + header_length
        yield json.loads(stream[start : start + length])
        offset = start + length


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """Dify's LLMUsage, every field present (the daemon validates them all)."""
    prompt_price = round(prompt_tokens * 0.15e-6, 10)
    completion_price = round(completion_tokens * 0.6e-6, 10)
    return {
        "prompt_tokens": prompt_tokens,
        "prompt_unit_price": "0.15",
        "prompt_price_unit": "0.000001",
        "prompt_price": str(prompt_price),
        "completion_tokens": completion_tokens,
        "completion_unit_price": "0.6",
        "completion_price_unit": "0.000001",
        "completion_price": str(completion_price),
        "total_tokens": prompt_tokens + completion_tokens,
        "total_price": str(round(prompt_price + completion_price, 10)),
        "currency": "USD",
        "latency": 0.05,
    }


def llm_chunks(request: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """The LLMResultChunk objects Dify streams back for `text`."""
    model = str(request.get("model", ""))
    prompt_tokens = sum(len(str(m.get("content", ""))) for m in request.get("prompt_messages") or [])
    completion_tokens = max(1, len(text) // 4)

    def chunk(index: int, content: str, finish_reason: str | None, with_usage: bool) -> dict[str, Any]:
        return {
            "model": model,
            "prompt_messages": [],
            "system_fingerprint": None,
            "delta": {
                "index": index,
                "message": {"role": "assistant", "content": content, "name": None, "tool_calls": []},
                "usage": usage(prompt_tokens, completion_tokens) if with_usage else None,
                "finish_reason": finish_reason,
            },
        }

    if not request.get("stream", True):
        return [chunk(0, text, "", True)]
    pieces = [text[i : i + 8] for i in range(0, len(text), 8)] or [""]
    return [chunk(i, piece, None, False) for i, piece in enumerate(pieces)] + [chunk(len(pieces), "", "stop", True)]


def no_rerank_model(request: dict[str, Any]) -> list[float]:
    """The stand-in's default: no rerank model set up in the workspace, in the words Dify's model manager uses."""
    raise ModelFailure(f"Model {request.get('model')} credentials is not initialized.")


def rerank_result(request: dict[str, Any], scores: list[float]) -> dict[str, Any]:
    """Dify's RerankResult for a request and one score per document: filtered, best first, at most top_n."""
    docs = [str(doc) for doc in request.get("docs") or []]
    if len(scores) != len(docs):
        raise ValueError(f"the test gave {len(scores)} scores for {len(docs)} documents")
    threshold = request.get("score_threshold")
    ranked = sorted(
        (
            (round(score, 6), index, doc)
            for index, (doc, score) in enumerate(zip(docs, scores, strict=True))
            if threshold is None or score >= threshold
        ),
        key=lambda scored: -scored[0],
    )
    top_n = request.get("top_n")
    kept = [{"index": index, "text": doc, "score": score} for score, index, doc in ranked]
    return {"model": str(request.get("model", "")), "docs": kept[:top_n] if top_n else kept}


@dataclass
class InnerCall:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class InnerApi:
    """The stand-in server on 127.0.0.1; `reply` decides the text of each LLM answer."""

    key: str
    reply: LLMReply = field(default=lambda request: "{}")
    rerank: RerankReply = field(default=no_rerank_model)
    calls: list[InnerCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for the loop's next poll.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def record(self, call: InnerCall) -> None:
        with self._lock:
            self.calls.append(call)

    def calls_to(self, path: str) -> list[InnerCall]:
        with self._lock:
            return [call for call in self.calls if call.path == path]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler_for(api: InnerApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the calls are recorded; stderr stays quiet

        def _body(self) -> bytes:
            if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))
            # Go's net/http streams a request body of unknown length chunked; http.server does not decode it.
            parts = []
            while size := int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after each chunk
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)

        def do_POST(self) -> None:
            raw = self._body()
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_unparsed": raw.decode(errors="replace")}
            path = self.path.split("?", 1)[0]
            call = InnerCall(path.removeprefix(PREFIX), {k.lower(): v for k, v in self.headers.items()}, body)
            api.record(call)
            if self.headers.get("X-Inner-Api-Key") != api.key or not path.startswith(PREFIX):
                self._send(404, "application/json", b'{"message": "Not Found"}')
            elif not isinstance(body, dict) or not body.get("tenant_id") or not body.get("user_id"):
                self._send(400, "application/json", b'{"message": "tenant_id and user_id are required"}')
            elif call.path == "invoke/llm":
                try:
                    text = api.reply(body)
                except ModelFailure as failure:
                    frames = frame({"data": None, "error": str(failure)})
                else:
                    frames = b"".join(frame({"data": chunk, "error": ""}) for chunk in llm_chunks(body, text))
                self._send(200, "text/event-stream", frames)
            elif call.path == "invoke/rerank":
                answer: dict[str, Any]
                try:
                    answer = {"data": rerank_result(body, api.rerank(body)), "error": ""}
                except ModelFailure as failure:
                    answer = {"data": None, "error": str(failure)}
                self._send(200, "application/json", json.dumps(answer, ensure_ascii=False).encode())
            else:
                error = {"data": None, "error": f"{call.path} is not answered by the test stand-in"}
                self._send(200, "application/json", json.dumps(error).encode())

        def _send(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
