"""Correction detection: does a user message correct the assistant, and how?

`detect(message, previous_assistant)` returns a `Correction`:

  type        factual (a fact with the right value), preference (how the user wants to be treated or answered),
              process (how the work must be done), negative (a rejection with no replacement), or none;
  confidence  the product's seed rules: a correction with a concrete value (a number, a code, a quoted name) 0.9,
              one that cites its source 0.85, a general correction 0.7, an implicit one (no trigger word, a
              different value for the same thing) 0.6, a bare negation 0.3; a clear stated preference 0.9 when
              it is marked as standing (以后, 统一, always, a form of address), else 0.85; a process 0.85 when the
              user calls it binding (这是规定, policy, must), else 0.7;
  corrected   the corrected statement in the user's words (a clause of the message, unchanged);
  original    what it replaces, quoted from the previous assistant turn when it can be found;
  topic       a short noun phrase: the subject of the corrected statement, the aspect of a preference, the step
              of a process;
  condition   how widely it applies: universal, temporal (这个月, this quarter), context_specific (对 VIP 客户,
              for orders over $500), source_specific (官网上写的是, according to the contract), with
              `condition_detail` the phrase that says so;
  signals     every rule that fired, guards included, so each decision can be explained.

The decision, in order (the first that holds wins):

  1. the user fixes their own typo (我刚才打错了, my typo) -> none;
  2. a preference: a form of address, or a directive about an aspect of the answers (correction_rules.ASPECTS);
  3. a process: an order, a gate, a route or a rule of the work (correction_rules.PROCESS);
  4. an explicit correction: a verdict (错了, wrong) or a contrast (不是X，是Y; X, not Y) -> factual when a
     replacement value is stated, negative when it is not;
  5. an implicit correction: a value that contradicts one in the previous assistant turn (same unit, same subject,
     different value), or a changed fact with a new value (我是铂金会员，上个月就升级了) -> factual;
  6. none.

Each step skips the sentences its guards rule out: questions (a question about a correction is not one),
hypotheticals, reported speech (from the reporting verb on), rhetorical and surprised questions, agreement, praise,
declined offers and words that merely contain a trigger. The message is folded first (text.fold: NFKC, lower case,
traditional -> simplified), so every spelling of a cue matches one entry of correction_rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

from hindsight_insights.governance import correction_rules as rules
from hindsight_insights.governance.quantities import Quantity, anchors, quantities
from hindsight_insights.governance.text import Folded, Span, clauses, fold, has_han, sentences


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


# The seed rules' confidences (see the module docstring).
CONCRETE, SOURCED, GENERAL, IMPLICIT, BARE = 0.9, 0.85, 0.7, 0.6, 0.3
PREFERENCE_STANDING, PREFERENCE_STATED = 0.9, 0.85
PROCESS_BINDING, PROCESS_STATED = 0.85, 0.7


@dataclass(frozen=True)
class Correction:
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


@dataclass
class _Sentence:
    span: Span
    question: bool
    conditional: bool
    reported_at: int  # offset in the sentence where reported speech starts; len(text) when none
    guards: list[str] = field(default_factory=list)
    tail_at: int = -1  # offset of a last clause that asks (…，能周四送吗), when the rest states; -1 when none

    @property
    def stated_end(self) -> int:
        """Where the user's own statement ends: before reported speech and before a trailing question clause."""
        return min(self.reported_at, self.tail_at if self.tail_at >= 0 else len(self.text))

    @property
    def text(self) -> str:
        return self.span.text


@dataclass
class _Turn:
    """The message and the previous assistant turn, folded and split once."""

    message: Folded
    previous: Folded | None
    sentences: list[_Sentence]
    signals: list[str] = field(default_factory=list)

    @property
    def zh(self) -> bool:
        return has_han(self.message.source)

    @cached_property
    def message_quantities(self) -> list[Quantity]:
        return quantities(self.message.text, _clause_spans(self.message))

    @cached_property
    def previous_anchors(self) -> frozenset[str]:
        return anchors(self.previous.text) if self.previous else frozenset()

    @cached_property
    def previous_quantities(self) -> list[Quantity]:
        return quantities(self.previous.text, _clause_spans(self.previous)) if self.previous else []


