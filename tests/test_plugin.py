"""The Dify plugin end to end: packaged, unpacked and run as the daemon runs it, driven over the stdio protocol,
against the real Weaviate. (The Dify CLI and PluginRunner cannot be built here: see README.)"""

from __future__ import annotations

import json
import sys
import time
import uuid
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import weaviate

from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder
from hindsight_insights.schema import collection_names
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate, ensure_binary, free_port, start_local
from scripts.package_plugin import ROOT, package
from testkit.messages import PluginError
from testkit.plugin_runtime import PluginProcess


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("plugin")
    archive = directory / "hindsight_insights.difypkg"
    package(ROOT, archive)
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(directory / "unpacked")
    return directory / "unpacked"


@pytest.fixture(scope="module")
def plugin(plugin_dir: Path) -> Iterator[PluginProcess]:
    process = PluginProcess(plugin_dir, python=sys.executable)
    yield process
    process.close()


def credentials_for(server: LocalWeaviate, project: str, **changes: str) -> dict[str, Any]:
    # Dify sends every credential field, blanks included.
    return {
        "weaviate_url": server.url,
        "weaviate_api_key": "",
        "weaviate_grpc_host": "",
        "weaviate_grpc_port": str(server.grpc_port),
        "project": project,
        "embedder": "use-m3",
        "embedding_base_url": "",
        "embedding_api_key": "",
        "embedding_model": "",
        "language": "zh",
        "top_k": "5",
        "score_threshold": "0.17",
        **changes,
    }


@pytest.fixture
def project() -> str:
    return f"插件测试-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def credentials(weaviate_server: LocalWeaviate, project: str) -> dict[str, Any]:
    return credentials_for(weaviate_server, project)


@pytest.fixture
def store(client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder, project: str) -> InsightStore:
    """The same project, opened directly, to check what the plugin wrote."""
    return InsightStore.open(client, settings.model_copy(update={"project": project}), embedder)


def error_of(output: Any) -> dict[str, Any]:
    assert output.texts[0].startswith("Error ("), output.texts
    assert "Traceback" not in output.texts[0] and 'File "' not in output.texts[0]
    return output.json["error"]  # type: ignore[no-any-return]


RETURN_ADDRESS = {
    "topic": "退货地址",
    "kind": "fact",
    "scene": "售后服务",
    "action": "当顾客问退货寄到哪里时，告诉他寄到杭州市西湖区文三路 1 号，并写上订单号。",
    "evidence": "退货地址已经换成杭州文三路 1 号了",
    "confidence": 0.9,
}


# ---- credentials ---------------------------------------------------------------------------------------------


def test_good_credentials_validate_and_create_the_collections(
    plugin: PluginProcess, credentials: dict[str, Any], client: weaviate.WeaviateClient, project: str
) -> None:
    assert plugin.validate_credentials(credentials) is True
    assert client.collections.exists(collection_names(project).insights)


def test_unreachable_weaviate_fails_validation_with_a_message(
    plugin: PluginProcess, credentials: dict[str, Any]
) -> None:
    port = free_port()
    with pytest.raises(PluginError) as caught:
        plugin.validate_credentials({**credentials, "weaviate_url": f"http://127.0.0.1:{port}"})
    assert caught.value.error_type == "ToolProviderCredentialValidationError"
    assert f"cannot reach Weaviate at http://127.0.0.1:{port}" in caught.value.message
    assert "http://weaviate:8080" in caught.value.message  # says what it should be inside Dify


def test_malformed_credentials_name_the_field(plugin: PluginProcess, credentials: dict[str, Any]) -> None:
    with pytest.raises(PluginError) as caught:
        plugin.validate_credentials({**credentials, "top_k": "many", "weaviate_grpc_port": "99999"})
    message = caught.value.message
    assert "top_k: Input should be a valid integer" in message and "weaviate_grpc_port" in message
    with pytest.raises(PluginError, match="weaviate_url: Field required"):
        plugin.validate_credentials({**credentials, "weaviate_url": " "})


@pytest.fixture(scope="module")
def keyed_server(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalWeaviate]:
    server = start_local(
        ensure_binary(settings),
        tmp_path_factory.mktemp("keyed-weaviate"),
        extra_env={
            "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "false",
            "AUTHENTICATION_APIKEY_ENABLED": "true",
            "AUTHENTICATION_APIKEY_ALLOWED_KEYS": "right-key",
            "AUTHENTICATION_APIKEY_USERS": "dify",
            "AUTHORIZATION_ADMINLIST_ENABLED": "true",
            "AUTHORIZATION_ADMINLIST_USERS": "dify",
        },
    )
    yield server
    server.stop()


