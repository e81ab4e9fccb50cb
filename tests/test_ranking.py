"""The scoring formula of ranking.py, on numbers worked by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from hindsight_insights import ranking
from hindsight_insights.config import NO_MARGIN, Settings


def test_keyword_coverage_is_length_weighted() -> None:
    assert ranking.keyword_coverage(["退货", "地址", "哪个"], ["退货", "地址", "上海"]) == pytest.approx(4 / 6)
    assert ranking.keyword_coverage(["退货地址", "吗"], ["退货地址"]) == pytest.approx(4 / 5)
    assert ranking.keyword_coverage([], ["x"]) == 0.0
    assert ranking.keyword_coverage(["a", "a"], ["a"]) == 1.0


def test_relevance_blends_absolute_parts() -> None:
    assert ranking.relevance(0.8, 0.5, alpha=0.6) == pytest.approx(0.6 * 0.8 + 0.4 * 0.5)
    assert ranking.relevance(-0.3, 0.5, alpha=0.6) == pytest.approx(0.2)  # negative cosine counts as 0
    assert ranking.relevance(0.8, 0.0, alpha=1.0) == pytest.approx(0.8)


def test_rank_score_rewards_confidence_and_recency() -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    fresh = ranking.rank_score(0.5, 1.0, now, now, half_life_days=90)
    assert fresh == pytest.approx(0.5)
    half = ranking.rank_score(0.5, 1.0, now - timedelta(days=90), now, half_life_days=90)
    assert half == pytest.approx(0.5 * (0.85 + 0.15 * 0.5))
    unsure = ranking.rank_score(0.5, 0.0, now, now, half_life_days=90)
    assert unsure == pytest.approx(0.5 * 0.8)


def test_query_vector_weighs_the_newest_turn_most() -> None:
    turns = np.eye(3, dtype=np.float32)
    combined = ranking.query_vector(turns, decay=0.5)
    assert np.linalg.norm(combined) == pytest.approx(1.0)
    assert combined[2] > combined[1] > combined[0]
    assert combined[1] / combined[2] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Give the conclusion first, then the steps.", "Give the conclusion first and then the steps.", True),
        ("先给结论，再给步骤。", "先给结论 再给步骤", True),
        ("退货地址为杭州市西湖区文三路", "退货地址为杭州市滨江区文三路", False),  # a place
        ("Return parcels to 88 Zhangjiang Road.", "Return parcels to 1 Zhangjiang Road.", False),  # a number
        ("Call the user Lao Wang.", "Call the user Lao Li.", False),  # a name
        ("Quote weights in kg.", "Quote weights in lb.", False),  # a unit
        ("Use decimals for ratios.", "Do not use decimals for ratios.", False),  # a negation
        ("回复时使用表格", "回复时不使用表格", False),  # 不 is a stop word for search, not here
        ("Answer in English.", "Never answer in English.", False),
        ("", "x", False),
    ],
)
def test_same_instruction_only_when_nothing_but_wording_differs(a: str, b: str, same: bool) -> None:
    assert ranking.same_instruction(a, b) is same


def test_background_is_the_mean_of_the_other_candidates_with_a_prior() -> None:
    similarities = [0.5, 0.2, 0.3]
    assert ranking.background(similarities, 0, prior=0.1) == pytest.approx((0.2 + 0.3 + 0.1) / 3)
    assert ranking.background(similarities, 1, prior=0.1) == pytest.approx((0.5 + 0.3 + 0.1) / 3)
    assert ranking.background([0.4], 0, prior=0.1) == pytest.approx(0.1)  # alone: the prior is the background


def test_copies_of_the_same_lesson_are_not_each_others_background() -> None:
    """A user's rule and its approved project-wide copy are equally close to the query: counted in each other's
    background, they would lower both margins under the gate's, and neither would reach the user."""
    similarities = [0.30, 0.30, 0.10]
    assert ranking.background(similarities, 0, prior=0.1, copies=[1]) == pytest.approx((0.10 + 0.1) / 2)
    assert ranking.background(similarities, 0, prior=0.1) == pytest.approx((0.30 + 0.10 + 0.1) / 3)
    with_copy = ranking.background(similarities[:2], 0, prior=0.1)
    assert not ranking.passes_gate(0.3, 0.30, with_copy, threshold=0.13, margin=0.16)
    without = ranking.background(similarities[:2], 0, prior=0.1, copies=[1])
    assert ranking.passes_gate(0.3, 0.30, without, threshold=0.13, margin=0.16)


