"""Where the tests find what they use from Debian's packages (PostgreSQL and Redis, which they start; Chromium and
its WebDriver, the review console's browser), and which packages are missing. Standard library only: `make test` asks
it on every run (scripts/test_packages.sh), so it must start fast.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
from pathlib import Path

PACKAGES = ("postgresql", "redis-server", "chromium", "chromium-driver")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
APT_HINT = (
    "run `make test` (it installs them), or: apt-get update && "
    f"apt-get install -y --no-install-recommends {' '.join(PACKAGES)}"
)


def find_postgres_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    # Debian keeps the server binaries out of PATH, under the major version.
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(Path(p).parts[4]))
    return candidates[-1] if candidates else None


def find_redis_server() -> str | None:
    return shutil.which("redis-server")


def missing_packages() -> list[str]:
    """The Debian packages whose servers the tests cannot find, looked up exactly as testkit/services.py starts them.
    As root, PostgreSQL runs as the `postgres` user, which the package creates."""
    postgres = find_postgres_binary("initdb") and find_postgres_binary("pg_ctl")
    postgres_user = os.geteuid() != 0 or _user_exists("postgres")
    missing = [] if postgres and postgres_user else ["postgresql"]
    if not find_redis_server():
        missing.append("redis-server")
    if not os.access(CHROMIUM, os.X_OK):
        missing.append("chromium")
    if not os.access(CHROMEDRIVER, os.X_OK):
        missing.append("chromium-driver")
    return missing


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


if __name__ == "__main__":
    # scripts/test_packages.sh reads this line: the packages to install, space-separated, empty when none.
    print(" ".join(missing_packages()))
