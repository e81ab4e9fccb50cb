"""decide_scope (scope.py) on the detector's findings: for whom a correction holds. Pure, no store."""

from __future__ import annotations

import dataclasses

import pytest

from hindsight_insights.commands import Provenance
from hindsight_insights.config import Settings
from hindsight_insights.detection.correction_types import Correction, CorrectionType
from hindsight_insights.detection.corrections import detect
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.detection.periods import this_conversation_only
from hindsight_insights.models import Scope
from hindsight_insights.scope import decide_scope, kept_from_now_on, states_a_change


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


def test_a_fact_the_user_marks_as_standing_is_theirs_however_unsure_the_model_is_of_the_type() -> None:
    """The rules read a standing wish ("answer everyone this way from now on", 以后都照这个来); the learned model
    reads the message as a fact put right, below the user's threshold. The user said how long it holds: beyond this
    conversation. Without the mark the same finding holds for the session."""
    marked = Correction(
        CorrectionType.FACTUAL,
        0.52,
        corrected="以后都照这个来：职位 title 保留英文原文",
        signals=("preference:language", "directive", "standing", "learned:factual:0.52"),
    )
    unmarked = dataclasses.replace(marked, signals=("learned:factual:0.52",))
    settings = Settings()
    assert kept_from_now_on(marked) and not kept_from_now_on(unmarked)
    for finding, scope in ((marked, Scope.USER), (unmarked, Scope.SESSION)):
        targets = decide_scope(Provenance("detector", "u1", "s1", correction=finding), settings)
        assert [target.scope for target in targets] == [scope]


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


ANSWER_SHAPES = [
    ("give me the commands first and skip the theory", "Kubernetes pods are the smallest deployable unit, because..."),
    ("先给我命令，别讲原理", "Kubernetes 的 Pod 是最小的部署单元，它的设计初衷是……"),
    ("先说结论，再说原因", "这个问题要从背景说起……"),
    ("I need a yes or no first. Put the answer in the first line, reasons after.", "Upgrading has benefits..."),
    ("Conclusion first, then the details.", "Let me walk through the background first..."),
]
WORK_ORDERS = [
    ("Write a failing test first, then fix the code.", "Here's the patch for the parser."),
    ("先备份再改配置", "我已经改好了配置。"),
    ("Test it on staging first next time.", "Cert renewed on the load balancer."),
]


@pytest.mark.parametrize(("message", "answer"), ANSWER_SHAPES)
@pytest.mark.parametrize("with_model", [False, True])
def test_how_answers_should_look_is_the_users_preference_not_a_process_for_everyone(
    message: str, answer: str, with_model: bool, learned: LearnedDetector
) -> None:
    found = detect(message, answer, learned if with_model else None)
    targets = decide_scope(Provenance("detector", "u1", "s1", correction=found), Settings())
    assert found.type.value == "preference" and [t.scope for t in targets] == [Scope.USER]


@pytest.mark.parametrize(("message", "answer"), WORK_ORDERS)
def test_an_order_of_the_work_stays_a_process_reviewed_for_everyone(message: str, answer: str) -> None:
    found = detect(message, answer)
    assert found.type.value == "process" and scopes(message, answer) == [Scope.USER, Scope.PROJECT]
