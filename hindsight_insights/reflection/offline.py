"""Reflection without a model: the rule-based correction detector read over a stored session.

Each user message is read against the assistant answer before it (detection/corrections.py); every explicit or
implicit correction and every stated preference becomes a candidate, worded by the same templates as the layered
writes (governance/lessons.py) and quoting the user's message verbatim. Negative corrections and weak factual ones
hold for their session only, which is over when reflection runs, so they are not proposed. The engine then checks
each quote against the transcript and saves through the same rules as a model's candidates.

It is the demo's default and the floor the LLM paths must beat: it finds what users say outright, never what they
only show (a request repeated across sessions, a workaround), which the model prompts ask for.
"""

from __future__ import annotations

from collections.abc import Sequence

from hindsight_insights.commands import Provenance
from hindsight_insights.config import Settings
from hindsight_insights.detection.correction_types import CorrectionType
from hindsight_insights.detection.corrections import detect
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.governance.lessons import KIND_OF, wording
from hindsight_insights.models import Scope
from hindsight_insights.reflection.llm import DetectedCandidate, ExtractionRequest
from hindsight_insights.reflection.output import ReflectedEvidence, ReflectedInsight
from hindsight_insights.scope import decide_scope

MAX_QUOTE_CHARS = 1000


class OfflineExtractor:
    """An `Extractor` for the reflection engine. Each candidate carries the detector's finding (DetectedCandidate):
    its rules, not a model, choose the scope, and may promote a verified fact."""

    def __init__(self, settings: Settings, detector: LearnedDetector | None = None) -> None:
        self._settings = settings
        self._detector = detector  # the learned detector beside the rules (detector_model.learned_detector)

    def with_detector(self, detector: LearnedDetector | None) -> OfflineExtractor:
        """The same extractor reading with the learned detector (made once the store's embedder exists)."""
        return OfflineExtractor(self._settings, detector)

    @property
    def name(self) -> str:
        return "offline"

    def extract(self, request: ExtractionRequest) -> Sequence[DetectedCandidate]:
        found: list[DetectedCandidate] = []
        for session in request.sessions:
            previous_answer: str | None = None
            for index, turn in enumerate(session.turns):
                message = turn.user_message.strip()
                correction = detect(message, previous_answer, self._detector) if message else None
                previous_answer = turn.assistant_message or previous_answer
                if correction is None or correction.type in (CorrectionType.NONE, CorrectionType.NEGATIVE):
                    continue
                asks = Provenance(self.name, session.user_id, session.session_id, correction=correction)
                if decide_scope(asks, self._settings)[0].scope is Scope.SESSION:
                    continue
                words = wording(correction, message, self._settings)
                insight = ReflectedInsight(
                    topic=words.topic,
                    kind=KIND_OF[correction.type],
                    scene=turn.scene,
                    observation=words.observation,
                    action=words.action,
                    evidence=ReflectedEvidence(quote=message[:MAX_QUOTE_CHARS], turn=index, session=session.label),
                    confidence=correction.confidence,
                    tags=[],
                    condition=words.condition,
                    condition_detail=words.condition_detail,
                )
                found.append(DetectedCandidate(insight, correction))
        return found
