"""Weaviate dying under the plugin, on a private server each test starts and kills (SIGKILL): a call in flight
fails with the usual actionable message, and the first call after a restart succeeds."""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url, weaviate_errors
from hindsight_insights.errors import WeaviateUnavailable
from hindsight_insights.models import InsightDraft
from hindsight_insights.store import InsightStore, open_store
from hindsight_insights.store.schema import INSIGHTS
from hindsight_insights.store.tenancy import project_collection
from hindsight_insights.weaviate_server import LocalWeaviate, ensure_binary, start_local
from testkit.admitted import admitted_as_is
from testkit.cases import RETURN_ADDRESS
from testkit.messages import credentials_for, error_of
from testkit.runner import RunnerPlugin

UNREACHABLE = "could not be reached (connection refused or lost"


@pytest.fixture
def private_server(settings: Settings, tmp_path: Path) -> Iterator[LocalWeaviate]:
    server = start_local(ensure_binary(settings), tmp_path / "private-weaviate")
    yield server
    server.process.send_signal(signal.SIGCONT)
    server.stop()


@pytest.fixture
def private_store(private_server: LocalWeaviate, settings: Settings) -> Iterator[InsightStore]:
    store = open_store(private_server.settings(settings.model_copy(update={"project": "outage"})))
    yield store
    store.close()


def _kill(server: LocalWeaviate) -> None:
    server.process.send_signal(signal.SIGKILL)
    server.process.wait()


def test_a_write_in_flight_when_weaviate_dies_says_it_is_unreachable(
    private_server: LocalWeaviate, private_store: InsightStore, settings: Settings
) -> None:
    """The insert is an HTTP request: frozen, the server holds it; killed, the connection drops under it."""
    client = connect_url(private_server.settings(settings), private_server.url)
    project_collection(client, "outage", INSIGHTS).data.insert({"topic": "before"})  # connected
    private_server.process.send_signal(signal.SIGSTOP)
    caught: list[BaseException] = []

    insights = project_collection(client, "outage", INSIGHTS)

    def insert() -> None:
        try:
            with weaviate_errors("saving an insight"):
                insights.data.insert({"topic": "in flight"})
        except BaseException as error:
            caught.append(error)

    writer = threading.Thread(target=insert)
    writer.start()
    time.sleep(0.5)  # the request is sent and waits for an answer
    _kill(private_server)
    writer.join(10)
    client.close()
    (error,) = caught
    assert isinstance(error, WeaviateUnavailable), repr(error)
    assert str(error).startswith(f"Weaviate failed while saving an insight: it {UNREACHABLE}"), error
    # and the next save, which fails before it reaches Weaviate
    with pytest.raises(WeaviateUnavailable, match=re.escape(UNREACHABLE)):
        private_store.save(admitted_as_is(InsightDraft.parse({**RETURN_ADDRESS, "action": "寄到文三路 2 号。"})))


def test_the_first_call_after_a_restart_succeeds(
    runner: RunnerPlugin, private_server: LocalWeaviate, settings: Settings
) -> None:
    server = private_server
    credentials = credentials_for(server.url, server.grpc_port, "outage", server.api_key)
    assert "error" not in runner.invoke_tool("save_insight", RETURN_ADDRESS, credentials).json
    _kill(server)
    for _ in range(3):  # the first finds the connection lost; the next ones find no server to reconnect to
        started = time.monotonic()
        error = error_of(runner.invoke_tool("search_insight", {"query": "退货"}, credentials))
        assert error["type"] == "weaviate_unavailable" and "reach" in error["message"], error
        assert time.monotonic() - started < 3  # a dead server fails a call fast, reconnecting or not
    restarted = start_local(
        ensure_binary(settings), server.data_dir, server.http_port, server.grpc_port, api_key=server.api_key
    )
    try:
        started = time.monotonic()
        output = runner.invoke_tool("search_insight", {"query": "退货寄到哪里", "scene": "售后服务"}, credentials)
        assert "error" not in output.json, output.json
        assert output.json["count"] == 1 and time.monotonic() - started < 3
    finally:
        restarted.stop()
