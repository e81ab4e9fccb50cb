"""The Dify plugin daemon's side of the stdio protocol, for tests and benchmarks.

It starts the unpacked plugin as the daemon does (`python -m main`, cwd = plugin dir, INSTALL_METHOD=local), waits for
the first heartbeat, writes one JSON request line per call and reads the session's stream until `end`.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from testkit.messages import PluginError, ToolOutput


class PluginProcess:
    def __init__(self, plugin_dir: Path, python: str, env: dict[str, str] | None = None) -> None:
        self.stdout_lines: list[str] = []
        self.heartbeat_times: list[float] = []  # time.monotonic() of each heartbeat
        self._sessions: dict[str, queue.Queue[dict[str, Any]]] = {}
        self._ready = threading.Event()
        self._lock = threading.Lock()
        environment = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
        environment |= {"INSTALL_METHOD": "local", "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process = subprocess.Popen(
            [python, "-m", "main"],
            cwd=plugin_dir,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        if not self._ready.wait(60):
            self.close()
            raise RuntimeError(f"plugin sent no heartbeat; stderr: {''.join(self.stderr_lines)[-3000:]}")

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if not line.strip():
                continue
            self.stdout_lines.append(line)
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # the daemon, too, skips what is not JSON (and reports it)
            if event.get("event") == "heartbeat":
                self.heartbeat_times.append(time.monotonic())
                self._ready.set()
            elif event.get("event") == "session":
                with self._lock:
                    inbox = self._sessions.get(event["session_id"])
                if inbox is not None:
                    inbox.put(event["data"])

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr_lines.append(line)

    def request(
        self,
        data: dict[str, Any],
        user_id: str = "dify-user-1",
        conversation_id: str | None = None,
        message_id: str | None = None,
        timeout_s: float = 120,
    ) -> list[dict[str, Any]]:
        session_id = str(uuid.uuid4())
        inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._sessions[session_id] = inbox
        envelope = {
            "session_id": session_id,
            "conversation_id": conversation_id,
            "message_id": message_id,
            "app_id": "app-1",
            "endpoint_id": None,
            "context": {},
            "event": "request",
            "data": {"user_id": user_id, **data},
        }
        line = json.dumps(envelope, ensure_ascii=False)
        if not line.isascii() and any("\ud800" <= ch <= "\udfff" for ch in line):
            line = json.dumps(envelope)  # an unpaired surrogate is not UTF-8: it travels as its JSON escape
        assert self.process.stdin is not None
        with self._lock:  # one whole line per request, as the daemon writes them
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        chunks: list[dict[str, Any]] = []
        try:
            while True:
                message = inbox.get(timeout=timeout_s)
                if message["type"] == "end":
                    return chunks
                if message["type"] == "error":
                    error = message["data"]
                    raise PluginError(str(error.get("error_type")), str(error.get("message")), raw=error)
                chunks.append(message["data"])
        finally:
            with self._lock:
                del self._sessions[session_id]

    def invoke_tool(
        self, tool: str, parameters: dict[str, Any], credentials: dict[str, Any], **kwargs: Any
    ) -> ToolOutput:
        data = {
            "type": "tool",
            "action": "invoke_tool",
            "provider": "hindsight_insights",
            "tool": tool,
            "credentials": credentials,
            "credential_type": "api-key",
            "tool_parameters": parameters,
        }
        return ToolOutput(self.request(data, **kwargs))

    def validate_credentials(self, credentials: dict[str, Any]) -> bool:
        data = {
            "type": "tool",
            "action": "validate_tool_credentials",
            "provider": "hindsight_insights",
            "credentials": credentials,
        }
        (answer,) = self.request(data)
        return bool(answer["result"])

    def close(self) -> None:
        # The SDK does not exit on stdin EOF (it spins), so it is terminated.
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