def test_api_key_is_checked(plugin: PluginProcess, keyed_server: LocalWeaviate, project: str) -> None:
    assert plugin.validate_credentials(credentials_for(keyed_server, project, weaviate_api_key="right-key"))
    with pytest.raises(PluginError) as caught:
        plugin.validate_credentials(credentials_for(keyed_server, project, weaviate_api_key="wrong-key"))
    assert "refused the API key" in caught.value.message
    with pytest.raises(PluginError, match="refused the API key"):
        plugin.validate_credentials(credentials_for(keyed_server, project))  # no key at all


# ---- save and search ---------------------------------------------------------------------------------------------


def test_save_then_search_in_chinese(plugin: PluginProcess, credentials: dict[str, Any], store: InsightStore) -> None:
    saved = plugin.invoke_tool("save_insight", RETURN_ADDRESS, credentials)
    assert saved.json["status"] == "created" and saved.json["supersedes"] == []
    assert saved.texts == [f"Insight created: 退货地址 ({saved.json['id']})."]
    found = plugin.invoke_tool(
        "search_insight",
        {"query": "耳机有杂音想退掉\n好的，可以退货\n那我寄到哪里？", "scene": "售后服务"},
        credentials,
    )
    rules = found.variables["rules"]
    assert rules.startswith("## 从以往对话中学到的行为规则") and "文三路 1 号" in rules and "必须：" in rules
    assert found.texts == [rules] and found.json["rules"] == rules
    assert found.json["count"] == 1 and found.json["insights"][0]["channel"] == "situational"
    assert found.variables["injected_ids"] == saved.json["id"] == found.json["injected_ids"][0]
    assert store.count() == (1, 0)


def test_save_then_search_in_english_with_standing_preference(
    plugin: PluginProcess, credentials: dict[str, Any]
) -> None:
    preference = {
        "topic": "comparison format",
        "kind": "preference",
        "scene": "option comparison",
        "action": "When the user weighs options, answer with a table, one row per criterion.",
        "evidence": "next time just give me a table",
        "confidence": 0.9,
        "tags": "format, tables",
    }
    saved = plugin.invoke_tool("save_insight", preference, credentials, user_id="lao-wang")
    found = plugin.invoke_tool(
        "search_insight",
        {"query": "Redis or Memcached, what do you think?", "scene": "option comparison", "language": "en"},
        credentials,
        user_id="lao-wang",
    )
    assert found.variables["rules"].splitlines() == [
        "## Behaviour rules learned from earlier conversations",
        "",
        "### Scene: option comparison",
        f"- You must: {preference['action']} (topic: comparison format; updated {datetime.now(UTC).date()})",
        "",
        "When two rules conflict, follow the one updated most recently.",
    ]
    assert found.json["insights"][0]["channel"] == "standing" and found.json["insights"][0]["id"] == saved.json["id"]
    other_user = plugin.invoke_tool(
        "search_insight",
        {"query": "Redis or Memcached?", "scene": "option comparison"},
        credentials,
        user_id="someone-else",
    )
    assert other_user.json["count"] == 0 and other_user.variables["rules"] == ""


def test_supersede_reported(plugin: PluginProcess, credentials: dict[str, Any]) -> None:
    first = plugin.invoke_tool("save_insight", RETURN_ADDRESS, credentials)
    newer = {
        **RETURN_ADDRESS,
        "action": "当顾客问退货寄到哪里时，告诉他寄到上海市张江路 88 号。",
        "evidence": "又搬回上海了",
    }
    second = plugin.invoke_tool("save_insight", newer, credentials)
    assert second.json["status"] == "superseded" and second.json["supersedes"] == [first.json["id"]]
    again = plugin.invoke_tool("save_insight", newer, credentials)
    assert again.json == {"id": second.json["id"], "status": "unchanged", "supersedes": []}


def test_insight_json_from_a_reflection_node(
    plugin: PluginProcess, credentials: dict[str, Any], store: InsightStore
) -> None:
    emitted = (
        "```json\n"
        + json.dumps({**RETURN_ADDRESS, "evidence": {"quote": "换成杭州了", "turn": 3}}, ensure_ascii=False)
        + "\n```"
    )
    saved = plugin.invoke_tool("save_insight", {"insight_json": emitted}, credentials, conversation_id="conv-9")
    assert saved.json["status"] == "created"
    stored = store.get(saved.json["id"])
    assert stored.evidence.turn == 3 and stored.source == "dify:insight_json" and stored.user_id == "dify-user-1"


