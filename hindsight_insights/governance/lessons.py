"""From a detected correction to the insight it teaches, as a write command whose provenance carries the detector's
finding: the scope it asks for is in scope.py's table. A session-only insight (a weak factual or a
negative correction) lasts a day; a negative correction also flags the turn, so the worker reflects on the session
(its anomaly trigger). A negative one the learned detector is unsure of writes no rule (_unsure_rejection).

A correction for a named period ("这周运费 20 元", this month) also expires when the period ends
(detection/periods.py); it has a slot of its own, so the topic's general rule holds beside it and after it.

The rule's wording is a template per language (prompts/corrections/), filled with the user's own words; the
evidence is the user's message, quoted verbatim (after redaction, like the stored turn).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from hindsight_insights.commands import Provenance, WriteCommand
from hindsight_insights.config import Settings
from hindsight_insights.detection.correction_patterns import DIRECTIVE, marked_standing
from hindsight_insights.detection.correction_turn import ReadMessage, Sentence, read, short
from hindsight_insights.detection.correction_types import Correction, CorrectionType
from hindsight_insights.detection.corrections import NUMBER, detect
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.detection.own_business import WORKS_ALONE_SIGNAL
from hindsight_insights.detection.periods import period_end
from hindsight_insights.detection.text import clauses, fold, has_han, paragraphs
from hindsight_insights.keys import names_a_subject
from hindsight_insights.models import ACTION_CHARS, Condition, InsightContent, InsightKind, Scope, Turn
from hindsight_insights.prompts import render_prompt
from hindsight_insights.scope import decide_scope

KIND_OF = {
    CorrectionType.PREFERENCE: InsightKind.PREFERENCE,
    CorrectionType.FACTUAL: InsightKind.FACT,
    CorrectionType.PROCESS: InsightKind.PROCESS,
    CorrectionType.NEGATIVE: InsightKind.LESSON,
}
_FALLBACK_TOPIC = {
    (CorrectionType.PREFERENCE, "zh"): "回复偏好",
    (CorrectionType.PREFERENCE, "en"): "reply preference",
    (CorrectionType.FACTUAL, "zh"): "事实纠正",
    (CorrectionType.FACTUAL, "en"): "corrected fact",
    (CorrectionType.PROCESS, "zh"): "做法",
    (CorrectionType.PROCESS, "en"): "how to proceed",
    (CorrectionType.NEGATIVE, "zh"): "被否定的回答",
    (CorrectionType.NEGATIVE, "en"): "rejected answer",
}
SESSION_INSIGHT_LIFETIME = timedelta(days=1)


@dataclass(frozen=True)
class Wording:
    """A correction's rule, in the language of the user's message."""

    topic: str
    action: str
    observation: str
    condition: Condition
    condition_detail: str | None
    # The user's words the lesson comes from (lesson_paragraphs): its evidence quote.
    said: str
    # False when the detector found no subject apart from the corrected words themselves (都说了是开不了机).
    names_a_subject: bool = True


def wording(
    correction: Correction,
    message: str,
    settings: Settings,
    learned: LearnedDetector | None = None,
    shown: str | None = None,
    sent: bool = False,
    edited: bool = False,
    cut_down: tuple[int, int] | None = None,
) -> Wording:
    """The rule a correction teaches, from a template per language (prompts/corrections/), in the user's words;
    `learned`, the detector that found it, also reads a preference's later sentences (every_wish). `shown` is what
    the assistant kept giving after a question that shows a wish (reflection.offline.adopted_requests): the rule then
    names the question and what answered it. `sent` says the preference is a version the user sent in place of the
    assistant's draft (reflection.offline.sent_versions): the rule asks for its layout, and with `cut_down` (the
    version's size and the draft's, in words and Chinese characters) for its length; `edited` that they said how they
    changed the draft before sending it (reflection.offline.reported_edits): the rule asks for the same change."""
    language = "zh" if has_han(message) else "en"
    corrected = (correction.corrected or message).strip()
    if correction.type is CorrectionType.PREFERENCE and shown is None and not sent and not edited:
        corrected = every_wish(corrected, message, learned)
    elif correction.type is CorrectionType.PROCESS:
        corrected = whole_rule(corrected, message, learned)
    elif correction.type is CorrectionType.FACTUAL and WORKS_ALONE_SIGNAL not in correction.signals:
        corrected = with_its_value(corrected, message)
    topic = (correction.topic or "").strip()
    # When the detector found no subject apart from the corrected words themselves, "when X comes up" would only
    # repeat them; the rule then says the correction alone.
    has_subject = bool(topic) and names_a_subject(topic, corrected)
    if not topic:
        # A topic is a slot, and a newer rule in it supersedes the older: a lesson whose subject the detector did not
        # name gets a slot of its own, named by its first words, so one such wish never silences another ("Write my
        # stuff in British spelling" replaced by a "Lovely. Thanks!" read as a wish).
        separator = "：" if language == "zh" else ": "
        topic = f"{_FALLBACK_TOPIC[(correction.type, language)]}{separator}{short(corrected, language == 'zh') or ''}"

    def rendered(words: str) -> str:
        return render_prompt(
            settings.prompts_dir,
            f"corrections/action.{language}.md.j2",
            type=correction.type.value,
            topic=topic,
            corrected=words,
            original=(correction.original or "").strip(),
            names_a_subject=has_subject,
            shown=shown or "",
            sent=sent,
            edited=edited,
            cut_down=cut_down,
            works_alone=WORKS_ALONE_SIGNAL in correction.signals,
        ).strip()

    action = rendered(corrected)
    if len(action) > ACTION_CHARS and correction.type is CorrectionType.PREFERENCE:
        # (a long wish keeps its wishes: the stories between them go first, not the last wish)
        action = rendered(only_wishes(corrected, len(corrected) - (len(action) - ACTION_CHARS), learned))
    said = lesson_paragraphs(message, corrected)
    observation = f"用户说：「{said}」" if language == "zh" else f'The user said: "{said}"'
    detail = (correction.condition_detail or "").strip() or None
    condition = correction.condition if detail or correction.condition is Condition.TEMPORAL else Condition.UNIVERSAL
    return Wording(
        topic=topic[:120],
        action=action[:ACTION_CHARS],
        observation=observation[:2000],
        condition=condition,
        condition_detail=detail if condition is not Condition.UNIVERSAL else None,
        names_a_subject=has_subject,
        said=said,
    )


def only_wishes(corrected: str, room: int, learned: LearnedDetector | None = None) -> str:
    """A preference's words cut to `room` characters at its sentences: the sentences that read as a wish alone
    (_wish), or from a clause that does to their end (_wish_starts), in order, an ellipsis for each run of the others
    (the stories and reasons between them). "two things …
    First, … So every time you write about which gooseberries are ready, name the variety …. Second, … A car of six
    turned up at 5:15 … So always put the last entry time as its own line" keeps both wishes. The words unchanged
    when they fit, or when the wishes alone do not fit either (the action is then cut at its end)."""
    if len(corrected) <= room:
        return corrected
    turn = read(corrected, None)
    zh = has_han(corrected)
    kept: list[str] = []
    skipped = False
    for sentence in turn.sentences:
        start = _wish_starts(turn, sentence, learned)
        said = turn.message.quote(start, sentence.span.end) if start is not None else None
        if said:
            kept.append(("…" if zh else "… ") + said if (skipped or start != sentence.span.start) and kept else said)
            skipped = False
        else:
            skipped = True
    words = ("。" if zh else ". ").join(kept)
    return words if kept and len(words) <= room else corrected


def _wish_starts(turn: ReadMessage, sentence: Sentence, learned: LearnedDetector | None) -> int | None:
    """Where a wish starts in `sentence`: at its start when it reads as a wish alone (_wish); else at its first clause
    that does, or that is marked standing in a sentence that asks nothing ("以后回消息都要说采摘只有上午8点到11点、
    下午3点到6点两个时段，中午太晒…"), the rest of the sentence going with it as the wish's own values and reasons
    ("every trade price you write for me goes per case of 6 with the jar weight, so the small 200g is 18.60 a case of
    6 …"); None when no part of it is a wish (a story, a reason)."""
    if _wish(turn, sentence.span.start, sentence.span.end, learned):
        return sentence.span.start
    for clause in clauses(sentence.span):
        standing = not sentence.question and marked_standing(turn.message.text[clause.start : clause.end])
        if standing or _wish(turn, clause.start, clause.end, learned):
            return clause.start
    return None


def _opening(sentence: Sentence) -> int:
    """Where the sentence's words start: after the space the split leaves before them."""
    return sentence.span.end - len(sentence.text.lstrip())


def lesson_paragraphs(message: str, corrected: str) -> str:
    """The paragraphs of `message` (blank-line apart) that hold the corrected words, or the whole message when none
    does: the lesson's own words. The other paragraphs are about other things (a login that failed, a pasted page),
    and their links or commands are no part of the lesson: the screen reads the observation, and an unrelated URL
    there reads as an exfiltration."""
    parts = [part.text for part in paragraphs(message)]
    needle = fold(corrected).text[:40]
    holding = [part for part in parts if needle and needle in fold(part).text]
    return "\n\n".join(holding).strip() if holding and len(holding) < len(parts) else message


def _located(corrected: str, message: str) -> tuple[ReadMessage, int, int] | None:
    """The message read once, with where the detector's quote of it starts and ends in its folded text; None when the
    quote is not in it as written."""
    turn, quoted = read(message, None), fold(corrected).text
    start = turn.message.text.find(quoted)
    return None if start < 0 else (turn, start, start + len(quoted))


# An item of a list the user counts out (一是…二是…, 第一点…第二点, 1. 2., "first, … second, …"): the wish that opens
# the count goes on through its items ("两件事以后都这样弄：一是外版书名…。二是版税率一定要写清楚…").
_ENUMERATOR = (
    r"(?:[一二三四五六七八九十]是|其[一二三四五]|第[一二三四五六七八九十](?:[点条个]|[,，])|[一二三四五六七八九十][、.]|"
    r"\d[.、)]\s|(?:first|second|third|fourth|fifth)(?:ly)?\s*[,:，：])"
)
_COUNT_OPENS = re.compile(rf"(?:^|[\s:：,，;；。.!！])\W*{_ENUMERATOR}")  # a count opens in the wish
_ENUMERATES = re.compile(rf"\W*{_ENUMERATOR}")  # a sentence is the count's next item


def every_wish(corrected: str, message: str, learned: LearnedDetector | None = None) -> str:
    """A preference's words in the rule: from the wish the detector quoted to the last sentence of the message that the
    detector, reading it alone, also takes for a wish ("太长了。以后先说结论，最多三个理由" is one standing wish, not
    "太长了"); the user's own words, never a question or a remark after the last wish. With the learned detector (the
    one that found the wish) each later sentence is read by it too, so a wish in words the rules lack stays in the
    rule ("please don't call me sir. Just use my name, Sofia." keeps the name). A sentence that is no wish as a whole
    may still hold one in a clause of its own, among its reasons and stories ("还有我们的客户都是企业的 IT admin,
    draft 里别用感叹号, 上次有个客户的 CIO 说…"), and so may the rest of the wish's own sentence ("…用中文, 给客户的
    draft 用英文就行"): such a clause is read alone too, and the rule runs to its end."""
    located = _located(corrected, message)
    if located is None:
        return corrected
    turn, start, end = located
    # A quote of the whole message (the model found the wish in it, no rule quoted a clause) ends with its last
    # sentence that does not ask: "…以后我的话术里一个都别放…。另外这次是…，话术里有必要区分吗" asks after the wish.
    asking = [s for s in turn.sentences if start < s.span.start < end <= s.span.end and s.question]
    if asking and all(s.question for s in turn.sentences if s.span.start >= asking[0].span.start):
        end = max(start, asking[0].span.start)
    counted = _COUNT_OPENS.search(turn.message.text[start:end]) is not None
    # The wish right before the quote goes with it (_wish_starts: the sentence, or its clause that reads as a wish
    # alone or is marked standing; never a question): "so pls, every booking reply you write for me has to spell out
    # what the spot needs: flat and level, 30 ft long, …. never just 'somewhere to park'" (the rules quoted the second).
    # (and so does the wish earlier in the quote's own sentence, when the quote is one of its later clauses: "every
    # single reply about scotch eggs needs to say ours are soft yolk, …, never left sat in a hot car …")
    # (a clause before it that reads as a wish alone or is marked standing; not the sentence read whole, whose
    # opening words may be no wish: "但两件事, 以后都按这个来: …")
    own = next((s for s in turn.sentences if _opening(s) < start < s.span.end), None)
    if own is not None and not own.question:
        for clause in clauses(own.span):
            if clause.start >= start:
                break
            words = turn.message.text[clause.start : clause.end]
            if marked_standing(words) or _wish(turn, clause.start, clause.end, learned):
                start = clause.start + len(words) - len(words.lstrip())
                break
    before = [s for s in turn.sentences if s.span.end <= start] if own is None or start <= _opening(own) else []
    for sentence in reversed(before):
        if sentence.question or (earlier := _wish_starts(turn, sentence, learned)) is None:
            break
        start = earlier
        if earlier != sentence.span.start:
            break
    for sentence in turn.sentences:
        if sentence.span.end <= end or sentence.question:
            continue
        # (in a count of wishes, an item goes on through its sentences marked standing: "第二，中午不接人。以后回消息
        # 都要说采摘只有上午8点到11点、下午3点到6点两个时段")
        goes_on = counted and (
            _ENUMERATES.match(sentence.text) is not None or marked_standing(sentence.text) is not None
        )
        # (a sentence that goes on to report someone's words is read clause by clause: the story is no wish)
        whole = sentence.reported_at == len(sentence.text)
        if sentence.span.start >= end and (
            goes_on or (whole and _wish(turn, sentence.span.start, sentence.span.end, learned))
        ):
            end = sentence.span.end
            continue
        for clause in clauses(sentence.span):
            if clause.start >= end and _wish(turn, clause.start, clause.end, learned):
                end = clause.end
    return (turn.message.quote(start, end) or corrected).strip()


# The longest rule of work a lesson quotes: a paragraph of it, not the message's stories after it.
RULE_CHARS = 400
# The learned detector's P(process) from which a sentence after a rule is one of its steps (whole_rule): below its bar
# for a rule on its own ("She needs a letter on headed paper …" reads 0.58), yet a reason ("the app had crashed")
# reads near 0.
RULE_STEP_AT = 0.5


def whole_rule(corrected: str, message: str, learned: LearnedDetector | None = None) -> str:
    """A process's words in the rule: the rule the detector quoted with the sentences right around it in its
    paragraph that the detector, reading each alone, leans to as steps of a process (P(process) at least
    RULE_STEP_AT, and above every other correction type); never a question, nor a reason or a story beside the rule
    ("…before restarting nginx; the app had crashed", "我是这个网点的站长。"). A rule of work is rarely one sentence:
    "company and lease cars never go through instantly. She needs a letter on headed paper …, and the application
    goes to the back-office queue for a manual check" is one rule, and its steps are what a later answer must follow.
    The steps may also come first, and the quoted rule point back at them ("件先在站里留3天，…再走退回。以后网点谁来
    问都按这个回")."""
    located = _located(corrected, message)
    if located is None:
        return corrected
    turn, start, end = located
    for sentence in turn.sentences:
        if sentence.span.end <= end:
            continue
        if not _joins(turn, sentence, end, sentence.span.start, sentence.span.end - start, learned):
            break
        end = sentence.span.end
    for sentence in reversed(turn.sentences):
        if sentence.span.end > start:
            continue  # the quote's own sentence, or one after it
        if not _joins(turn, sentence, sentence.span.end, start, end - sentence.span.start, learned):
            break
        start = sentence.span.start
    return (turn.message.quote(start, end) or corrected).strip()


def _joins(
    turn: ReadMessage, sentence: Sentence, gap_start: int, gap_end: int, length: int, learned: LearnedDetector | None
) -> bool:
    """Whether `sentence`, next to the rule across the text from gap_start to gap_end, is one more step of it."""
    if sentence.asks or "\n\n" in turn.message.text[gap_start:gap_end] or length > RULE_CHARS:
        return False
    return _step(turn.message.quote(sentence.span.start, sentence.span.end), learned)


def _step(said: str, learned: LearnedDetector | None) -> bool:
    found = detect(said, None, learned)
    if found.type is CorrectionType.PROCESS:
        return True
    likeliest = max(
        (kind for kind in found.probabilities if kind != CorrectionType.NONE.value),
        key=lambda kind: found.probabilities[kind],
        default=None,
    )
    return likeliest == CorrectionType.PROCESS.value and found.probabilities[likeliest] >= RULE_STEP_AT


def with_its_value(corrected: str, message: str) -> str:
    """A factual correction's words in the rule, with the value when the detector quoted only a denial or a change:
    "We're not on home fibre." is followed by what is right ("It's the Business Fibre 500 with a static IP block of 8
    addresses"), a statement with a number where the denial has none, and the rule needs both; "We moved to Bath last
    spring, so Gatwick's a four-hour trek for us now." by a short statement of what now holds ("Bristol is our
    airport."): no request, no courtesy, no question. A quote of one clause of a statement is the statement whole: in
    "It's three e-cargo bikes, 125 kg payload each …, roughly 45 km to a battery" the clause with the number that
    changed says nothing of what it is about (_lists_facts)."""
    located = _located(corrected, message)
    if located is None:
        return corrected
    turn, start, end = located
    holding = next((s for s in turn.sentences if s.span.start <= start and end <= s.span.start + s.stated_end), None)
    if holding is not None and not holding.question and _lists_facts(holding):
        stated_to = holding.span.start + holding.stated_end
        whole = turn.message.quote(holding.span.start, stated_to)
        if whole and len(whole.strip()) > len(corrected):
            corrected, start, end = whole.strip(), holding.span.start, stated_to
    if NUMBER.search(corrected):
        return corrected
    following = next((sentence for sentence in turn.sentences if sentence.span.start >= end), None)
    if following is None or following.asks or not (NUMBER.search(following.text) or _short_statement(following)):
        return corrected
    if "\n\n" in turn.message.text[end : following.span.start]:
        return corrected
    return (turn.message.quote(start, following.span.end) or corrected).strip()


# The longest statement after a change or a denial that says what now holds (with_its_value), in characters.
STATEMENT_CHARS = 60
# The longest statement a fact's quote of one of its clauses grows to (with_its_value), in characters: a sentence, not
# a paragraph of story around the value.
FACT_SENTENCE_CHARS = 240
LIST_CLAUSES = 3


def _lists_facts(sentence: Sentence) -> bool:
    """A statement of three clauses or more, two of them with a figure, a sentence long (FACT_SENTENCE_CHARS): a list
    of what holds ("three e-cargo bikes, 125 kg payload each, roughly 45 km to a battery"), not a verdict and a fact
    ("不对，都说了是开不了机，跟充电没关系")."""
    stated = sentence.stated_end
    parts = [c for c in clauses(sentence.span) if c.start < sentence.span.start + stated and c.text.strip()]
    figures = sum(1 for c in parts if NUMBER.search(c.text))
    return stated <= FACT_SENTENCE_CHARS and len(parts) >= LIST_CLAUSES and figures >= 2


def _short_statement(sentence: Sentence) -> bool:
    text = sentence.text.strip()
    return len(text) <= STATEMENT_CHARS and not sentence.guards and not DIRECTIVE.search(text)


def _wish(turn: ReadMessage, start: int, end: int, learned: LearnedDetector | None) -> bool:
    said = turn.message.quote(start, end)
    return bool(said) and detect(said, None, learned).type is CorrectionType.PREFERENCE


def _unsure_rejection(correction: Correction) -> bool:
    """A rejection the learned detector is unsure of (its unsure band) and no workspace model settled: the turn is
    marked corrected and flagged all the same, but no session rule says the answer was rejected. An answer to the
    assistant's own question ("政策性的，村里统一买的") read as one would tell the assistant, for the rest of the
    session, that the user rejected what they did not."""
    settled = any(signal.startswith("workspace_model:") for signal in correction.signals)
    return correction.type is CorrectionType.NEGATIVE and correction.unsure and not settled


def lesson_for(
    correction: Correction,
    turn: Turn,
    settings: Settings,
    now: datetime,
    learned: LearnedDetector | None = None,
) -> WriteCommand | None:
    """The write a correction in `turn`'s user message teaches; None when it is not a correction. The detector's
    finding goes into the provenance: the scope comes from it (scope.py), never from the wording; `learned` is the
    detector that found it (wording)."""
    if not correction.is_correction or not turn.user_message.strip() or _unsure_rejection(correction):
        return None
    words = wording(correction, turn.user_message, settings, learned)
    provenance = Provenance(source="detector", user_id=turn.user_id, session_id=turn.session_id, correction=correction)
    session_only = decide_scope(provenance, settings)[0].scope is Scope.SESSION
    ends = [now + SESSION_INSIGHT_LIFETIME] if session_only else []
    if words.condition is Condition.TEMPORAL and words.condition_detail:
        period = period_end(words.condition_detail, now, settings.timezone)
        ends += [period] if period is not None and period > now else []
    content = InsightContent.parse(
        {
            "topic": words.topic,
            "kind": KIND_OF[correction.type],
            "scene": turn.scene,
            "observation": words.observation,
            "action": words.action,
            "evidence": {"quote": words.said[:1000], "turn": turn.turn_index},
            "confidence": correction.confidence,
            "condition": words.condition,
            "condition_detail": words.condition_detail,
            "expire_at": min(ends, default=None),
        },
        now=now,
    )
    return WriteCommand(content, provenance)
