"""Reading a day's report input from the store. The reflection cost and the suggestions come from the caller."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from hindsight_insights.models import InsightStatus
from hindsight_insights.reporting.daily import CHART_DAYS
from hindsight_insights.reporting.inputs import CorrectionFact, ReflectionCost, ReportInput, SuggestionSource
from hindsight_insights.store.insights import InsightStore
from hindsight_insights.store.review import ReviewQueue

MAX_SUSPECTS = 200


def day_bounds(day: date, timezone: str) -> tuple[datetime, datetime]:
    """The day in the given zone, as [start, end) in UTC."""
    zone = ZoneInfo(timezone)
    start = datetime.combine(day, time(), zone)
    end = datetime.combine(day + timedelta(days=1), time(), zone)
    return start.astimezone(UTC), end.astimezone(UTC)


def gather_report_input(
    store: InsightStore,
    day: date,
    *,
    cost: ReflectionCost | None = None,
    suggestions: SuggestionSource | None = None,
) -> ReportInput:
    timezone = store.settings.timezone
    day_start, day_end = day_bounds(day, timezone)
    window_start, _ = day_bounds(day - timedelta(days=CHART_DAYS - 1), timezone)
    corrected = [turn for turn in store.turns.corrected_between(window_start, day_end) if turn.correction]
    correcting = store.turns.by_ids(turn.correction.in_turn for turn in corrected if turn.correction)
    facts = []
    for turn in corrected:
        record = turn.correction
        assert record is not None  # filtered above
        by = correcting.get(record.in_turn)
        facts.append(
            CorrectionFact(
                at=record.at,
                type=record.type,
                topic=(by.signals.detected.topic or "") if by is not None else "",
                scene=turn.scene,
                user_id=turn.user_id,
                session_id=turn.session_id,
                sources=tuple(turn.sources),
                original=record.original,
                corrected=record.corrected,
            )
        )
    return ReportInput(
        day=day,
        timezone=timezone,
        corrections=facts,
        tally=store.turns.tally_between(day_start, day_end),
        suspects=store.list_insights(status=InsightStatus.SUSPECT, limit=MAX_SUSPECTS),
        trail=store.audit.trail(day_start, day_end),
        review_queue=ReviewQueue(store).size(),
        cost=cost,
        suggestions=None if suggestions is None else list(suggestions.list_suggestions(None)),
    )
