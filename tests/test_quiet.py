"""The one helper that quiets authlib's start-up warning (hindsight_insights/quiet.py), in a fresh interpreter.

authlib warns when it has to fall back from httpx2 to httpx. The plugin's venv has no httpx2 (the dev venv gets it
with graphon), so each interpreter here first makes httpx2 unimportable, as it is in the plugin.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scripts.package_plugin import ROOT

AS_IN_THE_PLUGIN = "import sys; sys.modules['httpx2'] = None; "
QUIET = "from hindsight_insights.quiet import quiet_dependency_warnings; quiet_dependency_warnings(); "


def stderr_of(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stderr


def test_importing_weaviate_client_warns_without_the_helper() -> None:
    assert "AuthlibDeprecationWarning" in stderr_of(AS_IN_THE_PLUGIN + "import weaviate")


def test_the_helper_quiets_it() -> None:
    assert stderr_of(AS_IN_THE_PLUGIN + QUIET + "import weaviate") == ""


def test_every_entry_point_calls_it_and_nothing_copies_the_filter() -> None:
    entry_points = [ROOT / "main.py", ROOT / "hindsight_cli" / "__main__.py", ROOT / "tests" / "conftest.py"]
    entry_points += [path for path in (ROOT / "bench").glob("*.py") if 'if __name__ == "__main__"' in path.read_text()]
    for path in entry_points:
        assert "quiet_dependency_warnings()" in path.read_text(), path
    sources: list[Path] = [ROOT / "main.py"]
    for directory in ("hindsight_insights", "hindsight_dify", "hindsight_cli", "tests", "bench", "testkit", "scripts"):
        sources += (ROOT / directory).rglob("*.py")
    copies = [p for p in sources if p.name not in ("quiet.py", "test_quiet.py") and "Authlib" in p.read_text()]
    assert copies == []