def detect(message: str, previous_assistant: str | None = None) -> Correction:
    """Whether `message` corrects the assistant's `previous_assistant` turn, and how (see the module docstring)."""
    turn = _Turn(fold(message), fold(previous_assistant) if previous_assistant else None, [])
    turn.sentences = [_sentence(span) for span in sentences(turn.message.text)]
    self_fix = rules.first(rules.SELF_CORRECTION, turn.message.text)
    if self_fix:
        return Correction(CorrectionType.NONE, 0.0, signals=(f"guard:{self_fix[0]}",))
    for step in (_preference, _process, _explicit, _implicit):
        found = step(turn)
        if found is not None:
            return _with_condition(found, turn)
    guards = [f"guard:{guard}" for sentence in turn.sentences for guard in sentence.guards]
    return Correction(CorrectionType.NONE, 0.0, signals=tuple(dict.fromkeys(turn.signals + guards)))


# ------------------------------------------------------------------------------------------------ sentences
def _sentence(span: Span) -> _Sentence:
    text = span.text
    body = text.rstrip(" .。!?")
    question = text.rstrip().endswith("?") or bool(rules.QUESTION_PARTICLE.search(body))
    parts = re.split(r"[,、]", body)
    # 呢 also ends statements (手册上写着呢); a question word in the last clause asks (账号被锁了怎么办).
    question = question or (not text.rstrip().endswith(("。", "!")) and bool(rules.QUESTION_WORD_ZH.search(parts[-1])))
    tail_only = len(parts) > 1 and has_han(parts[-1]) and not rules.QUESTION_EN.search(text)
    if question and tail_only and not any(rules.QUESTION_WORD_ZH.search(part) for part in parts[:-1]):
        # 我是铂金会员啊，上个月就升级了，你们系统没更新吗: only the last clause asks; the others state.
        question = False
    reported = rules.first(rules.REPORTED, text)
    sentence = _Sentence(span, question, bool(rules.CONDITIONAL.search(text)), len(text))
    if reported:
        sentence.reported_at = reported[1].start()
        sentence.guards.append(reported[0])
    if question:
        sentence.guards.append("question")
    elif (tail_only and text.rstrip().endswith("?")) or rules.QUESTION_PARTICLE.search(body):
        sentence.guards.append("tail_question")
        sentence.tail_at = len(body) - len(parts[-1])
    if sentence.conditional:
        sentence.guards.append("conditional")
    for name, pattern in (
        ("rhetorical", rules.RHETORICAL),
        ("approval", rules.APPROVAL),
        ("decline", rules.DECLINE),
        ("new_request", rules.NEW_REQUEST),
        ("doubt", rules.DOUBT),
    ):
        if pattern.search(text):
            sentence.guards.append(name)
    return sentence


def _quote(folded: Folded, start: int, end: int) -> str | None:
    return folded.quote(start, end) or None


def _clause_of(sentence: Span, position: int) -> Span:
    """The clause of `sentence` holding absolute offset `position`."""
    for clause in clauses(sentence):
        if clause.start <= position < clause.end:
            return clause
    return sentence


# ----------------------------------------------------------------------------------------------- preference
def _preference(turn: _Turn) -> Correction | None:
    for sentence in turn.sentences:
        if sentence.reported_at < len(sentence.text) or (sentence.conditional and sentence.question):
            continue
        address = rules.first(rules.ADDRESS, sentence.text)
        if address:
            name, match = address
            return _address(turn, sentence, name, match)
        if sentence.question and (not rules.POLITE_REQUEST.search(sentence.text) or _asks_how(sentence.text)):
            continue  # "how do I export this chart as a PNG?" asks for information; "can you keep it short?" asks
        aspects = [aspect for aspect in rules.ASPECTS if aspect[3].search(sentence.text)]
        directive = rules.DIRECTIVE.search(sentence.text)
        if directive is None and turn.previous is not None:
            directive = rules.COMPLAINT.search(sentence.text)
        if not aspects or not directive:
            continue
        standing = rules.STANDING.search(sentence.text)
        reason = _has_reason(turn, sentence, directive.start())
        inherent = any(aspect[0] in rules.INHERENT_ASPECTS for aspect in aspects)
        marked = rules.MARKED_STANDING.search(sentence.text)
        if not marked and (
            rules.ONE_OFF.search(sentence.text) or (rules.ONE_OFF_ITEM.search(sentence.text) and not reason)
        ):
            turn.signals.append("guard:one_off_request")
            continue
        if not (inherent or standing or reason):
            turn.signals.append("guard:no_sign_of_a_standing_wish")
            continue
        name, topic_zh, topic_en, _ = aspects[0]
        signals = (
            [f"preference:{name}", "directive"] + (["standing"] if standing else []) + (["reason"] if reason else [])
        )
        return Correction(
            CorrectionType.PREFERENCE,
            PREFERENCE_STANDING if marked else PREFERENCE_STATED,
            corrected=_directive_span(turn, sentence),
            original=_original_overlap(turn, sentence.text),
            topic=topic_zh if turn.zh else topic_en,
            signals=tuple(signals),
        )
    return None


