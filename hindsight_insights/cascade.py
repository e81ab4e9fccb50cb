"""The workspace-model cascade: what a rule-free classifier is unsure of goes to a model, one short call, under a
daily budget per project.

Two classifiers are calibrated, so their unsure bands are where a second opinion pays: the learned screen
(detection/poisoning.py) and the learned correction detector (detection/learned_corrections.py). When a builder picked
a model (save_insight's and record_turn's `model` setting), an unsure item is asked about in ONE classification call
(`consult`): a jinja2 template under prompts/ rendered by prompts.render_prompt (part "system", then "user"), at most
MAX_OUTPUT_TOKENS tokens back, and an answer that must be one JSON object of the purpose's shape (`parse_answer`);
nothing else is accepted.

  * the screen (`ask`, prompts/screening/verdict.md.j2): {"verdict": "benign" | "attack", "reason": "..."}. Only a
    clear "benign" lets the item through; "attack", a malformed answer, the day's budget spent or the model failing
    hold it for a reviewer, with the reason (screening.py decides, admission.py writes it);
  * the correction detector (`CorrectionAsker`, prompts/corrections/verdict.md.j2): which of factual / preference /
    process / negative / none the user's message is, read with the assistant's answer before it. A clear verdict
    decides the type (learned_corrections.settle); anything else leaves the detector's own decision.

The budget counts calls per project per day (in Settings.timezone), one count for every purpose. `DailyBudget` is
the port; store/budget.py keeps it in a Weaviate collection of the project, so it survives the plugin process
restarting and is shared by every replica; `MemoryBudget` is the in-memory one for tests. The core never talks to
Dify: `VerdictModel` is what hindsight_dify/cascade.py implements over the tool session's backwards LLM invocation.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal, Protocol
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hindsight_insights.detection.correction_types import Correction, CorrectionType
from hindsight_insights.prompts import render_prompt

MAX_OUTPUT_TOKENS = 300  # one verdict and a sentence of reason
PURPOSE_SCREEN = "screen"
PURPOSE_CORRECTION = "correction"  # the correction detector's: the same budget
SCREEN_TEMPLATE = "screening/verdict.md.j2"
CORRECTION_TEMPLATE = "corrections/verdict.md.j2"
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_THINKING = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)

Outcome = Literal["benign", "attack", "malformed", "budget", "failed"]
Asked = Literal["answered", "malformed", "budget", "failed"]  # what became of one call, whatever its purpose


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
    """The screen's answer, validated: nothing else is accepted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Literal["benign", "attack"]
    reason: str = Field("", max_length=1000)


class CorrectionVerdict(BaseModel):
    """The correction detector's answer: the type of the user's message, validated like the screen's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Literal["factual", "preference", "process", "negative", "none"]
    reason: str = Field("", max_length=1000)


@dataclass(frozen=True)
class Reply[Shape: BaseModel]:
    """One consultation: the validated answer, or None with what happened instead (`outcome`, `detail`)."""

    outcome: Asked
    detail: str
    answer: Shape | None = None


@dataclass(frozen=True)
class Opinion:
    """What the cascade concluded about one item: only "benign" lets it through."""

    outcome: Outcome
    detail: str

    @property
    def clears(self) -> bool:
        return self.outcome == "benign"


def parse_answer[Shape: BaseModel](answer: str, shape: type[Shape]) -> Shape | None:
    """The answer as one `shape`, or None when it is anything but one JSON object of that shape (a ```json fence and
    a leading <think> block are taken off; nothing else is forgiven)."""
    text = _THINKING.sub("", answer, count=1).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        return shape.model_validate(json.loads(text))
    except (ValueError, ValidationError):
        return None


def consult[Shape: BaseModel](
    cascade: Cascade, purpose: str, template: str, shape: type[Shape], now: datetime, **context: Any
) -> Reply[Shape]:
    """One classification call for `purpose`, if the day's budget allows it: `template` rendered with `context`
    (part "system", then "user"), the answer parsed as `shape`."""
    if not cascade.budget.take(purpose, cascade.limit, today(now, cascade.timezone)):
        return Reply("budget", f"the day's budget of {cascade.limit} model calls is spent")
    system = render_prompt(cascade.prompts_dir, template, part="system", **context)
    user = render_prompt(cascade.prompts_dir, template, part="user", **context)
    try:
        answer = cascade.model.complete(system, user, MAX_OUTPUT_TOKENS)
    except ModelFailed as error:
        return Reply("failed", f"the workspace model {cascade.model.label} failed: {error}")
    parsed = parse_answer(answer, shape)
    if parsed is None:
        return Reply("malformed", f"the workspace model {cascade.model.label} gave no valid verdict")
    return Reply("answered", f"the workspace model {cascade.model.label}", parsed)


def _judged(reply: Reply[Any], verdict: str, reason: str) -> str:
    said = f"{reply.detail} judged it {verdict}"
    return f"{said}: {reason[:200]}" if reason else said


def ask(cascade: Cascade, texts: dict[str, str], probability: float | None, now: datetime) -> Opinion:
    """The screen's call about an insight's fields (name -> text; data inside the user part)."""
    reply = consult(cascade, PURPOSE_SCREEN, SCREEN_TEMPLATE, Verdict, now, fields=texts, probability=probability)
    if reply.outcome == "answered" and reply.answer is not None:
        return Opinion(reply.answer.verdict, _judged(reply, reply.answer.verdict, reply.answer.reason))
    return Opinion("malformed" if reply.outcome == "answered" else reply.outcome, reply.detail)


@dataclass(frozen=True)
class CorrectionOpinion:
    """What the workspace model said about an unsure turn: `verdict` is None unless it answered clearly."""

    outcome: Asked
    detail: str
    verdict: CorrectionType | None = None

    @property
    def asked(self) -> bool:
        """Whether a call was made (a spent budget asks nothing)."""
        return self.outcome != "budget"


class CorrectionAsker:
    """corrections.detect's second opinion for one turn (detect calls it at most once, on an unsure decision); it
    keeps what the model said, for record_turn's report."""

    def __init__(self, cascade: Cascade, now: datetime) -> None:
        self._cascade = cascade
        self._now = now
        self.opinion: CorrectionOpinion | None = None

    def __call__(self, message: str, previous_assistant: str | None, unsure: Correction) -> CorrectionType | None:
        reply = consult(
            self._cascade,
            PURPOSE_CORRECTION,
            CORRECTION_TEMPLATE,
            CorrectionVerdict,
            self._now,
            message=message,
            previous_assistant=previous_assistant or "",
        )
        if reply.answer is None:
            self.opinion = CorrectionOpinion(reply.outcome, reply.detail)
            return None
        verdict = CorrectionType(reply.answer.verdict)
        self.opinion = CorrectionOpinion("answered", _judged(reply, verdict.value, reply.answer.reason), verdict)
        return verdict
