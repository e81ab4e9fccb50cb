"""Explicit corrections: a verdict (错了, wrong) or a contrast (不是X，是Y; X, not Y), factual when the right value
is stated and negative when it is not; a correction cue on its own (明明是, actually it's) or an update cue (改到,
moved to). The fourth step of the correction detector (corrections.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hindsight_insights.detection import correction_patterns as patterns
from hindsight_insights.detection.correction_implicit import new_quantity
from hindsight_insights.detection.correction_turn import (
    ReadMessage,
    Sentence,
    clause_of,
    head,
    original_overlap,
    previous_subject,
    quote,
    quote_previous,
    quote_previous_at,
    short,
)
from hindsight_insights.detection.correction_types import (
    BARE,
    CONCRETE,
    GENERAL,
    IMPLICIT,
    SOURCED,
    Correction,
    CorrectionType,
)
from hindsight_insights.detection.quantities import anchors
from hindsight_insights.detection.text import has_han


# ------------------------------------------------------------------------------------------------- explicit
@dataclass(frozen=True)
class _Value:
    """A stated right value: the rule that found it, where it is (absolute offsets), and what it replaces."""

    rule: str
    sentence: Sentence
    start: int
    end: int
    old: str | None  # the replaced words, when the user names them (不是X，是Y)


def explicit(turn: ReadMessage) -> Correction | None:
    verdict: tuple[str, Sentence, int] | None = None
    # A "no" that opens the answer to an offer closing the assistant's turn ("Want me to do the Spanish side too?" "No,
    # leave the Spanish") declines it: all 13 training messages so are none.
    for sentence in turn.sentences:
        found = _verdict(sentence, turn.offered)
        if found:
            verdict = (found[0], sentence, found[1])
            break
    if verdict is not None and verdict[0].startswith("off_topic"):
        # (an answer that missed the question: what follows is the question again, no right value)
        return Correction(CorrectionType.NEGATIVE, BARE, signals=(f"verdict:{verdict[0]}",))
    value = _contrast(turn, verdict is not None)
    # (the advice followed and failed, or what was described is not there: a rejection; its numbers say what was done
    # or what is there, no right value; read only when nothing else was found)
    rejection = value is None and verdict is None and (turn.reports_failed_advice or turn.denies_what_was_described)
    if rejection:
        return Correction(CorrectionType.NEGATIVE, BARE, signals=(f"verdict:{rejection}",))
    if value is None and verdict is not None:
        value = _stated_value(turn, verdict[1], verdict[2])
    if value is None and verdict is None:
        value = _cued_value(turn, patterns.CORRECTION_CUE)
        if value is None:
            update = _cued_value(turn, patterns.UPDATE_CUE)
            if update is not None:
                return _update(turn, update)
    if value is None:
        return (
            None if verdict is None else Correction(CorrectionType.NEGATIVE, BARE, signals=(f"verdict:{verdict[0]}",))
        )
    signals = ([f"verdict:{verdict[0]}"] if verdict else []) + [f"replacement:{value.rule}"]
    clause = clause_of(value.sentence.span, value.start)
    corrected = quote(turn.message, _first_value_clause(turn, value.sentence, clause.start), clause.end)
    concrete = _concrete(turn.message.text[value.start : value.end], turn.message.source)
    confidence = CONCRETE if concrete else SOURCED if _cites_source(turn) else GENERAL
    original = quote_previous(turn, value.old) if value.old else _original_value(turn, value)
    return Correction(
        CorrectionType.FACTUAL,
        confidence,
        corrected=corrected,
        original=original or original_overlap(turn, clause.text),
        topic=head(turn.message, clause) or previous_subject(turn, original) or short(corrected or "", turn.zh),
        signals=tuple(signals + (["concrete_value"] if concrete else [])),
    )


def _first_value_clause(turn: ReadMessage, sentence: Sentence, start: int) -> int:
    """Where the quote of a right value starts: its clause, or an earlier clause of the same sentence that puts
    another of the assistant's values right ("the withdrawal deadline is 5pm on the Friday of week 10, and a
    withdrawal after the census shows as W, not F": both are the correction)."""
    first = new_quantity(turn, sentence)  # (the sentence's first value that replaces one of the assistant's)
    return clause_of(sentence.span, first.start).start if first is not None and first.start < start else start


# How far around a verdict word its guards look (a clause, generously): bounded, so long messages stay linear.
_WINDOW = 60


