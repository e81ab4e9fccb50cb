"""Implicit corrections: a value that contradicts the assistant's (same kind, same subject, a different value)
or a changed fact with a new word (我是铂金会员，上个月就升级了). The fifth step of the correction detector."""

from __future__ import annotations

from hindsight_insights.detection import correction_patterns as patterns
from hindsight_insights.detection.correction_turn import (
    ReadMessage,
    Sentence,
    clause_of,
    original_overlap,
    quote,
    quote_previous_at,
    subject,
)
from hindsight_insights.detection.correction_types import (
    IMPLICIT,
    Correction,
    CorrectionType,
)
from hindsight_insights.detection.quantities import Quantity, anchors, within_a_range
from hindsight_insights.detection.text import clauses

# ------------------------------------------------------------------------------------------------- implicit
# The guards of a sentence whose values are no contradiction: an approval, a declined offer, a new request, a doubt, a
# follow-up carrying the task on to another thing ("now the same for the side table, that one is 60 cm").
_STATES_NO_VALUE = frozenset({"approval", "decline", "new_request", "doubt", "continues_the_task"})


def implicit(turn: ReadMessage) -> Correction | None:
    previous = turn.previous
    # (a reply that only repeats the assistant's words, a choice among its options, contradicts none of them; nor
    # does the next item of the task, "Great. First real one: Rosa, Saturday 9 Jan", whose values are its own)
    message = turn.message.text
    if (
        previous is None
        or patterns.ADDS_INFORMATION.search(message)
        or patterns.NEXT_ITEM.search(message)
        or turn.only_repeats_the_assistant
    ):
        return None
    for sentence in turn.sentences:
        text = sentence.text
        if sentence.question or sentence.conditional or sentence.reported_at == 0:
            continue
        if patterns.REQUEST.search(text) or _STATES_NO_VALUE & set(sentence.guards):
            continue
        contradiction = _contradiction(turn, sentence)
        if contradiction is not None:
            mine, theirs = contradiction
            clause = clause_of(sentence.span, mine.start)
            # "运费现在 15 元", "the limit is 100 now": the user says the fact changed, not only another value.
            update = patterns.UPDATE.search(text)
            return Correction(
                CorrectionType.FACTUAL,
                IMPLICIT,
                corrected=quote(turn.message, clause.start, clause.end),
                original=quote_previous_at(turn, theirs),
                topic=subject(turn, clause, mine),
                signals=("implicit:different_value", f"unit:{mine.unit or 'bare'}")
                + ((f"update:{update.group()}",) if update else ()),
            )
        changed = _changed_fact(turn, sentence)
        if changed is not None:
            return changed
    return None


def _contradiction(turn: ReadMessage, sentence: Sentence) -> tuple[Quantity, Quantity] | None:
    """A value of this sentence and a different value of the same kind and subject in the assistant's turn."""
    assert turn.previous is not None
    end = sentence.span.start + sentence.stated_end  # reported speech and a trailing question state nothing
    mine = [q for q in turn.message_quantities if sentence.span.start <= q.start < end]
    theirs = turn.previous_quantities
    for quantity in mine:
        same_kind = [q for q in theirs if quantity.compatible(q)]
        if not same_kind or any(quantity.same_value(q) for q in same_kind):
            continue  # nothing to contradict, or the user repeats the assistant's value
        if within_a_range(turn.previous.text, quantity, theirs):
            continue  # 18 ppm against "10–20 ppm": inside the range the assistant gave, it agrees
        for other in same_kind:
            if _other_period(turn, quantity, other):
                continue
            unique = quantity.unit in _SLOT_UNITS and sum(q.unit == quantity.unit for q in theirs) == 1
            if quantity.anchors & other.anchors or unique:
                return quantity, other
    return None


# Units of a value that fills one slot of what the assistant said (the weekday, the time, the room's capacity): a
# different one contradicts it even without a shared word. Money and counts are not among them: a new price or amount
# is as often about another thing (我只能出 199, 我还花了 3000).
_SLOT_UNITS = frozenset({"weekday", "clock", "date", "level", "floor", "building", "person", "seat", "code"})


def _period(text: str) -> str | None:
    match = patterns.PERIOD.search(text)
    return match.group() if match else None


def _other_period(turn: ReadMessage, mine: Quantity, theirs: Quantity) -> bool:
    """上个季度做了 80 万 against 这个季度目标 100 万: values of different periods do not contradict each other. The
    value itself may be a period (2023 年 against 2022 年), so only the words around it count."""
    assert turn.previous is not None
    my_period, their_period = _period(mine.context(turn.message.text)), _period(theirs.context(turn.previous.text))
    return my_period is not None and their_period is not None and my_period != their_period


def new_quantity(turn: ReadMessage, sentence: Sentence) -> Quantity | None:
    """A value in the sentence that replaces one of the assistant's: the same kind, a value the assistant did not
    give. A number of another kind ("错了，你看第 3 行") points at something; it replaces nothing."""
    if turn.previous is None:
        return None
    theirs = turn.previous_quantities
    end = sentence.span.start + sentence.stated_end
    for quantity in turn.message_quantities:
        same_kind = [q for q in theirs if quantity.compatible(q)]
        if sentence.span.start <= quantity.start < end and same_kind and not any(map(quantity.same_value, same_kind)):
            return quantity
    return None


def _changed_fact(turn: ReadMessage, sentence: Sentence) -> Correction | None:
    """我是铂金会员啊，上个月就升级了: a statement about something the assistant mentioned, a sign that it changed,
    and a content word the assistant did not use."""
    assert turn.previous is not None
    text = sentence.text
    update = patterns.UPDATE.search(text)
    if not update:
        return None
    # (the assistant's statements only: what it merely asked about, "Where's the rank?", it said nothing of that the
    # answer could change)
    previous_words = turn.previous_stated_anchors
    for clause in clauses(sentence.span):
        if clause.start >= sentence.span.start + sentence.stated_end or not patterns.STATEMENT.search(clause.text):
            continue
        words = anchors(clause.text)
        shared, new = words & previous_words, words - previous_words
        if shared and new:
            # The subject is the word both turns use (会员 in 铂金会员 / 黄金会员); the last one is the head noun.
            last = max(shared, key=lambda word: clause.text.rfind(word))
            at = clause.start + clause.text.rfind(last)
            return Correction(
                CorrectionType.FACTUAL,
                IMPLICIT,
                corrected=quote(turn.message, clause.start, clause.end),
                original=original_overlap(turn, clause.text),
                topic=turn.message.quote(at, at + len(last)),
                signals=("implicit:changed_fact", f"update:{update.group()}"),
            )
    return None
