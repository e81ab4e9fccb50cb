"""reflect_session's adapter without a Dify runtime: the model selector's value, the reflector over the SDK's
backwards LLM invocation, and the operation's identity rules against the real Weaviate.

`session.model.llm` is stood in for by `RecordingLlm`, which records what the reflector passes and answers with the
SDK's own `LLMResult`. The messages the reflector builds are the SDK's classes (imported through testkit.sdk, so this
process is not monkey-patched by gevent). The same tool runs in Dify's plugin daemon in tests/test_plugin_daemon.py,
where the call really crosses the daemon to the inner-API stand-in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

import hindsight_dify
from hindsight_dify import Context, StoreCache, ToolResult, run
from hindsight_dify.dify_model import DifyModelReflector, ModelSelection, answer_of
from hindsight_dify.params import Parameters
from hindsight_insights.config import Settings
from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import InsightStatus, TurnDraft
from hindsight_insights.reflection import REFLECTION_SCHEMA, LlmError
from hindsight_insights.store import InsightStore
from scripts.package_plugin import ROOT
from testkit.cases import MODEL_SELECTOR, NAME_QUOTE, NAME_TURNS, insight_reply
from testkit.recording_llm import RecordingLlm
from testkit.sdk import (
    AssistantPromptMessage,
    LLMModelConfig,
    LLMResult,
    LLMUsage,
    PromptMessageRole,
    SystemPromptMessage,
    TextPromptMessageContent,
    UserPromptMessage,
)

# ---- the SDK stays out of the adapter's imports ----------------------------------------------------------------------


def test_the_adapter_imports_no_dify_plugin() -> None:
    """`import dify_plugin` monkey-patches gevent; the adapter imports the SDK's message classes only when a
    reflection runs inside a tool call."""
    code = "import sys, hindsight_dify, hindsight_dify.dify_model; print('dify_plugin' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# ---- the model selector ----------------------------------------------------------------------------------------------


def test_the_model_selector_value_is_the_sdks_model_config() -> None:
    # Keys Dify strips or may add (the tool input's `type`) are ignored.
    selection = ModelSelection.parse({**MODEL_SELECTOR, "type": "constant"})
    config = LLMModelConfig(**selection.model_config_dict())  # as LLMInvocation.invoke builds it from a dict
    assert (config.provider, config.model, config.mode) == ("langgenius/openai/openai", "gpt-4o-mini", "chat")
    assert config.model_type.value == "llm" and config.completion_params == {"temperature": 0.2}
    assert ModelSelection.parse({"provider": "p", "model": "m", "completion_params": None}).mode == "chat"


@pytest.mark.parametrize(
    ("value", "field", "rule"),
    [
        (None, "model", "pick the LLM that reflects"),
        ({}, "model", "pick the LLM that reflects"),
        ({**MODEL_SELECTOR, "provider": " "}, "model.provider", "at least 1 character"),
        ({**MODEL_SELECTOR, "model_type": "text-embedding"}, "model.model_type", "'llm'"),
        ({**MODEL_SELECTOR, "mode": "agent"}, "model.mode", "'chat' or 'completion'"),
    ],
)
def test_a_bad_model_selector_names_the_field(value: dict[str, Any] | None, field: str, rule: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        ModelSelection.parse(value)
    ((named, said),) = caught.value.problems
    assert named == field and rule in said, said


@pytest.mark.parametrize(
    ("value", "expected"),
    [(MODEL_SELECTOR, MODEL_SELECTOR), ('{"provider": "p", "model": "m"}', {"provider": "p", "model": "m"})],
)
def test_an_object_parameter_is_a_dict_or_its_json(value: Any, expected: dict[str, Any]) -> None:
    assert Parameters({"model": value}).mapping("model") == expected


@pytest.mark.parametrize(("value", "rule"), [("gpt-4o", "not text"), (["gpt-4o"], "not a list"), (4, "not int")])
def test_an_object_parameter_refuses_other_values(value: Any, rule: str) -> None:
    with pytest.raises(InvalidInput, match=rule):
        Parameters({"model": value}).mapping("model")


# ---- the reflector ---------------------------------------------------------------------------------------------------


def test_the_reflector_sends_system_and_user_messages_without_streaming_and_maps_usage() -> None:
    llm = RecordingLlm([f"<think>用户纠正了称呼。</think>\n{insight_reply()}"])
    reflector = DifyModelReflector(llm, ModelSelection.parse(MODEL_SELECTOR))

    answer = reflector.reflect("你是反思步骤。", '<session id="S1">…</session>', REFLECTION_SCHEMA)

    (call,) = llm.calls
    assert call["stream"] is False and call["model_config"] == ModelSelection.parse(MODEL_SELECTOR).model_config_dict()
    system, user = call["prompt_messages"]
    assert isinstance(system, SystemPromptMessage) and isinstance(user, UserPromptMessage)  # the SDK's own classes
    schema = json.dumps(REFLECTION_SCHEMA.json_schema, ensure_ascii=False)
    assert system.content == f"你是反思步骤。\n\nJSON schema of the answer:\n{schema}"
    assert user.content == '<session id="S1">…</session>'
    assert answer.content == insight_reply()  # the reasoning block is not part of the answer
    assert (answer.tokens_in, answer.tokens_out, answer.model) == (3100, 140, "gpt-4o-mini")
    assert reflector.name == "dify"


def test_a_completion_model_gets_one_prompt() -> None:
    llm = RecordingLlm(['{"insights": []}'])
    reflector = DifyModelReflector(llm, ModelSelection.parse({**MODEL_SELECTOR, "mode": "completion"}))
    reflector.reflect("SYSTEM", "TRANSCRIPT", REFLECTION_SCHEMA)
    (only,) = llm.calls[0]["prompt_messages"]
    assert only.role is PromptMessageRole.USER
    assert str(only.content).startswith("SYSTEM\n\nJSON schema") and str(only.content).endswith("\n\nTRANSCRIPT")


def test_a_failed_backwards_call_is_an_llm_error_naming_the_model() -> None:
    llm = RecordingLlm([Exception("[models] Rate Limit Error, quota exceeded")])
    reflector = DifyModelReflector(llm, ModelSelection.parse(MODEL_SELECTOR))
    with pytest.raises(LlmError) as caught:
        reflector.reflect("s", "u", REFLECTION_SCHEMA)
    assert str(caught.value) == (
        "Dify's model langgenius/openai/openai/gpt-4o-mini could not be invoked: [models] Rate Limit Error, quota "
        "exceeded"
    )


def test_an_answer_of_content_parts_keeps_the_text_ones() -> None:
    message = AssistantPromptMessage(
        content=[TextPromptMessageContent(data='{"insights":'), TextPromptMessageContent(data="[]}")]
    )
    answer = answer_of(LLMResult(model="qwen-max", message=message, usage=LLMUsage.empty_usage()), "fallback")
    assert (answer.content, answer.model, answer.tokens_in) == ('{"insights":[]}', "qwen-max", 0)


# ---- the operation: whose session ------------------------------------------------------------------------------------


def error_of(result: ToolResult) -> dict[str, Any]:
    assert result.text.startswith("Error (") and "Traceback" not in result.text, result.text
    return result.json["error"]  # type: ignore[no-any-return]


@pytest.fixture
def stores(settings: Settings) -> StoreCache:
    return StoreCache(settings)


def record_name_turns(
    stores: StoreCache, credentials: dict[str, Any], user: str, conversation: str, **mapping: str
) -> None:
    """NAME_TURNS through record_turn, for Dify's end user `user` (or the builder's `end_user_id` mapping)."""
    for turn in NAME_TURNS:
        context = Context(user_id=user, conversation_id=conversation)
        recorded = run(stores, "record_turn", credentials, {**turn, **mapping}, context)
        assert "error" not in recorded.json, recorded.json


def test_a_mapped_end_user_reflects_on_their_own_session_in_english(
    stores: StoreCache, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    """Through hindsight_dify.invoke, as the tool file calls it: the session's `model.llm` is what reflects."""
    record_name_turns(stores, plugin_credentials, "dify-end-user", "conv-mapped", end_user_id="app-user-7")
    llm = RecordingLlm([insight_reply()])
    tool = SimpleNamespace(
        runtime=SimpleNamespace(user_id="dify-end-user", credentials=plugin_credentials),
        session=SimpleNamespace(conversation_id="conv-mapped", message_id="m-9", model=SimpleNamespace(llm=llm)),
        create_text_message=lambda text: ("text", text),
        create_json_message=lambda body: ("json", body),
        create_variable_message=lambda name, value: ("variable", name, value),
    )
    parameters = {"model": MODEL_SELECTOR, "end_user_id": "app-user-7", "language": "en"}

    messages = list(hindsight_dify.invoke(tool, "reflect_session", parameters, stores))

    (_, text), (_, body), *variables = messages
    # record_turn's detector learned the template's rule at once (the learned screen reads the user's own words,
    # not the template's); the model's wording is the newer version.
    assert plugin_store.list_insights(status=InsightStatus.PENDING_REVIEW, user_id="app-user-7") == []
    (saved_id,) = body["superseded"]
    assert text == "Reflected on session conv-mapped with gpt-4o-mini: learned 1 insight(s) (superseded 1)."
    assert variables == [
        ("variable", "learned", 1),
        ("variable", "outcome", "learned"),
        ("variable", "insight_ids", saved_id),
    ]
    saved = plugin_store.get(saved_id)
    assert (saved.user_id, saved.source, saved.evidence.quote) == ("app-user-7", "reflection:dify", NAME_QUOTE)
    system = str(llm.calls[0]["prompt_messages"][0].content)
    assert system.startswith("You are the reflection step of Hindsight Insights")  # the builder's language
    # The workflow calls it again at a later end of the same conversation: the model finds the same lesson.
    llm.replies.append(insight_reply())
    (_, again), (_, body), *variables = list(hindsight_dify.invoke(tool, "reflect_session", parameters, stores))
    assert again == "Reflected on session conv-mapped with gpt-4o-mini: nothing new learned (unchanged 1)."
    assert body["unchanged"] == [saved_id] and body["outcome"] == "nothing_learned" and body["learned"] == 0


