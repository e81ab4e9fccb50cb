"""`make test`'s set-up of the servers its tests start: scripts/test_packages.sh, and the worker's module layering."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_without_root_or_sudo_the_setup_stops_and_prints_the_command(tmp_path: Path) -> None:
    """A user who is not root and has no sudo gets the exact command, and nothing is attempted."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "env", "cat", "dirname", "apt-get"):  # no sudo, and no redis-server on PATH
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n")  # `id -u`: not root
    (bin_dir / "id").chmod(0o755)
    result = subprocess.run(
        [str(bin_dir / "bash"), str(ROOT / "scripts" / "test_packages.sh")],
        env={"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/tmp")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "sudo apt-get update && sudo apt-get install -y --no-install-recommends" in result.stderr
    assert "redis-server" in result.stderr.splitlines()[1]
    assert "bootstrap: installing" not in result.stderr


def _worker_imports(module: str) -> set[str]:
    tree = ast.parse((ROOT / "worker" / f"{module}.py").read_text())
    found = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    return {name.removeprefix("worker.") for name in found if name.startswith("worker.")}


def test_the_nightly_run_does_not_import_the_runner() -> None:
    """nightly.py reaches the worker through its TaskRunner protocol: nothing it imports, directly or not, is runner."""
    seen: set[str] = set()
    pending = ["nightly"]
    while pending:
        module = pending.pop()
        if module not in seen:
            seen.add(module)
            pending.extend(_worker_imports(module))
    assert "runner" not in seen
    assert "nightly" in _worker_imports("runner")  # the runner does use it: the walk above is not vacuous
