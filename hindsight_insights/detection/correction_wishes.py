"""Preferences (how the user wants to be treated or answered) and processes (how the work must be done): the
second and third steps of the correction detector (corrections.py)."""

from __future__ import annotations

import dataclasses
import re

from hindsight_insights.detection import correction_patterns as patterns
from hindsight_insights.detection.correction_turn import (
    ReadMessage,
    Sentence,
    clause_of,
    original_overlap,
    quote,
    short,
)
from hindsight_insights.detection.correction_types import (
    PREFERENCE_STANDING,
    PREFERENCE_STATED,
    PROCESS_BINDING,
    PROCESS_STATED,
    Correction,
    CorrectionType,
)
from hindsight_insights.detection.quantities import anchors
from hindsight_insights.detection.text import clauses


# ----------------------------------------------------------------------------------------------- preference
def preference(turn: ReadMessage) -> Correction | None:
    for sentence in turn.sentences:
        if sentence.reported_at == 0 or (sentence.conditional and sentence.question):
            continue
        # The user's own words: before someone else's that the sentence goes on to report ("…以后我的话术里一个都别放，
        # 客户一听就觉得我们在打官腔" states the wish, then says what customers think).
        text = sentence.text[: sentence.reported_at]
        address = patterns.first(patterns.ADDRESS, text)
        if address:
            name, match = address
            return _address(turn, sentence, name, match)
        if sentence.question and (not patterns.POLITE_REQUEST.search(text) or _asks_how(text)):
            continue  # "how do I export this chart as a PNG?" asks for information; "can you keep it short?" asks
        if patterns.NAMES_A_WISH.search(text):
            turn.signals.append("guard:names_an_earlier_wish")
            continue
        aspects = [aspect for aspect in patterns.ASPECTS if aspect[3].search(text)]
        directive = patterns.DIRECTIVE.search(text)
        if directive is None and turn.previous is not None:
            directive = patterns.COMPLAINT.search(text)
        if not aspects or not directive:
            continue
        standing = patterns.STANDING.search(text)
        reason = _has_reason(turn, sentence, directive.start())
        inherent = any(aspect[0] in patterns.INHERENT_ASPECTS for aspect in aspects)
        marked = patterns.marked_standing(text)
        if not marked and patterns.VERSION_DECLINED.search(text):
            turn.signals.append("guard:declines_a_version")
            continue
        if not marked and _one_off(sentence, reason):
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
            original=original_overlap(turn, sentence.text),
            topic=topic_zh if turn.zh else topic_en,
            signals=tuple(signals),
        )
    return None


def _one_off(sentence: Sentence, reason: bool) -> bool:
    """A wish about one thing (this report, 这段话, "make it…"), judged in the clauses that name the aspect: "keep the
    tone professional, these go to clients" is general, whatever the next clause says; or a clause whose subject is
    the one thing at hand (ONE_OFF_SUBJECT: 这条是…, "this one's for …"), or asked or declined for now (FOR_NOW); or a
    sentence that asks for the document the wish is about (patterns.ASKS_FOR_A_DOCUMENT: 帮我写封回复，语气正式点)."""
    parts = clauses(sentence.span)
    if any(patterns.ONE_OFF_SUBJECT.search(c.text) for c in parts):
        return True  # "这条是给宝妈们看的，写可爱一点": the clause before names the one thing it is for
    if "asks_for_a_document" in sentence.guards:
        return True  # "帮我写封回复给他们，…，语气正式点": the tone is the letter's, asked for with it
    named = [c.text for c in parts if any(aspect[3].search(c.text) for aspect in patterns.ASPECTS)]
    text = " ".join(named) or sentence.text
    # (or what is asked or declined for now: "a quick list for now", 英文版先不用了)
    return bool(
        patterns.ONE_OFF.search(text)
        or patterns.FOR_NOW.search(text)
        or (patterns.ONE_OFF_ITEM.search(text) and not reason)
    )


def standing_wish(turn: ReadMessage) -> Correction | None:
    """A standing directive about the answers to this user, of any aspect: 以后回复我的时候带上订单号, from now on
    always tell me the stock level. Runs after the process step, so 以后方案发客户前先给我过目 stays a process."""
    for sentence in turn.sentences:
        text = sentence.text[: sentence.reported_at]  # the user's own words (preference)
        if not text or sentence.conditional:
            continue
        if (sentence.question and not patterns.POLITE_REQUEST.search(text)) or patterns.NOT_A_WISH.search(text):
            continue
        marked = patterns.marked_standing(text)
        addressed = patterns.ADDRESSED.search(text)
        if marked and addressed and patterns.DIRECTIVE.search(text) and not _one_off(sentence, reason=False):
            return Correction(
                CorrectionType.PREFERENCE,
                PREFERENCE_STANDING,
                corrected=_directive_span(turn, sentence),
                original=original_overlap(turn, text),
                topic="回复方式" if turn.zh else "how to answer",
                signals=("preference:standing_wish", f"standing:{marked.group()}", f"addressed:{addressed.group()}"),
            )
    return None