@pytest.mark.parametrize("empty", ["{}", " { } ", "```json\n{}\n```"])
def test_empty_insight_json_saves_nothing(
    plugin: PluginProcess, credentials: dict[str, Any], store: InsightStore, empty: str
) -> None:
    output = plugin.invoke_tool("save_insight", {"insight_json": empty}, credentials)
    assert output.json == {"id": None, "status": "nothing_learned", "supersedes": []}
    assert store.count() == (0, 0)


@pytest.mark.parametrize(
    ("parameters", "field", "rule"),
    [
        ({"insight_json": "{not json"}, "insight_json", "is not valid JSON"),
        ({"insight_json": "[1, 2]"}, "insight_json", "must be one JSON object"),
        ({"insight_json": "{}", "topic": "x"}, "insight_json", "either insight_json or the fields"),
        ({**RETURN_ADDRESS, "kind": "rumour"}, "kind", "Input should be 'preference', 'fact', 'process' or 'lesson'"),
        ({**RETURN_ADDRESS, "confidence": 2}, "confidence", "less than or equal to 1"),
        ({**RETURN_ADDRESS, "topic": ""}, "topic", "Field required"),  # Dify sends a blank for an empty field
        ({**RETURN_ADDRESS, "topic": "   "}, "topic", "Field required"),
        ({**RETURN_ADDRESS, "evidence": ""}, "evidence.quote", "at least 1 character"),
        ({**RETURN_ADDRESS, "expire_at": "2020-01-01T00:00:00+08:00"}, "expire_at", "must be in the future"),
        ({**RETURN_ADDRESS, "tags": ",".join(f"t{i}" for i in range(11))}, "tags", "at most 10"),
        (
            {"insight_json": json.dumps({**RETURN_ADDRESS, "colour": "blue"})},
            "colour",
            "Extra inputs are not permitted",
        ),
    ],
)
def test_save_rejects_bad_input_and_writes_nothing(
    plugin: PluginProcess,
    credentials: dict[str, Any],
    store: InsightStore,
    parameters: dict[str, Any],
    field: str,
    rule: str,
) -> None:
    error = error_of(plugin.invoke_tool("save_insight", parameters, credentials))
    assert error["type"] == "invalid_input"
    assert any(p["field"] == field and rule in p["rule"] for p in error["problems"]), error
    assert store.count() == (0, 0)


@pytest.mark.parametrize(
    ("parameters", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 21}, "top_k"),
        ({"query": "x", "score_threshold": 1.5}, "score_threshold"),
        ({"query": "x", "language": "fr"}, "language"),
    ],
)
def test_search_rejects_bad_input(
    plugin: PluginProcess, credentials: dict[str, Any], parameters: dict[str, Any], field: str
) -> None:
    error = error_of(plugin.invoke_tool("search_insight", parameters, credentials))
    assert [p["field"] for p in error["problems"]] == [field]


def test_expired_insight_is_not_injected(plugin: PluginProcess, credentials: dict[str, Any]) -> None:
    soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    plugin.invoke_tool("save_insight", {**RETURN_ADDRESS, "expire_at": soon}, credentials)
    time.sleep(1.5)
    found = plugin.invoke_tool("search_insight", {"query": "退货寄到哪里", "scene": "售后服务"}, credentials)
    assert found.json["count"] == 0 and found.variables["rules"] == ""


# ---- turns and forgetting --------------------------------------------------------------------------------------


def test_record_turn(plugin: PluginProcess, credentials: dict[str, Any], store: InsightStore) -> None:
    saved = plugin.invoke_tool("save_insight", RETURN_ADDRESS, credentials)
    parameters = {
        "user_message": "不对，地址是杭州的",
        "assistant_message": "抱歉，已更正。",
        "scene": "售后服务",
        "feedback": "dislike",
        "correction": True,
        "tool_error": False,
        "injected_insight_ids": saved.json["id"],
    }
    first = plugin.invoke_tool("record_turn", parameters, credentials, conversation_id="conv-1")
    assert first.json == {
        "id": first.json["id"],
        "session_id": "conv-1",
        "turn_index": 0,
        "signals": ["dislike", "correction"],
    }
    second = plugin.invoke_tool(
        "record_turn", {"user_message": "好的", "feedback": "none"}, credentials, conversation_id="conv-1"
    )
    assert second.json["turn_index"] == 1 and second.json["signals"] == []
    turns = store.session_turns("conv-1")
    assert [t.user_message for t in turns] == ["不对，地址是杭州的", "好的"]
    assert turns[0].user_id == "dify-user-1" and turns[0].signals.correction
    assert [str(i) for i in turns[0].injected_insight_ids] == [saved.json["id"]]


