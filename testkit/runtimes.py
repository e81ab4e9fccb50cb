"""Where Dify's runtimes come from: the CLI (`dify`) and the plugin daemon (`dify-plugin-daemon`).

Each is looked up in this order: its setting (HINDSIGHT_DIFY_CLI / HINDSIGHT_DIFY_PLUGIN_DAEMON), then PATH, then
`../shared/tools/...` next to the repository. A setting that names a missing file is an error, not a reason to look
elsewhere: whoever set it meant that binary. Tests that need a runtime fail with `RuntimeNotFound`, whose message says
how to get it; they never skip.

The runtimes build the plugin's venv themselves (`uv venv --python 3.12`, `uv sync`), so their processes also need
`uv` and a `python3.12` on PATH: `toolchain()` finds the ones scripts/bootstrap.sh set up.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASES = "https://github.com/langgenius/dify-plugin-daemon/releases"


class RuntimeNotFound(RuntimeError):
    """A Dify runtime binary or the toolchain it needs is missing; the message says how to get it."""


@dataclass(frozen=True)
class Runtime:
    name: str
    setting: str
    command: str
    shared: Path
    how_to_get: str

    def find(self, environ: dict[str, str] | None = None, root: Path = ROOT) -> Path:
        env = os.environ if environ is None else environ
        configured = env.get(self.setting, "").strip()
        if configured:
            path = Path(configured).expanduser()
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise RuntimeNotFound(f"{self.setting}={configured} is not an executable file. {self.how_to_get}")
            return path
        on_path = shutil.which(self.command, path=env.get("PATH", ""))
        if on_path:
            return Path(on_path)
        shared = root.parent / self.shared
        if shared.is_file() and os.access(shared, os.X_OK):
            return shared
        raise RuntimeNotFound(
            f"{self.name} not found: set {self.setting}, put `{self.command}` on PATH, or place it at {shared}. "
            f"{self.how_to_get}"
        )


CLI = Runtime(
    name="the Dify plugin CLI",
    setting="HINDSIGHT_DIFY_CLI",
    command="dify",
    shared=Path("shared/tools/dify-cli/dify"),
    how_to_get=(
        f"Download it from {RELEASES} (asset dify-plugin-linux-amd64): curl -fsSL -o ~/.local/bin/dify "
        f"{RELEASES}/latest/download/dify-plugin-linux-amd64 && chmod +x ~/.local/bin/dify"
    ),
)

DAEMON = Runtime(
    name="the Dify plugin daemon",
    setting="HINDSIGHT_DIFY_PLUGIN_DAEMON",
    command="dify-plugin-daemon",
    shared=Path("shared/tools/dify-plugin-daemon/dify-plugin-daemon"),
    how_to_get=(
        "It has no release binary: copy /app/main out of the langgenius/dify-plugin-daemon:<version>-local image "
        "(docker create, then docker cp <id>:/app/main dify-plugin-daemon), or build it from a clone of "
        "https://github.com/langgenius/dify-plugin-daemon with "
        "`CGO_ENABLED=0 go build -o dify-plugin-daemon ./cmd/server`."
    ),
)


@dataclass(frozen=True)
class Toolchain:
    """The Python 3.12 and the uv that a runtime uses to build the plugin's venv."""

    python: Path
    uv: Path

    @property
    def path_dirs(self) -> list[str]:
        return list(dict.fromkeys([str(self.python.parent), str(self.uv.parent)]))

    def environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """`base` (default: this process's environment) with both directories first on PATH, for a runtime only."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = os.pathsep.join([*self.path_dirs, env.get("PATH", "")])
        env["UV_PYTHON_DOWNLOADS"] = "never"  # a missing 3.12 must fail here, not start a download
        return env


def toolchain() -> Toolchain:
    """The interpreter behind this venv (bootstrap.sh made it with a 3.12) and bootstrap's uv."""
    home = Path(sys.base_exec_prefix) / "bin"
    python = next((home / name for name in ("python3.12", "python3") if (home / name).is_file()), None)
    if python is None or sys.version_info[:2] != (3, 12):
        raise RuntimeNotFound(f"no Python 3.12 behind {sys.executable}: run `make setup` (scripts/bootstrap.sh)")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hindsight-insights"
    found = shutil.which("uv")
    uv = Path(found) if found else cache / "uv-venv" / "bin" / "uv"
    if not uv.is_file():
        raise RuntimeNotFound(f"uv is neither on PATH nor at {uv}: run `make setup` (scripts/bootstrap.sh)")
    return Toolchain(python=python, uv=uv)
