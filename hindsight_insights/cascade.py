"""The workspace-model cascade: what a rule-free classifier is unsure of goes to a model, one short call, under a
daily budget per project.

The learned screen (detection/poisoning.py) is calibrated, so its unsure band is where a second opinion pays. When a
builder picked a model (save_insight's and record_turn's `model` setting), an unsure item is asked about in ONE
classification call: the prompt is prompts/screening/ (rendered by prompts.render_prompt), at most
MAX_OUTPUT_TOKENS tokens come back, and the answer must be one JSON object {"verdict": "benign" | "attack",
"reason": "..."}. Only a clear "benign" lets the item through; "attack", a malformed answer, the day's budget spent
or the model failing hold it for a reviewer, with the reason (screening.py decides, admission.py writes it).

The budget counts calls per project per day (in Settings.timezone), one count for every purpose: the screen's calls
and, later, the correction detector's. `DailyBudget` is the port; store/budget.py keeps it in a Weaviate collection
of the project, so it survives the plugin process restarting and is shared by every replica; `MemoryBudget` is the
in-memory one for tests. The core never talks to Dify: `VerdictModel` is what hindsight_dify/cascade.py implements
over the tool session's backwards LLM invocation.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Literal, Protocol
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hindsight_insights.prompts import render_prompt

MAX_OUTPUT_TOKENS = 300  # one verdict and a sentence of reason
PURPOSE_SCREEN = "screen"
PURPOSE_CORRECTION = "correction"  # the correction detector's cascade, when it has one: the same budget
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_THINKING = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)

Outcome = Literal["benign", "attack", "malformed", "budget", "failed"]


class ModelFailed(Exception):
    """The workspace model could not answer (unreachable, quota, refused): the item is held."""


class VerdictModel(Protocol):
    """A model that answers one classification prompt with text."""

    @property
    def label(self) -> str:
        """provider/model, for the reason a reviewer reads."""
        ...

    def complete(self, system: str, user: str, max_tokens: int) -> str:
        """The model's answer; raises ModelFailed when it has none."""
        ...


class DailyBudget(Protocol):
    def take(self, purpose: str, limit: int, day: date) -> bool:
        """Count one call against `day`'s budget of `limit` calls; False (nothing counted) when it is spent."""
        ...


class MemoryBudget:
    """The budget in memory (tests, a process with no store)."""

    def __init__(self) -> None:
        self.used: Counter[date] = Counter()
        self.by_purpose: Counter[tuple[date, str]] = Counter()

    def take(self, purpose: str, limit: int, day: date) -> bool:
        if self.used[day] >= limit:
            return False
        self.used[day] += 1
        self.by_purpose[day, purpose] += 1
        return True


def today(now: datetime, timezone: str) -> date:
    """The budget's day: the project's calendar day."""
    return now.astimezone(ZoneInfo(timezone)).date()


@dataclass(frozen=True)
class Cascade:
    """The model a builder picked, the project's budget and its daily limit, and where the prompts are."""

    model: VerdictModel
    budget: DailyBudget
    limit: int
    prompts_dir: Path
    timezone: str = "UTC"


class Verdict(BaseModel):
    """The model's answer, validated: nothing else is accepted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Literal["benign", "attack"]
    reason: str = Field("", max_length=1000)


@dataclass(frozen=True)
class Opinion:
    """What the cascade concluded about one item: only "benign" lets it through."""

    outcome: Outcome
    detail: str

    @property
    def clears(self) -> bool:
        return self.outcome == "benign"


def parse_verdict(answer: str) -> Verdict | None:
    """The answer as a Verdict, or None when it is anything but one JSON object of that shape (a ```json fence and a
    leading <think> block are taken off; nothing else is forgiven)."""
    text = _THINKING.sub("", answer, count=1).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        return Verdict.model_validate(json.loads(text))
    except (ValueError, ValidationError):
        return None


def render(prompts_dir: Path, texts: dict[str, str], probability: float | None) -> tuple[str, str]:
    """The classification prompt: (system, user). The item's fields are data inside the user part."""
    system = render_prompt(prompts_dir, "screening/verdict.md.j2", part="system", fields={}, probability=None)
    user = render_prompt(prompts_dir, "screening/verdict.md.j2", part="user", fields=texts, probability=probability)
    return system, user


def ask(cascade: Cascade, texts: dict[str, str], probability: float | None, now: datetime) -> Opinion:
    """One classification call about an insight's fields, if the day's budget allows it."""
    if not cascade.budget.take(PURPOSE_SCREEN, cascade.limit, today(now, cascade.timezone)):
        return Opinion("budget", f"the day's budget of {cascade.limit} model calls is spent")
    system, user = render(cascade.prompts_dir, texts, probability)
    try:
        answer = cascade.model.complete(system, user, MAX_OUTPUT_TOKENS)
    except ModelFailed as error:
        return Opinion("failed", f"the workspace model {cascade.model.label} failed: {error}")
    verdict = parse_verdict(answer)
    if verdict is None:
        return Opinion("malformed", f"the workspace model {cascade.model.label} gave no valid verdict")
    said = f"the workspace model {cascade.model.label} judged it {verdict.verdict}"
    return Opinion(verdict.verdict, f"{said}: {verdict.reason[:200]}" if verdict.reason else said)