@pytest.mark.parametrize(
    ("parameters", "field"),
    [
        ({"user_message": "hi", "injected_insight_ids": "not-an-id"}, "injected_insight_ids"),
        ({"user_message": "", "assistant_message": ""}, "input"),
        ({"user_message": "hi", "feedback": "meh"}, "signals.feedback"),
        ({"user_message": "hi", "tool_error": "perhaps"}, "tool_error"),
    ],
)
def test_record_turn_rejects_bad_input(
    plugin: PluginProcess, credentials: dict[str, Any], store: InsightStore, parameters: dict[str, Any], field: str
) -> None:
    error = error_of(plugin.invoke_tool("record_turn", parameters, credentials, conversation_id="conv-2"))
    assert field in [p["field"] for p in error["problems"]]
    assert store.count() == (0, 0)


def test_forget_user_needs_confirmation_and_isolates(
    plugin: PluginProcess, credentials: dict[str, Any], store: InsightStore
) -> None:
    for user in ("alice", "bob"):
        plugin.invoke_tool(
            "save_insight",
            {
                **RETURN_ADDRESS,
                "kind": "preference",
                "topic": f"name {user}",
                "action": f"Call the user {user}.",
                "evidence": user,
            },
            credentials,
            user_id=user,
        )
        plugin.invoke_tool(
            "record_turn", {"user_message": f"I am {user}"}, credentials, user_id=user, conversation_id=f"c-{user}"
        )
    bob_before = store.count(user_id="bob")
    refused = error_of(plugin.invoke_tool("forget_user", {"user_id": "alice", "confirm": False}, credentials))
    assert refused["problems"] == [
        {"field": "confirm", "rule": "must be true: deleting a user's insights and turns cannot be undone"}
    ]
    assert store.count(user_id="alice") == (1, 1)
    missing = error_of(plugin.invoke_tool("forget_user", {"confirm": True}, credentials))
    assert missing["problems"][0]["field"] == "user_id"
    done = plugin.invoke_tool("forget_user", {"user_id": "alice", "confirm": True}, credentials)
    assert done.json == {"user_id": "alice", "insights_deleted": 1, "turns_deleted": 1}
    assert store.count(user_id="alice") == (0, 0) and store.count(user_id="bob") == bob_before == (1, 1)


def test_concurrent_calls(plugin: PluginProcess, credentials: dict[str, Any], store: InsightStore) -> None:
    """Dify sends requests in parallel; the SDK runs them in a gevent-patched thread pool over one connection."""

    def save(index: int) -> str:
        parameters = {
            **RETURN_ADDRESS,
            "topic": f"规则 {index}",
            "action": f"第 {index} 条规则：按编号 {index} 处理。",
            "evidence": f"证据 {index}",
        }
        return str(plugin.invoke_tool("save_insight", parameters, credentials).json["status"])

    def search(index: int) -> int:
        return int(
            plugin.invoke_tool("search_insight", {"query": f"规则 {index}", "scene": "售后服务"}, credentials).json[
                "count"
            ]
        )

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(save, range(16))) == ["created"] * 16
        assert all(count >= 1 for count in pool.map(search, range(16)))
    assert store.count() == (16, 0)


# ---- failures of the environment -------------------------------------------------------------------------------


def test_unreachable_weaviate_is_a_clear_tool_error(plugin: PluginProcess, credentials: dict[str, Any]) -> None:
    down = {**credentials, "weaviate_url": f"http://127.0.0.1:{free_port()}"}
    for tool, parameters in [
        ("save_insight", RETURN_ADDRESS),
        ("search_insight", {"query": "退货"}),
        ("record_turn", {"user_message": "hi"}),
        ("forget_user", {"user_id": "a", "confirm": True}),
    ]:
        error = error_of(plugin.invoke_tool(tool, parameters, down))
        assert error["type"] == "weaviate_unavailable" and "cannot reach Weaviate" in error["message"], tool


def test_stdout_carries_only_protocol_messages(plugin: PluginProcess, credentials: dict[str, Any]) -> None:
    plugin.invoke_tool("search_insight", {"query": "hello"}, credentials)
    for line in plugin.stdout_lines[1:]:  # the first line is the manifest
        assert "event" in json.loads(line), line
