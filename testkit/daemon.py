"""Dify's plugin daemon as Dify runs it, and the calls Dify's API server makes to it.

`DaemonStack.start` brings up PostgreSQL, Redis, the inner-API stand-in and the daemon (`dify-plugin-daemon`), each
on a free loopback port with its own temporary data, after `dify migrate` has created the daemon's schema.
`DaemonClient` speaks the daemon's HTTP API the way Dify's API server does: upload and install a package, poll the
install task, then dispatch tool calls and credential checks, whose answers stream back as server-sent events.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from hindsight_insights.weaviate_server import free_port
from testkit.inner_api import InnerApi
from testkit.messages import PluginError, ToolOutput, parse_session_error
from testkit.runtimes import Toolchain
from testkit.services import Postgres, Redis, ServiceError

PLUGIN_ID = "hindsight-insights/hindsight_insights"
PROVIDER = "hindsight_insights"
# How this machine reaches the package index (a proxy, its CA): the daemon hands these to `uv` when it installs.
NETWORK_SETTINGS = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)


def daemon_environment(
    workdir: Path, port: int, key: str, postgres: Postgres, redis: Redis, inner_api: InnerApi, tools: Toolchain
) -> dict[str, str]:
    """The daemon's settings (names from its internal/types/app/config.go); nothing else of this process leaks in."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(workdir))}
    base |= {name: os.environ[name] for name in NETWORK_SETTINGS if name in os.environ}
    return tools.environ(base) | {
        "SERVER_HOST": "127.0.0.1",
        "SERVER_PORT": str(port),
        "SERVER_KEY": key,
        "PLATFORM": "local",
        "DB_TYPE": "postgresql",
        "DB_HOST": "127.0.0.1",
        "DB_PORT": str(postgres.port),
        "DB_USERNAME": postgres.user,
        "DB_PASSWORD": postgres.password,
        "DB_DATABASE": "dify_plugin",
        "DB_SSL_MODE": "disable",
        "REDIS_HOST": "127.0.0.1",
        "REDIS_PORT": str(redis.port),
        "REDIS_PASSWORD": redis.password,
        "REDIS_DB": "0",
        "PLUGIN_STORAGE_TYPE": "local",
        "PLUGIN_STORAGE_LOCAL_ROOT": str(workdir / "storage"),
        "PLUGIN_WORKING_PATH": str(workdir / "cwd"),
        "PLUGIN_INSTALLED_PATH": "plugin",
        "PLUGIN_PACKAGE_CACHE_PATH": "plugin_packages",
        "PERSISTENCE_STORAGE_PATH": "persistence",
        "FORCE_VERIFYING_SIGNATURE": "false",  # our package is unsigned
        "PYTHON_INTERPRETER_PATH": str(tools.python),
        "UV_PATH": str(tools.uv),
        "PIP_MIRROR_AUTO_DETECT": "false",  # otherwise it probes outside mirrors
        "DIFY_INNER_API_URL": inner_api.url,
        "DIFY_INNER_API_KEY": inner_api.key,
        "PLUGIN_REMOTE_INSTALLING_ENABLED": "false",
        "PROMETHEUS_ENABLED": "false",
        "GIN_MODE": "release",
    }


@dataclass
class Daemon:
    binary: Path
    env: dict[str, str]
    workdir: Path
    port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [str(self.binary)], cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServiceError(f"the daemon exited with {self.process.returncode}: {self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health/check", timeout=1).json().get("status") == "ok":
                    return
            time.sleep(0.1)
        self.stop()
        raise ServiceError(f"the daemon was not healthy within {timeout_s:.0f}s: {self.log_tail()}")

    def stop(self, timeout_s: float = 15) -> None:
        """SIGTERM, as Dify's container stops it; then wait for the plugin processes it started, which exit by
        themselves once their stdin closes, and end any that do not."""
        if self.process is None or self.process.poll() is not None:
            return
        plugins = descendants(self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        deadline = time.monotonic() + timeout_s
        while any(start_time(pid) == started for pid, started in plugins) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid, started in plugins:
            if start_time(pid) == started:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, chars: int = 3000) -> str:
        return self.log()[-chars:]


