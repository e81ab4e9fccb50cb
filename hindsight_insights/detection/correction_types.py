"""The result of correction detection: its type, its condition, the confidences of the seed rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from hindsight_insights.models import Condition, DetectedCorrection


class CorrectionType(StrEnum):
    FACTUAL = "factual"
    PREFERENCE = "preference"
    PROCESS = "process"
    NEGATIVE = "negative"
    NONE = "none"


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
    # The learned detector's (learned_corrections.py), when it ran: the class probabilities, and whether the decision
    # is unsure (no firm rule, P(correction) in the configured band), for a later step to ask a workspace model.
    probabilities: Mapping[str, float] = field(default_factory=dict)
    unsure: bool = False

    @property
    def is_correction(self) -> bool:
        return self.type is not CorrectionType.NONE

    def stored(self) -> DetectedCorrection:
        """What a turn keeps of it (models.TurnSignals.detected): all but the explaining signals."""
        return DetectedCorrection(
            type=self.type.value,
            confidence=self.confidence,
            corrected=self.corrected,
            original=self.original,
            topic=self.topic,
            condition=self.condition,
            condition_detail=self.condition_detail,
        )
