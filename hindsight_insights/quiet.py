"""The one place that quiets a dependency's known start-up warning; every entry point calls it first.

weaviate-client imports authlib's httpx integration, which warns "The httpx module is deprecated; please use httpx2
instead" on every start. Not ours to fix, and in the plugin it is pure noise on stderr, which Dify's CLI relays
into a pipe nobody reads (PluginRunner). authlib.deprecate sets its warning class to "always" when it is imported,
so the filter is added after importing it, and must run before weaviate-client is imported.

Callers: main.py (the plugin), hindsight_cli/__main__.py (the CLI), tests/conftest.py, bench/*.py.
"""

from __future__ import annotations

import warnings


def quiet_dependency_warnings() -> None:
    from authlib.deprecate import AuthlibDeprecationWarning

    warnings.filterwarnings("ignore", category=AuthlibDeprecationWarning)
