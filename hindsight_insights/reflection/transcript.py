"""The sessions a reflection reads, and the bounded, inert view of them that goes into a prompt.

Cost bound (docs/architecture.md, "Reflection"): the transcript sent is at most `reflection_max_transcript_chars`
characters of message text (default 16,000), shared equally between the sessions of a nightly run (at most
MAX_NIGHTLY_SESSIONS, the newest). One user message is cut to MAX_USER_CHARS and one assistant message to
MAX_ASSISTANT_CHARS (head and tail kept). When a session's turns do not fit, its newest turns are kept and the prompt
says how many earlier ones were left out. Turn numbers stay the stored ones, so evidence points at stored turns.
Verification always reads the full stored messages, never this view.

Inert: the markers that structure the transcript use ASCII `[ ] < >`; inside messages these become their full-width
forms, and continuation lines are indented, so no message can open a turn, close a session or speak as the
assistant. NFKC folds the full-width forms back, so a quote copied from the view still verifies (verify.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from hindsight_insights.models import Turn

Variant = Literal["session", "anomaly", "nightly"]
VARIANTS: tuple[Variant, ...] = ("session", "anomaly", "nightly")

MAX_USER_CHARS = 2000
MAX_ASSISTANT_CHARS = 1000
MAX_NIGHTLY_SESSIONS = 8
_CUT = " … "
_INERT = str.maketrans({"[": "［", "]": "］", "<": "＜", ">": "＞"})


@dataclass(frozen=True)
class SessionTranscript:
    """One stored session: every turn, in order. `label` is how prompts name it (S1, S2, ...)."""

    label: str
    session_id: str
    user_id: str
    turns: list[Turn]

    @property
    def scene(self) -> str:
        return self.turns[-1].scene if self.turns else "general"

    def user_message(self, turn: int) -> str | None:
        return self.turns[turn].user_message if 0 <= turn < len(self.turns) else None


@dataclass(frozen=True)
class TurnView:
    index: int
    user: str
    assistant: str
    signals: list[str]  # feedback_dislike, tool_error, stopped_generation, correction


@dataclass(frozen=True)
class SessionView:
    label: str
    scene: str
    turns: list[TurnView]
    omitted: int = 0  # earlier turns left out to stay within the cap
    flagged: list[int] = field(default_factory=list)  # turns with a signal (the anomaly variant looks there first)


def as_transcript_text(text: str) -> str:
    """Message text that cannot forge the transcript's structure (see the module docstring)."""
    lines = text.strip().translate(_INERT).splitlines() or [""]
    return "\n".join([lines[0], *("  " + line for line in lines[1:])])


def clip(text: str, limit: int) -> str:
    """At most `limit` characters: two thirds head, one third tail, joined by an ellipsis."""
    if len(text) <= limit:
        return text
    keep = limit - len(_CUT)
    head = keep * 2 // 3
    return text[:head].rstrip() + _CUT + text[len(text) - (keep - head) :].lstrip()


def signal_names(turn: Turn) -> list[str]:
    signals = turn.signals
    names = []
    if signals.feedback == "dislike":
        names.append("feedback_dislike")
    if signals.tool_error:
        names.append("tool_error")
    if signals.stopped_generation:
        names.append("stopped_generation")
    if signals.correction:
        names.append("correction")
    return names


def _turn_view(turn: Turn) -> TurnView:
    return TurnView(
        index=turn.turn_index,
        user=as_transcript_text(clip(turn.user_message, MAX_USER_CHARS)),
        assistant=as_transcript_text(clip(turn.assistant_message, MAX_ASSISTANT_CHARS)),
        signals=signal_names(turn),
    )


def view(sessions: Sequence[SessionTranscript], max_chars: int) -> list[SessionView]:
    """The prompt's view of the sessions, within `max_chars` of message text (the newest turn of each session is
    always kept; the per-message caps bound it)."""
    share = max_chars // max(len(sessions), 1)
    views = []
    for session in sessions:
        kept: list[TurnView] = []
        used = 0
        for turn in reversed(session.turns):
            item = _turn_view(turn)
            size = len(item.user) + len(item.assistant)
            if kept and used + size > share:
                break
            kept.append(item)
            used += size
        kept.reverse()
        views.append(
            SessionView(
                label=session.label,
                scene=as_transcript_text(session.scene),
                turns=kept,
                omitted=len(session.turns) - len(kept),
                flagged=[item.index for item in kept if item.signals],
            )
        )
    return views