def _asks_how(text: str) -> bool:
    return bool(re.search(r"(怎么|如何|在哪|哪里|什么|为什么)", text)) and not re.search(
        r"(能不能|可不可以|可以)", text
    )


def _has_reason(turn: _Turn, directive: _Sentence, at: int) -> bool:
    """A clause of the message other than the directive's speaks about the user: 我都是在手机上看, I'm in Germany."""
    for sentence in turn.sentences:
        for clause in clauses(sentence.span):
            if clause.start <= directive.span.start + at < clause.end:
                continue
            if rules.REASON.search(clause.text):
                return True
    return False


def _directive_span(turn: _Turn, sentence: _Sentence) -> str | None:
    """The clauses of the sentence that carry the wish, without a trailing reason clause."""
    parts = clauses(sentence.span)
    kept = [c for c in parts if any(a[3].search(c.text) for a in rules.ASPECTS) or rules.DIRECTIVE.search(c.text)]
    if not kept:
        return _quote(turn.message, sentence.span.start, sentence.span.end)
    return _quote(turn.message, kept[0].start, kept[-1].end)


def _address(turn: _Turn, sentence: _Sentence, name: str, match: re.Match[str]) -> Correction:
    start = sentence.span.start
    clause = _clause_of(sentence.span, start + match.start())
    original = None
    previous = turn.previous
    if previous is not None:
        # The form of address the assistant used: the old name the user rejects, or a title before the new one.
        old = match.groupdict().get("old")
        after = sentence.text[match.end() : match.end() + 12]
        rejected = (
            old or (re.search(r"(?:别|不要)(?:叫|称呼)?\s*([^,。!?\s]{1,4}?)(了|啦|,|$)", after) or [None, None])[1]
        )
        titles = re.findall(r"(?<![的好位名个])[\u4e00-\u9fff](?:老师|先生|女士|小姐|总|经理)", previous.text)
        for candidate in filter(None, [rejected, *titles]):
            at = previous.text.find(candidate)
            if at >= 0:
                if at > 0 and re.match(r"(先生|女士|小姐|老师|总|经理)$", candidate):
                    at -= (
                        bool(re.match(r"[\u4e00-\u9fff]", previous.text[at - 1]))
                        and previous.text[at - 1] not in "的好位名个"
                    )
                original = _quote(previous, at, previous.text.find(candidate) + len(candidate))
                break
    return Correction(
        CorrectionType.PREFERENCE,
        PREFERENCE_STANDING,
        corrected=_quote(turn.message, clause.start, clause.end),
        original=original,
        topic="称呼" if turn.zh else "form of address",
        signals=(f"preference:{name}",),
    )


# -------------------------------------------------------------------------------------------------- process
def _process(turn: _Turn) -> Correction | None:
    if turn.previous is None and not rules.RULE_LIKE.search(turn.message.text):
        return None  # nothing was done that this corrects, and nothing says it is a rule of the work
    for sentence in turn.sentences:
        if sentence.question or sentence.reported_at < len(sentence.text) or rules.FAVOUR.search(sentence.text):
            continue
        text = sentence.text
        for name, pattern in rules.PROCESS:
            match = pattern.search(text)
            if not match or _about_myself(text, match.start()):
                continue
            if name in rules.NEEDS_OBLIGATION and not rules.OBLIGATION_EN.search(text):
                continue
            return _process_result(turn, sentence, name, match)
        instead = rules.INSTEAD_ZH.search(text)
        if instead and turn.previous is not None and anchors(instead["dont"]) & anchors(turn.previous.text):
            return _process_result(turn, sentence, "instead_of_proposed", instead)
    return None


