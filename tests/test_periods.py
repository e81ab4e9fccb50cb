"""A correction for a named period expires when the period ends, in the project's time zone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight_insights.detection.periods import period_end

# Wednesday 2026-12-30 at 18:00 in Shanghai (10:00 UTC).
NOW = datetime(2026, 12, 30, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("detail", "last_day"),
    [
        ("今天", "2026-12-30"),
        ("tonight", "2026-12-30"),
        ("明天", "2026-12-31"),
        ("这周", "2027-01-03"),  # weeks end on Sunday
        ("this weekend", "2027-01-03"),
        ("本月", "2026-12-31"),
        ("这个季度", "2026-12-31"),
        ("this year", "2026-12-31"),
    ],
)
def test_a_named_period_ends_at_the_last_moment_of_its_last_day(detail: str, last_day: str) -> None:
    end = period_end(detail, NOW, "Asia/Shanghai")
    assert end is not None and end.isoformat() == f"{last_day}T23:59:59+08:00"


def test_months_and_quarters_end_on_their_own_last_day() -> None:
    february = datetime(2028, 2, 10, tzinfo=UTC)
    assert str(period_end("这个月", february, "UTC")) == "2028-02-29 23:59:59+00:00"  # a leap year
    assert str(period_end("this quarter", february, "UTC")) == "2028-03-31 23:59:59+00:00"


def test_the_day_is_the_project_time_zones() -> None:
    late_in_utc = datetime(2026, 12, 30, 20, 0, tzinfo=UTC)  # already 31 December in Shanghai
    assert str(period_end("今天", late_in_utc, "Asia/Shanghai")) == "2026-12-31 23:59:59+08:00"
    assert str(period_end("today", late_in_utc, "UTC")) == "2026-12-30 23:59:59+00:00"


@pytest.mark.parametrize("detail", ["暂时", "活动期间", "for now", "during the promotion", "截至下周三"])
def test_a_period_without_a_certain_end_sets_none(detail: str) -> None:
    assert period_end(detail, NOW, "UTC") is None
