"""Inputs the plugin must refuse, through Dify's own runtime (PluginRunner and the real CLI): a turn recorded into
another user's session, an oversized user id, an emptied project. Each refusal names what to fix and writes nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from hindsight_dify.params import Parameters
from hindsight_insights.errors import InvalidInput
from hindsight_insights.store import InsightStore
from testkit.messages import PluginError, error_of
from testkit.runner import RunnerPlugin

pytestmark = pytest.mark.runtime  # version-agnostic: run once, on the default Weaviate (Makefile)


def test_a_turn_into_another_users_session_is_refused_and_nothing_of_it_stored(
    runner: RunnerPlugin, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    session = f"conv-{uuid.uuid4().hex[:8]}"
    turn = {"session_id": session, "user_message": "退货寄到哪里？", "assistant_message": "寄到文三路 1 号。"}
    for _ in range(2):
        assert "error" not in runner.invoke_tool("record_turn", turn, plugin_credentials, user_id="user-a").json
    intruding = {**turn, "user_message": "不对，地址是上海的", "assistant_message": "好的"}
    error = error_of(runner.invoke_tool("record_turn", intruding, plugin_credentials, user_id="user-b"))
    assert error["type"] == "invalid_input"
    assert error["message"].startswith(f"session_id: session {session} holds turns of another user"), error
    assert "user-a" not in error["message"]  # whose session it is stays private
    assert plugin_store.turns.count(user_id="user-b") == 0
    assert [t.user_id for t in plugin_store.turns.session(session)] == ["user-a", "user-a"]
    assert plugin_store.count() == (0, 2)  # and no insight learned from the refused correction


def test_an_oversized_target_user_id_is_refused_without_echoing_it(
    runner: RunnerPlugin, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    huge = "u" * 1_000_000
    parameters = {"confirm": True, "target_user_id": huge, "allow_other_users": True}
    output = runner.invoke_tool("forget_user", parameters, plugin_credentials)
    error = error_of(output)
    assert error["message"] == "target_user_id: is an id of at most 128 characters, not 1000000"
    assert sum(len(text) for text in output.texts) < 1000


@pytest.mark.parametrize("blank", ["", "   "])
def test_an_emptied_project_is_refused_with_what_to_set(
    runner: RunnerPlugin, plugin_credentials: dict[str, Any], blank: str
) -> None:
    credentials = {**plugin_credentials, "project": blank}
    output = runner.invoke_tool("search_insight", {"query": "退货"}, credentials)
    error = error_of(output)
    assert error["type"] == "invalid_input" and error["message"].startswith("project: is empty: set the project name")
    with pytest.raises(PluginError, match="project: is empty"):
        runner.validate_credentials(credentials)


def test_an_absent_project_is_the_documented_default() -> None:
    from hindsight_dify.credentials import ProviderCredentials

    parsed = ProviderCredentials.parse_credentials({"weaviate_url": "http://127.0.0.1:8080"})
    assert parsed.project == "default"  # provider/hindsight_insights.yaml: required, default `default`


@pytest.mark.parametrize("name", ["end_user_id", "target_user_id", "session_id", "evidence_session_id"])
def test_ids_are_one_line_of_at_most_128_characters(name: str) -> None:
    assert Parameters({name: " " + "x" * 128 + " "}).text(name) == "x" * 128
    with pytest.raises(InvalidInput, match=f"^{name}: is an id of at most 128 characters, not 129$"):
        Parameters({name: "x" * 129}).text(name)
    with pytest.raises(InvalidInput, match=f"^{name}: is an id: one line"):
        Parameters({name: "a\nb"}).text(name)


@pytest.mark.parametrize(
    "values",
    [{"topic": "退货\ud800"}, {"tags": ["a", "\udc00"]}, {"model": {"provider": {"x": "\ud800"}}}],
)
def test_a_surrogate_that_reaches_the_parameters_is_refused_by_name(values: dict[str, Any]) -> None:
    (name,) = values
    with pytest.raises(InvalidInput, match=f"^{name}: holds an unpaired surrogate"):
        Parameters(values)
    with pytest.raises(InvalidInput, match=r"^tags: holds an unpaired surrogate"):
        Parameters({"tags": '["a", "\\ud800"]'}).text_list("tags")
