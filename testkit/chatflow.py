"""The example chatflow as Dify's workflow engine (graphon, the `dify-dsl` dependency group) loads it.

`graphon.dsl.loads` parses the DSL, resolves every node's plugin from the DSL's dependencies, validates every node's
data with Dify's node classes, builds the graph and runs the graph validators. It does not run anything; but a tool
node's runtime needs the path of `dify-plugin-daemon-slim` when it is built, so a stub that refuses to run stands
there, and the OpenAI key the LLM nodes are built with is never sent anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from graphon.dsl import DslImportPlan, inspect, loads
from graphon.graph.graph import Graph

STUB = '#!/bin/sh\necho "the example chatflow is only loaded in tests, never run" >&2\nexit 1\n'
CREDENTIALS = {"model_credentials": [{"vendor": "openai", "values": {"openai_api_key": "unused-never-sent"}}]}


@contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            del os.environ[name]
        else:
            os.environ[name] = previous


def plan(dsl: str) -> DslImportPlan:
    """What Dify's importer reads before building anything: kind, loadability, dependencies."""
    return inspect(dsl)


def load(dsl: str, workdir: Path) -> Graph:
    stub = workdir / "dify-plugin-daemon-slim"
    stub.write_text(STUB)
    stub.chmod(0o755)
    with _environment("SLIM_BINARY_PATH", str(stub)):
        return loads(dsl, credentials=CREDENTIALS).graph
