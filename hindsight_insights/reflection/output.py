"""What a reflection model must answer: `{"insights": [...]}`, as a JSON schema for the model and pydantic for us.

The schema is written out by hand because it is part of the prompt contract: every property is required (strict
structured outputs want that; "no value" is null or an empty list), and nothing else is allowed. `ReflectedInsight`
checks the same shape on what comes back; tests/test_reflection_output.py keeps the two in step.

The shape says nothing about lengths or the evidence being real: a well-formed insight can still be dropped later
(reflection/engine.py) when its quote is not in the transcript or a field breaks a rule of `InsightDraft`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hindsight_insights.errors import HindsightError, InvalidInput
from hindsight_insights.llm_json import json_object, without_trusted
from hindsight_insights.models import Condition, InsightKind

SCHEMA_NAME = "record_insights"


class MalformedOutput(HindsightError):
    """The model's answer is not `{"insights": [...]}` of the schema's shape. `problems` are (field, rule) pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{field}: {rule}" for field, rule in problems))


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, allow_inf_nan=False)


class ReflectedEvidence(_Shape):
    quote: str
    turn: Annotated[int, Field(ge=0)] | None = None
    session: str | None = None  # the session's label in the prompt (S1, S2, ...), for the nightly variant


class ReflectedInsight(_Shape):
    """One candidate insight, as an LLM or an offline extractor proposes it: content only. Whose it is, for whom it
    holds (scope), where it came from and whether it was reviewed are never part of it (llm_json.TRUSTED_FIELDS)."""

    topic: str
    kind: InsightKind
    scene: str | None = None  # None: the session's scene
    observation: str = ""
    action: str
    evidence: ReflectedEvidence
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
    tags: list[str] = []
    condition: Condition | None = None  # for a correction: how widely it holds (models.Condition)
    condition_detail: str | None = None  # the context, period or source, unless universal


class ReflectionOutput(_Shape):
    insights: list[ReflectedInsight]


@dataclass(frozen=True)
class OutputSchema:
    """The JSON schema an answer must follow, with the name and description a tool or response format needs."""

    name: str
    description: str
    json_schema: dict[str, Any]


def _nullable(kind: str, description: str) -> dict[str, Any]:
    return {"anyOf": [{"type": kind}, {"type": "null"}], "description": description}


_EVIDENCE = {
    "type": "object",
    "properties": {
        "quote": {"type": "string", "description": "Copied character for character from ONE user message."},
        "turn": _nullable("integer", "The turn number of that user message."),
        "session": _nullable("string", "The session label (S1, S2, ...) of that message; null if only one."),
    },
    "required": ["quote", "turn", "session"],
    "additionalProperties": False,
}

_INSIGHT = {
    "type": "object",
    "properties": {
        "topic": {"type": "string", "description": "A short noun phrase; reuse a known topic's exact name."},
        "kind": {"type": "string", "enum": [kind.value for kind in InsightKind]},
        "scene": {"type": "string", "description": "The conversation's scene, or general if it holds everywhere."},
        "observation": {"type": "string", "description": "What happened, quoting the user's words."},
        "action": {"type": "string", "description": "A second-person instruction with its trigger."},
        "evidence": _EVIDENCE,
        "confidence": {"type": "number", "description": "0.8-0.95 said explicitly; 0.5-0.7 inferred."},
        "tags": {"type": "array", "items": {"type": "string"}},
        "condition": {
            "anyOf": [{"type": "string", "enum": [condition.value for condition in Condition]}, {"type": "null"}],
            "description": "For a correction: how widely it holds; null when it is not a correction.",
        },
        "condition_detail": _nullable("string", "The context, period or source, unless the condition is universal."),
    },
    "required": [
        "topic",
        "kind",
        "scene",
        "observation",
        "action",
        "evidence",
        "confidence",
        "tags",
        "condition",
        "condition_detail",
    ],
    "additionalProperties": False,
}

REFLECTION_SCHEMA = OutputSchema(
    name=SCHEMA_NAME,
    description="Record the insights this conversation teaches the assistant. An empty list when it teaches nothing.",
    json_schema={
        "type": "object",
        "properties": {"insights": {"type": "array", "items": _INSIGHT}},
        "required": ["insights"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True)
class ParsedOutput:
    insights: list[ReflectedInsight]
    ignored: list[str]  # trusted fields the model tried to set, e.g. "insights.0.scope"


def parse_output(content: str | Mapping[str, Any]) -> ParsedOutput:
    """The answer as candidate insights, or MalformedOutput naming every problem. `{}` means nothing was learned.

    All or nothing: one insight of the wrong shape makes the whole answer malformed, so that nothing half-parsed is
    ever saved (the engine asks once more, with the problems).
    """
    try:
        data = json_object(content, "answer") if isinstance(content, str) else dict(content)
    except InvalidInput as error:
        raise MalformedOutput(error.problems) from None
    if not data:
        return ParsedOutput(insights=[], ignored=[])
    ignored: list[str] = []
    items = data.get("insights")
    if isinstance(items, list):
        # What the model may not decide is dropped and reported, as llm_json does for one insight. The evidence's
        # `session` label stays: it points at a session of the prompt, and the quote is verified there.
        cleaned = []
        for index, item in enumerate(items):
            if isinstance(item, dict):
                item, dropped = without_trusted(item, f"insights.{index}", evidence_fields=("session_id",))
                ignored += dropped
            cleaned.append(item)
        data = {**data, "insights": cleaned}
    try:
        output = ReflectionOutput.model_validate(data)
    except ValidationError as error:
        raise MalformedOutput(InvalidInput.from_validation_error(error).problems) from None
    return ParsedOutput(insights=list(output.insights), ignored=ignored)
