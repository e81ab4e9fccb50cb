"""A detected correction becomes a few-shot example (store/examples.py): the question, what the agent said, and the
user's correcting message, taken from the stored turns (redacted when they were stored) and redacted again by
admission. It is the user's own example until a reviewer promotes it."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from hindsight_insights.admission import admit_example
from hindsight_insights.detection.correction_types import Correction
from hindsight_insights.fewshot import CONTEXT_CHARS, CORRECTED_CHARS, SAID_CHARS, ExampleDraft, FewShotExample, clip
from hindsight_insights.models import Turn


class ExampleKeeper(Protocol):
    def keep(self, draft: ExampleDraft, now: datetime | None = None) -> FewShotExample: ...


@runtime_checkable
class KeepsExamples(Protocol):
    """A store with a few-shot library (InsightStore); the in-memory store of the unit tests has none."""

    @property
    def examples(self) -> ExampleKeeper: ...


def example_for(correction: Correction, corrected: Turn, correcting: Turn) -> ExampleDraft | None:
    """The example a correction of `corrected`'s answer by `correcting`'s user message teaches, if any."""
    if not correction.is_correction or not corrected.assistant_message.strip() or not correcting.user_message.strip():
        return None
    return admit_example(
        ExampleDraft(
            user_id=correcting.user_id,
            session_id=correcting.session_id,
            turn_id=corrected.id,
            scene=correcting.scene,
            topic=clip(correction.topic or "", 80),
            type=correction.type.value,
            context=clip(corrected.user_message, CONTEXT_CHARS),
            said=clip(corrected.assistant_message, SAID_CHARS),
            corrected=clip(correcting.user_message, CORRECTED_CHARS),
        )
    )


def keep_example(
    store: object, correction: Correction, corrected: Turn, correcting: Turn, now: datetime
) -> FewShotExample | None:
    """Keep the example, when the store has a library and the correction teaches one."""
    draft = example_for(correction, corrected, correcting)
    if draft is None or not isinstance(store, KeepsExamples):
        return None
    return store.examples.keep(draft, now)
