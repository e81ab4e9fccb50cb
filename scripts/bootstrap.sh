#!/usr/bin/env bash
# Everything a fresh machine needs, each step cached under ~/.cache/hindsight-insights and redone only on a miss:
# uv, a Python 3.12 venv with the locked dependencies, and the weaviate-server binary (built with Go on first use).
# With --tests (make test), also the Debian packages the tests use: PostgreSQL, Redis, Chromium and chromium-driver.
#   scripts/bootstrap.sh [--tests]
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "" | --tests) ;;
  *) echo "usage: scripts/bootstrap.sh [--tests]" >&2; exit 2 ;;
esac

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/hindsight-insights"
UV_VERSION=0.13.8
mkdir -p "$CACHE"

# 1. uv: on PATH, or our own copy from PyPI.
if command -v uv >/dev/null 2>&1; then
  UV=$(command -v uv)
else
  UV="$CACHE/uv-venv/bin/uv"
  if [ ! -x "$UV" ] || [ "$("$UV" --version | cut -d' ' -f2)" != "$UV_VERSION" ]; then
    echo "bootstrap: installing uv $UV_VERSION into $CACHE/uv-venv" >&2
    python3 -m venv "$CACHE/uv-venv"
    "$CACHE/uv-venv/bin/pip" install --quiet "uv==$UV_VERSION"
  fi
fi

# 2. Python 3.12 (dify_plugin needs it): PATH, then pyenv's, then uv's managed download.
PYTHON=""
for candidate in python3.12 "$(command -v pyenv >/dev/null 2>&1 && pyenv root)"/versions/3.12*/bin/python3.12; do
  if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
    PYTHON=$(command -v "$candidate"); break
  fi
done
[ -n "$PYTHON" ] || PYTHON=3.12

# 3. The venv, exactly as locked, with Dify's workflow engine for the example chatflow's test. A .venv symlink that
#    leads nowhere (a removed checkout's venv, a loop) is only the link: uv cannot make a venv through it.
if [ -L .venv ] && [ ! -d .venv ]; then
  echo "bootstrap: .venv is a symlink to nothing usable ($(readlink .venv)); replacing the link with a venv" >&2
  rm .venv
fi
"$UV" sync --frozen --quiet --python "$PYTHON" --group dify-dsl --group tokens

# 4. The Weaviate server binary (cached; built from the Go module proxy on a miss).
.venv/bin/python -m hindsight_cli ensure-weaviate >/dev/null

# 5. For the tests: PostgreSQL, Redis, Chromium and chromium-driver, installed with apt-get when missing (needs root or passwordless sudo).
if [ "${1:-}" = "--tests" ]; then
  scripts/test_packages.sh
fi