def _asks_how(text: str) -> bool:
    return bool(re.search(r"(怎么|如何|在哪|哪里|什么|为什么)", text)) and not re.search(
        r"(能不能|可不可以|可以)", text
    )


def _has_reason(turn: ReadMessage, directive: Sentence, at: int) -> bool:
    """A clause of the message other than the directive's speaks about the user: 我都是在手机上看, I'm in Germany."""
    for sentence in turn.sentences:
        for clause in clauses(sentence.span):
            if clause.start <= directive.span.start + at < clause.end:
                continue
            if patterns.REASON.search(clause.text):
                return True
    return False


def _directive_span(turn: ReadMessage, sentence: Sentence) -> str | None:
    """The sentence from the first clause that carries the wish (an aspect, a directive or the mark that it stands:
    "whenever you talk about light levels give me the actual numbers in dBm, …, never words like good") to its end,
    without trailing reason clauses: the clauses after the directive say what it asks for ("以后你跟我说到任何药，药名
    后面都加个括号写它是治什么的"), the user speaking of themself after them says why ("…，我好心里有数")."""
    parts = clauses(sentence.span)
    kept = [
        c
        for c in parts
        if any(a[3].search(c.text) for a in patterns.ASPECTS)
        or patterns.DIRECTIVE.search(c.text)
        or patterns.marked_standing(c.text)
    ]
    if not kept:
        return quote(turn.message, sentence.span.start, sentence.span.end)
    tail = parts[parts.index(kept[-1]) + 1 :]
    while tail and patterns.REASON_CLAUSE.search(tail[-1].text):
        tail.pop()
    last = tail[-1] if tail else kept[-1]
    end = last.end
    if patterns.ANNOUNCES.search(turn.message.text[kept[0].start : end]):
        end = announced_content_end(turn, sentence, kept[0].start, end)
    return quote(turn.message, kept[0].start, end)


def announced_content_end(turn: ReadMessage, sentence: Sentence, start: int, end: int) -> int:
    """Where the content of a wish that only announces it ends ("two things i want in EVERY booking reply from now
    on pls!! 1) tell them … 2) put the actual price …", patterns.ANNOUNCES): the sentences after it, with their
    reasons, up to a question, a new point ("oh and …", 还有…), the request that closes the message ("redo pls") or
    ANNOUNCED_CHARS; where it was when no sentence follows."""
    later = [other for other in turn.sentences if other.span.start >= sentence.span.end]
    for other in later:
        text = other.text.strip()
        if (
            other.question
            or patterns.NEW_POINT.search(text)
            or patterns.CLOSING_REQUEST.search(text)
            or other.span.end - start > patterns.ANNOUNCED_CHARS
        ):
            break
        end = other.span.end
    return end


def _address(turn: ReadMessage, sentence: Sentence, name: str, match: re.Match[str]) -> Correction:
    start = sentence.span.start
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
                original = quote(previous, at, previous.text.find(candidate) + len(candidate))
                break
    if name.startswith("wording"):
        # Words the user forbids are half a wish about how to write: what to write instead is mostly said in the same
        # sentence ("每件事都要写清楚是第几小节到第几小节…，不要写'多加练习'这种话"), so the quote is the sentence, the
        # user's own statement of it.
        corrected = quote(turn.message, start, start + sentence.stated_end)
        topic = "措辞" if turn.zh else "wording"
    else:
        clause = clause_of(sentence.span, start + match.start())
        corrected = quote(turn.message, clause.start, clause.end)
        topic = "称呼" if turn.zh else "form of address"
    return Correction(
        CorrectionType.PREFERENCE,
        PREFERENCE_STANDING,
        corrected=corrected,
        original=original,
        topic=topic,
        signals=(f"preference:{name}",),
    )


# -------------------------------------------------------------------------------------------------- process
def process(turn: ReadMessage) -> Correction | None:
    if turn.previous is None and not patterns.RULE_LIKE.search(turn.message.text):
        return None  # nothing was done that this corrects, and nothing says it is a rule of the work
    found = _process(turn)
    if found is None or found.type is not CorrectionType.PROCESS:
        return found
    return _quoting_the_stated_rule(turn, found)