def _verdict(sentence: Sentence, offered: bool) -> tuple[str, int] | None:
    """A verdict word in the sentence that survives its guards: (rule name, offset); a "no" not after an offer
    (`offered`: the assistant's turn closed with one)."""
    text = sentence.text
    if sentence.question or sentence.conditional or {"rhetorical", "doubt"} & set(sentence.guards):
        return None
    for name, pattern in patterns.VERDICT:
        for match in pattern.finditer(text):
            at = match.start()
            if at >= sentence.stated_end:
                continue
            if name == "no_en" and (offered or {"approval", "decline"} & set(sentence.guards)):
                continue
            if name.endswith("_zh") and (
                patterns.VERDICT_ATTRIBUTIVE_ZH.match(text, at + len(match.group()) - 2)
                or patterns.VERDICT_ATTRIBUTIVE_ZH.match(text, at)
                or patterns.VERDICT_IN_REQUEST.search(text[max(at - _WINDOW, 0) : at])
                or ("错" in match.group() and _self_report(sentence, at))
            ):
                continue
            if name == "wrong_en" and not _wrong_is_verdict(text, at):
                continue
            if "decline" in sentence.guards or ("approval" in sentence.guards and name == "no_en"):
                continue
            return name, at
    return None


def _self_report(sentence: Sentence, at: int) -> bool:
    """我把密码输错了: the user reports their own slip in the clause before the verdict."""
    clause = clause_of(sentence.span, sentence.span.start + at)
    return bool(patterns.SELF_REPORT_ZH.search(sentence.text[clause.start - sentence.span.start : at]))


def _wrong_is_verdict(text: str, at: int) -> bool:
    """'wrong' judges the answer ("that's wrong", "wrong again", "that's the wrong date", "you sent the wrong file"),
    not a thing the user mentions ("how do I undo a wrong commit", "I deleted the wrong file", "incorrect password")."""
    before, after = text[max(at - _WINDOW, 0) : at], text[at : at + _WINDOW]
    you = re.search(r"\byou(r)?\b", before)
    if re.search(r"\b(that|this|it)('s| is| was) (the |a |an )?$", before):
        return True
    if patterns.VERDICT_IN_REQUEST.search(before) and not you:
        return False
    if (re.search(r"\b(a|an|the|some|any)\s+$", before) or patterns.WRONG_NOUN.match(after)) and not you:
        return False
    if re.search(r"\b(something|nothing|anything|what)('s| is)?\s*$", before):
        return False
    return not re.search(r"\b(i|my)\b", before) or bool(you)


def _usable(sentence: Sentence) -> bool:
    """A sentence that can state a right value: not a question, a hypothetical, a doubt, a new request or a follow-up
    that carries the task on ("再帮我给小李发个微信，说明天的会改到 10 点": the new task's content)."""
    if sentence.question or sentence.conditional or sentence.reported_at == 0:
        return False
    return not {"rhetorical", "new_request", "doubt", "continues_the_task"} & set(sentence.guards)


def _contrast(turn: ReadMessage, has_verdict: bool) -> _Value | None:
    """不是X，是Y / X, not Y, where the assistant said X (or, with no assistant turn, next to a verdict)."""
    previous = turn.previous.text if turn.previous else ""
    for sentence in filter(_usable, turn.sentences):
        if "不" not in sentence.text and "not" not in sentence.text:
            continue  # every contrast needs one (and the scan is costly on long messages)
        for name, pattern in patterns.CONTRAST:
            for match in pattern.finditer(sentence.text[: sentence.stated_end]):
                old, new = match["old"].strip(), match["new"].strip()
                if not (_meaningful(new) and _meaningful(old)):
                    continue
                if _mentioned(old, previous) or (has_verdict and not previous):
                    start = sentence.span.start
                    return _Value(name, sentence, start + match.start("new"), start + match.end("new"), old)
    return None


def _update(turn: ReadMessage, value: _Value) -> Correction:
    """A changed fact stated without a verdict (deadline 改到下周三了): an implicit correction."""
    clause = clause_of(value.sentence.span, value.start)
    original = _original_value(turn, value) or original_overlap(turn, clause.text)
    corrected = quote(turn.message, clause.start, clause.end)
    return Correction(
        CorrectionType.FACTUAL,
        IMPLICIT,
        corrected=corrected,
        original=original,
        topic=head(turn.message, clause) or previous_subject(turn, original) or short(corrected or "", turn.zh),
        signals=(f"implicit:{value.rule}",),
    )


def _cued_value(turn: ReadMessage, table: list[patterns.Cue]) -> _Value | None:
    """A replacement cue on its own (明明是 2023 年, actually it's 60, should be June), stating a value the assistant's
    turn does not contain. A hedged guess (应该是网络问题吧, I think it's…) is not a correction."""
    if turn.previous is None:
        return None
    for sentence in filter(_usable, turn.sentences):
        text = sentence.text[: sentence.stated_end]
        if patterns.HEDGE.search(text):
            continue
        for name, pattern in table:
            for match in pattern.finditer(text):
                new = match["new"].strip()
                if _meaningful(new) and not _mentioned_exactly(new, turn.previous.text):
                    start = sentence.span.start
                    return _Value(name, sentence, start + match.start("new"), start + match.end("new"), None)
    return None


