"""The plugin installed in Dify's plugin daemon and called as Dify's API server calls it, against the real Weaviate.

The module's fixture starts PostgreSQL, Redis, a stand-in for Dify's inner API and the daemon, migrates with
`dify migrate`, uploads and installs the package `make package` builds, and polls the install task. The tests then
go through dispatch: credential validation, each tool's happy path and one error path, a daemon restart, and
backwards LLM calls answered by the stand-in: the probe plugin's, and `reflect_session`'s, where the stand-in
answers as Dify's API server would with the model's reply that each test chooses. They run once per CI run (marker
`daemon`): they test the runtime wiring, which does not change with the Weaviate version.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
import weaviate

from hindsight_insights.models import Insight, InsightStatus
from hindsight_insights.store import InsightStore
from hindsight_insights.store.budget import WeaviateBudget
from hindsight_insights.store.schema import BUDGET
from hindsight_insights.store.tenancy import project_collection
from hindsight_insights.weaviate_server import LocalWeaviate, free_port
from scripts.package_plugin import BUILDER_README, ROOT
from testkit.cases import (
    ATTACK_VERDICT,
    BENIGN_VERDICT,
    MODEL_SELECTOR,
    NAME_QUOTE,
    NAME_TURNS,
    PREFERENCE_TYPE_VERDICT,
    RETURN_ADDRESS,
    UNSURE_CORRECTION_TURNS,
    UNSURE_PERCENT_QUOTE,
    UNSURE_PREFERENCE,
    insight_reply,
    preference_of,
)
from testkit.daemon import DaemonClient, DaemonStack
from testkit.inner_api import InnerCall, ModelFailure, ReplyQueue, RerankReply, no_rerank_model, unframe
from testkit.messages import PluginError, ToolOutput, credentials_for, error_of
from testkit.probe import PLUGIN_ID as PROBE_ID
from testkit.probe import PROVIDER as PROBE_PROVIDER
from testkit.probe import package_probe
from testkit.runtimes import Toolchain
from tests.test_search import save_return_rules
from tests.test_search_rerank import REFUND, REFUND_SCORES, RERANK_SELECTOR

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
        "reflect_session",
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


# ---- reflect_session: the plugin's own backwards LLM call ----------------------------------------------------------


def record_session(daemon: Installed, credentials: dict[str, Any], user: str) -> str:
    """The three turns of NAME_TURNS, recorded by record_turn in one Dify conversation of `user`."""
    conversation = f"conv-{uuid.uuid4().hex[:8]}"
    for turn in NAME_TURNS:
        recorded = daemon.client.invoke_tool(
            "record_turn", turn, credentials, user_id=user, conversation_id=conversation
        )
        assert "error" not in recorded.json, recorded.json
    return conversation


def reflect(
    daemon: Installed, credentials: dict[str, Any], user: str, conversation: str, replies: list[str | ModelFailure]
) -> tuple[ToolOutput, list[InnerCall]]:
    """reflect_session at the end of the conversation, the stand-in answering with `replies` in order; returns the
    tool's output and the LLM invocations the stand-in received for it."""
    inner_api = daemon.stack.inner_api
    before = len(inner_api.calls_to("invoke/llm"))
    inner_api.reply = ReplyQueue(list(replies))
    output = daemon.client.invoke_tool(
        "reflect_session", {"model": MODEL_SELECTOR}, credentials, user_id=user, conversation_id=conversation
    )
    return output, inner_api.calls_to("invoke/llm")[before:]


def prompt_tokens(call: InnerCall) -> int:
    """The prompt tokens the stand-in reports for a call (testkit.inner_api.llm_chunks: one per character)."""
    return sum(len(str(message["content"])) for message in call.body["prompt_messages"])


def active_of(store: InsightStore, user: str) -> list[Insight]:
    return store.list_insights(status=InsightStatus.ACTIVE, user_id=user)


def rules_for(daemon: Installed, credentials: dict[str, Any], user: str) -> str:
    found = daemon.client.invoke_tool("search_insight", {"query": "你好"}, credentials, user_id=user)
    return str(found.variables["rules"])


