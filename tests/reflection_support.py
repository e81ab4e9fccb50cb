"""Shared by the reflection tests: stored sessions from the labelled set, and the Anthropic Messages API as seen
through the SDK's own HTTP client with a mock transport (recorded-style bodies: ids, usage with cache fields,
request-id headers, error envelopes)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from pydantic import SecretStr

from hindsight_insights.config import Settings
from hindsight_insights.models import Turn, TurnDraft, TurnSignals
from hindsight_insights.reflection import AnthropicReflector, ReflectionEngine
from hindsight_insights.store.ports import ReflectionStore

SESSIONS_FILE = Path(__file__).resolve().parent.parent / "bench" / "data" / "reflection_sessions.json"


def labelled_session(session_id: str) -> dict[str, Any]:
    """A session of the hand-written reflection set (tune split only: the holdout is never used for tuning)."""
    sessions = json.loads(SESSIONS_FILE.read_text(encoding="utf-8"))["sessions"]
    found: dict[str, Any] = next(s for s in sessions if s["id"] == session_id)
    assert found["split"] == "tune", "tests and prompt work use the tune split only"
    return found


def record(
    store: ReflectionStore,
    session_id: str,
    user_id: str,
    scene: str,
    turns: list[tuple[str, str]],
    signals: dict[int, TurnSignals] | None = None,
) -> list[Turn]:
    """Store the turns as record_turn does, and return the session as reflection reads it."""
    for index, (user, assistant) in enumerate(turns):
        draft = TurnDraft(
            session_id=session_id,
            user_id=user_id,
            scene=scene,
            user_message=user,
            assistant_message=assistant,
            signals=(signals or {}).get(index, TurnSignals()),
        )
        store.turns.append(draft)
    return store.turns.session(session_id)


def record_labelled(
    store: ReflectionStore, labelled_id: str, session_id: str, user_id: str | None = None
) -> list[Turn]:
    session = labelled_session(labelled_id)
    turns = [(turn["user"], turn["assistant"]) for turn in session["turns"]]
    return record(store, session_id, user_id or session["user_id"], session["scene"], turns)


# ---- the Messages API ---------------------------------------------------------------------------------------

_REQUEST_IDS = iter(f"req_011CWx{n:018d}" for n in range(10**6))


def usage(
    input_tokens: int = 389, cache_read: int = 0, cache_write: int = 2874, output_tokens: int = 214
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "cache_creation": {"ephemeral_5m_input_tokens": cache_write, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def message(
    content: list[dict[str, Any]],
    *,
    model: str = "claude-sonnet-5-5",
    stop_reason: str = "end_turn",
    message_usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Messages API response body."""
    return {
        "id": "msg_01HCDu5LRGeP2o7s2xGmxyx8",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": message_usage or usage(),
    }


def tool_use(insights: Any, name: str = "record_insights") -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_01D7FLrfh4GYq7yT1ULFeyMV", "name": name, "input": {"insights": insights}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking() -> dict[str, Any]:
    """Adaptive thinking with display omitted: the block is there, its text is not."""
    return {"type": "thinking", "thinking": "", "signature": "EqQBCkYIBxgCKkBk3tbGfjLw0Vx8uPsm0D2CZ4n3c2aRb"}


def error_body(kind: str, text_: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text_}, "request_id": next(_REQUEST_IDS)}


@dataclass
class Reply:
    status: int
    body: Any  # JSON, or bytes sent as they are (JSONL results)
    headers: dict[str, str] = field(default_factory=dict)


Route = Callable[[httpx2.Request], Reply]


@dataclass
class FakeAnthropicApi:
    """Answers each path from its own queue of replies, and keeps every request the SDK sent."""

    replies: dict[str, list[Reply | Route]] = field(default_factory=dict)
    requests: list[httpx2.Request] = field(default_factory=list)

    def on(self, method: str, path: str, *replies: Reply | Route) -> None:
        self.replies.setdefault(f"{method} {path}", []).extend(replies)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        queue = self.replies.get(f"{request.method} {request.url.path}")
        assert queue, f"unexpected {request.method} {request.url.path}"
        reply = queue.pop(0)
        if callable(reply):
            reply = reply(request)
        headers = {"request-id": next(_REQUEST_IDS), "anthropic-organization-id": "0b5d2bc4-org", **reply.headers}
        if isinstance(reply.body, bytes):
            return httpx2.Response(reply.status, content=reply.body, headers=headers)
        return httpx2.Response(reply.status, json=reply.body, headers=headers)

    def bodies(self, path: str = "/v1/messages") -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests if r.url.path == path and r.method == "POST"]

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))


def anthropic_settings(settings: Settings, **changes: Any) -> Settings:
    # model_copy does not validate: values go in as the settings hold them.
    return settings.model_copy(
        update={"anthropic_api_key": SecretStr("sk-ant-api03-test"), "llm_max_retries": 2, **changes},
    )


def anthropic_engine(
    store: ReflectionStore, api: FakeAnthropicApi, **changes: Any
) -> tuple[ReflectionEngine, AnthropicReflector]:
    settings = anthropic_settings(store.settings, **changes)
    reflector = AnthropicReflector.from_settings(settings, http_client=api.client())
    return ReflectionEngine(store, reflector, settings=settings), reflector


def ok(body: dict[str, Any]) -> Reply:
    return Reply(200, body, {"content-type": "application/json"})


def insight_json(
    quote: str,
    *,
    turn: int | None = 1,
    topic: str = "回答结构",
    kind: str = "preference",
    scene: str = "方案对比",
    action: str = "当这位用户要你比较方案时，你先给出结论，再给最多三个理由。",
    condition: str | None = None,
    condition_detail: str | None = None,
    session: str | None = "S1",
    confidence: float = 0.9,
) -> dict[str, Any]:
    return {
        "topic": topic,
        "kind": kind,
        "scene": scene,
        "observation": f"用户说“{quote}”。",
        "action": action,
        "evidence": {"quote": quote, "turn": turn, "session": session},
        "confidence": confidence,
        "tags": ["格式"],
        "condition": condition,
        "condition_detail": condition_detail,
    }


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def iter_user_texts(bodies: list[dict[str, Any]]) -> Iterator[str]:
    for body in bodies:
        yield body["messages"][0]["content"]