def _about_myself(text: str, position: int) -> bool:
    """The user describes their own plan (我需要核对一下), not a rule of the work."""
    clause_start = max(text.rfind(",", 0, position), text.rfind(",", 0, position)) + 1
    return bool(re.match(r"\s*(我(?!们)|i\b|i'm|i'll|i will|i'd)", text[clause_start:]))


def _process_result(turn: _Turn, sentence: _Sentence, name: str, match: re.Match[str]) -> Correction:
    groups = match.groupdict()
    start = sentence.span.start
    topic = None
    if groups.get("first") and groups.get("then"):
        first = _step(turn, start, match, "first")
        then = _step(turn, start, match, "then")
        topic = f"{then}前{first}" if turn.zh else f"{first} before {then}"
    parts = [c for c in clauses(sentence.span) if not _only_reason(c.text)] or [sentence.span]
    corrected = _quote(turn.message, parts[0].start, parts[-1].end)
    if topic is None or len(topic) > (40 if turn.zh else 80):
        topic = _short(corrected or "", turn.zh)
    binding = bool(rules.BINDING.search(turn.message.text))
    return Correction(
        CorrectionType.PROCESS,
        PROCESS_BINDING if binding else PROCESS_STATED,
        corrected=corrected,
        original=_original_overlap(turn, sentence.text),
        topic=topic,
        signals=(f"process:{name}",) + (("binding",) if binding else ()),
    )


_STEP_LEAD = re.compile(
    r"^(.*?(要|得|必须|需要|应该|务必|先)|\W*(you|we)? ?(need to|have to|must|should|always|always have to)?\s*)"
)


def _step(turn: _Turn, start: int, match: re.Match[str], group: str) -> str:
    """A step of a process in the user's words, without the obligation before it (要/must/you need to)."""
    begin, end = match.span(group)
    lead = _STEP_LEAD.match(match.group(group))
    if lead and lead.end() < end - begin:
        begin += lead.end()
    return turn.message.quote(start + begin, start + end)


def _only_reason(text: str) -> bool:
    """A clause that only explains (不然…, 这是规定, tickets without a repro get bounced) is not the rule itself."""
    return bool(re.match(r"\s*(不然|否则|因为|这是|光|otherwise|because|since|always\W*$|not the other way)", text))


def _short(text: str, zh: bool) -> str | None:
    if not text:
        return None
    text = text.strip(" ,.;:!?，。；：！？")
    if zh:
        return text[:20]
    return " ".join(text.split()[:6]).strip(" ,.;:!?")


# ------------------------------------------------------------------------------------------------- explicit
@dataclass(frozen=True)
class _Value:
    """A stated right value: the rule that found it, where it is (absolute offsets), and what it replaces."""

    rule: str
    sentence: _Sentence
    start: int
    end: int
    old: str | None  # the replaced words, when the user names them (不是X，是Y)


def _explicit(turn: _Turn) -> Correction | None:
    verdict: tuple[str, _Sentence, int] | None = None
    for sentence in turn.sentences:
        found = _verdict(sentence)
        if found:
            verdict = (found[0], sentence, found[1])
            break
    value = _contrast(turn, verdict is not None)
    if value is None and verdict is not None:
        value = _stated_value(turn, verdict[1], verdict[2])
    if value is None and verdict is None:
        value = _cued_value(turn, rules.CORRECTION_CUE)
        if value is None:
            update = _cued_value(turn, rules.UPDATE_CUE)
            if update is not None:
                return _update(turn, update)
    if value is None:
        return (
            None if verdict is None else Correction(CorrectionType.NEGATIVE, BARE, signals=(f"verdict:{verdict[0]}",))
        )
    signals = ([f"verdict:{verdict[0]}"] if verdict else []) + [f"replacement:{value.rule}"]
    clause = _clause_of(value.sentence.span, value.start)
    corrected = _quote(turn.message, clause.start, clause.end)
    concrete = _concrete(turn.message.text[value.start : value.end], turn.message.source)
    confidence = CONCRETE if concrete else SOURCED if _cites_source(turn) else GENERAL
    original = _quote_previous(turn, value.old) if value.old else _original_value(turn, value)
    return Correction(
        CorrectionType.FACTUAL,
        confidence,
        corrected=corrected,
        original=original or _original_overlap(turn, clause.text),
        topic=_head(turn.message, clause) or _previous_subject(turn, original) or _short(corrected or "", turn.zh),
        signals=tuple(signals + (["concrete_value"] if concrete else [])),
    )


