"""Reflection: stored sessions become insights (docs/architecture.md, "Reflection")."""

from __future__ import annotations

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
from hindsight_insights.reflection.transcript import SessionTranscript, Variant

__all__ = [
    "REFLECTION_SCHEMA",
    "KnownTopic",
    "MalformedOutput",
    "OutputSchema",
    "ReflectedEvidence",
    "ReflectedInsight",
    "ReflectionOutput",
    "ReflectionPrompt",
    "SessionTranscript",
    "Variant",
    "build_prompt",
    "parse_output",
]