def test_another_users_session_is_refused_before_the_model_is_asked(
    stores: StoreCache, plugin_credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    record_name_turns(stores, plugin_credentials, "lao-wang", "conv-wang")
    llm = RecordingLlm([insight_reply()])
    calls: list[tuple[dict[str, Any], Context]] = [
        ({"model": MODEL_SELECTOR}, Context(user_id="xiao-li", conversation_id="conv-wang", llm=llm)),
        ({"model": MODEL_SELECTOR, "session_id": "conv-wang"}, Context(user_id="xiao-li", llm=llm)),
    ]
    for parameters, context in calls:
        refused = run(stores, "reflect_session", plugin_credentials, parameters, context)
        error = error_of(refused)
        assert error["type"] == "invalid_input" and error["problems"][0]["field"] == "session_id"
        assert "another user than the one this call acts for (xiao-li)" in error["message"]
        assert "lao-wang" not in refused.text
        assert refused.variables == {"learned": 0, "outcome": "failed", "insight_ids": ""}
    # Nothing but what record_turn learned at once from lao-wang's own message.
    assert llm.calls == [] and plugin_store.count() == (1, 3) and plugin_store.count(user_id="xiao-li") == (0, 0)


def test_a_session_shared_with_another_user_is_refused(stores: StoreCache, plugin_credentials: dict[str, Any]) -> None:
    record_name_turns(stores, plugin_credentials, "lao-wang", "conv-shared")
    intruding = run(
        stores, "record_turn", plugin_credentials, {"user_message": "我也来"}, Context("xiao-li", "conv-shared")
    )
    assert error_of(intruding)["problems"][0]["field"] == "session_id"  # record_turn no longer mixes users
    # A session mixed before record_turn refused that (stored directly, as older data may be) is refused here too.
    mixed = TurnDraft(session_id="conv-shared", user_id="xiao-li", user_message="我也来")
    stores.store_for(plugin_credentials).turns.append(mixed)
    llm = RecordingLlm([insight_reply()])
    refused = run(
        stores,
        "reflect_session",
        plugin_credentials,
        {"model": MODEL_SELECTOR},
        Context("lao-wang", "conv-shared", llm=llm),
    )
    assert error_of(refused)["problems"][0]["field"] == "session_id" and llm.calls == []


@pytest.mark.parametrize(
    ("parameters", "context", "kind", "says"),
    [
        ({}, Context("u", "conv-x"), "invalid_input", "model: pick the LLM that reflects"),
        ({"model": MODEL_SELECTOR}, Context("u"), "invalid_input", "session_id: Dify passed no conversation"),
        ({"model": MODEL_SELECTOR}, Context("u", "never-recorded"), "not_found", "no turns are recorded"),
        ({"model": MODEL_SELECTOR, "language": "fr"}, Context("u", "c"), "invalid_input", "language: must be zh or en"),
        ({"model": MODEL_SELECTOR}, Context(None, "c"), "invalid_input", "end_user_id: Dify passed no end user"),
    ],
)
def test_calls_that_cannot_reflect_say_why(
    stores: StoreCache,
    plugin_credentials: dict[str, Any],
    parameters: dict[str, Any],
    context: Context,
    kind: str,
    says: str,
) -> None:
    llm = RecordingLlm([])
    with_llm = Context(context.user_id, context.conversation_id, llm=llm)
    error = error_of(run(stores, "reflect_session", plugin_credentials, parameters, with_llm))
    assert error["type"] == kind and says in error["message"], error


def test_outside_dify_there_is_no_model_to_ask(stores: StoreCache, plugin_credentials: dict[str, Any]) -> None:
    record_name_turns(stores, plugin_credentials, "u", "conv-no-llm")
    error = error_of(
        run(stores, "reflect_session", plugin_credentials, {"model": MODEL_SELECTOR}, Context("u", "conv-no-llm"))
    )
    assert "without access to Dify's models" in error["message"]
