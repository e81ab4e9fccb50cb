"""Evidence verification: the guard against invented lessons.

A quote counts only if it occurs verbatim in a USER message of the session (of the given turn, when a turn is
given), compared after Unicode NFKC and with every run of whitespace as one space. NFKC makes full-width and
half-width forms equal (the prompt shows some characters full-width, transcript.py), nothing else: no case folding,
no traditional/simplified conversion, no punctuation dropped. A quote this short proves nothing (MIN_QUOTE_CHARS).

What is stored is the matching text as the user wrote it, not the model's copy of it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from hindsight_insights.reflection.output import ReflectedEvidence
from hindsight_insights.reflection.transcript import SessionTranscript

MIN_QUOTE_CHARS = 4  # non-space characters; "好" or "ok" occurs in every session and proves nothing


class QuoteProblem(StrEnum):
    NOT_IN_TRANSCRIPT = "quote_not_in_transcript"
    NOT_IN_TURN = "quote_not_in_turn"
    TOO_SHORT = "quote_too_short"
    UNKNOWN_SESSION = "unknown_session"


@dataclass(frozen=True)
class VerifiedQuote:
    session: SessionTranscript
    turn: int
    quote: str  # the user's own text


class QuoteRejected(Exception):
    def __init__(self, problem: QuoteProblem, detail: str) -> None:
        self.problem = problem
        self.detail = detail
        super().__init__(f"{problem.value}: {detail}")


def _normalized(text: str) -> tuple[str, list[int]]:
    """NFKC with whitespace runs as one space, and for each character of the result where it starts in `text`."""
    out: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = unicodedata.normalize("NFKC", char)
        for piece in folded:
            if piece.isspace():
                if out and out[-1] != " ":
                    out.append(" ")
                    origin.append(index)
            else:
                out.append(piece)
                origin.append(index)
    while out and out[-1] == " ":
        out.pop()
        origin.pop()
    return "".join(out), origin


def normalize(text: str) -> str:
    return _normalized(unicodedata.normalize("NFC", text))[0].strip()


def _find(quote: str, message: str) -> str | None:
    """The span of `message` whose normalised form is the normalised quote, as written in the message."""
    text = unicodedata.normalize("NFC", message)
    normalized, origin = _normalized(text)
    start = normalized.find(quote)
    if start < 0:
        return None
    end = start + len(quote) - 1
    # The last character may expand under NFKC (e.g. ㍻); the span runs to the end of its source character.
    return text[origin[start] : origin[end] + 1]


def verify_quote(evidence: ReflectedEvidence, sessions: Sequence[SessionTranscript]) -> VerifiedQuote:
    """Where the quote was said (session, turn) and the user's exact text, or QuoteRejected saying why not."""
    quote = normalize(evidence.quote)
    if len(quote.replace(" ", "")) < MIN_QUOTE_CHARS:
        raise QuoteRejected(QuoteProblem.TOO_SHORT, f"{evidence.quote!r} is shorter than {MIN_QUOTE_CHARS} characters")
    candidates = list(sessions)
    if evidence.session:
        candidates = [s for s in sessions if s.label.casefold() == evidence.session.strip().casefold()]
        if not candidates and len(sessions) == 1:
            candidates = list(sessions)  # a single-session prompt: the label is decoration
        if not candidates:
            raise QuoteRejected(QuoteProblem.UNKNOWN_SESSION, f"no session {evidence.session!r} in this reflection")
    for session in candidates:
        turns = range(len(session.turns)) if evidence.turn is None else [evidence.turn]
        for turn in turns:
            message = session.user_message(turn)
            found = _find(quote, message) if message else None
            if found is not None:
                return VerifiedQuote(session=session, turn=turn, quote=found)
    if evidence.turn is not None:
        elsewhere = any(
            (message := session.user_message(turn)) and _find(quote, message) is not None
            for session in candidates
            for turn in range(len(session.turns))
        )
        if elsewhere:
            raise QuoteRejected(QuoteProblem.NOT_IN_TURN, f"not in the user message of turn {evidence.turn}")
    raise QuoteRejected(QuoteProblem.NOT_IN_TRANSCRIPT, "no user message of the session contains it")
