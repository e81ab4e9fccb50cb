"""The plugin over the daemon's stdio protocol, spoken by our own client (testkit/plugin_runtime.py): only what the
real runtimes cannot show. Everything a builder sees goes through PluginRunner and the daemon instead
(test_plugin_runner.py, test_plugin_daemon.py).

- Stdout is the protocol channel. The runtimes skip (and log) a line that is not a protocol message, so only a
  client that reads the raw stream can prove the plugin never writes one.
- Concurrency: Dify sends calls in parallel; this client controls how they interleave on one plugin process, and
  sees every heartbeat (a frozen Weaviate must stall neither the other calls nor the heartbeats).
"""

from __future__ import annotations

import itertools
import json
import signal
import sys
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hindsight_insights.config import Settings
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate, ensure_binary, start_local
from testkit.cases import MODEL_SELECTOR, RETURN_ADDRESS
from testkit.messages import credentials_for, error_of
from testkit.plugin_runtime import PluginProcess

pytestmark = pytest.mark.runtime  # version-agnostic: run once, on the default Weaviate (Makefile)


@pytest.fixture(scope="module")
def plugin_dir(plugin_package: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("plugin") / "unpacked"
    with zipfile.ZipFile(plugin_package) as zipped:
        zipped.extractall(directory)
    return directory


@pytest.fixture(scope="module")
def plugin(plugin_dir: Path) -> Iterator[PluginProcess]:
    process = PluginProcess(plugin_dir, python=sys.executable)
    yield process
    process.close()


def test_stdout_carries_only_protocol_messages(plugin: PluginProcess, plugin_credentials: dict[str, Any]) -> None:
    plugin.invoke_tool("save_insight", RETURN_ADDRESS, plugin_credentials)
    plugin.invoke_tool("search_insight", {"query": "退货寄到哪里", "scene": "售后服务"}, plugin_credentials)
    plugin.invoke_tool("search_insight", {"query": "x", "top_k": 0}, plugin_credentials)  # an error result too
    assert json.loads(plugin.stdout_lines[0])["author"] == "hindsight-insights"  # the manifest comes first
    for line in plugin.stdout_lines[1:]:
        assert "event" in json.loads(line), line
    assert "".join(plugin.stderr_lines) == ""  # and nothing on stderr either (see hindsight_insights/quiet.py)


def test_concurrent_calls(
    plugin: PluginProcess, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    """Dify sends requests in parallel; the SDK runs them in a gevent-patched thread pool over one connection."""

    def save(index: int) -> str:
        parameters = {
            **RETURN_ADDRESS,
            "topic": f"仓库 {index}",
            "action": f"寄往 {index} 号仓库的退货，在运单上写明仓库编号 {index}。",
            "evidence": f"{index} 号仓库负责这批退货",
        }
        return str(plugin.invoke_tool("save_insight", parameters, plugin_credentials).json["status"])

    def search(index: int) -> int:
        parameters = {"query": f"仓库 {index}", "scene": "售后服务"}
        return int(plugin.invoke_tool("search_insight", parameters, plugin_credentials).json["count"])

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(save, range(16))) == ["created"] * 16
        assert all(count >= 1 for count in pool.map(search, range(16)))
    assert plugin_store.count() == (16, 0)


@pytest.fixture
def frozen_server(settings: Settings, tmp_path: Path) -> Iterator[LocalWeaviate]:
    server = start_local(ensure_binary(settings), tmp_path / "frozen-weaviate")
    yield server
    server.process.send_signal(signal.SIGCONT)
    server.stop()


def test_a_frozen_weaviate_stalls_no_other_call_and_no_heartbeat(
    plugin_dir: Path, plugin_credentials: dict[str, Any], frozen_server: LocalWeaviate, plugin_project: str
) -> None:
    """Heartbeats are only visible on the raw stream; the runtimes turn a missing one into a restart."""
    plugin = PluginProcess(plugin_dir, python=sys.executable, env={"HEARTBEAT_INTERVAL": "1"})
    frozen = credentials_for(frozen_server.url, frozen_server.grpc_port, plugin_project, frozen_server.api_key)
    try:
        for credentials in (plugin_credentials, frozen):
            assert plugin.validate_credentials(credentials)
        frozen_server.process.send_signal(signal.SIGSTOP)
        frozen_since = time.monotonic()
        with ThreadPoolExecutor(2) as pool:
            stalled = pool.submit(plugin.invoke_tool, "search_insight", {"query": "退货"}, frozen)
            answered_meanwhile = 0
            while not stalled.done():
                output = plugin.invoke_tool("search_insight", {"query": "退货寄到哪里"}, plugin_credentials)
                assert "error" not in output.json, output.json
                answered_meanwhile += int(not stalled.done())
            error = error_of(stalled.result())
        assert answered_meanwhile >= 10, answered_meanwhile
        assert error["type"] == "weaviate_unavailable" and "did not answer in time" in error["message"]
        beats = [t for t in plugin.heartbeat_times if t >= frozen_since]
        gaps = [later - earlier for earlier, later in itertools.pairwise([frozen_since, *beats, time.monotonic()])]
        assert len(beats) >= 3 and max(gaps) < 3, gaps  # every second, as configured, while the call hung
    finally:
        plugin.close()


# A lone surrogate, as a JSON "\ud800" escape carries it: the SDK's reader refused such a line and answered with no
# session id, so the call never ended. Every parameter of every tool gets an answer (hindsight_dify/stdio.py).
SURROGATE = "\ud800"
SURROGATE_CALLS = [
    ("save_insight", {**RETURN_ADDRESS, "topic": f"退货{SURROGATE}地址"}, "topic"),
    ("save_insight", {**RETURN_ADDRESS, "evidence": f"寄到{SURROGATE}"}, "evidence"),
    ("search_insight", {"query": f"退货{SURROGATE}"}, "query"),
    ("search_insight", {"query": "退货", "scene": SURROGATE}, "scene"),
    (
        "record_turn",
        {"user_message": f"不对{SURROGATE}", "assistant_message": "好的", "session_id": "s-1"},
        "user_message",
    ),
    ("forget_user", {"confirm": "true", "target_user_id": f"dify-user-1{SURROGATE}"}, "target_user_id"),
    ("reflect_session", {"model": MODEL_SELECTOR, "session_id": f"s{SURROGATE}"}, "session_id"),
]


@pytest.mark.parametrize(
    ("tool", "parameters", "name"), SURROGATE_CALLS, ids=[f"{t}-{n}" for t, _, n in SURROGATE_CALLS]
)
def test_a_lone_surrogate_in_any_parameter_gets_an_answer_with_the_character_replaced(
    plugin: PluginProcess, plugin_credentials: dict[str, Any], tool: str, parameters: dict[str, Any], name: str
) -> None:
    output = plugin.invoke_tool(tool, parameters, plugin_credentials, timeout_s=20)  # a hang fails: queue.Empty
    assert not any("unexpected" in text or "Traceback" in text for text in output.texts), output.texts
    replaced = parameters[name].replace(SURROGATE, "\ufffd")
    if tool == "save_insight":
        assert output.json["status"] == "created", output.json
    elif tool == "forget_user":  # the replaced id is another user's: refused, and the reason names the parameter
        assert error_of(output)["message"].startswith("target_user_id: names another user"), output.json
    elif tool == "reflect_session":
        assert error_of(output)["message"].startswith(f"no turns are recorded for session {replaced}"), output.json
    else:
        assert "error" not in output.json, output.json


def test_a_lone_surrogate_inside_a_json_list_parameter_is_refused_by_name(
    plugin: PluginProcess, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    """Escaped once more, the surrogate passes the line and appears when the plugin decodes the parameter's JSON."""
    parameters = {**RETURN_ADDRESS, "tags": '["售后", "\\ud800"]'}
    error = error_of(plugin.invoke_tool("save_insight", parameters, plugin_credentials, timeout_s=20))
    assert error["type"] == "invalid_input" and error["message"].startswith("tags: holds an unpaired surrogate")
    assert plugin_store.count() == (0, 0)  # nothing written
