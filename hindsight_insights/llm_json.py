"""JSON that a language model wrote: read safely, and kept to what a model may decide.

A model writes the content of an insight (models.InsightContent). It never decides whose insight it is, for whom
it holds (scope), which session or source it comes from, or whether it was reviewed: those keys are dropped and
reported (`ignored`), so a caller can say what was not used. Every other unknown key is an error, as for any input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hindsight_insights.errors import InvalidInput
from hindsight_insights.models import InsightContent

MAX_LLM_JSON_CHARS = 20_000
# What a model's JSON may not decide: whose insight it is, for whom it holds, where it came from, whether and why it
# was held for review. The caller's trusted context (commands.Provenance) says these.
TRUSTED_FIELDS = ("user_id", "scope", "source", "status", "review_reason", "session_id")
# Inside `evidence`: which conversation the quote is from is the runtime's to say, never the model's.
TRUSTED_EVIDENCE_FIELDS = ("session_id", "session")


def json_object(text: str, field: str) -> dict[str, Any]:
    """One JSON object from LLM output, with or without a ```json fence. Errors name `field`."""
    if len(text) > MAX_LLM_JSON_CHARS:
        raise InvalidInput([(field, f"is {len(text):,} characters long; at most {MAX_LLM_JSON_CHARS:,} are read")])
    stripped = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        loaded = json.loads(stripped)
    except json.JSONDecodeError as error:
        raise InvalidInput([(field, f"is not valid JSON ({error.msg} at line {error.lineno})")]) from None
    except RecursionError:
        raise InvalidInput([(field, "is nested too deeply to be an insight")]) from None
    if not isinstance(loaded, dict):
        raise InvalidInput([(field, 'must be one JSON object, e.g. {"topic": ..., "action": ...}')])
    return loaded


def without_trusted(
    item: Mapping[str, Any], prefix: str, *, evidence_fields: tuple[str, ...] = TRUSTED_EVIDENCE_FIELDS
) -> tuple[dict[str, Any], list[str]]:
    """`item` without the keys a model may not decide, and those keys as `prefix.key` (sorted)."""
    ignored = [f"{prefix}.{key}" for key in TRUSTED_FIELDS if key in item]
    kept = {key: value for key, value in item.items() if key not in TRUSTED_FIELDS}
    evidence = kept.get("evidence")
    if isinstance(evidence, Mapping):
        ignored += [f"{prefix}.evidence.{key}" for key in evidence_fields if key in evidence]
        kept["evidence"] = {key: value for key, value in evidence.items() if key not in evidence_fields}
    return kept, sorted(ignored)


@dataclass(frozen=True)
class LlmInsight:
    content: InsightContent | None  # None: the model said nothing was learned ({})
    ignored: list[str]  # keys it wrote that it may not decide, e.g. "insight_json.scope"


def insight_from_llm_json(text: str, field: str = "insight_json") -> LlmInsight:
    """The insight object a model emits, with or without a ```json fence. `{}` means nothing was learned. Errors
    name `field` (the parameter the text came in)."""
    data = json_object(text, field)
    if not data:
        return LlmInsight(content=None, ignored=[])
    content, ignored = without_trusted(data, field)
    return LlmInsight(content=InsightContent.parse(content), ignored=ignored)
