"""The reflector the settings choose (`reflection_llm`)."""

from __future__ import annotations

from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError
from hindsight_insights.reflection.claude import AnthropicReflector
from hindsight_insights.reflection.llm import Reflector
from hindsight_insights.reflection.openai_compat import OpenAICompatibleReflector


def load_reflector(settings: Settings) -> Reflector:
    """anthropic or openai. The offline path is an Extractor, built on the correction detector: pass it to
    ReflectionEngine directly."""
    if settings.reflection_llm == "anthropic":
        return AnthropicReflector.from_settings(settings)
    if settings.reflection_llm == "openai":
        return OpenAICompatibleReflector.from_settings(settings)
    raise HindsightError(
        "reflection_llm=offline needs the rule-based extractor, which is not part of this build yet: give "
        "ReflectionEngine an Extractor, or set HINDSIGHT_REFLECTION_LLM to anthropic or openai"
    )
