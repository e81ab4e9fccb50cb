"""The plugin installed in Dify's plugin daemon and called as Dify's API server calls it, against the real Weaviate.

The module's fixture starts PostgreSQL, Redis, a stand-in for Dify's inner API and the daemon, migrates with
`dify migrate`, uploads and installs the package `make package` builds, and polls the install task. The tests then
go through dispatch: credential validation, each tool's happy path and one error path, a daemon restart, and a
backwards LLM call answered by the stand-in. They run once per CI run (marker `daemon`): they test the runtime
wiring, which does not change with the Weaviate version.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate, free_port
from scripts.package_plugin import BUILDER_README, ROOT
from testkit.cases import RETURN_ADDRESS, preference_of
from testkit.daemon import DaemonClient, DaemonStack
from testkit.inner_api import unframe
from testkit.messages import PluginError, credentials_for, error_of
from testkit.probe import PLUGIN_ID as PROBE_ID
from testkit.probe import PROVIDER as PROBE_PROVIDER
from testkit.probe import package_probe
from testkit.runtimes import Toolchain

pytestmark = pytest.mark.daemon


@dataclass
class Installed:
    stack: DaemonStack
    client: DaemonClient
    unique_identifier: str
    probe_identifier: str


@pytest.fixture(scope="module")
def daemon(
    plugin_package: Path,
    dify_plugin_daemon: Path,
    dify_cli: Path,
    runtime_toolchain: Toolchain,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Installed]:
    workdir = tmp_path_factory.mktemp("daemon")
    stack = DaemonStack.start(dify_plugin_daemon, dify_cli, runtime_toolchain, workdir)
    client = stack.client()
    try:
        unique_identifier = client.upload(plugin_package)
        client.install(unique_identifier)
        probe_identifier = client.upload(package_probe(dify_cli, runtime_toolchain, workdir))
        client.install(probe_identifier)
        yield Installed(stack, client, unique_identifier, probe_identifier)
    finally:
        client.close()
        stack.stop()


def test_installed_with_its_tools_and_both_readmes(daemon: Installed) -> None:
    ours = [p for p in daemon.client.tools() if p["plugin_id"] == "hindsight-insights/hindsight_insights"]
    (provider,) = ours
    assert [tool["identity"]["name"] for tool in provider["declaration"]["tools"]] == [
        "save_insight",
        "search_insight",
        "record_turn",
        "forget_user",
    ]
    english = daemon.client.readme(daemon.unique_identifier, "en_US")
    chinese = daemon.client.readme(daemon.unique_identifier, "zh_Hans")
    assert english == {"language": "en_US", "content": (ROOT / BUILDER_README).read_text()}
    assert chinese == {"language": "zh_Hans", "content": (ROOT / "readme" / "README_zh_Hans.md").read_text()}


# ---- credentials ---------------------------------------------------------------------------------------------------


def test_credentials_good_wrong_url_wrong_key(
    daemon: Installed, keyed_server: LocalWeaviate, plugin_project: str
) -> None:
    keyed = credentials_for(keyed_server.url, keyed_server.grpc_port, plugin_project, "right-key")
    assert daemon.client.validate_credentials(keyed) is True
    port = free_port()
    with pytest.raises(PluginError) as wrong_url:
        daemon.client.validate_credentials({**keyed, "weaviate_url": f"http://127.0.0.1:{port}"})
    assert wrong_url.value.error_type == "ToolProviderCredentialValidationError"
    assert f"cannot reach Weaviate at http://127.0.0.1:{port}" in wrong_url.value.message
    with pytest.raises(PluginError) as wrong_key:
        daemon.client.validate_credentials({**keyed, "weaviate_api_key": "wrong-key"})
    assert wrong_key.value.error_type == "ToolProviderCredentialValidationError"
    assert "refused the API key" in wrong_key.value.message


# ---- each tool: the happy path and one error path ------------------------------------------------------------------


def test_save_insight(daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore) -> None:
    saved = daemon.client.invoke_tool("save_insight", RETURN_ADDRESS, plugin_credentials, conversation_id="conv-7")
    assert saved.json["status"] == "created" and saved.texts == [f"Insight created: 退货地址 ({saved.json['id']})."]
    stored = plugin_store.get(saved.json["id"])
    assert stored.user_id == "dify-user-1" and stored.evidence.session_id == "conv-7"  # from Dify's request
    rejected = error_of(
        daemon.client.invoke_tool("save_insight", {**RETURN_ADDRESS, "kind": "rumour"}, plugin_credentials)
    )
    assert rejected["type"] == "invalid_input" and rejected["problems"][0]["field"] == "kind"
    assert plugin_store.count() == (1, 0)


def test_search_insight(daemon: Installed, plugin_credentials: dict[str, Any]) -> None:
    saved = daemon.client.invoke_tool("save_insight", RETURN_ADDRESS, plugin_credentials)
    found = daemon.client.invoke_tool(
        "search_insight", {"query": "那我寄到哪里？", "scene": "售后服务"}, plugin_credentials
    )
    assert found.types == ["text", "json", "variable", "variable"]
    assert "文三路 1 号" in found.variables["rules"] and found.variables["injected_ids"] == saved.json["id"]
    failed = daemon.client.invoke_tool("search_insight", {"query": "x", "top_k": 0}, plugin_credentials)
    assert error_of(failed)["problems"][0]["field"] == "top_k"
    assert failed.variables == {"rules": "", "injected_ids": ""}


def test_record_turn(daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore) -> None:
    conversation = f"conv-{uuid.uuid4().hex[:8]}"
    turn = {"user_message": "不对，地址是杭州的", "assistant_message": "抱歉。", "correction": True}
    recorded = daemon.client.invoke_tool("record_turn", turn, plugin_credentials, conversation_id=conversation)
    assert recorded.json["session_id"] == conversation and recorded.json["signals"] == ["correction"]
    assert [t.user_message for t in plugin_store.turns.session(conversation)] == ["不对，地址是杭州的"]
    bad = {"user_message": "hi", "feedback": "meh"}
    refused = error_of(daemon.client.invoke_tool("record_turn", bad, plugin_credentials, conversation_id=conversation))
    assert refused["problems"][0]["field"] == "signals.feedback"
    # Dify retries a message with the same message id: it is one turn.
    for _ in range(2):
        retried = daemon.client.invoke_tool(
            "record_turn", {"user_message": "好的"}, plugin_credentials, conversation_id=conversation, message_id="m-7"
        )
        assert retried.json["turn_index"] == 1
    assert plugin_store.count() == (1, 2)  # the first message's correction taught one insight at once


def test_forget_user(daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore) -> None:
    for user in ("alice", "bob"):
        daemon.client.invoke_tool("save_insight", preference_of(user), plugin_credentials, user_id=user)
    refused = daemon.client.invoke_tool("forget_user", {"confirm": False}, plugin_credentials, user_id="alice")
    assert error_of(refused)["problems"][0]["field"] == "confirm"
    done = daemon.client.invoke_tool("forget_user", {"confirm": "true"}, plugin_credentials, user_id="alice")
    assert done.json == {"user_id": "alice", "insights_deleted": 1, "insights_scrubbed": 0, "turns_deleted": 0}
    assert plugin_store.count(user_id="alice") == (0, 0) and plugin_store.count(user_id="bob") == (1, 0)


def test_plugin_writes_nothing_to_stderr(daemon: Installed, plugin_credentials: dict[str, Any]) -> None:
    """The daemon logs every line a plugin writes to stderr; ours, started and used, writes none."""
    daemon.client.invoke_tool("search_insight", {"query": "退货"}, plugin_credentials)
    ours = [
        line
        for line in daemon.stack.daemon.log().splitlines()
        if "plugin stderr" in line and "plugin=hindsight-insights/hindsight_insights:" in line
    ]
    assert ours == []


# ---- the inner API: where a plugin's backwards calls go ------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_backwards_llm_call_reaches_the_inner_api_stand_in(daemon: Installed, stream: bool) -> None:
    """The probe plugin asks the workspace's LLM (self.session.model.llm.invoke), as reflect_session will; the daemon
    relays the call to DIFY_INNER_API_URL and the stand-in answers as Dify's API server does."""
    inner_api = daemon.stack.inner_api
    before = len(inner_api.calls_to("invoke/llm"))
    inner_api.reply = lambda request: "先给结论，再用表格对比。"
    output = daemon.client.invoke_tool(
        "ask_llm",
        {"question": "Redis 还是 Memcached？", "stream": stream},
        {},
        user_id="lao-wang",
        plugin_id=PROBE_ID,
        provider=PROBE_PROVIDER,
    )
    assert output.json["text"] == "先给结论，再用表格对比。" and output.json["stream"] is stream
    if not stream:
        assert output.json["usage"]["total_tokens"] > 0 and output.json["usage"]["currency"] == "USD"
    (call,) = inner_api.calls_to("invoke/llm")[before:]
    assert call.headers["x-inner-api-key"] == inner_api.key
    assert call.body["tenant_id"] == daemon.client.tenant_id and call.body["user_id"] == "lao-wang"
    assert (call.body["provider"], call.body["model"], call.body["stream"]) == (
        "langgenius/openai/openai",
        "gpt-4o-mini",
        stream,
    )
    assert [m["role"] for m in call.body["prompt_messages"]] == ["system", "user"]
    assert call.body["prompt_messages"][1]["content"] == "Redis 还是 Memcached？"


