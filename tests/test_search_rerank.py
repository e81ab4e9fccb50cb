"""search_insight with the workspace's rerank model (`rerank_model`): the model decides which situational rules pass.

Through the plugin's runtime path (hindsight_dify.run over a StoreCache) against the real Weaviate, with the tool
session's `model.rerank` stood in for by testkit/recording_llm.py's RecordingRerank (the SDK's own RerankResult, or
the bare Exception the SDK raises for a failed backwards call). The same through Dify's plugin daemon and the
inner-API stand-in: tests/test_plugin_daemon.py (marker `daemon`).
"""

from __future__ import annotations

from typing import Any

import pytest

from hindsight_dify import Context, StoreCache, ToolResult, run
from hindsight_insights.config import Settings
from hindsight_insights.reranking import MAX_RERANK_QUERY_CHARS, rerank_query
from hindsight_insights.store import InsightStore
from testkit.recording_llm import RecordingRerank, ScoresByWords
from testkit.sdk import RerankModelConfig
from tests.test_search import save_return_rules

RERANK_SELECTOR: dict[str, Any] = {
    "provider": "langgenius/cohere/cohere",
    "model": "rerank-multilingual-v3.0",
    "model_type": "rerank",
}
REFUND = "How long until my refund shows up?"
# A cross-encoder's view of REFUND: the refund rule is about it, the seven-day rule is close (a refund follows a
# return), the address and the damaged-goods rules are not.
REFUND_SCORES = ScoresByWords({"退款到账时间": 0.94, "七天无理由退货": 0.62, "退货寄回地址": 0.08})


@pytest.fixture
def stores(settings: Settings) -> StoreCache:
    return StoreCache(settings)


@pytest.fixture
def credentials(plugin_credentials: dict[str, Any]) -> dict[str, Any]:
    """The provider without a plain score threshold: the built-in no-match gate, calibrated, as installed."""
    return {**plugin_credentials, "score_threshold": ""}


def search(
    stores: StoreCache,
    credentials: dict[str, Any],
    rerank: RecordingRerank | None,
    query: str = REFUND,
    **parameters: Any,
) -> ToolResult:
    context = Context(user_id="lao-wang", conversation_id="conv-rerank", rerank=rerank)
    result = run(stores, "search_insight", credentials, {"query": query, "scene": "售后服务", **parameters}, context)
    assert "error" not in result.json, result.json
    return result


def topics(result: ToolResult) -> list[str]:
    return [item["topic"] for item in result.json["insights"] if item["channel"] == "situational"]