def _process(turn: ReadMessage) -> Correction | None:
    for sentence in turn.sentences:
        # (a question states no rule, marked or not: "whats the usual free time before storage kicks in, roughly")
        if sentence.asks or sentence.reported_at < len(sentence.text) or patterns.FAVOUR.search(sentence.text):
            continue
        text = sentence.text
        if "one_time" in sentence.guards and not patterns.marked_standing(text):
            continue  # (for this time only: "他要先寄 sample 的话运费这单我们出，下不为例" sets no rule)
        if patterns.ANSWER_SHAPE.search(text):
            return _answer_shape(turn, sentence)
        for name, pattern in patterns.PROCESS:
            match = pattern.search(text)
            if not match or _about_myself(text, match.start()):
                continue
            if name in patterns.NEEDS_OBLIGATION and not patterns.OBLIGATION_EN.search(text):
                continue
            return _process_result(turn, sentence, name, match)
        instead = patterns.INSTEAD_ZH.search(text)
        if instead and turn.previous is not None and anchors(instead["dont"]) & anchors(turn.previous.text):
            return _process_result(turn, sentence, "instead_of_proposed", instead)
        # The rule introduced in the user's own words after the draft ("我们公司的标准比你写的严：…"), however it is
        # worded (_quoting_the_stated_rule quotes it whole).
        stated = patterns.STATES_THE_RULE.search(text)
        if stated and turn.previous is not None and text[stated.end() :].strip():
            return _process_result(turn, sentence, "states_the_rule", stated)
    return None


def _quoting_the_stated_rule(turn: ReadMessage, found: Correction) -> Correction:
    """`found` quoting the rule a sentence of the message introduces (patterns.STATES_THE_RULE: "我们厂的规定是：
    发现不合格品，先挂红色不合格标签…；班组长开不合格品报告…；…只能由质量部判定。"), from its colon to the end of the
    sentence the semicolons run on to, rather than the verdict on the draft the step found first
    ("第二条不行，生产不能自己返修放行")."""
    text = turn.message.text
    for index, sentence in enumerate(turn.sentences):
        stated = patterns.STATES_THE_RULE.search(sentence.text)
        if stated is None or sentence.asks:
            continue
        last = sentence
        for following in turn.sentences[index + 1 :]:
            if not text[: last.span.end].rstrip().endswith((";", "；")):
                break
            last = following
        rule = quote(turn.message, sentence.span.start + stated.end(), last.span.end)
        if rule and rule != found.corrected:
            return dataclasses.replace(found, corrected=rule, topic=short(rule, turn.zh))
        break
    return found


def _answer_shape(turn: ReadMessage, sentence: Sentence) -> Correction:
    """ "Conclusion first", "先给我命令，别讲原理": the order of the answer's parts is how this user wants answers to
    look, a preference for them (scope.py: the user's only), not a process of the work for everyone."""
    return Correction(
        CorrectionType.PREFERENCE,
        PREFERENCE_STATED,
        corrected=quote(turn.message, sentence.span.start, sentence.span.end),
        original=original_overlap(turn, sentence.text),
        topic="回答结构" if turn.zh else "answer structure",
        signals=("preference:structure", "directive", "preference:answer_shape"),
    )


def _about_myself(text: str, position: int) -> bool:
    """The user describes their own plan (我需要核对一下), not a rule of the work."""
    clause_start = max(text.rfind(",", 0, position), text.rfind(",", 0, position)) + 1
    return bool(re.match(r"\s*(我(?!们)|i\b|i'm|i'll|i will|i'd)", text[clause_start:]))


def _process_result(turn: ReadMessage, sentence: Sentence, name: str, match: re.Match[str]) -> Correction:
    groups = match.groupdict()
    start = sentence.span.start
    topic = None
    if groups.get("first") and groups.get("then"):
        first = _step(turn, start, match, "first")
        then = _step(turn, start, match, "then")
        topic = f"{then}前{first}" if turn.zh else f"{first} before {then}"
    parts = [c for c in clauses(sentence.span) if not _only_reason(c.text)] or [sentence.span]
    corrected = quote(turn.message, parts[0].start, parts[-1].end)
    if topic is None or len(topic) > (40 if turn.zh else 80):
        topic = short(corrected or "", turn.zh)
    binding = bool(patterns.BINDING.search(turn.message.text))
    return Correction(
        CorrectionType.PROCESS,
        PROCESS_BINDING if binding else PROCESS_STATED,
        corrected=corrected,
        original=original_overlap(turn, sentence.text),
        topic=topic,
        signals=(f"process:{name}",) + (("binding",) if binding else ()),
    )


_STEP_LEAD = re.compile(
    r"^(.*?(要|得|必须|需要|应该|务必|先)|\W*(you|we)? ?(need to|have to|must|should|always|always have to)?\s*)"
)


def _step(turn: ReadMessage, start: int, match: re.Match[str], group: str) -> str:
    """A step of a process in the user's words, without the obligation before it (要/must/you need to)."""
    begin, end = match.span(group)
    lead = _STEP_LEAD.match(match.group(group))
    if lead and lead.end() < end - begin:
        begin += lead.end()
    return turn.message.quote(start + begin, start + end)


def _only_reason(text: str) -> bool:
    """A clause that only explains (不然…, 这是规定, tickets without a repro get bounced) is not the rule itself."""
    return bool(re.match(r"\s*(不然|否则|因为|这是|光|otherwise|because|since|always\W*$|not the other way)", text))
