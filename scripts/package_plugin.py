"""Package the plugin as a .difypkg, with Dify's own CLI when one is found, else by the CLI's rules.

    make package   (or: .venv/bin/python -m scripts.package_plugin [-o dist/hindsight_insights.difypkg] [--own])

Both packagers take the same staged directory: the files that .difyignore keeps, with readme/README.md (the plugin
page for Dify builders) as the package's README.md, because Dify shows the package root's README.md and the
repository's README.md is written for developers. `dify plugin package` then zips that directory and, as the
plugin has pyproject.toml + uv.lock and no requirements.txt, adds the requirements.txt that `uv export` prints
(older daemons install only from it). The fallback does exactly that (same files, same bytes; tests compare them):
.difyignore with gitignore semantics, the same `uv export` flags, entries sorted by path, at most 50 MiB
uncompressed.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from testkit.runtimes import CLI, RuntimeNotFound, Toolchain, toolchain

ROOT = Path(__file__).resolve().parent.parent
BUILDER_README = Path("readme") / "README.md"
CHATFLOW = ROOT / "examples" / "hindsight_chatflow.yml"
MAX_UNCOMPRESSED = 50 * 1024 * 1024
# What `dify plugin package` runs to write requirements.txt (dify-plugin-daemon, pkg/plugin_packager/packager).
UV_EXPORT = [
    "export",
    "--frozen",
    "--format",
    "requirements.txt",
    "--no-group",
    "dev",
    "--no-emit-project",
    "--no-hashes",
    "--no-header",
    "--no-annotate",
]


@dataclass(frozen=True)
class Packaged:
    path: Path
    packager: str
    size: int
    uncompressed: int


# ---- .difyignore, as the CLI reads it (go-git's gitignore patterns) -----------------------------------------------


@dataclass(frozen=True)
class IgnorePattern:
    glob: list[str]  # path segments
    anchored: bool  # the pattern had a slash before its end: it matches from the root only
    directory_only: bool

    @classmethod
    def parse(cls, line: str) -> IgnorePattern:
        if line.startswith("!"):
            raise SystemExit(f"package: .difyignore negation ({line}) is not supported by the fallback packager")
        directory_only = line.endswith("/")
        body = line.rstrip("/")
        anchored = "/" in body
        return cls(body.lstrip("/").split("/"), anchored, directory_only)

    def excludes(self, parts: list[str], is_dir: bool) -> bool:
        if not self.anchored:  # one segment, matched at any depth; a match on a parent excludes what is under it
            (glob,) = self.glob
            last = len(parts) - 1
            return any(
                fnmatch.fnmatchcase(part, glob) and (index < last or is_dir or not self.directory_only)
                for index, part in enumerate(parts)
            )
        if len(parts) < len(self.glob) or not all(map(fnmatch.fnmatchcase, parts, self.glob)):
            return False
        return len(parts) > len(self.glob) or is_dir or not self.directory_only


def ignore_patterns(root: Path) -> list[IgnorePattern]:
    lines = (root / ".difyignore").read_text().splitlines()
    return [IgnorePattern.parse(line.strip()) for line in lines if line.strip() and not line.strip().startswith("#")]


def plugin_files(root: Path) -> list[Path]:
    """The files the CLI packages from `root`, sorted by path."""
    patterns = ignore_patterns(root) if (root / ".difyignore").exists() else []
    files: list[Path] = []

    def walk(directory: Path) -> None:
        for path in sorted(directory.iterdir()):
            parts = path.relative_to(root).parts
            if any(pattern.excludes(list(parts), path.is_dir()) for pattern in patterns):
                continue
            if path.is_dir():
                walk(path)
            elif path.is_file():
                files.append(path)

    walk(root)
    return sorted(files, key=lambda path: path.relative_to(root).as_posix())


# ---- staging and packaging ---------------------------------------------------------------------------------------


def stage(root: Path, directory: Path) -> Path:
    """The package's contents as a directory: what .difyignore keeps, with the builder README as README.md."""
    manifest = yaml.safe_load((root / "manifest.yaml").read_text())
    for required in ("main.py", BUILDER_README, "_assets/" + manifest["icon"], *manifest["plugins"]["tools"]):
        if not (root / required).exists():
            raise SystemExit(f"package: {required} is missing")
    for path in plugin_files(root):
        target = directory / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    shutil.copy2(root / BUILDER_README, directory / "README.md")
    return directory


