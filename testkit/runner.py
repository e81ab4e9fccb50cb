"""The plugin under `dify_plugin.integration.run.PluginRunner`, which drives the real CLI (`dify plugin run`).

Two things PluginRunner does not do, done by a two-line launcher that PluginRunner starts instead of the CLI (it
execs the CLI, so PluginRunner still signals the CLI itself):

- PATH. The CLI builds the plugin's venv with `uv` and `python3.12`; the launcher puts the toolchain's directories
  first on the PATH of the CLI and what it starts, and nowhere else.
- stderr. PluginRunner never reads the CLI's stderr pipe, and everything written there before the plugin is ready
  must fit in its 64 KiB, or the CLI blocks and PluginRunner gives up after 30 s. The plugin itself writes nothing
  there any more (hindsight_insights/quiet.py), but the CLI logs one progress line per chunk it reads of
  `compileall`'s output over the new venv: 15 to 51 KB in identical runs, depending on timing. So the launcher
  sends the CLI's stderr to a log file, which the tests read to check what the plugin and the CLI wrote.
"""

from __future__ import annotations

import os
import shlex
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
PLUGIN_STDERR = "plugin stderr"  # how the CLI (and the daemon) log each line the plugin wrote to stderr
CLI_PROGRESS = "pre-compiling plugin"  # the CLI's per-chunk compileall progress lines


class ValidationResult(BaseModel):
    result: bool


def write_launcher(cli: Path, toolchain: Toolchain, directory: Path, stderr_log: Path | None = None) -> Path:
    """An executable that runs `cli` with the toolchain first on PATH (for the CLI and what it starts only), its
    stderr appended to `stderr_log` when one is given."""
    launcher = directory / "dify"
    path = os.pathsep.join(toolchain.path_dirs)
    redirect = f" 2>>{shlex.quote(str(stderr_log))}" if stderr_log is not None else ""
    launcher.write_text(
        f'#!/bin/sh\nPATH={shlex.quote(path)}:"$PATH" UV_PYTHON_DOWNLOADS=never '
        f'exec {shlex.quote(str(cli))} "$@"{redirect}\n'
    )
    launcher.chmod(0o755)
    return launcher


class RunnerPlugin:
    """The packaged plugin started by PluginRunner; calls go through the real CLI's `plugin run` loop."""

    def __init__(self, package: Path, cli: Path, toolchain: Toolchain, workdir: Path) -> None:
        self.stderr_log = workdir / "dify-cli.stderr.log"
        launcher = write_launcher(cli, toolchain, workdir, self.stderr_log)
        started = time.perf_counter()
        self.runner = PluginRunner(IntegrationConfig(dify_cli_path=str(launcher)), str(package))
        self.startup_s = time.perf_counter() - started
        self.startup_stderr = self.stderr  # all the CLI logged until the plugin was ready

    @property
    def stderr(self) -> str:
        return self.stderr_log.read_text(errors="replace") if self.stderr_log.exists() else ""

    def plugin_stderr_lines(self) -> list[str]:
        """The lines the plugin itself wrote to stderr, as the CLI relayed them."""
        return [line for line in self.stderr.splitlines() if PLUGIN_STDERR in line]

    def startup_lines_besides_progress(self) -> list[str]:
        return [line for line in self.startup_stderr.splitlines() if CLI_PROGRESS not in line]

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
        os.close(self.runner.stderr_pipe_read)  # PluginRunner leaves its read ends open; nothing reads this one


def runner_error(error: ValueError) -> PluginError:
    """PluginRunner raises ValueError(response) for an error line; the CLI puts the plugin's error in `error`."""
    (response,) = error.args
    text = str(response.get("error", response)) if isinstance(response, dict) else str(response)
    return parse_session_error(text, raw=response)
