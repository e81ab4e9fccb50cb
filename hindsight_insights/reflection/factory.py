"""The reflector the settings choose (`reflection_llm`)."""

from __future__ import annotations

import os

from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError
from hindsight_insights.reflection.claude import AnthropicReflector
from hindsight_insights.reflection.llm import Extractor, Reflector
from hindsight_insights.reflection.offline import OfflineExtractor
from hindsight_insights.reflection.openai_compat import OpenAICompatibleReflector


def load_reflector(settings: Settings) -> Reflector | Extractor:
    """anthropic, openai, or offline: the rule-based extractor, which needs no model and no key. `auto` takes
    Anthropic when a key is set (the setting or ANTHROPIC_API_KEY), else an OpenAI-compatible endpoint when one is
    configured, else offline."""
    choice = settings.reflection_llm
    if choice == "auto":
        has_key = settings.anthropic_api_key is not None or bool(os.environ.get("ANTHROPIC_API_KEY"))
        choice = "anthropic" if has_key else "openai" if settings.reflection_base_url else "offline"
    if choice == "anthropic":
        return AnthropicReflector.from_settings(settings)
    if choice == "openai":
        return OpenAICompatibleReflector.from_settings(settings)
    if choice == "offline":
        return OfflineExtractor(settings)
    raise HindsightError(f"unknown reflection_llm {settings.reflection_llm!r}: choose anthropic, openai or offline")
