"""Evidence verification: verbatim in a USER message (of the turn, when given), after NFKC and whitespace only."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from hindsight_insights.models import Turn
from hindsight_insights.reflection.output import ReflectedEvidence
from hindsight_insights.reflection.transcript import SessionTranscript
from hindsight_insights.reflection.verify import QuoteProblem, QuoteRejected, normalize, verify_quote


def session(label: str, session_id: str, *messages: tuple[str, str]) -> SessionTranscript:
    turns = [
        Turn(
            id=uuid.uuid4(),
            session_id=session_id,
            user_id="u",
            scene="general",
            turn_index=index,
            sequence=index,
            user_message=user,
            assistant_message=assistant,
            created_at=datetime(2026, 11, 30, tzinfo=UTC),
        )
        for index, (user, assistant) in enumerate(messages)
    ]
    return SessionTranscript(label=label, session_id=session_id, user_id="u", turns=turns)


ONE = session(
    "S1",
    "conv-1",
    ("Compare Postmark and SendGrid.", "| | Postmark | SendGrid |"),
    ("Tables come out as a mess of pipes in Slack.\nNo tables for me please,   just bullets.", "Understood."),
    ("叫我老王就行，ＡＰＩ 用 v2", "好的老王。"),
)


def check(quote: str, turn: int | None = None, sessions: list[SessionTranscript] | None = None) -> str:
    found = verify_quote(ReflectedEvidence(quote=quote, turn=turn), sessions or [ONE])
    return f"{found.session.session_id}#{found.turn}: {found.quote}"


def rejected(quote: str, turn: int | None = None, session_label: str | None = None) -> QuoteProblem:
    with pytest.raises(QuoteRejected) as caught:
        verify_quote(ReflectedEvidence(quote=quote, turn=turn, session=session_label), [ONE])
    return caught.value.problem


def test_a_verbatim_quote_is_found_and_returned_as_the_user_wrote_it() -> None:
    assert check("No tables for me please, just bullets.", 1) == "conv-1#1: No tables for me please,   just bullets."
    assert check("mess of pipes in Slack. No tables") == "conv-1#1: mess of pipes in Slack.\nNo tables"
    assert check("API 用 v2") == "conv-1#2: ＡＰＩ 用 v2"  # NFKC: full-width letters are the ASCII ones


def test_anything_but_width_and_whitespace_must_match() -> None:
    assert rejected("no tables for me please") is QuoteProblem.NOT_IN_TRANSCRIPT  # case
    assert rejected("No tables for me, just bullets.") is QuoteProblem.NOT_IN_TRANSCRIPT  # a paraphrase
    assert rejected("叫我老王就行,API用v2") is QuoteProblem.NOT_IN_TRANSCRIPT  # punctuation and spaces inside words
    assert normalize("  叫我 \n 老王  ") == "叫我 老王"


def test_the_assistants_words_are_not_evidence() -> None:
    assert rejected("| Postmark | SendGrid |") is QuoteProblem.NOT_IN_TRANSCRIPT
    assert rejected("好的老王。") is QuoteProblem.NOT_IN_TRANSCRIPT


def test_a_given_turn_must_hold_the_quote() -> None:
    assert rejected("No tables for me please", turn=0) is QuoteProblem.NOT_IN_TURN
    assert rejected("No tables for me please", turn=7) is QuoteProblem.NOT_IN_TURN


def test_a_quote_too_short_to_prove_anything() -> None:
    assert rejected("叫我") is QuoteProblem.TOO_SHORT
    assert rejected(" ok ") is QuoteProblem.TOO_SHORT


def test_sessions_by_label_in_a_nightly_run() -> None:
    monday = session("S1", "mon", ("EUR please", "€44,300."))
    tuesday = session("S2", "tue", ("again: EUR please", "€18.40."))
    both = [monday, tuesday]
    assert verify_quote(ReflectedEvidence(quote="EUR please", session="S2"), both).session.session_id == "tue"
    assert verify_quote(ReflectedEvidence(quote="EUR please"), both).session.session_id == "mon"  # the first
    with pytest.raises(QuoteRejected) as caught:
        verify_quote(ReflectedEvidence(quote="EUR please", session="S9"), both)
    assert caught.value.problem is QuoteProblem.UNKNOWN_SESSION
    # With one session shown, a label the model got wrong does not matter: there is only one place to look.
    assert verify_quote(ReflectedEvidence(quote="EUR please", session="S3"), [monday]).session.session_id == "mon"
