"""The worker's time. Every decision (idle, debounce, leases, the budget's day) reads an injected clock, so tests
drive the triggers by moving a clock instead of sleeping."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def local_day(moment: datetime, zone: ZoneInfo) -> date:
    """The calendar day of `moment` in the settings' timezone: the budget's day, the nightly run's date."""
    return moment.astimezone(zone).date()


def next_day_start(moment: datetime, zone: ZoneInfo) -> datetime:
    """Local midnight after `moment`, in UTC: when a new day's budget opens."""
    tomorrow = local_day(moment, zone) + timedelta(days=1)
    return datetime.combine(tomorrow, time(0), tzinfo=zone).astimezone(UTC)