def test_reflect_session_learns_with_the_workspaces_model_for_the_acting_user_only(
    daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    conversation = record_session(daemon, plugin_credentials, "lao-wang")

    output, (call,) = reflect(daemon, plugin_credentials, "lao-wang", conversation, [insight_reply()])

    # What Dify's API server received: the builder's model, the acting user, and the transcript.
    assert call.body["tenant_id"] == daemon.client.tenant_id and call.body["user_id"] == "lao-wang"
    # The daemon relays the model config with the model type as `type` (its RequestInvokeLLM).
    sent = {key: call.body[key] for key in ("provider", "model", "type", "mode", "completion_params")}
    picked = {key: MODEL_SELECTOR[key] for key in ("provider", "model", "mode", "completion_params")}
    assert sent == {**picked, "type": "llm"} and call.body["stream"] is False
    system, user = call.body["prompt_messages"]
    assert (system["role"], user["role"]) == ("system", "user")
    assert "JSON schema of the answer" in system["content"] and conversation not in system["content"]
    for turn in NAME_TURNS:
        assert (
            f"用户：{turn['user_message']}" in user["content"]
            and f"助手：{turn['assistant_message']}" in user["content"]
        )
    # The report, as JSON, text and variables. record_turn's detector learned the template's rule from the second
    # message at once; the model's wording is the newer version of that slot.
    (saved_id,) = output.json["superseded"]
    assert output.types == ["text", "json", "variable", "variable", "variable"]
    assert output.variables == {"learned": 1, "outcome": "learned", "insight_ids": saved_id}
    assert output.texts == [
        f"Reflected on session {conversation} with gpt-4o-mini: learned 1 insight(s) (superseded 1)."
    ]
    report = output.json
    assert (report["session_id"], report["user_id"], report["candidates"], report["llm_calls"]) == (
        conversation,
        "lao-wang",
        1,
        1,
    )
    assert report["tokens_in"] == prompt_tokens(call) > 1000 and report["tokens_out"] > 0 and report["dropped"] == []
    assert (report["model"], report["provider"], report["source"]) == (
        "gpt-4o-mini",
        MODEL_SELECTOR["provider"],
        "reflection:dify",
    )
    # Saved for the acting user, with the user's own words as evidence; no one else gets the rule.
    saved = plugin_store.get(saved_id)
    assert (saved.user_id, saved.scope.value, saved.status.value) == ("lao-wang", "user", "active")
    assert (saved.evidence.quote, saved.evidence.session_id, saved.evidence.turn) == (NAME_QUOTE, conversation, 1)
    assert "老王" in rules_for(daemon, plugin_credentials, "lao-wang")
    assert rules_for(daemon, plugin_credentials, "xiao-li") == ""


def test_reflect_session_asks_once_more_after_a_malformed_reply(
    daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    conversation = record_session(daemon, plugin_credentials, "lao-wang")
    prose = "好的，我来总结：用户希望被称呼为“老王”，并且希望先给结论。"

    output, (first, second) = reflect(daemon, plugin_credentials, "lao-wang", conversation, [prose, insight_reply()])

    assert output.json["llm_calls"] == 2 and output.variables["learned"] == 1
    assert output.json["tokens_in"] == prompt_tokens(first) + prompt_tokens(second)  # both calls are counted
    assert first.body["prompt_messages"][0] == second.body["prompt_messages"][0]  # the same system part
    retry = second.body["prompt_messages"][1]["content"]
    assert retry.startswith(first.body["prompt_messages"][1]["content"]) and "你上一次的回答无法使用" in retry
    assert len(active_of(plugin_store, "lao-wang")) == 1 and plugin_store.count(user_id="lao-wang") == (2, 3)

    failed, calls = reflect(
        daemon, plugin_credentials, "lao-wang", conversation, [prose, '```json\n{"insights": [\n```']
    )
    error = error_of(failed)
    assert error["type"] == "reflection_failed" and "malformed output twice" in error["message"]
    assert error["message"].endswith("Nothing was saved.") and len(calls) == 2
    assert failed.json["report"]["llm_calls"] == 2 and failed.json["report"]["outcome"] == "failed"
    assert failed.variables == {"learned": 0, "outcome": "failed", "insight_ids": ""}
    assert len(active_of(plugin_store, "lao-wang")) == 1 and plugin_store.count(user_id="lao-wang") == (2, 3)


def test_reflect_session_drops_a_quote_the_user_never_said(
    daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    conversation = record_session(daemon, plugin_credentials, "lao-wang")
    real = json.loads(insight_reply(fenced=False))["insights"][0]
    invented = {
        **real,
        "topic": "回答语言",
        "action": "当你回答这位用户时，用英文回答。",
        "evidence": {"quote": "以后都用英文回答我", "turn": 1, "session": "S1"},
    }
    reply = json.dumps({"insights": [invented, real]}, ensure_ascii=False)

    output, _ = reflect(daemon, plugin_credentials, "lao-wang", conversation, [reply])

    assert output.variables["learned"] == 1 and output.json["candidates"] == 2
    (dropped,) = output.json["dropped"]
    assert (dropped["index"], dropped["topic"], dropped["reason"]) == (0, "回答语言", "quote_not_in_transcript")
    assert output.json["counts"]["dropped"] == 1 and "dropped 1 (quote_not_in_transcript)" in output.texts[0]
    assert [i.topic for i in active_of(plugin_store, "lao-wang")] == ["称呼"]


def test_reflect_session_refuses_another_users_session(
    daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    conversation = record_session(daemon, plugin_credentials, "lao-wang")
    for parameters in ({"model": MODEL_SELECTOR}, {"model": MODEL_SELECTOR, "session_id": conversation}):
        before = len(daemon.stack.inner_api.calls_to("invoke/llm"))
        refused = daemon.client.invoke_tool(
            "reflect_session", parameters, plugin_credentials, user_id="xiao-li", conversation_id=conversation
        )
        error = error_of(refused)
        assert error["type"] == "invalid_input" and error["problems"][0]["field"] == "session_id"
        assert "reads only the acting user's sessions" in error["message"] and "lao-wang" not in error["message"]
        assert refused.variables == {"learned": 0, "outcome": "failed", "insight_ids": ""}
        assert len(daemon.stack.inner_api.calls_to("invoke/llm")) == before  # the model never saw it
    assert plugin_store.count() == (1, 3)  # only what record_turn learned from lao-wang's own message


def test_reflect_session_that_learns_nothing(
    daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    conversation = record_session(daemon, plugin_credentials, "lao-wang")
    output, _ = reflect(daemon, plugin_credentials, "lao-wang", conversation, ['{"insights": []}'])
    assert output.variables == {"learned": 0, "outcome": "nothing_learned", "insight_ids": ""}
    assert output.texts == [f"Reflected on session {conversation} with gpt-4o-mini: nothing learned."]
    assert output.json["candidates"] == 0 and output.json["llm_calls"] == 1 and "error" not in output.json
    assert plugin_store.count() == (1, 3)  # only what record_turn learned at once


def test_reflect_session_when_the_workspaces_model_fails(
    daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    """Dify streams the provider's error back ({data: null, error}); the tool reports it, with no traceback."""
    conversation = record_session(daemon, plugin_credentials, "lao-wang")
    quota = "[openai] Error: You exceeded your current quota, please check your plan and billing details."
    output, calls = reflect(daemon, plugin_credentials, "lao-wang", conversation, [ModelFailure(quota)])
    error = error_of(output)
    assert error["type"] == "reflection_failed" and len(calls) == 1
    assert (
        "the model call failed: Dify's model langgenius/openai/openai/gpt-4o-mini could not be invoked"
        in error["message"]
    )
    assert "You exceeded your current quota" in error["message"]
    assert output.variables["outcome"] == "failed" and plugin_store.count() == (1, 3)  # record_turn's only
    # The warning went through the SDK's log handler (main.py): the daemon records it as the plugin's log, and
    # nothing reached stderr.
    ours = [
        line
        for line in daemon.stack.daemon.log().splitlines()
        if "plugin=hindsight-insights/hindsight_insights:" in line
    ]
    assert any(
        "plugin instance log" in line and f"reflection on ['{conversation}'] failed: the model call failed" in line
        for line in ours
    )
    assert [line for line in ours if "plugin stderr" in line] == []


# ---- the screen's workspace-model cascade ----------------------------------------------------------------------------


def screen_save(
    daemon: Installed, credentials: dict[str, Any], replies: list[str | ModelFailure]
) -> tuple[ToolOutput, list[InnerCall]]:
    """save_insight of a preference the learned screen is unsure of, with the builder's model set."""
    inner_api = daemon.stack.inner_api
    before = len(inner_api.calls_to("invoke/llm"))
    inner_api.reply = ReplyQueue(list(replies))
    parameters = {**UNSURE_PREFERENCE, "model": MODEL_SELECTOR}
    output = daemon.client.invoke_tool("save_insight", parameters, credentials, user_id="lao-wang")
    return output, inner_api.calls_to("invoke/llm")[before:]


@pytest.mark.parametrize(
    ("reply", "held_because"),
    [
        (BENIGN_VERDICT, None),
        (ATTACK_VERDICT, "judged it attack"),
        ('{"verdict": "maybe"}', "gave no valid verdict"),
        (ModelFailure("[openai] Error: You exceeded your current quota"), "You exceeded your current quota"),
    ],
    ids=["benign", "attack", "malformed", "model-failure"],
)
def test_save_insight_asks_the_workspaces_model_what_the_screen_is_unsure_of(
    daemon: Installed,
    plugin_credentials: dict[str, Any],
    plugin_store: InsightStore,
    reply: str | ModelFailure,
    held_because: str | None,
) -> None:
    output, calls = screen_save(daemon, plugin_credentials, [reply])
    (call,) = calls
    assert call.body["stream"] is False and call.body["completion_params"]["max_tokens"] == 300
    assert "security classifier" in str(call.body["prompt_messages"][0]["content"])
    assert "error" not in output.json, output.json
    (stored,) = plugin_store.list_insights(user_id="lao-wang")
    if held_because is None:
        assert stored.status is InsightStatus.ACTIVE and "review_reason" not in output.json
    else:
        assert stored.status is InsightStatus.PENDING_REVIEW and held_because in output.json["review_reason"]
        assert stored.review_reason == output.json["review_reason"]


def test_save_insight_holds_without_asking_when_the_days_budget_is_spent(
    daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore, client: weaviate.WeaviateClient
) -> None:
    """The budget is the project's Weaviate collection: spent by another process, the plugin sees it."""
    budget = WeaviateBudget(project_collection(client, plugin_store.settings.project, BUDGET))
    today = datetime.now(UTC).astimezone(ZoneInfo(plugin_store.settings.timezone)).date()
    while budget.take("correction", plugin_store.settings.model_calls_per_day, today):
        pass
    output, calls = screen_save(daemon, plugin_credentials, [BENIGN_VERDICT])
    assert calls == [] and "model calls is spent" in output.json["review_reason"], output.json
    (stored,) = plugin_store.list_insights(user_id="lao-wang")
    assert stored.status is InsightStatus.PENDING_REVIEW


# ---- the correction detector's workspace-model cascade ---------------------------------------------------------------


def record_unsure(
    daemon: Installed, credentials: dict[str, Any], replies: list[str | ModelFailure]
) -> tuple[ToolOutput, list[InnerCall]]:
    """record_turn of UNSURE_CORRECTION_TURNS with the builder's model: the output of the second (unsure) turn."""
    inner_api = daemon.stack.inner_api
    before = len(inner_api.calls_to("invoke/llm"))
    inner_api.reply = ReplyQueue(list(replies))
    conversation = f"conv-{uuid.uuid4().hex[:8]}"
    for turn in UNSURE_CORRECTION_TURNS:
        parameters = {**turn, "model": MODEL_SELECTOR}
        output = daemon.client.invoke_tool(
            "record_turn", parameters, credentials, user_id="lao-wang", conversation_id=conversation
        )
        assert "error" not in output.json, output.json
    return output, inner_api.calls_to("invoke/llm")[before:]


def test_record_turn_asks_the_workspaces_model_what_the_detector_is_unsure_of(
    daemon: Installed, plugin_credentials: dict[str, Any], client: weaviate.WeaviateClient, plugin_store: InsightStore
) -> None:
    # Verdict applied: the first call is the detector's (its lesson may then be screened: a benign verdict is queued).
    output, calls = record_unsure(daemon, plugin_credentials, [PREFERENCE_TYPE_VERDICT, BENIGN_VERDICT])
    detector, correction = output.json["detector"], output.json["correction"]
    assert detector["unsure"] and detector["asked"] and detector["model_verdict"] == "preference", detector
    assert (correction["type"], correction["corrected"]) == ("preference", UNSURE_PERCENT_QUOTE)
    assert output.variables["correction_type"] == "preference" and len(output.json["learned"]) == 1
    first = calls[0]
    assert first.body["stream"] is False and first.body["completion_params"]["max_tokens"] == 300
    system, user = (str(message["content"]) for message in first.body["prompt_messages"])
    assert "preference" in system and UNSURE_PERCENT_QUOTE in user

    # Malformed: the detector's own decision (none) stands, and the output says so.
    output, calls = record_unsure(daemon, plugin_credentials, ["It is probably a preference."])
    detector = output.json["detector"]
    assert detector["asked"] and detector["model_verdict"] is None and detector["model_outcome"] == "malformed"
    assert output.json["correction"]["type"] == "none" and output.json["learned"] == [] and len(calls) == 1

    # The day's budget spent (by another process, in the project's Weaviate collection): not asked.
    budget = WeaviateBudget(project_collection(client, plugin_store.settings.project, BUDGET))
    today = datetime.now(UTC).astimezone(ZoneInfo(plugin_store.settings.timezone)).date()
    while budget.take("screen", plugin_store.settings.model_calls_per_day, today):
        pass
    output, calls = record_unsure(daemon, plugin_credentials, [PREFERENCE_TYPE_VERDICT])
    detector = output.json["detector"]
    assert not detector["asked"] and detector["model_outcome"] == "budget" and calls == []
    assert output.json["correction"]["type"] == "none"


# ---- search_insight's rerank model ---------------------------------------------------------------------------------


def search_reranked(
    daemon: Installed, credentials: dict[str, Any], rerank: RerankReply, **parameters: Any
) -> tuple[ToolOutput, list[InnerCall]]:
    """search_insight of REFUND in the after-sales scene, the stand-in answering rerank calls with `rerank`."""
    inner_api = daemon.stack.inner_api
    before = len(inner_api.calls_to("invoke/rerank"))
    inner_api.rerank = rerank
    output = daemon.client.invoke_tool(
        "search_insight", {"query": REFUND, "scene": "售后服务", **parameters}, credentials, user_id="lao-wang"
    )
    assert "error" not in output.json, output.json
    return output, inner_api.calls_to("invoke/rerank")[before:]


def situational_topics(output: ToolOutput) -> list[str]:
    return [item["topic"] for item in output.json["insights"] if item["channel"] == "situational"]


def test_search_insight_lets_the_workspaces_rerank_model_decide(
    daemon: Installed, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    save_return_rules(plugin_store)
    credentials = {**plugin_credentials, "score_threshold": ""}  # the calibrated no-match gate, as installed

    def scores(request: dict[str, Any]) -> list[float]:
        return REFUND_SCORES([str(doc) for doc in request["docs"]])

    # Without the parameter: the built-in gate, and no rerank call.
    output, calls = search_reranked(daemon, credentials, scores)
    assert calls == [] and "rerank" not in output.json and situational_topics(output) == ["退款到账时间"]

    # With it: the model's scores decide (the seven-day rule, held back by the gate, passes at 0.62).
    output, calls = search_reranked(daemon, credentials, scores, rerank_model=RERANK_SELECTOR)
    (call,) = calls
    assert call.headers["x-inner-api-key"] == daemon.stack.inner_api.key
    body = call.body
    assert (body["provider"], body["model"]) == ("langgenius/cohere/cohere", "rerank-multilingual-v3.0"), body
    assert body["query"] == REFUND and len(body["docs"]) == 4 and body["top_n"] == 4 and body["score_threshold"] == 0
    assert body["tenant_id"] and body["user_id"]  # added by the daemon, as Dify's inner API requires
    assert situational_topics(output) == ["退款到账时间", "七天无理由退货"]
    assert "7 天内可无理由退货" in output.variables["rules"]
    assert output.json["rerank"]["outcome"] == "reranked" and output.json["rerank"]["passed"] == 2

    # The model not set up in the workspace (Dify answers {"data": null, "error": ...}): the built-in gate decides.
    output, calls = search_reranked(daemon, credentials, no_rerank_model, rerank_model=RERANK_SELECTOR)
    report = output.json["rerank"]
    assert len(calls) == 1 and situational_topics(output) == ["退款到账时间"]
    assert report["outcome"] == "failed" and "credentials is not initialized" in report["detail"], report

    # The provider's quota: the same.
    def quota(request: dict[str, Any]) -> list[float]:
        raise ModelFailure("[cohere] Error: You exceeded your current quota")

    output, calls = search_reranked(daemon, credentials, quota, rerank_model=RERANK_SELECTOR)
    assert len(calls) == 1 and situational_topics(output) == ["退款到账时间"]
    assert output.json["rerank"]["outcome"] == "failed" and "quota" in output.json["rerank"]["detail"]


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
