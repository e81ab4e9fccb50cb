"""Few-shot examples, the model: (what the agent said -> what the user corrected it to, with the question before it).
The store is store/examples.py; governance/recording.py makes them from detected corrections, admission redacts them.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

# Caps on what one example carries into a prompt (head kept): its cost is in bench/bench_fewshot.py.
CONTEXT_CHARS = 150
SAID_CHARS = 250
CORRECTED_CHARS = 200

ExampleScope = Literal["user", "project"]


def clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class ExampleDraft(BaseModel):
    """An example before it is kept: made by governance from a correction record, redacted by admission."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    session_id: str
    turn_id: uuid.UUID  # the corrected turn (its answer is `said`)
    scene: str
    topic: str = ""
    type: str  # the correction's type (factual, preference, process, negative)
    context: str  # the user's message the answer replied to
    said: str  # what the agent said
    corrected: str  # the user's correcting message


class FewShotExample(ExampleDraft):
    id: uuid.UUID
    scope: ExampleScope = "user"
    learned_at: datetime
    expire_at: datetime
    merged: int = 1  # how many corrections, near-duplicates of each other, it stands for
    promoted_by: str | None = None
