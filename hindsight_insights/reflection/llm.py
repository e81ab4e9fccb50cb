"""The two kinds of insight source the engine takes, behind small interfaces.

A `Reflector` is a model: it gets the rendered prompt (a cacheable system part, the transcript as the user part) and
the output schema, and answers with JSON. An `Extractor` needs no model: it maps the stored turns to candidate
insights directly (the offline, rule-based path). Both kinds of candidates are verified and saved the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from hindsight_insights.config import Language
from hindsight_insights.detection.correction_types import Correction
from hindsight_insights.errors import HindsightError
from hindsight_insights.reflection.output import OutputSchema, ReflectedInsight
from hindsight_insights.reflection.transcript import SessionTranscript, Variant


class LlmError(HindsightError):
    """The model could not be asked: unreachable, timed out, out of retries, or the request was refused (4xx)."""


@dataclass(frozen=True)
class LlmAnswer:
    """One model answer and what it cost.

    tokens_in counts the whole prompt, cached parts included; cached_tokens is the part read from the prompt cache
    and cache_write_tokens the part written to it (Anthropic bills both differently from plain input).
    """

    content: str | Mapping[str, Any]  # JSON text, or the object a tool call carried
    tokens_in: int
    tokens_out: int
    model: str
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    stop_reason: str | None = None
    refusal: str | None = None  # set when the model declined to answer

    @property
    def cut_off(self) -> bool:
        """The answer hit max_tokens, so its JSON is probably truncated."""
        return self.stop_reason in ("max_tokens", "length")


@runtime_checkable
class Reflector(Protocol):
    """A model behind one call. `name` goes into the insights' source: reflection:<name>."""

    @property
    def name(self) -> str: ...

    def reflect(self, system: str, user: str, schema: OutputSchema) -> LlmAnswer: ...


@dataclass(frozen=True)
class ExtractionRequest:
    """What an extractor sees: the sessions with every stored turn, the variant, and the language of the run."""

    variant: Variant
    sessions: Sequence[SessionTranscript]
    language: Language


@dataclass(frozen=True)
class DetectedCandidate:
    """A candidate the rule-based correction detector found, with its finding. The finding is trusted (no model
    wrote it): it asks for the scope (scope.py) and its confidence may verify a fact by agreement."""

    insight: ReflectedInsight
    correction: Correction


@runtime_checkable
class Extractor(Protocol):
    """Candidate insights straight from the turns, without a model. Their evidence must quote user messages. A
    plain ReflectedInsight stays with the user, like a model's."""

    @property
    def name(self) -> str: ...

    def extract(self, request: ExtractionRequest) -> Sequence[ReflectedInsight | DetectedCandidate]: ...