def start_time(pid: int) -> str | None:
    """A process's start time (field 22 of /proc/PID/stat): with the pid, it names the process even if the pid
    is reused later."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> list[tuple[int, str]]:
    """The processes started by `pid` and by its children, with their start times, from /proc (Linux)."""
    found: list[tuple[int, str]] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            for child in map(int, children.read_text().split()):
                started = start_time(child)
                if started is not None:
                    found += [(child, started), *descendants(child)]
    return found


def migrate(cli: Path, env: dict[str, str], cwd: Path) -> None:
    """`dify migrate`: the daemon at this commit does not create its schema itself (Dify's image runs this first)."""
    result = subprocess.run([str(cli), "migrate"], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ServiceError(f"dify migrate failed: {(result.stdout + result.stderr).strip()[-2000:]}")


@dataclass
class DaemonClient:
    """Dify's API server's side of the daemon's HTTP API, for one tenant."""

    base_url: str
    key: str
    tenant_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=f"{self.base_url}/plugin/{self.tenant_id}", headers={"X-Api-Key": self.key})

    def _data(self, response: httpx.Response) -> Any:
        response.raise_for_status()
        body = response.json()
        if body.get("code") != 0:
            raise PluginError("daemon", f"{response.request.url}: {body.get('message')}", raw=body)
        return body["data"]

    # ---- management ----------------------------------------------------------------------------------------------

    def upload(self, package: Path) -> str:
        with package.open("rb") as file:
            response = self.http.post(
                "/management/install/upload/package",
                files={"dify_pkg": (package.name, file, "application/octet-stream")},
                data={"verify_signature": "false"},
                timeout=60,
            )
        return str(self._data(response)["unique_identifier"])

    def install(self, unique_identifier: str, timeout_s: float = 300) -> dict[str, Any]:
        """Install an uploaded package and wait for the task; returns the finished task (or {} if already there)."""
        body = {"plugin_unique_identifiers": [unique_identifier], "source": "package", "metas": [{}]}
        data = self._data(self.http.post("/management/install/identifiers", json=body, timeout=60))
        if data.get("all_installed"):
            return {}
        return self.wait_for_task(str(data["task_id"]), timeout_s)

    def wait_for_task(self, task_id: str, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            task: dict[str, Any] = self._data(self.http.get(f"/management/install/tasks/{task_id}"))
            if task["status"] == "success":
                return task
            if task["status"] == "failed":
                raise PluginError("install", json.dumps(task.get("plugins"), ensure_ascii=False), raw=task)
            time.sleep(0.5)
        raise TimeoutError(f"install task {task_id} did not finish within {timeout_s:.0f}s")

    def tools(self) -> list[dict[str, Any]]:
        data = self._data(self.http.get("/management/tools", params={"page": 1, "page_size": 100}))
        return list(data)

    def readme(self, unique_identifier: str, language: str) -> dict[str, str]:
        params = {"plugin_unique_identifier": unique_identifier, "language": language}
        return dict(self._data(self.http.get("/management/fetch/readme", params=params)))

    # ---- dispatch ------------------------------------------------------------------------------------------------

    def _dispatch(
        self, path: str, body: dict[str, Any], plugin_id: str = PLUGIN_ID, timeout_s: float = 120
    ) -> list[dict[str, Any]]:
        """One dispatch call; the answer is a stream of `data: {"code", "message", "data"}` events."""
        headers = {"X-Plugin-ID": plugin_id}
        events: list[dict[str, Any]] = []
        with self.http.stream("POST", f"/dispatch/{path}", json=body, headers=headers, timeout=timeout_s) as response:
            if response.status_code != 200:
                raise PluginError("http", f"{response.status_code}: {response.read().decode(errors='replace')}")
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                event = json.loads(line.removeprefix("data:").strip())
                if event.get("code") != 0:
                    raise parse_session_error(str(event.get("message")), raw=event)
                events.append(event["data"])
        return events

    def invoke_tool(
        self,
        tool: str,
        parameters: dict[str, Any],
        credentials: dict[str, Any],
        user_id: str = "dify-user-1",
        conversation_id: str | None = None,
        plugin_id: str = PLUGIN_ID,
        provider: str = PROVIDER,
        message_id: str | None = None,
    ) -> ToolOutput:
        body = {
            "user_id": user_id,
            "conversation_id": conversation_id,
            "app_id": "app-1",
            "message_id": message_id or str(uuid.uuid4()),  # Dify sends one per chat message
            "data": {
                "provider": provider,
                "tool": tool,
                "credentials": credentials,
                "credential_type": "api-key",
                "tool_parameters": parameters,
            },
        }
        return ToolOutput(self._dispatch("tool/invoke", body, plugin_id))

    def validate_credentials(self, credentials: dict[str, Any], user_id: str = "dify-user-1") -> bool:
        body = {"user_id": user_id, "data": {"provider": PROVIDER, "credentials": credentials}}
        (answer,) = self._dispatch("tool/validate_credentials", body)
        return bool(answer["result"])

    def close(self) -> None:
        self.http.close()


@dataclass
class DaemonStack:
    """PostgreSQL, Redis, the inner-API stand-in and the daemon, started in that order and stopped in reverse."""

    workdir: Path
    postgres: Postgres
    redis: Redis
    inner_api: InnerApi
    daemon: Daemon
    startup_s: dict[str, float]

    @classmethod
    def start(cls, daemon_binary: Path, cli: Path, tools: Toolchain, workdir: Path) -> DaemonStack:
        timings: dict[str, float] = {}
        started = time.perf_counter()
        postgres = Postgres.start()
        timings["postgres"] = time.perf_counter() - started
        redis: Redis | None = None
        inner_api: InnerApi | None = None
        try:
            mark = time.perf_counter()
            redis = Redis.start(workdir / "redis")
            timings["redis"] = time.perf_counter() - mark
            inner_api = InnerApi(key=secrets.token_hex(16))
            (workdir / "daemon").mkdir(exist_ok=True)
            port, key = free_port(), secrets.token_hex(24)
            env = daemon_environment(workdir / "daemon", port, key, postgres, redis, inner_api, tools)
            mark = time.perf_counter()
            migrate(cli, env, workdir / "daemon")
            timings["migrate"] = time.perf_counter() - mark
            daemon = Daemon(daemon_binary, env, workdir / "daemon", port, workdir / "daemon.log")
            mark = time.perf_counter()
            daemon.start()
            timings["daemon"] = time.perf_counter() - mark
        except BaseException:
            if inner_api is not None:
                inner_api.close()
            if redis is not None:
                redis.stop()
            postgres.stop()
            raise
        return cls(workdir, postgres, redis, inner_api, daemon, timings)

    def client(self) -> DaemonClient:
        return DaemonClient(self.daemon.url, self.daemon.env["SERVER_KEY"])

    def stop(self) -> None:
        self.daemon.stop()
        self.inner_api.close()
        self.redis.stop()
        self.postgres.stop()
        shutil.rmtree(self.workdir / "daemon" / "cwd", ignore_errors=True)
