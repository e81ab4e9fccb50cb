"""The block of behaviour rules injected into a system prompt: never raw JSON, always second-person rules."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hindsight_insights.config import Language
from hindsight_insights.models import GENERAL_SCENE, Insight
from hindsight_insights.prompts import render_prompt

TEMPLATE = "rules.md.j2"


@dataclass(frozen=True)
class RenderedRule:
    action: str
    topic: str
    must: bool
    updated: str  # ISO date; the template tells the model the newest rule wins


@dataclass(frozen=True)
class SceneRules:
    scene: str
    is_general: bool
    rules: list[RenderedRule]


def group_rules(insights: Iterable[Insight], must_confidence: float) -> list[SceneRules]:
    """Deterministic: general scene first, then scenes by name; within a scene, must before consider, newest first."""
    by_scene: dict[str, dict[str, Insight]] = {}
    for insight in insights:
        by_scene.setdefault(insight.scene, {})[str(insight.id)] = insight  # one rule per insight even if listed twice
    groups = []
    for scene in sorted(by_scene, key=lambda name: (name != GENERAL_SCENE, name)):
        ordered = sorted(
            by_scene[scene].values(),
            key=lambda i: (i.confidence < must_confidence, -i.updated_at.timestamp(), str(i.id)),
        )
        rules = [
            RenderedRule(
                action=i.action.strip(),
                topic=i.topic,
                must=i.confidence >= must_confidence,
                updated=i.updated_at.date().isoformat(),
            )
            for i in ordered
        ]
        groups.append(SceneRules(scene=scene, is_general=scene == GENERAL_SCENE, rules=rules))
    return groups


def render_rules(insights: Iterable[Insight], *, language: Language, must_confidence: float, prompts_dir: Path) -> str:
    """The rules block in zh or en; an empty string when there is nothing to inject."""
    groups = group_rules(insights, must_confidence)
    if not groups:
        return ""
    return render_prompt(prompts_dir, TEMPLATE, groups=groups, language=language).strip()