def _mentioned_exactly(words: str, previous: str) -> bool:
    return words.strip(" \"'“”‘’「」") in previous


def _stated_value(turn: ReadMessage, verdict_sentence: Sentence, verdict_at: int) -> _Value | None:
    """The right value stated around a verdict: a replacement cue (应该是, should be), a plain statement (是…, is …)
    or a value the assistant did not give. A concrete value wins over a general one, then the nearest sentence."""
    found: list[tuple[bool, int, _Value]] = []
    verdict_index = turn.sentences.index(verdict_sentence)
    for index, sentence in enumerate(turn.sentences):
        if not _usable(sentence) or abs(index - verdict_index) > 1:
            continue
        text, start = sentence.text[: sentence.stated_end], sentence.span.start
        for table in (patterns.CORRECTION_CUE, patterns.UPDATE_CUE, patterns.COPULA_VALUE):
            for name, pattern in table:
                for match in pattern.finditer(text):
                    new = match["new"].strip()
                    if sentence is verdict_sentence and match.start("new") <= verdict_at < match.end("new"):
                        continue  # the verdict itself ("you're looking at our old plan") is not the value
                    if (
                        not _meaningful(new)
                        or patterns.VERDICT_IN_REQUEST.match(new)
                        or patterns.GENERIC_VALUE.search(new)
                    ):
                        continue
                    concrete = _concrete(new, turn.message.source)
                    if table is patterns.COPULA_VALUE and not (concrete or _names_something(new, turn)):
                        continue  # "no, it's a different thing" states no value
                    value = _Value(name, sentence, start + match.start("new"), start + match.end("new"), None)
                    found.append((concrete, abs(index - verdict_index), value))
        quantity = new_quantity(turn, sentence)
        if quantity is not None:
            found.append(
                (True, abs(index - verdict_index), _Value("new_value", sentence, quantity.start, quantity.end, None))
            )
    if not found:
        return None
    found.sort(key=lambda item: (not item[0], item[1]))
    return found[0][2]


def _meaningful(value: str) -> bool:
    value = value.strip(" \"'“”‘’「」")
    if not value or patterns.DEMONSTRATIVE.match(value):
        return False
    if first_verdict := patterns.first(patterns.VERDICT, value):
        return first_verdict[1].start() > 0
    return True


def _mentioned(words: str, previous: str) -> bool:
    """Whether the assistant's turn said `words` (or shares a content word or value with them)."""
    words = words.strip(" \"'“”‘’「」")
    if not previous or not words:
        return False
    if words in previous:
        return True
    if anchors(words) & anchors(previous):
        return True
    numbers = re.findall(r"\d+(?:\.\d+)?", words)
    return bool(numbers) and all(re.search(rf"(?<![\d.]){re.escape(n)}(?![\d])", previous) for n in numbers)


def _concrete(value: str, source: str) -> bool:
    """A value someone can check: a number, a code, a quoted or capitalised name."""
    if re.search(r"\d|[一二两三四五六七八九十百千万]\s*[个年月天周级元块次人号楼点]", value):
        return True
    if re.search(r"[\"“”「」‘’']", value):
        return True
    words = value.split()
    return any(word[:1].isalpha() and word.lower() in source.lower() and _capitalised(word, source) for word in words)


def _names_something(value: str, turn: ReadMessage) -> bool:
    """A short value the assistant did not say: 售后组, 铂金会员, the Team plan. Long clauses state reasons."""
    value = value.strip(" \"'“”‘’「」")
    short = len(value) <= 10 if has_han(value) else len(value.split()) <= 5
    previous = turn.previous.text if turn.previous else ""
    return short and value not in previous


def _capitalised(word: str, source: str) -> bool:
    at = source.lower().find(word.lower())
    return at >= 0 and source[at].isupper()


def _cites_source(turn: ReadMessage) -> bool:
    return patterns.first(patterns.SOURCE, turn.message.text) is not None


def _original_value(turn: ReadMessage, value: _Value) -> str | None:
    """The assistant's clause holding a value of the same kind as the user's, but a different one."""
    if turn.previous is None:
        return None
    theirs = turn.previous_quantities
    mine = [q for q in turn.message_quantities if value.start <= q.start < value.end]
    for quantity in mine:
        for other in theirs:
            if quantity.compatible(other) and not quantity.same_value(other):
                return quote_previous_at(turn, other)
    return None
