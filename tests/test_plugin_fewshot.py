"""Few-shot examples through the plugin under Dify's PluginRunner and the real CLI (tests/conftest.py `runner`):
record_turn's detector makes them, search_insight shows them only when the builder switches `examples` on, only to
their user, as a section of the rules block of their own."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from hindsight_insights.store import InsightStore
from testkit.messages import error_of
from testkit.runner import RunnerPlugin

pytestmark = pytest.mark.runtime  # version-agnostic: run once, on the default Weaviate (Makefile)

SCENE = "售后服务"
QUESTION = "退货寄到哪里？"
ANSWER = "请把退货寄到杭州市西湖区文三路 1 号。"
CORRECTION = "不对，退货地址是杭州市滨江区江南大道 100 号"
SECTION = "## 以往被用户纠正过的回答（示例）"
LATER = {"query": "我想退货，应该寄到哪个地址？", "scene": SCENE}


def corrected_conversation(runner: RunnerPlugin, credentials: dict[str, Any], user: str) -> None:
    session = f"conv-{uuid.uuid4().hex[:8]}"
    for message, answer in ((QUESTION, ANSWER), (CORRECTION, "抱歉，已更正。")):
        turn = {"session_id": session, "scene": SCENE, "user_message": message, "assistant_message": answer}
        runner.invoke_tool("record_turn", turn, credentials, user_id=user)


def test_search_shows_the_users_corrected_answers_only_when_the_builder_enables_them(
    runner: RunnerPlugin, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    corrected_conversation(runner, plugin_credentials, "alice")
    (kept,) = plugin_store.examples.recent()
    assert (kept.user_id, kept.said, kept.corrected) == ("alice", ANSWER, CORRECTION)

    enabled = runner.invoke_tool("search_insight", {**LATER, "examples": True}, plugin_credentials, user_id="alice")
    rules = enabled.variables["rules"]
    assert SECTION in rules and rules == enabled.json["rules"]
    assert f"1. 用户问：「{QUESTION}」；当时的回答：「{ANSWER}」；用户纠正：「{CORRECTION}」" in rules
    assert [e["id"] for e in enabled.json["examples"]] == [str(kept.id)]
    assert rules.index("## 从以往对话中学到的行为规则") < rules.index(SECTION)  # the lesson learned at once, first

    disabled = runner.invoke_tool("search_insight", LATER, plugin_credentials, user_id="alice")
    assert SECTION not in disabled.variables["rules"] and "examples" not in disabled.json
    assert disabled.variables["rules"] == rules[: rules.index(SECTION)].strip()  # the same block, less the section

    other = runner.invoke_tool("search_insight", {**LATER, "examples": True}, plugin_credentials, user_id="bob")
    assert SECTION not in other.variables["rules"] and other.json["examples"] == []


def test_a_bad_examples_setting_is_refused_with_the_empty_variables(
    runner: RunnerPlugin, plugin_credentials: dict[str, Any]
) -> None:
    output = runner.invoke_tool("search_insight", {**LATER, "examples": "maybe"}, plugin_credentials)
    assert [(p["field"], p["rule"]) for p in error_of(output)["problems"]] == [
        ("examples", "must be true or false, not 'maybe'")
    ]
    assert output.variables == {"rules": "", "injected_ids": ""}