# How far around a verdict word its guards look (a clause, generously): bounded, so long messages stay linear.
_WINDOW = 60


def _verdict(sentence: _Sentence) -> tuple[str, int] | None:
    """A verdict word in the sentence that survives its guards: (rule name, offset)."""
    text = sentence.text
    if sentence.question or sentence.conditional or {"rhetorical", "doubt"} & set(sentence.guards):
        return None
    for name, pattern in rules.VERDICT:
        for match in pattern.finditer(text):
            at = match.start()
            if at >= sentence.stated_end:
                continue
            if name == "no_en" and ({"approval", "decline"} & set(sentence.guards)):
                continue
            if name.endswith("_zh") and (
                rules.VERDICT_ATTRIBUTIVE_ZH.match(text, at + len(match.group()) - 2)
                or rules.VERDICT_ATTRIBUTIVE_ZH.match(text, at)
                or rules.VERDICT_IN_REQUEST.search(text[max(at - _WINDOW, 0) : at])
                or ("错" in match.group() and _self_report(sentence, at))
            ):
                continue
            if name == "wrong_en" and not _wrong_is_verdict(text, at):
                continue
            if "decline" in sentence.guards or ("approval" in sentence.guards and name == "no_en"):
                continue
            return name, at
    return None


def _self_report(sentence: _Sentence, at: int) -> bool:
    """我把密码输错了: the user reports their own slip in the clause before the verdict."""
    clause = _clause_of(sentence.span, sentence.span.start + at)
    return bool(rules.SELF_REPORT_ZH.search(sentence.text[clause.start - sentence.span.start : at]))


def _wrong_is_verdict(text: str, at: int) -> bool:
    """'wrong' judges the answer ("that's wrong", "wrong again", "that's the wrong date", "you sent the wrong file"),
    not a thing the user mentions ("how do I undo a wrong commit", "I deleted the wrong file", "incorrect password")."""
    before, after = text[max(at - _WINDOW, 0) : at], text[at : at + _WINDOW]
    you = re.search(r"\byou(r)?\b", before)
    if re.search(r"\b(that|this|it)('s| is| was) (the |a |an )?$", before):
        return True
    if rules.VERDICT_IN_REQUEST.search(before) and not you:
        return False
    if (re.search(r"\b(a|an|the|some|any)\s+$", before) or rules.WRONG_NOUN.match(after)) and not you:
        return False
    if re.search(r"\b(something|nothing|anything|what)('s| is)?\s*$", before):
        return False
    return not re.search(r"\b(i|my)\b", before) or bool(you)


def _usable(sentence: _Sentence) -> bool:
    """A sentence that can state a right value: not a question, a hypothetical, a doubt or a new request."""
    if sentence.question or sentence.conditional or sentence.reported_at == 0:
        return False
    return not {"rhetorical", "new_request", "doubt"} & set(sentence.guards)


def _contrast(turn: _Turn, has_verdict: bool) -> _Value | None:
    """不是X，是Y / X, not Y, where the assistant said X (or, with no assistant turn, next to a verdict)."""
    previous = turn.previous.text if turn.previous else ""
    for sentence in filter(_usable, turn.sentences):
        if "不" not in sentence.text and "not" not in sentence.text:
            continue  # every contrast needs one (and the scan is costly on long messages)
        for name, pattern in rules.CONTRAST:
            for match in pattern.finditer(sentence.text[: sentence.stated_end]):
                old, new = match["old"].strip(), match["new"].strip()
                if not (_meaningful(new) and _meaningful(old)):
                    continue
                if _mentioned(old, previous) or (has_verdict and not previous):
                    start = sentence.span.start
                    return _Value(name, sentence, start + match.start("new"), start + match.end("new"), old)
    return None


