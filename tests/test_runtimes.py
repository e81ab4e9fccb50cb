"""Where Dify's runtimes come from (setting, PATH, ../shared/tools), what a missing one says, and the toolchain the
runtimes get on their PATH."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testkit.runner import write_launcher
from testkit.runtimes import CLI, DAEMON, Runtime, RuntimeNotFound, Toolchain

pytestmark = pytest.mark.runtime  # version-agnostic: run once, on the default Weaviate (Makefile)


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho fake\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A repository next to ../shared/tools, a directory on PATH, and a binary named by the setting."""
    root = tmp_path / "repo"
    root.mkdir()
    return {
        "root": root,
        "shared": executable(tmp_path / CLI.shared),
        "on_path": executable(tmp_path / "bin" / "dify"),
        "configured": executable(tmp_path / "elsewhere" / "my-dify"),
    }


def test_setting_wins_over_path_and_shared(layout: dict[str, Path]) -> None:
    environ = {"HINDSIGHT_DIFY_CLI": str(layout["configured"]), "PATH": str(layout["on_path"].parent)}
    assert CLI.find(environ, root=layout["root"]) == layout["configured"]


def test_path_wins_over_shared(layout: dict[str, Path]) -> None:
    assert CLI.find({"PATH": str(layout["on_path"].parent)}, root=layout["root"]) == layout["on_path"]


def test_shared_tools_next_to_the_repository(layout: dict[str, Path]) -> None:
    assert CLI.find({"PATH": ""}, root=layout["root"]) == layout["shared"]


def test_a_setting_naming_a_missing_file_is_an_error(layout: dict[str, Path]) -> None:
    with pytest.raises(RuntimeNotFound, match="HINDSIGHT_DIFY_CLI=/nowhere/dify is not an executable file"):
        CLI.find({"HINDSIGHT_DIFY_CLI": "/nowhere/dify", "PATH": str(layout["on_path"].parent)}, root=layout["root"])


@pytest.mark.parametrize(
    ("runtime", "how"),
    [
        (CLI, "releases/latest/download/dify-plugin-linux-amd64"),
        (DAEMON, "go build -o dify-plugin-daemon ./cmd/server"),
    ],
)
def test_nothing_found_says_how_to_get_it(tmp_path: Path, runtime: Runtime, how: str) -> None:
    with pytest.raises(RuntimeNotFound) as missing:
        runtime.find({"PATH": ""}, root=tmp_path / "repo")
    message = str(missing.value)
    assert runtime.setting in message and f"`{runtime.command}`" in message and how in message


def test_this_checkout_finds_both_runtimes(dify_cli: Path, dify_plugin_daemon: Path) -> None:
    version = subprocess.run([str(dify_cli), "version"], capture_output=True, text=True, check=True).stdout
    assert version.strip().startswith("v")
    assert dify_plugin_daemon.name == "dify-plugin-daemon" and dify_plugin_daemon.stat().st_size > 0


def test_toolchain_is_a_python_3_12_and_uv(runtime_toolchain: Toolchain) -> None:
    python = subprocess.run([str(runtime_toolchain.python), "--version"], capture_output=True, text=True, check=True)
    assert python.stdout.startswith("Python 3.12.")
    uv = subprocess.run([str(runtime_toolchain.uv), "--version"], capture_output=True, text=True, check=True)
    assert uv.stdout.startswith("uv ")


def test_launcher_puts_the_toolchain_first_on_the_runtimes_path(runtime_toolchain: Toolchain, tmp_path: Path) -> None:
    """The CLI under PluginRunner finds `python3.12` and `uv` on its PATH; this process's PATH is left alone."""
    launcher = write_launcher(Path("/usr/bin/env"), runtime_toolchain, tmp_path)  # runs env: prints its environment
    environment = subprocess.run([str(launcher)], capture_output=True, text=True, check=True).stdout.splitlines()
    path = next(line for line in environment if line.startswith("PATH=")).removeprefix("PATH=").split(":")
    assert path[: len(runtime_toolchain.path_dirs)] == runtime_toolchain.path_dirs
    assert "UV_PYTHON_DOWNLOADS=never" in environment
    resolved = subprocess.run(
        [str(launcher), "sh", "-c", "command -v python3.12; command -v uv"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert resolved == [str(runtime_toolchain.python.parent / "python3.12"), str(runtime_toolchain.uv)]
