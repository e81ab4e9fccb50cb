"""Getting a real Weaviate: the configured URL, else a local server started on 127.0.0.1.

Order (first that works): HINDSIGHT_WEAVIATE_URL; a cached `weaviate-server` binary; a build from the Go module proxy
when `go` exists (cached, rebuilt only on a miss); weaviate-client's embedded download (needs internet).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import weaviate
from pydantic import SecretStr

from hindsight_insights.config import Settings
from hindsight_insights.errors import WeaviateUnavailable

log = logging.getLogger(__name__)

_GO_PACKAGE = "github.com/weaviate/weaviate/cmd/weaviate-server"


def _ephemeral_floor() -> int:
    """The first port of the kernel's ephemeral range, from which outgoing connections take their source ports."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _is_free(port: int) -> bool:
    """Nothing on 127.0.0.1 holds `port` now, over TCP or UDP (gossip uses both)."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        with socket.socket(socket.AF_INET, kind) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


# Ports this process has handed out: two servers started one after the other never get the same one, although
# neither is bound when the next is chosen.
_HANDED_OUT: set[int] = set()


def free_port(following: int = 0) -> int:
    """A port free on 127.0.0.1, with the `following` ports after it free too, below the ephemeral range: a port
    that the kernel hands out for binding to port 0 can meanwhile become the source port of any outgoing connection
    (another node's, say) before the server binds it, and a cluster node then stays unavailable."""
    floor = _ephemeral_floor()
    low = 10000 if floor > 11000 else 1024
    pick = random.SystemRandom()
    for _ in range(1000):
        port = pick.randrange(low, floor - following)
        ports = range(port, port + following + 1)
        if _HANDED_OUT.isdisjoint(ports) and all(_is_free(p) for p in ports):
            _HANDED_OUT.update(ports)
            return port
    raise WeaviateUnavailable(f"found no free port on 127.0.0.1 between {low} and {floor}")


def consecutive_free_ports() -> tuple[int, int]:
    """Two free neighbouring ports: Weaviate 1.27 requires the cluster data port to be the gossip port + 1."""
    first = free_port(following=1)
    return first, first + 1


def local_api_key(settings: Settings) -> str:
    """The local server's API key: made once, random, kept in the cache directory readable by this user only."""
    path = settings.cache_dir / "weaviate" / "api-key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


def api_key_environment(api_key: str) -> dict[str, str]:
    return {
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "false",
        "AUTHENTICATION_APIKEY_ENABLED": "true",
        "AUTHENTICATION_APIKEY_ALLOWED_KEYS": api_key,
        "AUTHENTICATION_APIKEY_USERS": "hindsight",
        "AUTHORIZATION_ADMINLIST_ENABLED": "true",
        "AUTHORIZATION_ADMINLIST_USERS": "hindsight",
    }


def cluster_environment() -> dict[str, str]:
    """Basic auth for the cluster data API, which the API key does not cover: a fresh password per start, known only
    to the server (a single node never calls another)."""
    return {
        "CLUSTER_BASIC_AUTH_USERNAME": "hindsight-cluster",
        "CLUSTER_BASIC_AUTH_PASSWORD": secrets.token_urlsafe(32),
        "GO_PROFILING_DISABLE": "true",  # the only switch that keeps the debug listener (port 6060) from binding
    }


def cached_binary_path(settings: Settings) -> Path:
    return settings.cache_dir / "weaviate" / f"weaviate-server-v{settings.weaviate_version}"


def build_binary(settings: Settings) -> Path:
    """Build weaviate-server with Go into the cache. No -trimpath: GSE dictionaries are read from the module cache."""
    target = cached_binary_path(settings)
    go = shutil.which("go")
    if go is None:
        raise WeaviateUnavailable("no cached Weaviate binary and no `go` to build one")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as gobin:
        env = {**os.environ, "CGO_ENABLED": "0", "GOBIN": gobin}
        log.info("building weaviate-server v%s with go (a few minutes, once)", settings.weaviate_version)
        result = subprocess.run(
            [go, "install", f"{_GO_PACKAGE}@v{settings.weaviate_version}"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise WeaviateUnavailable(f"`go install {_GO_PACKAGE}` failed: {result.stderr.strip()[-2000:]}")
        os.replace(Path(gobin) / "weaviate-server", target)  # atomic: a half-written binary is never cached
    return target


def ensure_binary(settings: Settings) -> Path:
    target = cached_binary_path(settings)
    return target if target.is_file() else build_binary(settings)


@dataclass
class LocalWeaviate:
    """A weaviate-server process we started, telemetry off, API-key authentication on and anonymous access off.

    HTTP and Raft listen on 127.0.0.1. Weaviate hard-codes ":<port>" for its gRPC listener and its cluster data API
    (and before 1.39 ignores CLUSTER_BIND_ADDR for gossip too), so those accept on every interface; no setting
    narrows them. Each is locked separately, because the API key guards only the HTTP API and gRPC: the cluster data
    API (which reads and writes objects by id) takes HTTP basic auth with a password made anew for each start and
    never kept (`cluster_environment`). The profiling listener is off.
    """

    process: subprocess.Popen[bytes]
    http_port: int
    grpc_port: int
    gossip_port: int
    data_bind_port: int
    data_dir: Path
    log_path: Path
    api_key: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def settings(self, base: Settings) -> Settings:
        """`base` pointed at this server: its URL, gRPC port and key."""
        return base.model_copy(
            update={
                "weaviate_url": self.url,
                "weaviate_grpc_port": self.grpc_port,
                "weaviate_api_key": SecretStr(self.api_key),
            }
        )

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_local(
    binary: Path,
    data_dir: Path,
    http_port: int | None = None,
    grpc_port: int | None = None,
    ready_timeout_s: float = 60,
    api_key: str | None = None,
    extra_env: dict[str, str] | None = None,
) -> LocalWeaviate:
    """Start weaviate-server with API-key authentication (a fresh random key unless one is given); `extra_env` adds
    or overrides variables."""
    api_key = api_key or secrets.token_urlsafe(32)
    http_port = http_port or free_port()
    grpc_port = grpc_port or free_port()
    gossip_port, data_port = consecutive_free_ports()
    raft_port, raft_rpc_port = free_port(), free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "DISABLE_TELEMETRY": "true",  # otherwise it probes cloud metadata addresses
        "PERSISTENCE_DATA_PATH": str(data_dir),
        **api_key_environment(api_key),
        **cluster_environment(),
        "DEFAULT_VECTORIZER_MODULE": "none",
        "ENABLE_MODULES": "",
        "CLUSTER_HOSTNAME": "node1",
        "CLUSTER_BIND_ADDR": "127.0.0.1",
        "CLUSTER_ADVERTISE_ADDR": "127.0.0.1",
        "CLUSTER_GOSSIP_BIND_PORT": str(gossip_port),
        "CLUSTER_DATA_BIND_PORT": str(data_port),
        "RAFT_PORT": str(raft_port),
        "RAFT_INTERNAL_RPC_PORT": str(raft_rpc_port),
        "RAFT_JOIN": f"node1:{raft_port}",
        "RAFT_BOOTSTRAP_EXPECT": "1",
        "GRPC_PORT": str(grpc_port),
        "QUERY_DEFAULTS_LIMIT": "25",
        "LOG_LEVEL": "warning",
        **(extra_env or {}),
    }
    log_path = data_dir / "weaviate.log"
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [str(binary), "--host", "127.0.0.1", "--port", str(http_port), "--scheme", "http"],
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = LocalWeaviate(process, http_port, grpc_port, gossip_port, data_port, data_dir, log_path, api_key)
    try:
        wait_ready(server, ready_timeout_s)
    except BaseException:
        server.stop()
        raise
    return server


def wait_ready(server: LocalWeaviate, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            tail = server.log_path.read_text(errors="replace")[-2000:]
            raise WeaviateUnavailable(f"weaviate-server exited with code {server.process.returncode}: {tail}")
        with (
            contextlib.suppress(OSError, urllib.error.URLError),
            urllib.request.urlopen(f"{server.url}/v1/.well-known/ready", timeout=1) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.2)
    raise WeaviateUnavailable(f"weaviate-server was not ready within {timeout_s:.0f}s; see {server.log_path}")


@contextlib.contextmanager
def running_weaviate(settings: Settings, data_dir: Path | None = None) -> Iterator[Settings]:
    """The settings of a running Weaviate for the duration of the block: the configured URL as it is, else a local
    server started on 127.0.0.1 (cached binary, Go build, or embedded download) and stopped afterwards."""
    if settings.weaviate_url:
        yield settings
        return
    data_dir = data_dir or settings.data_dir
    try:
        binary = ensure_binary(settings)
    except WeaviateUnavailable as local_error:
        with _embedded_download(settings, data_dir, local_error) as (http_port, grpc_port):
            yield settings.model_copy(
                update={
                    "weaviate_url": f"http://127.0.0.1:{http_port}",
                    "weaviate_grpc_port": grpc_port,
                    "weaviate_api_key": SecretStr(local_api_key(settings)),
                }
            )
        return
    server = start_local(binary, data_dir, api_key=local_api_key(settings))
    try:
        yield server.settings(settings)
    finally:
        server.stop()


@contextlib.contextmanager
def _embedded_download(
    settings: Settings, data_dir: Path, local_error: WeaviateUnavailable
) -> Iterator[tuple[int, int]]:
    """Last resort: weaviate-client downloads the pinned release (a machine with internet). Yields its ports."""
    http_port, grpc_port = free_port(), free_port()
    try:
        client = weaviate.connect_to_embedded(
            version=settings.weaviate_version,  # pinned: never "latest"
            binary_path=str(settings.cache_dir / "weaviate-embedded"),
            persistence_data_path=str(data_dir),
            hostname="127.0.0.1",
            port=http_port,
            grpc_port=grpc_port,
            headers={"Authorization": f"Bearer {local_api_key(settings)}"},
            environment_variables={
                "DISABLE_TELEMETRY": "true",
                "CLUSTER_BIND_ADDR": "127.0.0.1",
                **api_key_environment(local_api_key(settings)),
                **cluster_environment(),
            },
        )
    except Exception as error:
        raise WeaviateUnavailable(
            "no Weaviate available. Either set HINDSIGHT_WEAVIATE_URL (and HINDSIGHT_WEAVIATE_API_KEY) to a running "
            f"server, install Go so that weaviate-server v{settings.weaviate_version} can be built into "
            f"{cached_binary_path(settings)}, or allow the download from GitHub. Local build: {local_error}. "
            f"Download: {type(error).__name__}: {error}"
        ) from None
    try:
        yield http_port, grpc_port  # the embedded server lives as long as this client
    finally:
        client.close()