def _update(turn: _Turn, value: _Value) -> Correction:
    """A changed fact stated without a verdict (deadline 改到下周三了): an implicit correction."""
    clause = _clause_of(value.sentence.span, value.start)
    original = _original_value(turn, value) or _original_overlap(turn, clause.text)
    corrected = _quote(turn.message, clause.start, clause.end)
    return Correction(
        CorrectionType.FACTUAL,
        IMPLICIT,
        corrected=corrected,
        original=original,
        topic=_head(turn.message, clause) or _previous_subject(turn, original) or _short(corrected or "", turn.zh),
        signals=(f"implicit:{value.rule}",),
    )


def _cued_value(turn: _Turn, table: list[rules.Rule]) -> _Value | None:
    """A replacement cue on its own (明明是 2023 年, actually it's 60, should be June), stating a value the assistant's
    turn does not contain. A hedged guess (应该是网络问题吧, I think it's…) is not a correction."""
    if turn.previous is None:
        return None
    for sentence in filter(_usable, turn.sentences):
        text = sentence.text[: sentence.stated_end]
        if rules.HEDGE.search(text):
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


def _stated_value(turn: _Turn, verdict_sentence: _Sentence, verdict_at: int) -> _Value | None:
    """The right value stated around a verdict: a replacement cue (应该是, should be), a plain statement (是…, is …)
    or a value the assistant did not give. A concrete value wins over a general one, then the nearest sentence."""
    found: list[tuple[bool, int, _Value]] = []
    verdict_index = turn.sentences.index(verdict_sentence)
    for index, sentence in enumerate(turn.sentences):
        if not _usable(sentence) or abs(index - verdict_index) > 1:
            continue
        text, start = sentence.text[: sentence.stated_end], sentence.span.start
        for table in (rules.CORRECTION_CUE, rules.UPDATE_CUE, rules.COPULA_VALUE):
            for name, pattern in table:
                for match in pattern.finditer(text):
                    new = match["new"].strip()
                    if sentence is verdict_sentence and match.start("new") <= verdict_at < match.end("new"):
                        continue  # the verdict itself ("you're looking at our old plan") is not the value
                    if not _meaningful(new) or rules.VERDICT_IN_REQUEST.match(new) or rules.GENERIC_VALUE.search(new):
                        continue
                    concrete = _concrete(new, turn.message.source)
                    if table is rules.COPULA_VALUE and not (concrete or _names_something(new, turn)):
                        continue  # "no, it's a different thing" states no value
                    value = _Value(name, sentence, start + match.start("new"), start + match.end("new"), None)
                    found.append((concrete, abs(index - verdict_index), value))
        quantity = _new_quantity(turn, sentence)
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
    if not value or rules.DEMONSTRATIVE.match(value):
        return False
    if first_verdict := rules.first(rules.VERDICT, value):
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


def _quote_previous(turn: _Turn, words: str) -> str | None:
    """The clause of the assistant's turn that holds `words`."""
    previous = turn.previous
    if previous is None:
        return None
    words = words.strip(" \"'“”‘’「」")
    best: tuple[int, Span] | None = None
    for sentence in sentences(previous.text):
        for clause in clauses(sentence):
            score = 10 if words and words in clause.text else len(anchors(words) & anchors(clause.text))
            if score and (best is None or score > best[0]):
                best = (score, clause)
    return _quote(previous, best[1].start, best[1].end) if best else None


def _original_overlap(turn: _Turn, text: str) -> str | None:
    """The sentence of the assistant's turn sharing the most content words with `text`, if any."""
    previous = turn.previous
    if previous is None:
        return None
    mine = anchors(text)
    best: tuple[int, Span] | None = None
    for sentence in sentences(previous.text):
        score = len(mine & anchors(sentence.text))
        if score and (best is None or score > best[0]):
            best = (score, sentence)
    return _quote(previous, best[1].start, best[1].end) if best else None


