"""Shared by the worker tests: a clock the test moves, and what a worker needs around it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError
from hindsight_insights.models import TurnDraft, TurnSignals
from hindsight_insights.reflection import ExtractionRequest, Extractor, ReflectedEvidence, ReflectedInsight, Reflector
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate, free_port
from worker.db import open_engine
from worker.runner import ReflectionWorker
from worker.tasks import TaskBoard


class FakeClock:
    """A clock that only moves when the test says so (thread-safe: leases are renewed from another thread)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, **delta: float) -> datetime:
        with self._lock:
            self._now += timedelta(**delta)
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment


# ---- a worker on a real store and a real state database -------------------------------------------------------------

NAME = re.compile(r"叫我(\S{1,4}?)就行")
TABLE = "用表格"


@dataclass
class RuleExtractor:
    """A model-free extractor (the offline one is being written elsewhere): 叫我X就行 teaches how to address the user;
    用表格 in two or more sessions (a request repeated across sessions, nightly) teaches to compare in a table.
    It keeps every request it got, so tests see what was reflected on, and can fail on purpose."""

    name: str = "rules"
    calls: list[tuple[str, list[str]]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # raised, one per call, before anything is extracted

    def extract(self, request: ExtractionRequest) -> Sequence[ReflectedInsight]:
        self.calls.append((request.variant, [s.session_id for s in request.sessions]))
        if self.failures:
            raise HindsightError(self.failures.pop(0))
        found: list[ReflectedInsight] = []
        for session in request.sessions:
            for turn in session.turns:
                match = NAME.search(turn.user_message)
                if match:
                    found.append(
                        ReflectedInsight(
                            topic="称呼",
                            kind="preference",
                            scene="general",
                            action=f"当你称呼这位用户时，叫他“{match.group(1)}”。",
                            evidence=ReflectedEvidence(
                                quote=match.group(0), turn=turn.turn_index, session=session.label
                            ),
                            confidence=0.8,
                        )
                    )
        tables = [(s, t) for s in request.sessions for t in s.turns if TABLE in t.user_message]
        if request.variant == "nightly" and len({s.session_id for s, _ in tables}) >= 2:
            session, turn = tables[-1]
            found.append(
                ReflectedInsight(
                    topic="对比格式",
                    kind="preference",
                    scene="方案对比",
                    action="当这位用户要你比较方案时，你用表格列出对比。",
                    evidence=ReflectedEvidence(quote=turn.user_message, turn=turn.turn_index, session=session.label),
                    confidence=0.8,
                )
            )
        return found

    def variants(self) -> list[str]:
        return [variant for variant, _ in self.calls]


def say(
    store: InsightStore,
    clock: FakeClock,
    session: str,
    user: str,
    text: str,
    signals: TurnSignals | None = None,
    scene: str = "general",
) -> None:
    """A turn recorded now (by the fake clock), as record_turn stores it."""
    draft = TurnDraft(
        session_id=session,
        user_id=user,
        scene=scene,
        user_message=text,
        assistant_message="好的。",
        signals=signals or TurnSignals(),
    )
    store.turns.append(draft, now=clock.now())


CORRECTION = TurnSignals(correction=True)
STOPPED = TurnSignals(stopped_generation=True)


def worker_settings(store: InsightStore, **changes: Any) -> Settings:
    return store.settings.model_copy(update={"timezone": "Asia/Shanghai", **changes})


@contextlib.contextmanager
def running_worker(
    store: InsightStore,
    url: str,
    clock: FakeClock,
    source: Reflector | Extractor,
    owner: str = "worker-test",
    **changes: Any,
) -> Iterator[ReflectionWorker]:
    engine = open_engine(url)
    try:
        yield ReflectionWorker(
            store, source, engine, settings=worker_settings(store, **changes), clock=clock, owner=owner
        )
    finally:
        engine.dispose()


# ---- an OpenAI-compatible endpoint the test controls ---------------------------------------------------------------


def completion_body(content: str, prompt_tokens: int = 900, completion_tokens: int = 100) -> dict[str, Any]:
    """A /v1/chat/completions response as vLLM sends it."""
    return {
        "id": "chatcmpl-5b1c0e7a9d3f4c2b",
        "object": "chat.completion",
        "created": 1764468000,
        "model": "Qwen/Qwen3-32B",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "reasoning_content": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


@dataclass
class Lesson:
    """What the stub answers when a prompt's transcript holds `quote` (a user's words, verbatim)."""

    quote: str
    topic: str
    action: str

    def insight(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "kind": "preference",
            "scene": "general",
            "observation": f"用户说“{self.quote}”。",
            "action": self.action,
            "evidence": {"quote": self.quote, "turn": None, "session": "S1"},
            "confidence": 0.9,
            "tags": [],
            "condition": None,
            "condition_detail": None,
        }


class ChatStub:
    """/v1/chat/completions on 127.0.0.1 for the openai reflector: each answer holds the lessons whose quote is in
    the prompt. The test can hold requests (to stop a worker at a known point, or to see two workers at once), and
    reads every request it got."""

    def __init__(self, lessons: Sequence[Lesson] = ()) -> None:
        self.lessons = list(lessons)
        self.prompts: list[tuple[str, str]] = []  # (variant, user part) of every request, in arrival order
        self.arrived = threading.Semaphore(0)  # released once per request as it arrives
        self.hold_from: int | None = None  # requests from this one on (1 = the first) wait until release()
        self.concurrent_wanted = 0  # hold every request until this many have been in flight at once (or 30 s)
        self.most_in_flight = 0
        self._released = threading.Event()
        self._lock = threading.Condition()
        self._in_flight = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.answer(self, body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        prompt = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        variant = "anomaly" if ("被标记为异常" in system or "was flagged" in system) else "session"
        with self._lock:
            self.prompts.append((variant, prompt))
            held = self.hold_from is not None and len(self.prompts) >= self.hold_from and not self._released.is_set()
            self._in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self._in_flight)
            self._lock.notify_all()
        self.arrived.release()
        try:
            if held:
                self._released.wait(120)
            with self._lock:
                self._lock.wait_for(lambda: self.most_in_flight >= self.concurrent_wanted, timeout=30)
            found = [lesson.insight() for lesson in self.lessons if lesson.quote in prompt]
            data = json.dumps(completion_body(json.dumps({"insights": found}, ensure_ascii=False))).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except OSError:  # the worker was killed while it waited: nobody reads the answer
            pass
        finally:
            with self._lock:
                self._in_flight -= 1

    def release(self) -> None:
        self._released.set()

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    def environment(self) -> dict[str, str]:
        """The settings that point the openai reflector at this stub."""
        return {
            "HINDSIGHT_REFLECTION_LLM": "openai",
            "HINDSIGHT_REFLECTION_BASE_URL": self.url,
            "HINDSIGHT_REFLECTION_MODEL": "Qwen/Qwen3-32B",
            "HINDSIGHT_REFLECTION_API_KEY": "sk-local",
            "HINDSIGHT_REFLECTION_OUTPUT": "json_schema",
            "HINDSIGHT_LLM_MAX_RETRIES": "0",
        }

    def asked(self, text: str) -> list[str]:
        """The variants of the requests whose transcript held `text`."""
        return [variant for variant, prompt in self.prompts if text in prompt]


# ---- worker processes ----------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


class WorkerProcess:
    """`python -m hindsight_cli worker`, as an operator runs it, with its output in a file."""

    def __init__(self, environment: dict[str, str], log: Path) -> None:
        self.log_path = log
        base = {name: value for name, value in os.environ.items() if not name.startswith("HINDSIGHT_")}
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "hindsight_cli", "worker"],
                cwd=ROOT,
                env={**base, **environment},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )

    def kill(self) -> None:
        """SIGKILL: no handler runs, nothing is cleaned up."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> int:
        """SIGTERM, as `docker stop` sends it: the running reflection finishes, then the process exits."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def ensure_stopped(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str, *processes: WorkerProcess) -> None:
    """Wait for other processes to get somewhere (not a schedule: the workers' own clocks drive them)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        for worker in processes:
            if worker.process.poll() is not None:
                raise AssertionError(f"a worker exited ({worker.process.returncode}) before {what}:\n{worker.output()}")
        if time.monotonic() > deadline:
            logs = "\n".join(worker.output()[-3000:] for worker in processes)
            raise AssertionError(f"timed out waiting for {what}\n{logs}")
        time.sleep(0.1)


# ---- sessions for real worker processes (test_worker_processes.py, test_cluster.py) ------------------------------

NAMES = ["阿强", "小李", "老王", "阿珍", "大刘", "小周"]


def lessons(count: int) -> list[Lesson]:
    return [Lesson(f"以后叫我{name}就行", "称呼", f"当你称呼这位用户时，叫他“{name}”。") for name in NAMES[:count]]


def record_sessions(store: InsightStore, count: int) -> list[str]:
    """`count` sessions, one user each, that ended an hour ago with a correction: each owes an anomaly reflection
    and a session-end reflection."""
    ended = datetime.now(UTC) - timedelta(hours=1)
    sessions = []
    for number, lesson in enumerate(lessons(count)):
        session, user = f"s{number}-{uuid.uuid4().hex[:6]}", f"u{number}"
        for offset, (text, signals) in enumerate(
            [("查一下本周的订单量", TurnSignals()), (lesson.quote, TurnSignals(correction=True))]
        ):
            draft = TurnDraft(
                session_id=session, user_id=user, user_message=text, assistant_message="好的", signals=signals
            )
            store.turns.append(draft, now=ended + timedelta(seconds=offset))
        sessions.append(session)
    return sessions


def environment(server: LocalWeaviate, project: Settings, state: str, stub: ChatStub) -> dict[str, str]:
    return {
        "HINDSIGHT_WEAVIATE_URL": server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": server.api_key,
        "HINDSIGHT_PROJECT": project.project,
        "HINDSIGHT_WORKER_STATE_URL": state,
        "HINDSIGHT_WORKER_POLL_INTERVAL_S": "0.5",
        "HINDSIGHT_WORKER_CLAIM_LEASE_S": "3",
        **stub.environment(),
    }


def done(engine: Engine, project: str, sessions: list[str]) -> bool:
    board = TaskBoard(engine, project, "observer", lease=timedelta(seconds=3), max_attempts=3)
    states = {(t.kind, t.subject): t.state for t in board.tasks() if t.kind in ("anomaly", "session")}
    return all(states.get((kind, s)) == "done" for s in sessions for kind in ("anomaly", "session"))
