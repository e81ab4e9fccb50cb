"""Reflection: stored sessions become insights (docs/architecture.md, "Reflection").

`ReflectionEngine(store, load_reflector(settings))` reflects on one session at its end (`reflect_session`), on a
flagged one (`reflect_anomaly`) or on one user's sessions at night (`reflect_user`); `ReflectionBatch` runs the
nightly reflections over Anthropic's Message Batches API.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hindsight_insights.reflection.engine import (
    MAX_INSIGHTS_PER_REFLECTION,
    CannotReflect,
    PreparedReflection,
    ReflectionEngine,
)
from hindsight_insights.reflection.llm import (
    DetectedCandidate,
    ExtractionRequest,
    Extractor,
    LlmAnswer,
    LlmError,
    Reflector,
)
from hindsight_insights.reflection.output import (
    REFLECTION_SCHEMA,
    MalformedOutput,
    OutputSchema,
    ReflectedEvidence,
    ReflectedInsight,
    ReflectionOutput,
    parse_output,
)
from hindsight_insights.reflection.prompt import KnownTopic, ReflectionPrompt, build_prompt
from hindsight_insights.reflection.report import Dropped, ReflectionReport
from hindsight_insights.reflection.transcript import SessionTranscript, Variant

if TYPE_CHECKING:
    from hindsight_insights.reflection.batch import BatchJob, BatchNotReady, BatchRequest, ReflectionBatch
    from hindsight_insights.reflection.claude import AnthropicReflector
    from hindsight_insights.reflection.factory import load_reflector
    from hindsight_insights.reflection.openai_compat import OpenAICompatibleReflector

# The model clients import the anthropic and openai SDKs, 3.5 s of imports that the Dify plugin (which reflects with
# the workspace's model through Dify, hindsight_dify/dify_model.py) never needs: they load on first use.
_LAZY = {
    "BatchJob": "batch",
    "BatchNotReady": "batch",
    "BatchRequest": "batch",
    "ReflectionBatch": "batch",
    "AnthropicReflector": "claude",
    "load_reflector": "factory",
    "OpenAICompatibleReflector": "openai_compat",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "MAX_INSIGHTS_PER_REFLECTION",
    "REFLECTION_SCHEMA",
    "AnthropicReflector",
    "BatchJob",
    "BatchNotReady",
    "BatchRequest",
    "CannotReflect",
    "DetectedCandidate",
    "Dropped",
    "ExtractionRequest",
    "Extractor",
    "KnownTopic",
    "LlmAnswer",
    "LlmError",
    "MalformedOutput",
    "OpenAICompatibleReflector",
    "OutputSchema",
    "PreparedReflection",
    "ReflectedEvidence",
    "ReflectedInsight",
    "ReflectionBatch",
    "ReflectionEngine",
    "ReflectionOutput",
    "ReflectionPrompt",
    "ReflectionReport",
    "Reflector",
    "SessionTranscript",
    "Variant",
    "build_prompt",
    "load_reflector",
    "parse_output",
]
