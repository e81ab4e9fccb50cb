"""The result of correction detection: its type, its condition, the confidences of the seed rules."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CorrectionType(StrEnum):
    FACTUAL = "factual"
    PREFERENCE = "preference"
    PROCESS = "process"
    NEGATIVE = "negative"
    NONE = "none"


class Condition(StrEnum):
    """How widely a correction applies; not the user/project `scope` of the insight it becomes."""

    UNIVERSAL = "universal"
    CONTEXT_SPECIFIC = "context_specific"
    TEMPORAL = "temporal"
    SOURCE_SPECIFIC = "source_specific"


# The seed rules' confidences (documented in corrections.py).
CONCRETE, SOURCED, GENERAL, IMPLICIT, BARE = 0.9, 0.85, 0.7, 0.6, 0.3
PREFERENCE_STANDING, PREFERENCE_STATED = 0.9, 0.85
PROCESS_BINDING, PROCESS_STATED = 0.85, 0.7


@dataclass(frozen=True)
class Correction:
    """What corrections.detect found; each field is documented there."""

    type: CorrectionType
    confidence: float
    corrected: str | None = None
    original: str | None = None
    topic: str | None = None
    condition: Condition = Condition.UNIVERSAL
    condition_detail: str | None = None
    signals: tuple[str, ...] = ()

    @property
    def is_correction(self) -> bool:
        return self.type is not CorrectionType.NONE
