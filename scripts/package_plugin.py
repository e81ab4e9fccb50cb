"""Package the plugin as a .difypkg: a zip of the plugin directory minus what .difyignore lists.

The Dify CLI (`dify plugin package`) does the same, but it cannot be built where the Go module proxy refuses
langgenius/dify-plugin-daemon; this keeps its rules: .difyignore in gitignore syntax, 50 MiB uncompressed at most.

    make package   (or: .venv/bin/python -m scripts.package_plugin [-o dist/hindsight_insights.difypkg])
"""

from __future__ import annotations

import argparse
import fnmatch
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
MAX_UNCOMPRESSED = 50 * 1024 * 1024


def ignore_patterns(root: Path) -> list[str]:
    lines = (root / ".difyignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def ignored(relative: str, is_dir: bool, patterns: list[str]) -> bool:
    name = relative.rsplit("/", 1)[-1]
    for pattern in patterns:
        directory_only = pattern.endswith("/")
        body = pattern.rstrip("/").lstrip("/")
        if directory_only and not is_dir:
            continue
        target = relative if "/" in body else name
        if fnmatch.fnmatch(target, body):
            return True
    return False


def plugin_files(root: Path) -> list[Path]:
    patterns = ignore_patterns(root)
    files: list[Path] = []

    def walk(directory: Path) -> None:
        for path in sorted(directory.iterdir()):
            relative = path.relative_to(root).as_posix()
            if ignored(relative, path.is_dir(), patterns):
                continue
            if path.is_dir():
                walk(path)
            elif path.is_file():
                files.append(path)

    walk(root)
    return files


def package(root: Path, output: Path) -> int:
    manifest = yaml.safe_load((root / "manifest.yaml").read_text())
    for required in ("main.py", "_assets/" + manifest["icon"], *manifest["plugins"]["tools"]):
        if not (root / required).exists():
            raise SystemExit(f"package: {required} is missing")
    files = plugin_files(root)
    size = sum(path.stat().st_size for path in files)
    if size > MAX_UNCOMPRESSED:
        raise SystemExit(f"package: {size / 2**20:.1f} MiB uncompressed is over Dify's 50 MiB limit")
    output.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, path.relative_to(root).as_posix())
    return size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "dist" / "hindsight_insights.difypkg")
    args = parser.parse_args()
    size = package(ROOT, args.output)
    print(f"{args.output}: {args.output.stat().st_size / 2**20:.2f} MiB ({size / 2**20:.2f} MiB uncompressed)")


if __name__ == "__main__":
    main()
