"""Prompt suggestions: frequent corrections, grouped by topic, scene and type, become suggested system-prompt changes
for a human to accept or dismiss. Nothing is ever applied automatically: accepting records a decision, no more.

    PromptSuggestion     one suggestion: its group, counts, evidence quotes (redacted), text, status and decision
    list_suggestions     the typed reader (the CLI, the daily report): `list_suggestions(store, status="pending")`
    mine_suggestions     the nightly run's mining (worker/nightly.py), also `hindsight_cli suggestions mine`

Where they come from: the turn log's correction records (a corrected answer's `CorrectionRecord`, with the topic the
detector found on the correcting turn), over the last `suggestion_window_days`. A group with at least
`suggestion_min_corrections` corrections is suggested. Its id is deterministic per (topic, scene, type)
(store/suggestions.py), so each night updates the same suggestion. A dismissed one stays dismissed unless its
corrections reach `suggestion_reopen_growth` times what they were when it was dismissed; an accepted one stays
accepted. The text is rendered from prompts/suggestions/suggestion.md.j2 (prompts are data, not a model's words);
every quoted field is inert (rules.as_rule_field).
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from hindsight_insights.config import Language, Settings
from hindsight_insights.keys import GENERAL_SCENE, normalize_key, scene_key
from hindsight_insights.models import Turn
from hindsight_insights.prompts import render_prompt
from hindsight_insights.rules import as_rule_field

if TYPE_CHECKING:
    from hindsight_insights.store.insights import InsightStore

SuggestionStatus = Literal["pending", "accepted", "dismissed"]
TEMPLATE = "suggestions/suggestion.md.j2"
MAX_EVIDENCE = 3  # quotes per suggestion: the newest
QUOTE_CHARS = 200
_NAMESPACE = uuid.UUID("8d2f6c1a-4e7b-4a39-b5d0-71c3e9a2f684")


class SuggestionEvidence(BaseModel):
    """One correction behind a suggestion: the detector's quotes, redacted when the turn was stored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    original: str  # what the agent had said
    corrected: str  # what the user said instead
    user_id: str
    session_id: str
    at: datetime


