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
    ("a", "b", "similarity", "expected"),
    [
        (["conclusion", "first", "steps"], ["conclusion", "first", "then", "steps"], 0.96, True),
        (["地址", "张江路", "88"], ["地址", "张江路", "1"], 0.97, False),  # numbers differ
        (["reply", "chinese"], ["reply", "english"], 0.95, False),  # too few words shared
        (["x", "y"], ["x", "y"], 0.85, False),  # not similar enough
        ([], ["x"], 1.0, False),
    ],
)
def test_near_duplicate_needs_meaning_and_specifics(
    a: list[str], b: list[str], similarity: float, expected: bool
) -> None:
    assert ranking.near_duplicate_actions(similarity, a, b, threshold=0.9) is expected
