"""Reflection without a model: the rule-based correction detector read over a stored session.

Each user message is read against the assistant answer before it (detection/corrections.py); every explicit or
implicit correction and every stated preference becomes a candidate, worded by the same templates as the layered
writes (governance/lessons.py) and quoting the user's message verbatim. Negative corrections and weak factual ones
hold for their session only, which is over when reflection runs, so they are not proposed. The engine then checks
each quote against the transcript and saves through the same rules as a model's candidates.

With the learned detector beside the rules (the worker passes it: `with_detector`), it also learns what the model
finds: a standing wish stated without trigger words ("metric units", "简体", "two sentences max") is a preference
when the detector says so. And because a reflection reads the whole session, a terse wish the detector only leans
towards ("EUR please": preference is its likeliest correction class, at `REPEATED_WISH_AT` or more, but below its
bar for one message) becomes a preference when the user comes back to it in the same session: a content word of
the wish in another of their messages ("In EUR?", "..., in EUR"). It answers an earlier answer (never the opening
request) and is not a question, and the message it comes back to is not itself one the detector found (a stated wish
is learned in its own right; a terse echo of it, "it's just a preference, remember it", only refers back to it). The
bar was chosen on the tune split of bench/data/reflection_sessions.json.

A reflection also has what a turn's own detection lacks: the answer after each message. When the detector leaned to
a correction but stayed below its bar, and that answer opens by owning an error ("抱歉，是我看错了等级", "that changes
things"), the message put a fact right (detection.corrections.acknowledged): the user's own situation said beside a
question ("我没有单位，我是自由职业…那漏了怎么补？") is the usual case.

A reflection also sees what the assistant did next. A follow-up question whose subject the assistant then gave in
every later answer without being asked again (`adopted_requests`: "换算成人民币大概多少?" after a duty estimate in
dollars, then RMB beside every amount; "How long is she in the chair for that?", then chair time with every
treatment) shows a wish the user never stated: a preference for the user, at an implicit lesson's confidence.

And a version the user sent in place of the assistant's draft (`sent_versions`: "我最后发出去的是这样的：" and the
notice in their own layout, then "下一个：…"), which the assistant's next answer follows, shows how they want such
text written: a preference for the user, at an implicit lesson's confidence, quoting the version.

A correction with no subject of its own that only repeats an earlier one of the session
("都说了是开不了机" after "我的手机是开不了机", `restates`) is not proposed again: the earlier one names what it is
about, and the repetition would be a second rule in a slot named after its own words. Nor is one whose every word is
in an earlier one of the same type ("hours please" after "From now on, always give me durations in hours.",
`echoes`): the user points back at the lesson already learned.

It is the demo's default and the floor the LLM paths must beat: it finds what users say outright and, with the
learned detector, wishes they repeat within a session; never what they only show across sessions (a request
repeated in each, a workaround), which the model prompts ask for.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import unicodedata
from collections.abc import Sequence

from hindsight_insights.commands import Provenance
from hindsight_insights.config import Settings
from hindsight_insights.detection import correction_patterns as patterns
from hindsight_insights.detection.correction_turn import ReadMessage, Sentence, read
from hindsight_insights.detection.correction_types import IMPLICIT, Correction, CorrectionType
from hindsight_insights.detection.corrections import (
    NUMBER,
    acknowledged,
    detect,
    further_wishes,
    look_alike_of,
    opening_request,
    own_input_put_right,
)
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.detection.own_business import BUSINESS_TOPIC, WORKS_ALONE_SIGNAL, works_alone
from hindsight_insights.detection.quantities import anchors
from hindsight_insights.detection.text import HAN_RUN, RAW_SENTENCE_END, Span, clauses, fold, paragraphs, sentences
from hindsight_insights.governance.lessons import KIND_OF, wording
from hindsight_insights.models import Scope
from hindsight_insights.reflection.llm import DetectedCandidate, ExtractionRequest
from hindsight_insights.reflection.output import ReflectedEvidence, ReflectedInsight
from hindsight_insights.scope import decide_scope

log = logging.getLogger(__name__)

MAX_QUOTE_CHARS = 1000
# The learned detector's P(preference) from which a wish the user comes back to in the session is standing (module
# docstring); chosen on the tune split.
REPEATED_WISH_AT = 0.3
_PREFERENCE = CorrectionType.PREFERENCE.value
# The rules' guards that say a message asks for this time only, declines, approves the answer ("ok cool just top
# rope then", "Lovely. Thanks!") or carries the task on ("now do the same for the armchair"): no standing wish,
# repeated or not.
_NOT_STANDING = frozenset(
    {"guard:one_time", "guard:one_off_request", "guard:decline", "guard:approval", "guard:continues_the_task"}
)
# Words of courtesy that any two messages may share: they show no returning wish.
_COURTESY = frozenset({"please", "pls", "plz", "thank", "thanks", "请用", "麻烦", "谢谢"})


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
            messages = [turn.user_message.strip() for turn in session.turns]
            answers: list[str | None] = []
            for turn in session.turns:
                answers.append(turn.assistant_message or (answers[-1] if answers else None))
            before = [None, *answers[:-1]]  # the answer each message reads against
            findings = [self._finding(message, before[index]) for index, message in enumerate(messages)]
            adopted = adopted_requests(messages, answers, findings)
            versions = sent_versions(messages, answers)
            edits = reported_edits(messages, answers)
            # A wish the user comes back to is shown by a message that is not itself a lesson: one the detector
            # found (a stated wish, a correction) is learned in its own right, and a terse message echoing it ("it's
            # just a preference, remember it") only refers back to it.
            plain = [index for index, finding in enumerate(findings) if not _teaches(finding)]
            taught: list[tuple[CorrectionType, str, str]] = []  # (type, scene, corrected words) of each candidate
            for index, turn in enumerate(session.turns):
                message, correction, previous_answer = messages[index], findings[index], before[index]
                own_fact: Correction | None = None  # a fact the message put right that was the user's own input
                if correction is not None and previous_answer is not None:
                    # (never the opening request: its words are the task's subject, and a later message that
                    # shares them carries the task on: "just the one-line summary for the log then")
                    others = [messages[other] for other in plain if other not in (0, index)]
                    correction = repeated_wish(correction, message, previous_answer, others)
                    correction = acknowledged(correction, message, turn.assistant_message)
                    put_right = own_input_put_right(correction, message, messages[:index], answers[:index])
                    own_fact = correction if put_right is not correction else None
                    correction = put_right
                shown = adopted.get(index)
                if shown is not None and (correction is None or not correction.is_correction):
                    correction = _shown_wish(message, correction, "offline:adopted")
                lessons: list[Correction] = []
                if correction is not None and correction.type not in (CorrectionType.NONE, CorrectionType.NEGATIVE):
                    # A message may teach two things: its other sentences' own wishes and rules come after its finding
                    # (and a fact they state beside a wish, before it).
                    further = (
                        further_wishes(message, previous_answer, correction, self._detector) if shown is None else []
                    )
                    lessons = [correction, *further]
                elif own_fact is not None and shown is None:
                    # The fact was the user's own input put right, no lesson; a wish the message states beside it
                    # still is one ("…就写 14mm，… 所以以后所有 quote 里面三样东西必须写清楚：…").
                    lessons = further_wishes(message, previous_answer, own_fact, self._detector)
                alone = works_alone(message, previous_answer) if shown is None else None
                if alone is not None:
                    # The user's own business described in place of the team the answer assumed: a fact about the
                    # user first, then the message's wishes (own_business.py); a wish found in the message stays.
                    lessons = _with_the_business(
                        alone, correction, message, previous_answer, self._settings, self._detector
                    )
                version = versions.get(index)
                if version is not None:  # whatever else the message says, the version it sent shows a wish
                    # (and a fact the detector read into the version itself is none: it is what the user sent)
                    lessons = [lesson for lesson in lessons if not _in_the_version(lesson, version.text)]
                    lessons.append(_shown_wish(version.text, findings[index], "offline:sent_version"))
                elif index in edits:  # and so does what it says it changed before sending the draft
                    # (the change it reports is no fact put right: "我把开头改成了“各位家长”才发的" edits a draft)
                    lessons = [lesson for lesson in lessons if not _in_the_edit(lesson, edits[index])]
                    lessons.append(_shown_wish(edits[index], findings[index], "offline:reported_edit"))
                for lesson in lessons:
                    asks = Provenance(self.name, session.user_id, session.session_id, correction=lesson)
                    if decide_scope(asks, self._settings)[0].scope is Scope.SESSION:
                        continue
                    sent = version if "offline:sent_version" in lesson.signals else None
                    words = wording(
                        lesson,
                        message,
                        self._settings,
                        self._detector,
                        shown=shown if lesson is correction else None,
                        sent=sent is not None,
                        cut_down=sent.cut_down if sent is not None else None,
                        edited="offline:reported_edit" in lesson.signals,
                    )
                    said = (lesson.corrected or message).strip()
                    if any(
                        (kind, scene) == (lesson.type, turn.scene)
                        and (echoes(said, earlier) or (not words.names_a_subject and restates(said, earlier)))
                        for kind, scene, earlier in taught
                    ):
                        log.debug("turn %d of %s restates an earlier one: not learned again", index, session.label)
                        continue
                    taught.append((lesson.type, turn.scene, said))
                    insight = ReflectedInsight(
                        topic=words.topic,
                        kind=KIND_OF[lesson.type],
                        scene=turn.scene,
                        observation=words.observation,
                        action=words.action,
                        evidence=ReflectedEvidence(quote=message[:MAX_QUOTE_CHARS], turn=index, session=session.label),
                        confidence=lesson.confidence,
                        tags=[],
                        condition=words.condition,
                        condition_detail=words.condition_detail,
                    )
                    found.append(DetectedCandidate(insight, lesson))
        return found

    def _finding(self, message: str, previous_answer: str | None) -> Correction | None:
        """What the detector finds in one message; an opening message (no answer before it) states a wish only
        above the opening bar (opening_request)."""
        if not message:
            return None
        found = detect(message, previous_answer, self._detector)
        return opening_request(found) if previous_answer is None else found


# Later answers to the user's next requests that must all give what a follow-up question asked for
# (adopted_requests), beside the question's own answer: one could be chance, unless it gives the question's own words.
ADOPTED_IN_ANSWERS = 2
# How much of the answer that shows what the assistant kept giving goes into the rule.
SHOWN_CHARS = 80


def adopted_requests(
    messages: Sequence[str], answers: Sequence[str | None], findings: Sequence[Correction | None]
) -> dict[int, str]:
    """The follow-up questions whose subject the assistant then gave unasked (module docstring), by index, each with
    the clause of the next answer that shows it. A message counts when it only asks (its other sentences approve at
    most: "ok. and how would I say that to the parents?"; or one reason follows: "…? we put it on the label"), or
    asks for a line added to the draft (后面再加一句今天的作业：…), after an answer that asked nothing (so it is no
    answer to a clarifying question), and teaches nothing the detector found; or, anywhere, the opening request
    included, asks whether the replies should tell people something (_asks_whether_to_tell: "Should I be warning
    people about the lane? It's half a mile of dirt …", whatever reasons follow). Its answer and every later answer to a
    new request share a content word that no earlier answer and no other message of the user has: the assistant
    brought it in for this question and kept it. A new request does more than approve ("perfect，这个 client 很喜欢"
    gets a courtesy back) and is not for this time only (这次帮我把这段说明用繁体写一下 asks for the answer at hand
    again). At least ADOPTED_IN_ANSWERS of them; or one, when what it shares is the question's own words ("rain plan
    怎么弄？" once, then a "Rain plan" in the next event's timeline)."""
    found: dict[int, str] = {}
    said = [anchors(fold(message).text) for message in messages]
    given = [anchors(fold(answer).text) if answer else frozenset() for answer in answers]
    turns = [read(message, None) for message in messages]  # (a message's sentences do not depend on the answer)
    requests = [_new_request(turn) for turn in turns]
    for index in range(len(messages) - 1):
        finding = findings[index]
        if finding is not None and finding.is_correction:
            continue
        # (whether the replies should tell people something, "Should I be warning people about the lane?", asks about
        # what the drafts hold, whatever follows it or comes before it, the opening request too)
        if not _asks_whether_to_tell(turns[index]) and not (
            index > 0
            and _answer_asked_nothing(answers[index - 1])
            and (_only_asks(turns[index].sentences) or _adds_a_line(turns[index]))
        ):
            continue
        later = [other for other in range(index + 1, len(messages)) if requests[other]]
        if not later:
            continue
        kept = frozenset.intersection(given[index], *(given[other] for other in later))
        kept -= frozenset().union(*given[:index])
        kept -= frozenset().union(*(words for other, words in enumerate(said) if other != index))
        if len(later) < ADOPTED_IN_ANSWERS:
            kept &= said[index]
        # (what the question itself named shows it best: "…要不要在回复里提醒客人：…抗凝的药…" kept beside the
        # signature the same message asked for)
        kept = (kept & _asked_words(turns[index])) or kept
        shown = _clause_showing(answers[later[0]] or "", kept) if kept else None
        if shown:
            found[index] = shown
    return found


def _answer_asked_nothing(answer: str | None) -> bool:
    """An answer with no question in it: a message after it answers no clarifying question."""
    return bool(answer) and "?" not in (answer or "") and "？" not in (answer or "")


def _asks_whether_to_tell(turn: ReadMessage) -> bool:
    """A sentence asks whether the drafts should tell people something (patterns.ASKS_WHETHER_TO_TELL: "Should I be
    warning people about the lane?", 要不要提醒客人洋甘菊是菊科的？), in the user's own words."""
    return bool(_question_whether_to_tell(turn))


def _asked_words(turn: ReadMessage) -> frozenset[str]:
    """The content words of the question whether to tell people something; none when the turn asks none."""
    return frozenset().union(*(anchors(sentence.text) for sentence in _question_whether_to_tell(turn)))


def _question_whether_to_tell(turn: ReadMessage) -> Sequence[Sentence]:
    """The sentences of the first question whether to tell people something: its own, or two when it runs on past a
    semicolon, its mark in the next sentence ("要不要在回复里提醒客人：…先跟我们说；还有…是正常的？"); none
    without one."""
    sentences = turn.sentences
    for at, sentence in enumerate(sentences):
        if not patterns.ASKS_WHETHER_TO_TELL.search(sentence.text[: sentence.reported_at]):
            continue
        if sentence.asks:
            return sentences[at : at + 1]
        if sentence.text.rstrip().endswith(";") and at + 1 < len(sentences) and sentences[at + 1].asks:
            return sentences[at : at + 2]
    return []


def _new_request(turn: ReadMessage) -> bool:
    return not turn.for_this_time_only and not all(_approves(sentence) for sentence in turn.sentences)


def _adds_a_line(turn: ReadMessage) -> bool:
    """The message asks for a line added to the draft at hand (patterns.LINE_TO_ADD: "后面再加一句今天的作业：…") and
    marks nothing standing: a request for this draft, which later drafts may keep; not one it says is for this draft
    only ("这篇里加一句：平安夜晚场送荧光手环，只加这一篇")."""
    return (
        bool(patterns.LINE_TO_ADD.search(turn.message.text))
        and not turn.marks_a_standing_wish
        and not turn.for_this_time_only
    )


def _only_asks(sentences: Sequence[Sentence]) -> bool:
    if not sentences:
        return False
    # A question and one or two statements after it, its reason and what the user has for it
    # ("这个里面有哪些过敏原？我们要贴到标签上。"; "…can you put that in? I've got pagers 14:52, launched 15:01. People
    # always want to know how quick we were.") also only asks, after an approval or two ("Nice. Which of those can we
    # make the day before? The kitchen there is tiny.").
    asked = [sentence for sentence in sentences if not _approves(sentence)]
    with_its_reason = 2 <= len(asked) <= 3 and asked[0].asks and not any(sentence.question for sentence in asked[1:])
    return with_its_reason or (
        sentences[-1].asks and all(sentence.asks or _approves(sentence) for sentence in sentences)
    )


def _approves(sentence: Sentence) -> bool:
    """An approval ("ok.", "Nice.", "好的") or a sentence with no content word: nothing but courtesy."""
    return "approval" in sentence.guards or not anchors(sentence.text)


def _clause_showing(answer: str, words: frozenset[str]) -> str | None:
    """The clause of `answer` that holds the most of `words` (the first of equals), as written."""
    folded = fold(answer)
    best: tuple[int, str] | None = None
    for sentence in sentences(folded.text):
        for clause in clauses(sentence):
            count = len(anchors(clause.text) & words)
            if count and (best is None or count > best[0]):
                best = (count, folded.quote(clause.start, clause.end))
    return best[1][:SHOWN_CHARS] if best and best[1] else None


def _with_the_business(
    description: str,
    finding: Correction | None,
    message: str,
    previous_answer: str | None,
    settings: Settings,
    detector: LearnedDetector | None,
) -> list[Correction]:
    """The lessons of a message that describes the user's one-person business (own_business.works_alone): the
    description as a fact for this user (as sure as a fact for the user needs: it is about no one else), then the
    wishes of its other sentences (further_wishes), and the message's own finding when it is a wish or a rule the
    description does not hold."""
    signals = finding.signals if finding is not None else ()
    fact = Correction(
        CorrectionType.FACTUAL,
        settings.user_fact_confidence,
        corrected=description,
        topic=BUSINESS_TOPIC["zh" if HAN_RUN.search(description) else "en"],
        signals=(*signals, WORKS_ALONE_SIGNAL),
        probabilities=finding.probabilities if finding is not None else {},
    )
    described = fold(description).text
    # (a detail of the description read as a fact of its own is in the fact already)
    further = [
        lesson
        for lesson in further_wishes(message, previous_answer, fact, detector)
        if lesson.type is not CorrectionType.FACTUAL or fold(lesson.corrected or "").text not in described
    ]
    lessons = [fact, *further]
    said = [fold(lesson.corrected or "").text for lesson in further]
    if (
        finding is not None
        and finding.type in (CorrectionType.PREFERENCE, CorrectionType.PROCESS)
        and finding.corrected
        and fold(finding.corrected).text not in described
        and not any(_overlap(fold(finding.corrected).text, words) for words in said)
    ):
        lessons.append(finding)
    return lessons


def _overlap(one: str, other: str) -> bool:
    """Whether either folded text holds the other."""
    return bool(one) and bool(other) and (one in other or other in one)


def _shown_wish(wish: str, finding: Correction | None, signal: str) -> Correction:
    """A wish the assistant adopted without the user stating it (a follow-up question, a version the user sent), as
    the user's preference: a "consider" rule at most, like every lesson shown and not stated."""
    signals = finding.signals if finding is not None else ()
    probabilities = finding.probabilities if finding is not None else {}
    return Correction(
        CorrectionType.PREFERENCE,
        IMPLICIT,
        corrected=wish,
        signals=(*signals, signal),
        probabilities=probabilities,
    )


# A version the user sent in place of the assistant's draft (sent_versions) has at least this many lines,
SENT_LINES = 3
# and each of its paragraphs has at least 1/SENT_SHARE of its words and numbers in the draft: the draft, rewritten.
SENT_SHARE = 4
# Marks of layout a rewrite brings and an answer can keep: brackets, bars, arrows, dashes, bullets, boxes.
LAYOUT_MARKS = frozenset("【】[]「」《》<>→—–|｜•·*#@/~=+☐✅❌")
# A field's pictogram at a line's start is layout too ("⏰ 时间：…", "📍 范围：…"): any character of Unicode's "other
# symbol" category (emoji among them).
_PICTOGRAM = "So"
# The marks that separate the fields of one line and nothing else (a date's or a URL's slashes, a range's dashes are
# no layout): what shows the layout of a version too short to compare line lengths.
FIELD_SEPARATORS = frozenset("|｜•→")
# How much of the version goes into the rule.
SENT_CHARS = 160
# A version at most this share of its draft's size (words, Chinese characters) cut the draft down: the rule then says
# how short the user wants it, which its quote, cut at SENT_CHARS, may not show.
CUT_DOWN_SHARE = 2 / 3


@dataclasses.dataclass(frozen=True)
class SentVersion:
    """A version the user sent in place of the assistant's draft (sent_versions): its first SENT_CHARS, and the size
    of the whole version and of the draft (words and Chinese characters)."""

    text: str
    size: int
    draft_size: int

    @property
    def cut_down(self) -> tuple[int, int] | None:
        """(the version's size, the draft's) when the version is at most CUT_DOWN_SHARE of the draft."""
        return (self.size, self.draft_size) if self.size <= CUT_DOWN_SHARE * self.draft_size else None


def sent_versions(messages: Sequence[str], answers: Sequence[str | None]) -> dict[int, SentVersion]:
    """The versions users sent in place of the assistant's draft, by message index, each as written (its first
    SENT_CHARS): after a line that ends with a colon ("我最后发出去的是这样的：", "went on the board as:"), the
    paragraphs that rewrite the answer before (each shares at least 1/SENT_SHARE of its words and numbers with it),
    when an answer after it is laid out like the version. Either the version has SENT_LINES lines or more and the
    answer, as long, keeps a mark of layout the version brought and the draft lacked ("【M-2207｜Line 3】",
    "[02:10]") or has lines much nearer the version's in length than the draft's (twice as near, on a log scale); or
    the version, however short, separates its fields by a mark the draft lacked, and the answer does too
    ("1|2|日常饮水用|…"), or opens or ends with the version's first or last OPENING_WORDS words, which the draft did
    not ("What actually went out: Brightline: REF OUT-4471. …" after a "Dear valued customer" draft; a sign-off
    "— Reception, Harbour Lane Hostel"). The user showed how they
    want such text, and the assistant followed: a wish never stated."""
    found: dict[int, SentVersion] = {}
    for index in range(1, len(messages)):
        draft = answers[index - 1]
        if not draft or not answers[index]:
            continue
        version = _sent_version(messages[index], draft)
        # (the answer right after may only remark on the version, "这个清楚多了…", and the next drafts follow it)
        later = [answer for answer in answers[index:] if answer]
        if version is not None and any(_laid_out_like(answer, version, draft) for answer in later):
            found[index] = SentVersion(version[:SENT_CHARS], _size(version), _size(draft))
    return found


def _size(text: str) -> int:
    """Words and Chinese characters: the length of a text in either language."""
    return len(_LATIN_WORD.findall(text)) + sum(len(run) for run in HAN_RUN.findall(text))


_LATIN_WORD = re.compile(r"[A-Za-z]+")


def _sent_version(message: str, draft: str) -> str | None:
    lines = message.split("\n")
    opening = next((number for number, line in enumerate(lines) if line.rstrip().endswith((":", "："))), None)
    if opening is None:
        return None
    start = sum(len(line) + 1 for line in lines[: opening + 1])
    in_draft = _words_and_numbers(draft)
    kept: list[Span] = []
    added: Span | None = None  # a paragraph of the user's own inside the version, kept if the version goes on
    for paragraph in paragraphs(message[start:]):
        if kept and read(paragraph.text, None).continues_the_task:
            break  # the user's next request ("Next one: …", "Now one for Ashby Road: …") is no part of the version
        words = _words_and_numbers(paragraph.text)
        if words and len(words & in_draft) * SENT_SHARE >= len(words):
            kept.extend([added, paragraph] if added is not None else [paragraph])
            added = None
            continue
        # A paragraph that runs on, with no blank line, from the version's lines into the user's own words ("就这三行，
        # 字打得很大。接下来还有个大爷，…"): its leading lines, as long as together they still rewrite the draft.
        leading = _leading_lines(paragraph, in_draft)
        if leading is not None:
            kept.append(leading)
        elif kept and added is None:
            # A line the user wrote into the version ("If you can't take it on, could you suggest a colleague?"),
            # when the version's next paragraph rewrites the draft again (the sign-off).
            added = paragraph
            continue
        break
    if not kept:
        return None
    return message[start + kept[0].start : start + kept[-1].end].strip()


def _leading_lines(paragraph: Span, in_draft: frozenset[str]) -> Span | None:
    """The longest run of `paragraph`'s first lines, short of the whole, whose words and numbers together share at
    least 1/SENT_SHARE with the draft's (`in_draft`); None when not even its first line does."""
    lines = paragraph.text.split("\n")
    best: Span | None = None
    words: frozenset[str] = frozenset()
    for count in range(1, len(lines)):
        words |= _words_and_numbers(lines[count - 1])
        if words and len(words & in_draft) * SENT_SHARE >= len(words):
            best = Span("\n".join(lines[:count]), paragraph.start)
        elif best is None:
            return None
    return best


# A user saying what they changed in the draft before sending it, or what went out in its place (reported_edits): an
# edit verb and a verb of sending in one clause, or "what was sent is: '…'". In the tuning sessions every message
# saying so is in a session whose lesson is shown, not stated (16 messages of 15 sessions, all implicit).
REPORTS_AN_EDIT = re.compile(
    r"(?:加了|加上了|改成了?|改了|翻成|翻译成|换成了?|删了|去掉了|写成了?)[^，,。！？!?\n]{0,30}?"
    r"(?:再发|才发|发(?:到|在)?(?:群里|出去|给)|发了|发的)|"
    r"(?:发出去|发到群里|发群里|贴上去|发)的是\s*[“\"「'‘:：]|"
    r"\bi (?:changed|added|translated|swapped|cut|moved|rewrote|reworded|trimmed|dropped)\b[^.!?\n]{0,60}?"
    r"\b(?:before (?:i )?(?:sent|sending|posted|posting)|and (?:then )?(?:sent|posted)|then sent)\b|"
    r"\b(?:i )?sent (?:it|this|that) (?:as|with)\b|\bwent out as\b|\bwhat i (?:actually )?(?:sent|posted)\b",
    re.IGNORECASE,
)
_QUOTE_PAIRS = {"“": "”", "「": "」", "‘": "’", "'": "'", '"': '"'}


def reported_edits(messages: Sequence[str], answers: Sequence[str | None]) -> dict[int, str]:
    """The messages, after an answer, that say how the user changed the draft before sending it ("我在前面加了个【302】
    再发的", "我自己翻成中文发群里了") or what went out in its place ("went out as 'Car 9 — 07:40 pickup: Dr R.P., …'"),
    by index, each with the sentence that says so and the version it quotes (its first SENT_CHARS): a wish shown, not
    stated, like a version sent (sent_versions) whose layout the next answer need not have followed."""
    found: dict[int, str] = {}
    for index in range(1, len(messages)):
        match = REPORTS_AN_EDIT.search(messages[index]) if answers[index - 1] else None
        if match is not None:
            found[index] = _sentence_with_its_quote(messages[index], match.start(), match.end())[:SENT_CHARS]
    return found


def _in_the_edit(lesson: Correction, edit: str) -> bool:
    """A fact the detector read into the words of an edit the user reports (reported_edits)."""
    said = (lesson.corrected or "").strip()
    return lesson.type is CorrectionType.FACTUAL and bool(said) and said in edit


def _in_the_version(lesson: Correction, version: str) -> bool:
    """A fact the detector read into the version the user sent (sent_versions), or into a quote that holds it."""
    said = (lesson.corrected or "").strip()
    return _in_the_edit(lesson, version) or (
        lesson.type is CorrectionType.FACTUAL and bool(said) and version[:SENT_OPENING_CHARS] in said
    )


# How much of a version's opening a fact's quote must hold to be the version read as a fact.
SENT_OPENING_CHARS = 40


def _sentence_with_its_quote(message: str, start: int, end: int) -> str:
    """The sentence of `message` around [start, end): to its end, or, when it opens a quote, to the quote's end if
    nothing of the sentence follows it ("sent it as '…' next one is …"), else on to the end after it
    (“各位家长”才发的)."""
    begin = max((m.end() for m in RAW_SENTENCE_END.finditer(message, 0, start)), default=0)
    stop = RAW_SENTENCE_END.search(message, end)
    finish = stop.end() if stop else len(message)
    opening = next((at for at in range(begin, finish) if message[at] in _QUOTE_PAIRS), None)
    if opening is not None:
        close = message.find(_QUOTE_PAIRS[message[opening]], opening + 1)
        if close > 0:
            after = message[close + 1 : close + 2]
            stop = RAW_SENTENCE_END.search(message, close + 1)
            quote_ends = not after or after.isspace() or after in ",，;；"
            finish = close + 1 if quote_ends else (stop.end() if stop else len(message))
    return message[begin:finish].strip()


def _separators(version: str, draft: str) -> frozenset[str]:
    """The field separators (FIELD_SEPARATORS) the version brought that it uses at least twice, as separators of one
    line ("1|2|日常饮水用|304不锈钢|…"): a version that short shows its layout by them alone."""
    return frozenset(mark for mark in FIELD_SEPARATORS - set(draft) if version.count(mark) >= 2)


def _laid_out_like(answer: str, version: str, draft: str) -> bool:
    if any(answer.count(mark) >= 2 for mark in _separators(version, draft)):
        return True  # the answer separates its fields the way the version did
    for ends in (_opening, _closing):
        words = ends(version)
        if len(words) == OPENING_WORDS and ends(answer) == words != ends(draft):
            return True  # the answer opens ("Brightline: REF OUT-…") or signs off as the version did, the draft not
    if len(_lines(answer)) < SENT_LINES or len(_lines(version)) < SENT_LINES:
        return False
    brought = _layout_marks(version) - set(draft)
    if brought & set(answer):
        return True
    # Lines much nearer the version's in length than the draft's (by their ratio: twice as near, on a log scale).
    length = _line_length(answer)
    return 2 * abs(math.log(length / _line_length(version))) < abs(math.log(length / _line_length(draft)))


# How many of a version's first or last words (or runs of Chinese) an answer must open or end with to follow it
# however short it is; words, not figures (a date or a quantity in both is the content's, not the layout's).
OPENING_WORDS = 3
_WORD = re.compile(r"[^\W\d_]+")


def _opening(text: str) -> list[str]:
    return _WORD.findall(fold(text).text)[:OPENING_WORDS]


def _closing(text: str) -> list[str]:
    return _WORD.findall(fold(text).text)[-OPENING_WORDS:]


def _lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def _line_length(text: str) -> float:
    lines = _lines(text)
    return max(sum(len(line.strip()) for line in lines), 1) / max(len(lines), 1)


def _layout_marks(text: str) -> set[str]:
    return {char for char in text if char in LAYOUT_MARKS or unicodedata.category(char) == _PICTOGRAM}


def _words_and_numbers(text: str) -> frozenset[str]:
    return anchors(fold(text).text) | frozenset(NUMBER.findall(text))


def restates(later: str, earlier: str) -> bool:
    """Whether a correction with no subject of its own says again what an earlier one said: it brings no value the
    earlier one lacks, and at least half of its units (English content words, Chinese character pairs) are in it.
    "都说了是开不了机" after "我的手机是开不了机" repeats it ("as I said"); the earlier one, which names its subject
    (手机), is the rule to keep. "It is 30 days" after "the return window is 14 days" says something new."""
    units, before = _units(later), _units(earlier)
    news = {unit for unit in units - before if unit[0].isdigit()}  # a number is a unit of its own (_units)
    return bool(units) and not news and len(units & before) * 2 >= len(units)


def echoes(later: str, earlier: str) -> bool:
    """Whether a correction brings no word of its own beyond courtesy: every unit of it is in an earlier one of the
    session ("hours please" after "From now on, always give me durations in hours."): the user pointing back at a
    lesson already learned, not a second one. "Use Celsius" after "use metric units" has a word of its own."""
    units = _units(later) - _COURTESY
    return bool(units) and units <= _units(earlier)


def _units(text: str) -> frozenset[str]:
    folded = fold(text).text
    # Every pair of Chinese characters, function characters included: 开不了机 has no content bigram, yet it is the
    # whole of what the user says.
    pairs = {run[i : i + 2] for run in HAN_RUN.findall(folded) for i in range(max(len(run) - 1, 1))}
    words = {word for word in anchors(folded) if not HAN_RUN.search(word)}
    return frozenset(pairs | words | set(NUMBER.findall(folded)))


def _teaches(finding: Correction | None) -> bool:
    return finding is not None and finding.is_correction and finding.type is not CorrectionType.NEGATIVE


def repeated_wish(correction: Correction, message: str, answer: str, others: Sequence[str]) -> Correction:
    """`correction` as a preference when the learned detector leans to one (module docstring) and another message of
    the session comes back to the wish's words, words the answer before it lacked (a wish asks for what the answer did
    not do: "EUR please" after an answer in dollars; "like the Northwind one" after the Northwind email names the
    subject, not a wish); else `correction` unchanged."""
    probabilities = correction.probabilities
    # A message that asks, in a question or in a last clause that asks ("按我们每月用40袋，每月多花多少"), or in a
    # question with its reason after it ("can you make this one sound formal? it's going to their compliance team"), is
    # no wish; nor one the rules read as for this time only, or as a declined offer ("just this time make it formal").
    turn = read(message, answer)
    question = (
        "guard:question" in correction.signals
        or any(sentence.asks for sentence in read(message, None).sentences[-1:])
        or _only_asks(turn.sentences)
    )
    one_off = any(signal in _NOT_STANDING for signal in correction.signals)
    if correction.is_correction or not probabilities or question or one_off:
        return correction
    # Nor an answer to the assistant's own question, unless it marks a standing wish ("Nineteen years. Everyone
    # remembers the storm in The Tempest" after "how many years has Dev been with the company?").
    if turn.answers_a_question and not turn.marks_a_standing_wish:
        return correction
    # Nor one the rules know as a look-alike of a wish, whatever the model made of it ("sorry, I meant the laser
    # cutter, not the 3D printer"; "never mind JP").
    if look_alike_of(turn, CorrectionType.PREFERENCE) is not None:
        return correction
    kinds = [kind for kind in probabilities if kind != CorrectionType.NONE.value]
    likeliest = max(kinds, key=lambda kind: (probabilities[kind], kind))
    if likeliest != _PREFERENCE or probabilities[_PREFERENCE] < REPEATED_WISH_AT:
        return correction
    words = anchors(fold(message).text) - _COURTESY - anchors(fold(answer).text)
    if not any(words & anchors(fold(other).text) for other in others if other):
        return correction
    return dataclasses.replace(
        correction,
        type=CorrectionType.PREFERENCE,
        # Below the detector's bar for one message, the repetition is what shows the wish: a "consider" rule at most,
        # whatever the model's calibration makes of P(preference).
        confidence=min(round(probabilities[_PREFERENCE], 2), IMPLICIT),
        corrected=message,
        signals=(*correction.signals, "offline:repeated_wish"),
    )