def _concrete(value: str, source: str) -> bool:
    """A value someone can check: a number, a code, a quoted or capitalised name."""
    if re.search(r"\d|[一二两三四五六七八九十百千万]\s*[个年月天周级元块次人号楼点]", value):
        return True
    if re.search(r"[\"“”「」‘’']", value):
        return True
    words = value.split()
    return any(word[:1].isalpha() and word.lower() in source.lower() and _capitalised(word, source) for word in words)


def _names_something(value: str, turn: _Turn) -> bool:
    """A short value the assistant did not say: 售后组, 铂金会员, the Team plan. Long clauses state reasons."""
    value = value.strip(" \"'“”‘’「」")
    short = len(value) <= 10 if has_han(value) else len(value.split()) <= 5
    previous = turn.previous.text if turn.previous else ""
    return short and value not in previous


def _capitalised(word: str, source: str) -> bool:
    at = source.lower().find(word.lower())
    return at >= 0 and source[at].isupper()


def _cites_source(turn: _Turn) -> bool:
    return rules.first(rules.SOURCE, turn.message.text) is not None


_LEADING = re.compile(
    r"^(\W|no\b|nope\b|actually\b|错了|搞错了|不对|其实|我们|我|你们|你|他们|这款|这个(?!月|周|星期|季度|礼拜)|那个|"
    r"那间|这间|该|本|the\b|our\b|my\b|your\b|their\b|it\b|they\b|we\b|we're\b|this\b|that\b|is\b|are\b|was\b|"
    r"now\b|现在|已经|早就)+"
)
_TRAILING = re.compile(
    r"(\W|是|为|有|就|只能|才|改到|改成|换成|现在|已经|了|的|at|to|on|in|for|by|is|are|was|were|now|moved|changed|"
    r"about|around|of|from|starts|start|costs?|takes?)+$"
)


def _head(folded: Folded, clause: Span, at: int | None = None) -> str | None:
    """What a statement is about: the words before its copula (or before its value, at absolute offset `at`),
    without fillers, pronouns, articles and trailing function words; None when nothing short is left."""
    text = clause.text
    limit = len(text) if at is None else at - clause.start
    copula = re.search(r"(不是|是|为)|\b(is|are|was|were|'s|'re)\b", text[:limit])
    head = text[: copula.start() if copula else limit]
    core = _TRAILING.sub("", _LEADING.sub("", head.strip()))
    if core and len(core) <= 24 and re.search(r"\w", core):
        offset = clause.start + head.find(core)
        return folded.quote(offset, offset + len(core)) or None
    return None


def _subject(turn: _Turn, clause: Span, value: Quantity | None = None) -> str | None:
    """The subject before the copula or the value; else the noun right after the value (一级能效 -> 能效)."""
    head = _head(turn.message, clause, value.start if value else None)
    if head:
        return head
    if value is not None:
        after = re.match(
            r"\s*([\u4e00-\u9fff]{1,4}?)(的|了|啊|呢|$)|\s*([a-z][a-z-]+)", turn.message.text[value.end : clause.end]
        )
        if after:
            start = value.end + after.start(1 if after.group(1) else 3)
            end = value.end + after.end(1 if after.group(1) else 3)
            return turn.message.quote(start, end) or None
    return _short(turn.message.quote(clause.start, clause.end), turn.zh)


def _previous_subject(turn: _Turn, original: str | None) -> str | None:
    """The subject of the assistant's replaced statement, when the user's own clause has none (错了，是30天内)."""
    if not original:
        return None
    folded = fold(original)
    return _head(folded, Span(folded.text, 0), _first_value_at(folded.text))


def _first_value_at(text: str) -> int | None:
    found = quantities(text, [(0, len(text))])
    return found[0].start if found else None


def _original_value(turn: _Turn, value: _Value) -> str | None:
    """The assistant's clause holding a value of the same kind as the user's, but a different one."""
    if turn.previous is None:
        return None
    theirs = turn.previous_quantities
    mine = [q for q in turn.message_quantities if value.start <= q.start < value.end]
    for quantity in mine:
        for other in theirs:
            if quantity.compatible(other) and not quantity.same_value(other):
                return _quote_previous_at(turn, other)
    return None


