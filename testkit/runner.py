"""The plugin under `dify_plugin.integration.run.PluginRunner`, which drives the real CLI (`dify plugin run`).

Two things PluginRunner does not do, done here:

- It starts the CLI with this process's environment. The CLI needs `uv` and a `python3.12` on PATH to build the
  plugin's venv, and those should be on PATH for the runtime only, so the CLI is started through a two-line launcher
  script that puts them first and execs the real binary (PluginRunner then signals the CLI itself).
- It never reads the CLI's stderr pipe. Everything the CLI logs before the plugin is ready (its own set-up lines and
  every line the plugin writes to stderr) must fit in the 64 KiB pipe buffer, or the CLI blocks and PluginRunner
  gives up after 30 s. Once the plugin is ready, a thread here drains the pipe, so a long session cannot fill it, and
  keeps the bytes for assertions and measurement.
"""

from __future__ import annotations

import os
import shlex
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from testkit.messages import PluginError, ToolOutput, parse_session_error
from testkit.runtimes import Toolchain
from testkit.sdk import (
    IntegrationConfig,
    PluginInvokeType,
    PluginRunner,
    ToolActions,
    ToolInvokeMessage,
    ToolInvokeRequest,
    ToolValidateCredentialsRequest,
)

PROVIDER = "hindsight_insights"
PLUGIN_STDERR = b"plugin stderr"  # how the CLI (and the daemon) prefix each line the plugin wrote to stderr


class ValidationResult(BaseModel):
    result: bool


def write_launcher(cli: Path, toolchain: Toolchain, directory: Path) -> Path:
    """An executable that runs `cli` with the toolchain first on PATH (for the CLI and what it starts only)."""
    launcher = directory / "dify"
    path = os.pathsep.join(toolchain.path_dirs)
    launcher.write_text(
        f'#!/bin/sh\nPATH={shlex.quote(path)}:"$PATH" UV_PYTHON_DOWNLOADS=never exec {shlex.quote(str(cli))} "$@"\n'
    )
    launcher.chmod(0o755)
    return launcher


class RunnerPlugin:
    """The packaged plugin started by PluginRunner; calls go through the real CLI's `plugin run` loop."""

    def __init__(self, package: Path, cli: Path, toolchain: Toolchain, workdir: Path) -> None:
        launcher = write_launcher(cli, toolchain, workdir)
        started = time.perf_counter()
        self.runner = PluginRunner(IntegrationConfig(dify_cli_path=str(launcher)), str(package))
        self.startup_s = time.perf_counter() - started
        self._stderr = bytearray()
        self._lock = threading.Lock()
        self.startup_stderr = self._read_ready_stderr()
        self._drain = threading.Thread(target=self._drain_stderr, daemon=True)
        self._drain.start()

    def _read_ready_stderr(self) -> bytes:
        """What the CLI wrote to stderr until the plugin was ready: the bytes sitting in the unread pipe."""
        fd = self.runner.stderr_pipe_read
        os.set_blocking(fd, False)
        chunks = []
        try:
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
        except BlockingIOError:
            pass
        os.set_blocking(fd, True)
        data = b"".join(chunks)
        self._stderr += data
        return data

    def _drain_stderr(self) -> None:
        # EOF comes when both the CLI and PluginRunner (in its _close) have closed their write ends.
        while chunk := os.read(self.runner.stderr_pipe_read, 65536):
            with self._lock:
                self._stderr += chunk

    @property
    def stderr(self) -> bytes:
        with self._lock:
            return bytes(self._stderr)

    def plugin_stderr_lines(self) -> list[str]:
        """The lines the plugin itself wrote to stderr, as the CLI relayed them."""
        return [line for line in self.stderr.decode(errors="replace").splitlines() if "plugin stderr" in line]

    def invoke_tool(
        self, tool: str, parameters: dict[str, Any], credentials: dict[str, Any], user_id: str = "dify-user-1"
    ) -> ToolOutput:
        request = ToolInvokeRequest(
            user_id=user_id, provider=PROVIDER, tool=tool, credentials=credentials, tool_parameters=parameters
        )
        try:
            messages = list(
                self.runner.invoke(PluginInvokeType.Tool, ToolActions.InvokeTool, request, ToolInvokeMessage)
            )
        except ValueError as error:
            raise runner_error(error) from None
        return ToolOutput([message.model_dump(mode="json") for message in messages])

    def validate_credentials(self, credentials: dict[str, Any]) -> bool:
        request = ToolValidateCredentialsRequest(user_id="dify-user-1", provider=PROVIDER, credentials=credentials)
        try:
            (answer,) = self.runner.invoke(
                PluginInvokeType.Tool, ToolActions.ValidateCredentials, request, ValidationResult
            )
        except ValueError as error:
            raise runner_error(error) from None
        return bool(answer.result)

    def close(self) -> None:
        self.runner.__exit__(None, None, None)
        self._drain.join(timeout=10)
        if not self._drain.is_alive():  # never close a descriptor under a blocked reader
            os.close(self.runner.stderr_pipe_read)  # PluginRunner leaves its read ends open


def runner_error(error: ValueError) -> PluginError:
    """PluginRunner raises ValueError(response) for an error line; the CLI puts the plugin's error in `error`."""
    (response,) = error.args
    text = str(response.get("error", response)) if isinstance(response, dict) else str(response)
    return parse_session_error(text, raw=response)