def package_with_cli(staged: Path, output: Path, cli: Path, tools: Toolchain) -> None:
    result = subprocess.run(
        [str(cli), "plugin", "package", str(staged), "-o", str(output)],
        env=tools.environ(),  # the CLI runs `uv export`
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0 or not output.is_file():
        raise SystemExit(f"package: `dify plugin package` failed: {(result.stdout + result.stderr).strip()[-2000:]}")


def exported_requirements(staged: Path, tools: Toolchain) -> bytes | None:
    """requirements.txt as the CLI generates it, or None when the CLI would not generate one."""
    if (staged / "requirements.txt").exists() or not (staged / "pyproject.toml").exists():
        return None
    if not (staged / "uv.lock").exists():
        return None
    result = subprocess.run(
        [str(tools.uv), *UV_EXPORT], cwd=staged, env=tools.environ(), capture_output=True, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"package: uv export failed: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout


def package_own(staged: Path, output: Path, tools: Toolchain) -> None:
    entries = {path.relative_to(staged).as_posix(): path.read_bytes() for path in plugin_files(staged)}
    requirements = exported_requirements(staged, tools)
    if requirements is not None:
        entries["requirements.txt"] = requirements
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(entries):
            archive.writestr(name, entries[name])


def package(root: Path, output: Path, cli: Path | None, tools: Toolchain | None = None) -> Packaged:
    """Stage and package `root` into `output`: with the CLI at `cli`, or with the fallback when it is None."""
    tools = tools or toolchain()
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hindsight-package-") as work:
        staged = stage(root, Path(work) / "hindsight_insights")
        if cli is not None:
            package_with_cli(staged, output, cli, tools)
        else:
            package_own(staged, output, tools)
    with zipfile.ZipFile(output) as archive:
        uncompressed = sum(info.file_size for info in archive.infolist())
    if uncompressed > MAX_UNCOMPRESSED:
        output.unlink()
        raise SystemExit(f"package: {uncompressed / 2**20:.1f} MiB uncompressed is over Dify's 50 MiB limit")
    packager = f"dify CLI ({cli})" if cli is not None else "own fallback packager (scripts/package_plugin.py)"
    return Packaged(output, packager, output.stat().st_size, uncompressed)


# ---- the package's identity, as Dify names an installed plugin ---------------------------------------------------


def checksum(archive: Path) -> str:
    """The daemon's checksum of a package (pkg/plugin_packager/decoder/checksum.go): over its files' paths and
    contents, not the zip's bytes, so both packagers give the same one."""

    def sha256(data: bytes) -> bytes:
        return hashlib.sha256(data).digest()

    with zipfile.ZipFile(archive) as zipped:
        parts = [sha256(name.encode()) + sha256(zipped.read(name)) for name in sorted(zipped.namelist())]
    return hashlib.sha256(b"".join(parts)).hexdigest()


def unique_identifier(archive: Path) -> str:
    """`author/name:version@checksum`: what Dify installs and what a DSL's dependencies pin."""
    with zipfile.ZipFile(archive) as zipped:
        manifest = yaml.safe_load(zipped.read("manifest.yaml"))
    return f"{manifest['author']}/{manifest['name']}:{manifest['version']}@{checksum(archive)}"


_PINNED = re.compile(r"(plugin_unique_identifier: )(hindsight-insights/hindsight_insights:\S+)")


def pinned_identifier(chatflow: Path = CHATFLOW) -> str | None:
    found = _PINNED.search(chatflow.read_text())
    return found.group(2) if found else None


def pin_chatflow(identifier: str, chatflow: Path = CHATFLOW) -> None:
    """Point the example chatflow's package dependency at `identifier`, changing nothing else in the file."""
    text = chatflow.read_text()
    if _PINNED.search(text) is None:
        raise SystemExit(f"package: {chatflow} has no hindsight-insights/hindsight_insights dependency to pin")
    chatflow.write_text(_PINNED.sub(lambda found: found.group(1) + identifier, text, count=1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "dist" / "hindsight_insights.difypkg")
    parser.add_argument("--own", action="store_true", help="use the fallback packager even when a CLI is found")
    parser.add_argument("--pin-chatflow", action="store_true", help="pin the example chatflow to this package")
    args = parser.parse_args()
    cli = None
    if not args.own:
        try:
            cli = CLI.find()
        except RuntimeNotFound as missing:
            print(f"package: {missing}\npackage: falling back to our own packager", file=sys.stderr)
    result = package(ROOT, args.output, cli)
    identifier = unique_identifier(result.path)
    print(f"packaged with: {result.packager}")
    print(f"{result.path}: {result.size / 2**20:.2f} MiB ({result.uncompressed / 2**20:.2f} MiB uncompressed)")
    print(f"unique identifier: {identifier}")
    if args.pin_chatflow:
        pin_chatflow(identifier)
        print(f"pinned {CHATFLOW.relative_to(ROOT)} to it")
    elif pinned_identifier() != identifier:
        print(f"note: {CHATFLOW.relative_to(ROOT)} pins another build; `make pin-chatflow` updates it", file=sys.stderr)


if __name__ == "__main__":
    main()
