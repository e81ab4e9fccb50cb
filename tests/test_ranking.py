"""The scoring formula of ranking.py, on numbers worked by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from hindsight_insights import ranking


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
