"""build_report: the daily report from its input, a pure function (no store, no clock)."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict

from hindsight_insights.keys import names_a_subject, normalize_key, scene_key
from hindsight_insights.reporting.inputs import CorrectionFact, ReportInput
from hindsight_insights.reporting.rates import rates_of

TOP_PATTERNS = 5
CHART_DAYS = 30
TOP_TALLIES = 10
CORRECTION_TYPES = ("factual", "preference", "process", "negative")  # the chart's order; others follow by name


class Pattern(BaseModel):
    """Corrections of one day with the same topic, scene and type."""

    model_config = ConfigDict(frozen=True)

    topic: str  # "" when the corrections named no subject apart from their corrected words (keys.names_a_subject)
    scene: str
    type: str
    count: int
    users: int
    sessions: int
    original: str | None  # the latest example: what the answer said ...
    corrected: str | None  # ... and what the user corrected it to
    last_at: datetime


class Tally(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    count: int


class DayCounts(BaseModel):
    model_config = ConfigDict(frozen=True)

    day: date
    by_type: dict[str, int]
    total: int


class SuspectLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: uuid.UUID
    topic: str
    kind: str
    scene: str
    reason: str | None
    since: datetime


class TrailLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    at: datetime
    action: str
    insight_id: uuid.UUID
    topic: str
    actor: str
    note: str


class SuggestionLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    change: str
    count: int
    status: str


class CostLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    reflections: int
    tokens_in: int
    tokens_out: int
    cached_tokens: int
    tokens: int
    budget: int
    budget_left: int | None


class DailyReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    day: date
    timezone: str
    turns: int
    corrections: int  # corrections that came on the day
    error_rate: float | None
    correction_rate: float | None
    knowledge_gap: float | None
    patterns: list[Pattern]  # the top 5
    scenes: list[Tally]
    sources: list[Tally]
    suspects: list[SuspectLine]
    trail: list[TrailLine]  # suspect marks and repair steps of the day
    suggestions: list[SuggestionLine] | None  # None: no source of suggestions yet
    review_queue: int
    cost: CostLine | None
    correction_types: list[str]  # the chart's series, in order
    last_30_days: list[DayCounts]  # oldest first, ending with `day`


def _local_day(moment: datetime, zone: ZoneInfo) -> date:
    return moment.astimezone(zone).date()


def _patterns(facts: list[CorrectionFact]) -> list[Pattern]:
    groups: dict[tuple[str, str, str], list[CorrectionFact]] = {}
    for fact in facts:
        topic = fact.topic if names_a_subject(fact.topic, fact.corrected) else ""
        key = (normalize_key(topic) if topic else "", scene_key(fact.scene), fact.type)
        groups.setdefault(key, []).append(fact)
    patterns = []
    for (topic_key, _, _), members in groups.items():
        latest = max(members, key=lambda f: f.at)
        patterns.append(
            Pattern(
                topic=members[0].topic if topic_key else "",
                scene=members[0].scene,
                type=latest.type,
                count=len(members),
                users=len({f.user_id for f in members}),
                sessions=len({f.session_id for f in members}),
                original=latest.original,
                corrected=latest.corrected,
                last_at=latest.at,
            )
        )
    patterns.sort(key=lambda p: (-p.count, -p.users, -p.last_at.timestamp(), p.topic))
    return patterns[:TOP_PATTERNS]


def _tallies(names: list[str]) -> list[Tally]:
    counted = Counter(names)
    return [Tally(name=name, count=n) for name, n in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))][
        :TOP_TALLIES
    ]


def build_report(given: ReportInput) -> DailyReport:
    zone = ZoneInfo(given.timezone)
    first = given.day - timedelta(days=CHART_DAYS - 1)
    in_window = [f for f in given.corrections if first <= _local_day(f.at, zone) <= given.day]
    of_day = [f for f in in_window if _local_day(f.at, zone) == given.day]
    seen_types = {f.type for f in in_window}
    types = [t for t in CORRECTION_TYPES if t in seen_types] + sorted(seen_types - set(CORRECTION_TYPES))
    per_day: dict[date, Counter[str]] = {first + timedelta(days=i): Counter() for i in range(CHART_DAYS)}
    for fact in in_window:
        per_day[_local_day(fact.at, zone)][fact.type] += 1
    rates = rates_of(given.tally)
    cost = given.cost
    return DailyReport(
        day=given.day,
        timezone=given.timezone,
        turns=given.tally.turns,
        corrections=len(of_day),
        error_rate=rates.error_rate,
        correction_rate=rates.correction_rate,
        knowledge_gap=rates.knowledge_gap,
        patterns=_patterns(of_day),
        scenes=_tallies([f.scene for f in of_day]),
        sources=_tallies([source for f in of_day for source in f.sources]),
        suspects=[
            SuspectLine(
                id=i.id, topic=i.topic, kind=i.kind.value, scene=i.scene, reason=i.review_reason, since=i.updated_at
            )
            for i in sorted(given.suspects, key=lambda i: i.updated_at, reverse=True)
        ],
        trail=[
            TrailLine(at=e.at, action=e.action, insight_id=e.insight_id, topic=e.topic, actor=e.actor, note=e.note)
            for e in given.trail
        ],
        suggestions=None
        if given.suggestions is None
        else [
            SuggestionLine(id=str(s.id), title=s.title, change=s.change, count=s.count, status=str(s.status))
            for s in given.suggestions
        ],
        review_queue=given.review_queue,
        cost=None
        if cost is None
        else CostLine(
            reflections=cost.reflections,
            tokens_in=cost.tokens_in,
            tokens_out=cost.tokens_out,
            cached_tokens=cost.cached_tokens,
            tokens=cost.tokens,
            budget=cost.budget,
            budget_left=cost.budget_left,
        ),
        correction_types=types,
        last_30_days=[
            DayCounts(day=day, by_type={t: counts[t] for t in types}, total=sum(counts.values()))
            for day, counts in per_day.items()
        ],
    )