class PromptSuggestion(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: uuid.UUID
    topic: str
    topic_key: str
    scene: str
    scene_key: str
    type: str  # the corrections' type: factual, preference, process, negative
    corrections: int
    users: int
    sessions: int
    first_at: datetime
    last_at: datetime
    evidence: list[SuggestionEvidence] = []
    text: str  # the suggested system-prompt change, in the project's language
    status: SuggestionStatus = "pending"
    decided_by: str | None = None
    decided_at: datetime | None = None
    decided_corrections: int = 0  # the corrections when it was last decided
    note: str = ""
    reopened: int = 0  # times a dismissed suggestion came back because its corrections grew
    created_at: datetime
    updated_at: datetime

    # What the daily report shows of a suggestion (reporting.inputs.Suggestion).
    @property
    def title(self) -> str:
        return f"{self.type}: {self.topic or '-'} ({self.scene})"

    @property
    def change(self) -> str:
        return self.text

    @property
    def count(self) -> int:
        return self.corrections


def suggestion_uuid(topic_key: str, scene: str, type_: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, f"{topic_key}\n{scene}\n{type_}")


@dataclass(frozen=True)
class CorrectionCase:
    """One correction record as mining reads it."""

    topic: str
    scene: str
    type: str
    original: str
    corrected: str
    user_id: str
    session_id: str
    at: datetime


def cases_from(corrected_turns: Iterable[Turn], correcting: dict[uuid.UUID, Turn]) -> list[CorrectionCase]:
    """The correction records of corrected turns, with the topic the detector found on the correcting turn."""
    cases = []
    for turn in corrected_turns:
        record = turn.correction
        if record is None:
            continue
        by = correcting.get(record.in_turn)
        topic = (by.signals.detected.topic if by is not None else None) or ""
        cases.append(
            CorrectionCase(
                topic=topic,
                scene=turn.scene,
                type=record.type,
                original=record.original or "",
                corrected=record.corrected or (by.user_message if by is not None else ""),
                user_id=record.by,
                session_id=turn.session_id,
                at=record.at,
            )
        )
    return cases


@dataclass(frozen=True)
class Mined:
    """A group worth suggesting, before it meets what is stored."""

    id: uuid.UUID
    topic: str
    topic_key: str
    scene: str
    scene_key: str
    type: str
    corrections: int
    users: int
    sessions: int
    first_at: datetime
    last_at: datetime
    evidence: list[SuggestionEvidence]
    text: str


def group_cases(cases: Sequence[CorrectionCase], settings: Settings, language: Language) -> list[Mined]:
    """Groups by (topic, scene, type) with at least `suggestion_min_corrections` corrections, most corrected first."""
    groups: dict[tuple[str, str, str], list[CorrectionCase]] = defaultdict(list)
    for case in cases:
        groups[(normalize_key(case.topic) if case.topic else "", scene_key(case.scene), case.type)].append(case)
    mined = []
    for (topic_key, scene, type_), members in groups.items():
        if len(members) < settings.suggestion_min_corrections:
            continue
        members = sorted(members, key=lambda c: c.at)
        topic = Counter(c.topic for c in members).most_common(1)[0][0]
        evidence = [
            SuggestionEvidence(
                original=as_rule_field(c.original)[:QUOTE_CHARS],
                corrected=as_rule_field(c.corrected)[:QUOTE_CHARS],
                user_id=c.user_id,
                session_id=c.session_id,
                at=c.at,
            )
            for c in reversed(members[-MAX_EVIDENCE:])
        ]
        counts = {
            "corrections": len(members),
            "users": len({c.user_id for c in members}),
            "sessions": len({c.session_id for c in members}),
        }
        shown_scene = members[-1].scene
        text = render_prompt(
            settings.prompts_dir,
            TEMPLATE,
            language=language,
            type=type_,
            topic=as_rule_field(topic),
            scene=as_rule_field(shown_scene),
            is_general=scene == GENERAL_SCENE,
            evidence=evidence,
            **counts,
        ).strip()
        mined.append(
            Mined(
                id=suggestion_uuid(topic_key, scene, type_),
                topic=topic,
                topic_key=topic_key,
                scene=shown_scene,
                scene_key=scene,
                type=type_,
                first_at=members[0].at,
                last_at=members[-1].at,
                evidence=evidence,
                text=text,
                **counts,
            )
        )
    return sorted(mined, key=lambda m: (-m.corrections, m.topic_key, m.scene_key, m.type))


@dataclass(frozen=True)
class MiningReport:
    read: int  # correction records read
    suggested: int  # groups at or past the threshold
    created: int
    updated: int
    reopened: int  # dismissed ones whose corrections grew markedly


def mine_suggestions(
    store: InsightStore, now: datetime | None = None, settings: Settings | None = None
) -> MiningReport:
    """Read the window's correction records, group them, and create or update their suggestions (never apply).
    `settings`: the caller's (the worker's), else the store's."""
    now = now or datetime.now(UTC)
    settings = settings or store.settings
    since = now - timedelta(days=settings.suggestion_window_days)
    corrected = store.turns.corrected_between(since, now)
    correcting = store.turns.by_ids({t.correction.in_turn for t in corrected if t.correction is not None})
    cases = cases_from(corrected, correcting)
    mined = group_cases(cases, settings, settings.language)
    created = updated = reopened = 0
    for group in mined:
        outcome = store.suggestions.upsert(group, now)
        created += outcome == "created"
        updated += outcome == "updated"
        reopened += outcome == "reopened"
    return MiningReport(len(cases), len(mined), created, updated, reopened)


def list_suggestions(store: InsightStore, status: SuggestionStatus | None = None) -> list[PromptSuggestion]:
    """The project's suggestions (of one status, or all), most corrected first."""
    return store.suggestions.all(status=status)
