"""When a correction that holds for a named period stops holding: "这周运费 20 元" ends with this week.

Only periods whose end is certain from the words alone are read (today, tomorrow, this week, month, quarter, year,
this weekend); "暂时", "活动期间" or "for now" keep their condition and no expiry, for a reviewer or a later
correction to end. Weeks end on Sunday; every end is the last moment of that day in the project's time zone.

"这次", "this time", "this conversation" name the conversation itself (`this_conversation_only`): such a correction
holds for its session only (scope.py), however sure the detector is of it.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

_LAST_MOMENT = time(23, 59, 59)

_PERIODS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("today", re.compile(r"(今天|今晚|今日|\btoday\b|\btonight\b)", re.I)),
    ("tomorrow", re.compile(r"(明天|明日|\btomorrow\b)", re.I)),
    ("weekend", re.compile(r"(这个?周末|本周末|\bthis weekend\b)", re.I)),
    ("week", re.compile(r"(这周|本周|这星期|这个星期|本星期|\bthis week\b)", re.I)),
    ("month", re.compile(r"(这个月|本月|\bthis month\b)", re.I)),
    ("quarter", re.compile(r"(这个?季度|本季度|\bthis quarter\b)", re.I)),
    ("year", re.compile(r"(今年|本年度|\bthis year\b)", re.I)),
)


_THIS_CONVERSATION = re.compile(
    r"^\W*(这次|本次|这一次|这回|本轮对话|这轮对话|"
    r"this time|this conversation|this chat|this session|just this once)\W*$",
    re.I,
)


def this_conversation_only(detail: str) -> bool:
    """The condition's words name this conversation, not a period of the calendar (这次, this time)."""
    return bool(_THIS_CONVERSATION.match(detail.strip()))


def period_end(detail: str, now: datetime, timezone: str) -> datetime | None:
    """The end of the period `detail` names, counted from `now`; None when it names no certain end."""
    today = now.astimezone(ZoneInfo(timezone)).date()
    for name, pattern in _PERIODS:
        if pattern.search(detail):
            return datetime.combine(_last_day(name, today), _LAST_MOMENT, tzinfo=ZoneInfo(timezone))
    return None


def _last_day(period: str, today: date) -> date:
    if period == "today":
        return today
    if period == "tomorrow":
        return today + timedelta(days=1)
    if period in ("week", "weekend"):
        return today + timedelta(days=6 - today.weekday())
    if period == "month":
        return _month_end(today.year, today.month)
    if period == "quarter":
        return _month_end(today.year, (today.month - 1) // 3 * 3 + 3)
    return date(today.year, 12, 31)


def _month_end(year: int, month: int) -> date:
    first_of_next = date(year + month // 12, month % 12 + 1, 1)
    return first_of_next - timedelta(days=1)
