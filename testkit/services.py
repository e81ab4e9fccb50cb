"""PostgreSQL and Redis for the plugin daemon: Debian's packages, each on a free loopback port with its own data.

PostgreSQL refuses to run as root, so as root its commands run as the `postgres` user (created by the Debian
package) over a data directory that user owns; pytest's temporary directories are private to root, so that one
lives in a directory of its own. Both servers listen on 127.0.0.1 only, with a password.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hindsight_insights.weaviate_server import free_port
from testkit.system_packages import APT_HINT, find_postgres_binary, find_redis_server


class ServiceError(RuntimeError):
    """A service could not be found or started; the message says what to do or where its log is."""


def _postgres_binary(name: str) -> str:
    found = find_postgres_binary(name)
    if found is None:
        raise ServiceError(f"PostgreSQL's {name} not found: {APT_HINT}")
    return found


def _as_postgres_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def wait_for_port(port: int, timeout_s: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise ServiceError(f"{what} did not listen on 127.0.0.1:{port} within {timeout_s:.0f}s; see {log}")


@dataclass
class Postgres:
    data_dir: Path
    port: int
    password: str
    user: str = "postgres"

    @classmethod
    def start(cls) -> Postgres:
        initdb, pg_ctl = _postgres_binary("initdb"), _postgres_binary("pg_ctl")
        base = Path(tempfile.mkdtemp(prefix="hindsight-postgres-"))
        server = cls(base / "data", free_port(), secrets.token_hex(16))
        password_file = base / "password"
        password_file.write_text(server.password)
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(base, owner.pw_uid, owner.pw_gid)
            os.chown(password_file, owner.pw_uid, owner.pw_gid)
        init = [initdb, "-D", str(server.data_dir), "-U", server.user, "--auth=scram-sha-256"]
        subprocess.run(
            _as_postgres_user([*init, f"--pwfile={password_file}", "--encoding=UTF8", "--no-sync"]),
            check=True,
            capture_output=True,
        )
        password_file.unlink()
        options = f"-p {server.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
        log = base / "postgres.log"
        result = subprocess.run(
            _as_postgres_user([pg_ctl, "-D", str(server.data_dir), "-l", str(log), "-o", options, "-w", "start"]),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise ServiceError(f"PostgreSQL did not start: {result.stderr.strip()}; see {log}")
        return server

    def stop(self) -> None:
        subprocess.run(
            _as_postgres_user([_postgres_binary("pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"]),
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.data_dir.parent, ignore_errors=True)


@dataclass
class Redis:
    process: subprocess.Popen[bytes]
    port: int
    password: str

    @classmethod
    def start(cls, data_dir: Path) -> Redis:
        binary = find_redis_server()
        if binary is None:
            raise ServiceError(f"redis-server not found: {APT_HINT}")
        data_dir.mkdir(parents=True, exist_ok=True)
        port, password = free_port(), secrets.token_hex(16)
        log = data_dir / "redis.log"
        command = [binary, "--bind", "127.0.0.1", "--port", str(port), "--requirepass", password, "--save", ""]
        command += ["--appendonly", "no", "--dir", str(data_dir), "--logfile", str(log), "--daemonize", "no"]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        server = cls(process, port, password)
        try:
            wait_for_port(port, 20, "redis-server", log)
        except BaseException:
            server.stop()
            raise
        return server

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
