#!/usr/bin/env bash
# The servers the tests start themselves (PostgreSQL for the plugin daemon and the worker's claims, Redis for the
# daemon) and the review console's browser (Chromium, chromium-driver) come from Debian's packages. Installed when missing: as root, or with passwordless sudo; otherwise stop at
# once and say what to run. testkit/system_packages.py finds them, as the tests do.
set -euo pipefail
cd "$(dirname "$0")/.."

found=$(.venv/bin/python -m testkit.system_packages)  # an assignment, so that a failure stops the script
read -r -a missing <<<"$found"
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "bootstrap: the tests need PostgreSQL (initdb, pg_ctl), redis-server, chromium and chromium-driver; missing: ${missing[*]}." >&2
  echo "bootstrap: this is not a Debian system: install them with its package manager, then run make test again." >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "bootstrap: the tests need Debian's ${missing[*]}, and installing needs root or passwordless sudo. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  echo "then make test again." >&2
  exit 1
fi

echo "bootstrap: installing ${missing[*]} from Debian's packages (apt-get)" >&2
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"

found=$(.venv/bin/python -m testkit.system_packages)
read -r -a still <<<"$found"
if [ ${#still[@]} -gt 0 ]; then
  echo "bootstrap: installed, but the tests still cannot find: ${still[*]}" >&2
  exit 1
fi