# ------------------------------------------------------------------------------------------------- implicit
def _implicit(turn: _Turn) -> Correction | None:
    previous = turn.previous
    if previous is None or rules.ADDS_INFORMATION.search(turn.message.text):
        return None
    for sentence in turn.sentences:
        text = sentence.text
        if sentence.question or sentence.conditional or sentence.reported_at == 0:
            continue
        if rules.REQUEST.search(text) or {"approval", "decline", "new_request", "doubt"} & set(sentence.guards):
            continue
        contradiction = _contradiction(turn, sentence)
        if contradiction is not None:
            mine, theirs = contradiction
            clause = _clause_of(sentence.span, mine.start)
            return Correction(
                CorrectionType.FACTUAL,
                IMPLICIT,
                corrected=_quote(turn.message, clause.start, clause.end),
                original=_quote_previous_at(turn, theirs),
                topic=_subject(turn, clause, mine),
                signals=("implicit:different_value", f"unit:{mine.unit or 'bare'}"),
            )
        changed = _changed_fact(turn, sentence)
        if changed is not None:
            return changed
    return None


def _clause_spans(folded: Folded) -> list[tuple[int, int]]:
    return [(c.start, c.end) for s in sentences(folded.text) for c in clauses(s)]


def _contradiction(turn: _Turn, sentence: _Sentence) -> tuple[Quantity, Quantity] | None:
    """A value of this sentence and a different value of the same kind and subject in the assistant's turn."""
    assert turn.previous is not None
    end = sentence.span.start + sentence.stated_end  # reported speech and a trailing question state nothing
    mine = [q for q in turn.message_quantities if sentence.span.start <= q.start < end]
    theirs = turn.previous_quantities
    for quantity in mine:
        same_kind = [q for q in theirs if quantity.compatible(q)]
        if not same_kind or any(quantity.same_value(q) for q in same_kind):
            continue  # nothing to contradict, or the user repeats the assistant's value
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
    match = rules.PERIOD.search(text)
    return match.group() if match else None


def _other_period(turn: _Turn, mine: Quantity, theirs: Quantity) -> bool:
    """上个季度做了 80 万 against 这个季度目标 100 万: values of different periods do not contradict each other. The
    value itself may be a period (2023 年 against 2022 年), so only the words around it count."""
    assert turn.previous is not None
    my_period, their_period = _period(mine.context(turn.message.text)), _period(theirs.context(turn.previous.text))
    return my_period is not None and their_period is not None and my_period != their_period


def _new_quantity(turn: _Turn, sentence: _Sentence) -> Quantity | None:
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


def _quote_previous_at(turn: _Turn, quantity: Quantity) -> str | None:
    assert turn.previous is not None
    for sentence in sentences(turn.previous.text):
        if sentence.start <= quantity.start < sentence.end:
            clause = _clause_of(sentence, quantity.start)
            return _quote(turn.previous, clause.start, clause.end)
    return None


def _changed_fact(turn: _Turn, sentence: _Sentence) -> Correction | None:
    """我是铂金会员啊，上个月就升级了: a statement about something the assistant mentioned, a sign that it changed,
    and a content word the assistant did not use."""
    assert turn.previous is not None
    text = sentence.text
    update = rules.UPDATE.search(text)
    if not update:
        return None
    previous_words = turn.previous_anchors
    for clause in clauses(sentence.span):
        if clause.start >= sentence.span.start + sentence.stated_end or not rules.STATEMENT.search(clause.text):
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
                corrected=_quote(turn.message, clause.start, clause.end),
                original=_original_overlap(turn, clause.text),
                topic=turn.message.quote(at, at + len(last)),
                signals=("implicit:changed_fact", f"update:{update.group()}"),
            )
    return None


# ------------------------------------------------------------------------------------------------ condition
def _with_condition(found: Correction, turn: _Turn) -> Correction:
    text = turn.message.text
    for condition, table in (
        (Condition.TEMPORAL, rules.TEMPORAL),
        (Condition.CONTEXT_SPECIFIC, rules.CONTEXT),
        (Condition.SOURCE_SPECIFIC, rules.SOURCE),
    ):
        hit = rules.first(table, text)
        if hit:
            name, match = hit
            detail = turn.message.quote(*match.span())
            return Correction(
                found.type,
                found.confidence,
                found.corrected,
                found.original,
                found.topic,
                condition,
                detail or None,
                (*found.signals, f"condition:{name}"),
            )
    return found