def test_inner_api_refuses_a_wrong_key_as_dify_does(daemon: Installed) -> None:
    response = httpx.post(
        f"{daemon.stack.inner_api.url}/inner/api/invoke/llm",
        headers={"X-Inner-Api-Key": "wrong"},
        json={"tenant_id": "t", "user_id": "u", "model": "m", "stream": False},
    )
    assert response.status_code == 404
    right = httpx.post(
        f"{daemon.stack.inner_api.url}/inner/api/invoke/llm",
        headers={"X-Inner-Api-Key": daemon.stack.inner_api.key},
        json={"tenant_id": "t", "user_id": "u", "model": "m", "stream": False},
    )
    assert [frame["data"]["delta"]["finish_reason"] for frame in unframe(right.content)] == [""]


# ---- restart -------------------------------------------------------------------------------------------------------


def test_restart_while_installed(daemon: Installed, plugin_credentials: dict[str, Any]) -> None:
    """The daemon restarts (as after a Dify upgrade): the plugin comes back without reinstalling, data intact."""
    saved = daemon.client.invoke_tool("save_insight", RETURN_ADDRESS, plugin_credentials)
    daemon.stack.daemon.stop()
    daemon.stack.daemon.start()
    deadline = time.monotonic() + 60
    while True:  # until the daemon has started the plugin again, dispatch answers "no available node"
        try:
            found = daemon.client.invoke_tool(
                "search_insight", {"query": "寄到哪里", "scene": "售后服务"}, plugin_credentials
            )
            break
        except PluginError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    assert found.variables["injected_ids"] == saved.json["id"]
    assert daemon.client.validate_credentials(plugin_credentials) is True
