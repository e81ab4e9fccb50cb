"""The block of behaviour rules injected into a system prompt: never raw JSON, always second-person rules.

Stored text is data, not structure. Every field that reaches the block is rendered inert (`as_rule_field`): control
characters removed, all whitespace (line breaks included) collapsed to single spaces, so it stays on its rule's line;
actions and topics are quoted, with their own quote marks replaced, so they can never close the quote and add a
rule, a scene or a date. Dates are the store's, to the minute, in the configured time zone.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo

from hindsight_insights.config import Language, Settings
from hindsight_insights.keys import GENERAL_SCENE, scene_key
from hindsight_insights.models import Insight
from hindsight_insights.prompts import render_prompt

TEMPLATE = "rules.md.j2"
# The template's quote marks, and what stands for them inside a quoted field.
_QUOTES = str.maketrans({"「": "『", "」": "』", "“": "‘", "”": "’", '"': "'"})


@dataclass(frozen=True)
class RenderedRule:
    action: str
    topic: str
    must: bool
    updated: str  # to the minute; the template tells the model the newest rule wins
    applies_to: str | None  # the context or source a conditioned correction holds for


@dataclass(frozen=True)
class SceneRules:
    scene: str
    is_general: bool
    rules: list[RenderedRule]


class ExampleText(Protocol):
    """What the rules block shows of a few-shot example (fewshot.FewShotExample is one)."""

    @property
    def context(self) -> str: ...

    @property
    def said(self) -> str: ...

    @property
    def corrected(self) -> str: ...


@dataclass(frozen=True)
class RenderedExample:
    context: str
    said: str
    corrected: str


def as_rule_field(text: str) -> str:
    """One line that can only be read as the inside of a quoted field."""
    one_line = " ".join(text.split())  # line breaks of every kind, tabs and runs of spaces become one space
    return "".join(ch for ch in one_line if not unicodedata.category(ch).startswith("C")).translate(_QUOTES)


def group_rules(insights: Iterable[Insight], must_confidence: float, timezone: str = "UTC") -> list[SceneRules]:
    """Deterministic: general scene first, then scenes by name; within a scene, must before consider, newest first."""
    zone = ZoneInfo(timezone)
    by_scene: dict[str, dict[str, Insight]] = {}
    for insight in insights:
        key = scene_key(insight.scene)
        by_scene.setdefault(key, {})[str(insight.id)] = insight  # one rule per insight even if listed twice
    groups = []
    for key in sorted(by_scene, key=lambda name: (name != GENERAL_SCENE, name)):
        ordered = sorted(
            by_scene[key].values(),
            key=lambda i: (i.confidence < must_confidence, -i.asserted_at.timestamp(), str(i.id)),
        )
        rules = [
            RenderedRule(
                action=as_rule_field(i.action),
                topic=as_rule_field(i.topic),
                must=i.confidence >= must_confidence,
                updated=_minute(i.asserted_at, zone),
                applies_to=as_rule_field(i.condition_detail) if i.condition_detail else None,
            )
            for i in ordered
        ]
        scene = as_rule_field(max(ordered, key=lambda i: i.asserted_at).scene)  # the newest spelling of the scene
        groups.append(SceneRules(scene=scene, is_general=key == GENERAL_SCENE, rules=rules))
    return groups


def _minute(moment: datetime, zone: ZoneInfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M")


def render_rules(
    insights: Iterable[Insight],
    settings: Settings,
    language: Language | None = None,
    examples: Sequence[ExampleText] = (),
) -> str:
    """The rules block in zh or en (default: the settings'); an empty string when there is nothing to inject.
    Few-shot examples, when given, are a section of their own after the rules, every field inert as the rules'."""
    groups = group_rules(insights, settings.must_confidence, settings.timezone)
    shown = [
        RenderedExample(as_rule_field(e.context), as_rule_field(e.said), as_rule_field(e.corrected)) for e in examples
    ]
    if not groups and not shown:
        return ""
    return render_prompt(
        settings.prompts_dir, TEMPLATE, groups=groups, examples=shown, language=language or settings.language
    ).strip()
