"""decide_scope (scope.py) on the detector's findings: for whom a correction holds. Pure, no store."""

from __future__ import annotations

import pytest

from hindsight_insights.commands import Provenance
from hindsight_insights.config import Settings
from hindsight_insights.detection.corrections import detect
from hindsight_insights.detection.periods import this_conversation_only
from hindsight_insights.models import Scope
from hindsight_insights.scope import decide_scope, states_a_change


def scopes(message: str, answer: str) -> list[Scope]:
    found = detect(message, answer)
    return [target.scope for target in decide_scope(Provenance("detector", "u1", "s1", correction=found), Settings())]


@pytest.mark.parametrize(
    ("message", "answer"),
    [
        ("客服电话已经改成 400-800-1234 了", "客服电话是 400-800-0000。"),
        ("报销期限已经改成 30 天了", "差旅报销需在 60 天内提交。"),
        ("运费现在 15 元", "运费是 10 元。"),
        ("The API rate limit is 100 per minute now", "The API rate limit is 60 requests per minute."),
        ("The office moved to Building C", "The office is in Building A."),
    ],
)
def test_a_stated_change_is_the_users_not_only_the_sessions(message: str, answer: str) -> None:
    found = detect(message, answer)
    assert found.type.value == "factual" and found.confidence < Settings().user_fact_confidence
    assert states_a_change(found)
    assert scopes(message, answer) == [Scope.USER]


def test_a_value_that_only_differs_still_holds_for_the_session() -> None:
    """ "运费 15 元" may be about another thing (another order, another region): it says nothing changed."""
    found = detect("运费 15 元", "运费是 10 元。")
    assert found.type.value == "factual" and not states_a_change(found)
    assert scopes("运费 15 元", "运费是 10 元。") == [Scope.SESSION]


@pytest.mark.parametrize(
    ("message", "answer"),
    [
        ("不对，这次运费是 20 元", "运费是 10 元。"),
        ("No, this time the deadline is Friday, not Thursday", "The deadline is Thursday."),
        ("不对，这回的截止日期是周五", "截止日期是周四。"),
    ],
)
def test_a_correction_worded_for_this_conversation_holds_for_it_only(message: str, answer: str) -> None:
    found = detect(message, answer)
    assert found.type.value == "factual" and found.confidence >= Settings().user_fact_confidence  # user or project
    assert scopes(message, answer) == [Scope.SESSION]


def test_a_promotion_is_a_period_not_the_conversation() -> None:
    assert scopes("不对，本次活动价格是 99 元", "活动价格是 129 元。") == [Scope.USER, Scope.PROJECT]
    assert not this_conversation_only("本次活动")
    assert this_conversation_only("这次") and this_conversation_only("This time") and not this_conversation_only("这周")