def test_without_the_parameter_nothing_changes(
    stores: StoreCache, credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    save_return_rules(plugin_store)
    rerank = RecordingRerank(REFUND_SCORES)
    result = search(stores, credentials, rerank)  # a session that could rerank, but the builder picked none
    assert topics(result) == ["退款到账时间"]  # the built-in gate's choice (tests/test_search.py)
    assert "rerank" not in result.json and rerank.calls == []


def test_the_rerank_model_decides_which_situational_rules_pass(
    stores: StoreCache, credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    save_return_rules(plugin_store)
    rerank = RecordingRerank(REFUND_SCORES)
    result = search(stores, credentials, rerank, rerank_model=RERANK_SELECTOR)
    # The seven-day rule, which the built-in gate holds back, passes at 0.62; the rest score below 0.5.
    assert topics(result) == ["退款到账时间", "七天无理由退货"]
    assert "7 天内可无理由退货" in result.variables["rules"]
    assert result.json["rerank"] == {
        "model": "langgenius/cohere/cohere/rerank-multilingual-v3.0",
        "outcome": "reranked",
        "detail": "2 of 4 situational rules scored 0.5 or more",
        "candidates": 4,
        "passed": 2,
    }
    (call,) = rerank.calls
    config = call["model_config"]
    assert isinstance(config, RerankModelConfig)  # the SDK's own config, as session.model.rerank takes it
    assert (config.provider, config.model, config.model_type.value) == (
        "langgenius/cohere/cohere",
        "rerank-multilingual-v3.0",
        "rerank",
    )
    assert (config.score_threshold, config.top_n) == (0.0, 4)  # every score asked for: the threshold is ours
    assert call["query"] == REFUND and len(call["docs"]) == 4
    assert any(doc.startswith("退款到账时间\n") for doc in call["docs"])


def test_the_rerank_model_can_also_hold_back_what_the_gate_would_pass(
    stores: StoreCache, credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    save_return_rules(plugin_store)
    rerank = RecordingRerank(ScoresByWords({}, otherwise=0.2))
    result = search(stores, credentials, rerank, rerank_model=RERANK_SELECTOR)
    assert topics(result) == [] and result.variables["rules"] == "" and result.json["rerank"]["passed"] == 0


def test_the_threshold_is_a_setting(
    settings: Settings, credentials: dict[str, Any], plugin_store: InsightStore
) -> None:
    save_return_rules(plugin_store)
    strict = StoreCache(settings.model_copy(update={"rerank_threshold": 0.9}))
    result = search(strict, credentials, RecordingRerank(REFUND_SCORES), rerank_model=RERANK_SELECTOR)
    assert topics(result) == ["退款到账时间"] and result.json["rerank"]["detail"].endswith("scored 0.9 or more")


@pytest.mark.parametrize(
    ("rerank", "said"),
    [
        (
            RecordingRerank(failure=Exception("[cohere] Error: You exceeded your current quota")),
            "exceeded your current",
        ),
        (
            RecordingRerank(failure=Exception("Model rerank-multilingual-v3.0 credentials is not initialized.")),
            "credentials is not initialized",
        ),
        (None, "without access to Dify's models"),
    ],
    ids=["quota", "model-missing", "no-backwards-invocation"],
)
def test_a_failed_rerank_falls_back_to_the_built_in_gate_and_says_so(
    stores: StoreCache,
    credentials: dict[str, Any],
    plugin_store: InsightStore,
    rerank: RecordingRerank | None,
    said: str,
) -> None:
    save_return_rules(plugin_store)
    result = search(stores, credentials, rerank, rerank_model=RERANK_SELECTOR)
    assert topics(result) == ["退款到账时间"]  # what the built-in gate passes
    report = result.json["rerank"]
    assert report["outcome"] == "failed" and report["passed"] == 0 and report["candidates"] == 4
    assert (
        report["detail"].startswith("the rerank model failed, so the built-in gate decided: ")
        and said in report["detail"]
    )
    assert "Traceback" not in str(result.json)


class OutOfRange(RecordingRerank):
    """A provider answering with a document it was never sent."""

    def invoke(self, model_config: Any, docs: list[str], query: str) -> Any:
        answer = super().invoke(model_config, docs, query)
        answer.docs[0].index = len(docs) + 3
        return answer


class RawLogits(RecordingRerank):
    """A provider whose scores are raw logits, not 0-1."""

    def invoke(self, model_config: Any, docs: list[str], query: str) -> Any:
        answer = super().invoke(model_config, docs, query)
        answer.docs[0].score = 7.25
        return answer


@pytest.mark.parametrize(
    ("rerank", "said"),
    [
        (OutOfRange(REFUND_SCORES), "names a document that was not sent"),
        (RawLogits(REFUND_SCORES), "a score outside 0 to 1"),
    ],
    ids=["unknown-document", "raw-logits"],
)
def test_an_answer_that_does_not_fit_falls_back_too(
    stores: StoreCache,
    credentials: dict[str, Any],
    plugin_store: InsightStore,
    rerank: RecordingRerank,
    said: str,
) -> None:
    save_return_rules(plugin_store)
    result = search(stores, credentials, rerank, rerank_model=RERANK_SELECTOR)
    assert topics(result) == ["退款到账时间"] and result.json["rerank"]["outcome"] == "failed"
    assert said in result.json["rerank"]["detail"]


def test_no_candidates_no_call(stores: StoreCache, credentials: dict[str, Any], plugin_store: InsightStore) -> None:
    rerank = RecordingRerank(REFUND_SCORES)
    result = search(stores, credentials, rerank, rerank_model=RERANK_SELECTOR)  # an empty project
    assert result.json["rerank"]["outcome"] == "not_asked" and rerank.calls == [] and topics(result) == []


@pytest.mark.parametrize(
    ("selector", "field"),
    [
        ({"provider": "langgenius/cohere/cohere", "model_type": "rerank"}, "rerank_model.model"),
        ({**RERANK_SELECTOR, "model_type": "llm"}, "rerank_model.model_type"),
        ("rerank-multilingual-v3.0", "rerank_model"),
    ],
)
def test_a_malformed_selector_is_refused_naming_it(
    stores: StoreCache, credentials: dict[str, Any], selector: Any, field: str
) -> None:
    rerank = RecordingRerank(REFUND_SCORES)
    context = Context(user_id="lao-wang", rerank=rerank)
    parameters = {"query": REFUND, "rerank_model": selector}
    result = run(stores, "search_insight", credentials, parameters, context)
    assert result.json["error"]["type"] == "invalid_input", result.json
    assert result.json["error"]["problems"][0]["field"] == field and rerank.calls == []


def test_the_rerank_query_is_the_newest_turns_within_its_length() -> None:
    turns = ["旧的一轮：" + "很长的背景。" * 300, "退款多久到账？"]
    query = rerank_query(turns)
    assert len(query) == MAX_RERANK_QUERY_CHARS and query.endswith("\n退款多久到账？")
    assert rerank_query(["a", "b"]) == "a\nb"