@pytest.mark.parametrize(
    ("relevance", "similarity", "background", "passes"),
    [
        (0.40, 0.45, 0.20, True),  # relevant and standing out
        (0.40, 0.45, 0.35, False),  # relevant, but the whole scene is as close: a conversation about something else
        (0.10, 0.30, 0.00, False),  # standing out, but not relevant enough
        (0.13, 0.16, 0.00, True),  # exactly at both limits
    ],
)
def test_gate_needs_relevance_and_a_margin_over_the_background(
    relevance: float, similarity: float, background: float, passes: bool
) -> None:
    assert ranking.passes_gate(relevance, similarity, background, threshold=0.13, margin=0.16) is passes


def test_plain_threshold_is_the_gate_without_margin() -> None:
    assert ranking.passes_gate(0.2, 0.25, 0.9, threshold=0.17, margin=-2.0)
    assert not ranking.passes_gate(0.16, 0.25, 0.0, threshold=0.17, margin=-2.0)


def test_standing_order_puts_matching_rules_first_then_the_newest() -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    rules = {  # name: (relevance to the conversation, age in days)
        "old, about this conversation": (0.40, 300),
        "older, about it too, less": (0.20, 400),
        "newest, unrelated": (0.05, 1),
        "newer, unrelated": (0.10, 10),
        "old, unrelated": (0.02, 200),
    }
    ordered = ranking.standing_order(
        list(rules),
        lambda name: rules[name][0],
        lambda name: now - timedelta(days=rules[name][1]),
        threshold=0.13,
    )
    assert ordered == [
        "old, about this conversation",
        "older, about it too, less",
        "newest, unrelated",
        "newer, unrelated",
        "old, unrelated",
    ]
    # Within a budget of 2, both matching rules stay, however old; the newer unrelated ones wait.
    assert ordered[:2] == ["old, about this conversation", "older, about it too, less"]


def test_standing_order_puts_preferences_before_a_users_unrelated_facts() -> None:
    """Past the matching rules, a rule about every answer (a preference) comes before a user's own fact or process
    about a subject, however new that is; a matching fact still comes first."""
    now = datetime(2026, 11, 29, tzinfo=UTC)
    rules = {  # name: (relevance, age in days, a preference)
        "fact about this conversation": (0.40, 300, False),
        "newest fact, unrelated": (0.05, 1, False),
        "old preference, unrelated": (0.02, 200, True),
        "newer preference, unrelated": (0.10, 10, True),
    }
    ordered = ranking.standing_order(
        list(rules),
        lambda name: rules[name][0],
        lambda name: now - timedelta(days=rules[name][1]),
        threshold=0.13,
        about_every_answer=lambda name: rules[name][2],
    )
    assert ordered == [
        "fact about this conversation",
        "newer preference, unrelated",
        "old preference, unrelated",
        "newest fact, unrelated",
    ]


def test_gate_constants_are_per_embedder() -> None:
    use_m3 = Settings(_env_file=None)
    assert (use_m3.relevance_threshold, use_m3.margin) == (0.13, 0.16)
    openai = use_m3.model_copy(update={"embedder": "openai"})
    assert (openai.relevance_threshold, openai.margin) == (0.17, NO_MARGIN)  # not calibrated: a plain threshold
    configured = use_m3.model_copy(update={"score_threshold": 0.2})
    assert (configured.relevance_threshold, configured.margin) == (0.2, NO_MARGIN)  # as configured, no margin
    both = use_m3.model_copy(update={"score_threshold": 0.2, "background_margin": 0.1})
    assert (both.relevance_threshold, both.margin) == (0.2, 0.1)
