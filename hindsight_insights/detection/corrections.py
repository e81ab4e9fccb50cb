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
  2. a preference: a form of address, or a directive about an aspect of the answers (correction_patterns.ASPECTS);
  3. a process: an order, a gate, a route or a rule of the work (correction_patterns.PROCESS); then a standing wish
     about the answers to this user of any other aspect (以后回复我的时候带上订单号);
  4. an explicit correction: a verdict (错了, wrong) or a contrast (不是X，是Y; X, not Y) -> factual when a
     replacement value is stated, negative when it is not;
  5. an implicit correction: a value that contradicts one in the previous assistant turn (same unit, same subject,
     different value), or a changed fact with a new value (我是铂金会员，上个月就升级了) -> factual;
  6. none.

With a learned detector (`detect(..., learned=...)`, learned_corrections.py) the rules' finding is one input of a
calibrated model: where the rules hold firmly their type stands, elsewhere the model decides the type; the rules'
quotes and signals stay, and the result carries the class probabilities and an `unsure` flag. An unsure decision
goes to `second_opinion` when the caller passes one (record_turn with a workspace model: cascade.CorrectionAsker);
the type it returns settles the decision (learned_corrections.settle), None leaves the detector's own.

Each step skips the sentences its guards rule out: questions (a question about a correction is not one),
hypotheticals, reported speech (from the reporting verb on), rhetorical and surprised questions, agreement, praise,
declined offers and words that merely contain a trigger. The message is folded first (text.fold: NFKC, lower case,
traditional -> simplified), so every spelling of a cue matches one entry of correction_patterns.

Where each part lives: correction_patterns (every cue, as tables), correction_turn (the message read into sentences
with their guards; quoting), correction_wishes (steps 2-3), correction_explicit (4), correction_implicit (5),
quantities (values, units and the words they are about), correction_types (the result).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Sequence

from hindsight_insights.detection import correction_patterns as patterns
from hindsight_insights.detection.correction_explicit import explicit
from hindsight_insights.detection.correction_implicit import implicit
from hindsight_insights.detection.correction_turn import ReadMessage, own_words, quote, read
from hindsight_insights.detection.correction_types import GENERAL, Correction, CorrectionType
from hindsight_insights.detection.correction_wishes import announced_content_end, preference, process, standing_wish
from hindsight_insights.detection.learned_corrections import (
    SELF_FIX,
    LearnedDetector,
    combine,
    families,
    rule_outcome,
    settle,
)
from hindsight_insights.detection.periods import this_conversation_only
from hindsight_insights.detection.text import RAW_SENTENCE_END, Span, clauses, fold
from hindsight_insights.models import Condition

__all__ = ["Condition", "Correction", "CorrectionType", "SecondOpinion", "detect"]

# A number as a message states it (12, 4.5): what a lesson is about when it brings one.
NUMBER = re.compile(r"\d+(?:\.\d+)?")
_NEGATED_NUMBER = re.compile(
    # (an article or a preposition may come between: "the 22nd, not the 21st", "on the 15th, not on the 14th")
    r"(?:不是|并非|而不是|而非|(?:\bnot\b|\binstead of\b|\brather than\b)(?:\s+(?:on|at|in|for))?(?:\s+the)?)"
    r"\s*(\d+(?:\.\d+)?)"
)
_SHORTEST_READING = 4  # characters: a sentence shorter than this ("ok.", "好的。") says nothing alone
# (message, previous assistant turn, the unsure decision) -> the type to settle on, or None to keep the decision.
SecondOpinion = Callable[[str, str | None, Correction], CorrectionType | None]


def detect(
    message: str,
    previous_assistant: str | None = None,
    learned: LearnedDetector | None = None,
    second_opinion: SecondOpinion | None = None,
) -> Correction:
    """Whether `message` corrects the assistant's `previous_assistant` turn, and how (see the module docstring)."""
    # Only what the user wrote can teach: a README, an e-mail or a quote pasted into the message is read as none of
    # theirs (correction_turn.own_words), so an instruction planted in it never becomes their lesson.
    message = own_words(message)
    turn = read(message, previous_assistant)
    found = rules = _rules(turn)
    if learned is not None and message.strip():
        likeliest, *others = learned.readings_by_likelihood(
            _readings(turn, found, message, previous_assistant), previous_assistant
        )
        combined = combine(found, message, likeliest, learned.combination)
        settled = second_opinion(message, previous_assistant, combined) if combined.unsure and second_opinion else None
        found = combined if settled is None else settle(found, combined, message, settled)
        found = _look_alike(found, turn, rules)
        if _held_as_a_look_alike(found):
            found = _next_reading(found, others, turn, rules, message, learned)
        found = _quoted_by_its_step(found, rules, turn)
    return _with_condition(found, turn) if found.is_correction else found


# Messages the class definitions make none, known by a look-alike guard, and the types the model alone may not find in
# them. The rules' own finding always stands. Each was found where the model alone read a lesson into such a message,
# and in the training corpus (3,606 messages) none of them holds a message of the types it rules out; out of fold
# they take two false corrections away and no correction.
#   one_time_only          "just this time make it formal", 这次用英文: a one-off request is no standing wish or rule
#                          (48 training messages where the rules find nothing, none a preference or a process)
#   continues_the_task     "ok. now the same for the bridesmaid dress, that one needs 3 inches off", "再帮我给小李发个
#                          微信，说明天的会改到 10 点", or an edit of what was just drafted ("ok, add a line saying
#                          …", 再加一句): the values are the task's, for this time (9 training messages, all none)
#   repeats_the_assistant  "周日上午吧" after "周六下午和周日上午有空": a choice among the assistant's options, no
#                          new value (6 training messages, all none)
#   declines               "算了算了 never mind", "不用了，谢谢": a declined offer or a never-mind puts no fact right
#                          (57 training messages where the rules find nothing, none factual)
#   declines_an_offer      "Perfect. No need for that comparison checklist" after "Would you like a comparison
#                          checklist?": no wish, rule or rejection either (60 training messages, all none)
#   relays_a_request       "Lovely. They also asked for a late table nearby, anywhere that serves past 10?": someone
#                          else's request passed on (24 training messages, none a preference)
#   relays_a_claim_on_the_user "Margaret says we did the raffle wrong last year": someone else's claim about the
#                          user's own doing, not the assistant's answer; no wish either (59 training messages, all
#                          none; the model read "some bloke told me I was doing it wrong … Anyway, post's good" as one)
#   answers_an_offer       "No, leave the Spanish, Javi writes that side by hand" after "Want me to do the Spanish side
#                          too?": which of the offer to take, for this piece of work (212 training messages after an
#                          offer that closes the turn, nothing marked standing: 205 none, 3 preferences)
#   for_now                "anyway just a quick list for now, i'm about to drive", 先这样 (34 training messages,
#                          none a preference)
#   asks_for_a_task        "Can you explain what this README wants me to do?": a task asked for as a question, no
#                          standing mark (10 training messages, all none)
#   only_asks              "whats the usual free time at rotterdam for LCL before storage kicks in, roughly", 那跟油车
#                          比一年能省多少，说个大概就行: questions and approvals only, nothing marked standing (651
#                          training messages: 2 preferences, one the rules find, which stands)
#   lets_it_go             "never mind JP, client's dropping Japan. that's all for now", "是自动重启，那可能是别的
#                          原因，算了": a message that drops something, at its start or after "but" or a comma,
#                          rejects nothing either (132 training messages: 131 none, one a rejection)
#   fixes_own_input        "sorry, I meant the laser cutter, not the 3D printer": the user's own input put right is no
#                          fact, wish or rule (76 training messages, all none; the model read "Sorry
#                          我刚才说错了，是第四天不是第三天" as a fact put right). The hedge of a correction
#                          (可能是我记错了，不过…) is not one.
#   asks_a_hypothetical    "如果哪天我说错了参数, 你会纠正我吗?": a question about a case that has not happened
#                          states no wish (116 training messages with no standing mark, none a preference)
#   answers_a_question     "intermediate, 去年上过一周课" after the assistant asked: an answer, no fact put right (189
#                          training messages after a question where the rules find nothing: 4 factual, 171 none)
#   asks_for_a_document   "Draft her a reply saying the SENCo will be in touch within 10 school days", 帮我拟个回复，
#                          只确认第1、2条: the values are the document's (6 training messages where the rules find
#                          nothing, all none); and no standing wish unless marked (以后, always): of the 10 training
#                          messages that ask for a document, the one preference says "always"
#   only_approves          "Lovely. Thanks!", "好的，谢谢": an approval alone teaches nothing (35 training messages, all
#                          none); the model read a wish into it after a long answer
# A guard yields to a model that reads the type beyond doubt. Out of fold (8,406 training messages) the guards turned
# 23 of the model's corrections to none, and by the label the model was right in 17 of them: the guards were written
# when it read far less well. Every one it read at this or more (7) was a correction of that type: standing wishes
# asked as questions ("Could you give me the reason behind each step when you explain things?"). At 0.97 (12, all
# right out of fold) the model overruled guards on their own kind in the tuning sessions: "intermediate,
# 去年在巴厘岛上过一周课" after the assistant asked the level (a fact at 0.987), a hypothetical question (a wish at
# 0.983).
LOOK_ALIKE_YIELDS_AT = 0.99
# Look-alikes the model never overrules, however sure: after an offer that closes the assistant's turn, the model read
# "不用做海报，文字就行，蔗农都看文字" (the offered poster declined) as a wish at 1.00. In the training corpus the rules
# find both standing wishes said there that no mark makes standing ("不用寒暄 直接说事"), and the rules' finding stands.
_FIRM_LOOK_ALIKES = frozenset({"answers_an_offer"})
_LOOK_ALIKES: tuple[tuple[str, Callable[[ReadMessage], bool], frozenset[CorrectionType]], ...] = (
    (
        "one_time_only",
        lambda turn: turn.for_this_time_only,
        frozenset({CorrectionType.PREFERENCE, CorrectionType.PROCESS}),
    ),
    ("continues_the_task", lambda turn: turn.continues_the_task, frozenset(CorrectionType) - {CorrectionType.NONE}),
    (
        "repeats_the_assistant",
        lambda turn: turn.only_repeats_the_assistant,
        frozenset(CorrectionType) - {CorrectionType.NONE},
    ),
    ("declines", lambda turn: turn.declines, frozenset({CorrectionType.FACTUAL})),
    (
        "declines_an_offer",
        lambda turn: turn.declines_an_offer,
        frozenset(CorrectionType) - {CorrectionType.NONE},
    ),
    ("relays_a_request", lambda turn: turn.relays_a_request, frozenset({CorrectionType.PREFERENCE})),
    (
        "relays_a_claim_on_the_user",
        lambda turn: turn.relays_a_claim_on_the_user,
        frozenset({CorrectionType.FACTUAL, CorrectionType.PREFERENCE, CorrectionType.NEGATIVE}),
    ),
    ("answers_an_offer", lambda turn: turn.answers_an_offer, frozenset({CorrectionType.PREFERENCE})),
    ("for_now", lambda turn: turn.for_now, frozenset({CorrectionType.PREFERENCE})),
    ("asks_for_a_task", lambda turn: turn.asks_for_a_task, frozenset({CorrectionType.PREFERENCE})),
    ("only_asks", lambda turn: turn.only_asks, frozenset({CorrectionType.PREFERENCE})),
    (
        "lets_it_go",
        lambda turn: turn.lets_it_go,
        frozenset(CorrectionType) - {CorrectionType.NONE},
    ),
    (
        "fixes_own_input",
        lambda turn: turn.fixes_own_input,
        frozenset({CorrectionType.FACTUAL, CorrectionType.PREFERENCE, CorrectionType.PROCESS}),
    ),
    ("asks_a_hypothetical", lambda turn: turn.asks_a_hypothetical, frozenset({CorrectionType.PREFERENCE})),
    ("answers_a_question", lambda turn: turn.answers_a_question, frozenset({CorrectionType.FACTUAL})),
    ("asks_for_a_document", lambda turn: turn.asks_for_a_document, frozenset({CorrectionType.FACTUAL})),
    (
        "asks_for_a_document_only",
        lambda turn: turn.asks_for_a_document and not turn.marks_a_standing_wish,
        frozenset({CorrectionType.PREFERENCE}),
    ),
    (
        "only_approves",
        lambda turn: turn.only_approves,
        frozenset({CorrectionType.FACTUAL, CorrectionType.PREFERENCE, CorrectionType.PROCESS}),
    ),
)


def further_wishes(
    message: str, previous_assistant: str | None, found: Correction, learned: LearnedDetector | None = None
) -> list[Correction]:
    """The standing wishes and rules of the message's other sentences, beside `found` (what detect found in the whole
    message): one message may teach two things (a company's rule and, after it, the user's own wish for short replies;
    a fact put right and a standing wish beside it). Each sentence is read alone by the rules, and kept when they find
    a preference or a process outright (FURTHER_WISH_AT or more) that `found` does not already quote. With `learned`
    (a reflection's detector) a sentence they find no such wish in is read by the model too, and kept only when it
    reads a wish or a rule beyond doubt (FURTHER_LEARNED_AT): a sentence out of its message is where a model reads the
    most into words, so its usual bar would not do. Beside a wish or a rule, the sentences left over, read together
    by the model, may put a fact of the user's right as well (_further_fact); it comes first. Only in a message that
    teaches (`found` is a correction) and is not for this time only. A preference after a preference found is not
    one: the first one's rule already reads on to the message's later wishes (governance.lessons.every_wish)."""
    turn = read(own_words(message), previous_assistant)
    if not found.is_correction or len(turn.sentences) < 2 or turn.for_this_time_only:
        return []
    taught = [fold(found.corrected).text] if found.corrected else []
    if found.type is CorrectionType.FACTUAL and taught and taught[0].strip() == turn.message.text.strip():
        # A fact only the model found quotes the whole message (learned_corrections._retyped): no sentence of it is
        # the fact's own, so the wish one of them states is still to be learned ("no. dont do 03/08. … from now on
        # every date as 2027-03-08 with the weekday after it").
        taught = []
    found_at = turn.message.text.find(taught[0]) if taught else -1
    topics = {found.topic}
    further: list[Correction] = []
    rest: list[str] = []  # the sentences no lesson of the message quotes
    for sentence in turn.sentences:
        text = quote(turn.message, sentence.span.start, sentence.span.end)
        if not text or _overlaps(fold(text).text, taught):
            continue
        rest.append(text)
        alone = detect(text, previous_assistant)
        if learned is not None and not (alone.type in _STANDING and alone.confidence >= FURTHER_WISH_AT):
            alone = _learned_wish(detect(text, previous_assistant, learned), alone, text)
        if alone.type is found.type is CorrectionType.PREFERENCE and 0 <= found_at < sentence.span.start:
            continue  # in the first wish's rule already
        if alone.type in _STANDING and alone.confidence >= FURTHER_WISH_AT and alone.corrected:
            said = fold(alone.corrected).text
            if patterns.ANNOUNCES.search(said):
                # (a wish that only announces what it asks for, "i need something in all of these from now on",
                # quotes the sentences after it that say it: correction_wishes.announced_content_end)
                end = announced_content_end(turn, sentence, sentence.span.start, sentence.span.end)
                alone = dataclasses.replace(alone, corrected=quote(turn.message, sentence.span.start, end))
                said = fold(alone.corrected or "").text
            if not _overlaps(said, taught):
                # A topic is a slot, and a newer rule in it supersedes the older: a second wish under the same aspect
                # ("how to answer") gets a slot of its own, named by its words (governance.lessons.wording).
                further.append(alone if alone.topic not in topics else dataclasses.replace(alone, topic=None))
                taught.append(said)
                topics.add(alone.topic)
    rest = [text for text in rest if not _overlaps(fold(text).text, taught)]  # (nor a further wish)
    fact = _further_fact(rest, previous_assistant, found, learned, "。" if turn.zh else ". ")
    return further if fact is None else [fact, *further]


def _further_fact(
    rest: Sequence[str],
    previous_assistant: str | None,
    found: Correction,
    learned: LearnedDetector | None,
    sentence_end: str,
) -> Correction | None:
    """The fact the sentences beside a wish or a rule put right, read together (`rest`, in the message's order): "你那个
    0.56不是我家的价。我家前年就申请了峰谷电，…一度0.31 … 还有，你以后算账直接告诉我多少钱就行" states the user's own
    tariff as well as the wish the rules found. Only with a reflection's detector, beyond doubt (FURTHER_LEARNED_AT),
    and not in what only asks: the model reads what the user states of their own case, which no rule quotes."""
    if learned is None or found.type not in _STANDING or not rest:
        return None
    text = "".join(sentence + sentence_end for sentence in rest).strip()  # (each quote ends where its sentence did)
    fact = detect(text, previous_assistant, learned)
    if fact.type is not CorrectionType.FACTUAL or fact.probabilities.get(fact.type.value, 0.0) < FURTHER_LEARNED_AT:
        return None
    turn = read(text, previous_assistant)
    if all(sentence.asks or sentence.question for sentence in turn.sentences):
        return None
    # (quoting what the model read, the sentences together: the value and what it is about may be in different ones)
    return dataclasses.replace(fact, corrected=text)


# What a message needs from the detector for the assistant's acknowledgement to make it a fact put right
# (acknowledged): P(correction) at least this, below the detector's bar for one message. Chosen on the tuning sessions
# (bench/data/reflection_tune_sessions_*.json, the tune split of reflection_sessions.json): of the user turns at 0.3 or
# more that the detector left as none, 6 of 46 lesson turns and none of 348 others are followed by such an answer.
ACKNOWLEDGED_AT = 0.3
# The rules' guards of a message that asks for this time only, declines or approves: it put nothing right.
_NOT_A_FIX = frozenset({"guard:one_time", "guard:one_off_request", "guard:decline", "guard:approval"})


def acknowledged(found: Correction, message: str, reply: str | None) -> Correction:
    """`found` as a fact put right when the detector leaned to a correction (P(correction) ≥ ACKNOWLEDGED_AT) but
    stayed below its bar, and the assistant's next answer, `reply`, opens by owning an error
    (patterns.ACKNOWLEDGES_AN_ERROR: 抱歉，是我看错了等级; "that changes things") without declining (patterns.REFUSES).
    Only a reflection has that answer: it reads the session once it is over. The fact holds for the user (a general
    correction's confidence: scope.py), quoting what the message states (_stated); else `found` unchanged."""
    probabilities = found.probabilities
    if found.is_correction or not probabilities or not reply or _NOT_A_FIX & set(found.signals):
        return found
    if 1.0 - probabilities.get(CorrectionType.NONE.value, 1.0) < ACKNOWLEDGED_AT:
        return found
    opening = fold(RAW_SENTENCE_END.split(reply.strip(), maxsplit=1)[0][:160]).text
    if not patterns.ACKNOWLEDGES_AN_ERROR.search(opening) or patterns.REFUSES.search(opening):
        return found
    return dataclasses.replace(
        found,
        type=CorrectionType.FACTUAL,
        confidence=GENERAL,
        corrected=_stated(message),
        signals=(*found.signals, "acknowledged_by_the_answer"),
    )


# What an opening message (no answer before it) needs to state a standing wish or rule: the model was trained on pairs
# only and reads an opening request that describes the task ("Need captions for three frames …", a pasted contract
# to check) as a wish. Chosen on the tuning sessions (the tune split of bench/data/reflection_sessions.json and
# reflection_tune_sessions_*.json): of 19 opening messages it read as a preference or a process, the 4 that state
# one are all at 0.99 or more, and 13 of the other 15 below it.
OPENING_WISH_AT = 0.99


def opening_request(found: Correction) -> Correction:
    """`found`, the detection of a conversation's opening message (no answer before it), as none when it is a wish or
    a rule the model found below OPENING_WISH_AT: an opening request describes the task. record_turn and a reflection
    call it for an opening message; a sentence read alone (governance.lessons.every_wish) has no answer before it
    either, but it is no opening."""
    if found.type not in (CorrectionType.PREFERENCE, CorrectionType.PROCESS) or not found.probabilities:
        return found
    if 1.0 - found.probabilities.get(CorrectionType.NONE.value, 0.0) >= OPENING_WISH_AT:
        return found
    return Correction(
        CorrectionType.NONE, 0.0, signals=(*found.signals, "guard:opening_request"), probabilities=found.probabilities
    )


def own_input_put_right(
    correction: Correction, message: str, earlier_messages: Sequence[str], earlier_answers: Sequence[str | None]
) -> Correction:
    """`correction` as none when it puts right a number the user gave first: "she's 12 actually" after the answer's
    "At 11 she'd trial with …", when the user's own opening said "my daughter is 11". The class definitions make the
    user fixing their own earlier input none; record_turn and a reflection read the session for it. A number of the
    replaced text that the corrected text lacks, said in an earlier message of the user (`earlier_messages`) and in
    no answer before it (`earlier_answers[i]` answers `earlier_messages[i]`), and a number `message` says it is not
    that the user said first ("是搬到15栋，不是21栋"; "argh it's the 22nd not the 21st" when the user's own message gave
    the 21st and the answer after it repeated it: the class definitions make that the user's earlier input echoed)."""
    if _puts_right_own_number(correction, message, earlier_messages, earlier_answers):
        return Correction(
            CorrectionType.NONE,
            0.0,
            signals=(*correction.signals, "guard:own_earlier_input"),
            probabilities=correction.probabilities,
        )
    return correction


def _puts_right_own_number(
    correction: Correction, message: str, earlier_messages: Sequence[str], earlier_answers: Sequence[str | None]
) -> bool:
    if correction.type is not CorrectionType.FACTUAL:
        return False
    corrected = correction.corrected or ""
    # the numbers the corrected text drops, and those it names as the old value ("ap 是 8 不是 10", "8, not 10")
    negated = {match.group(1) for match in _NEGATED_NUMBER.finditer(corrected)}
    said = [set(NUMBER.findall(earlier)) for earlier in earlier_messages]
    answered = [set(NUMBER.findall(answer or "")) for answer in earlier_answers]
    # the numbers the message says it is not ("it's the 22nd not the 21st"): when the user said one first, before any
    # answer did, the answers that use it took it from them, and it is theirs to put right; unless the message says
    # it again, as still true of something ("不是3年哈。我在这边3年，之前在老东家干了9年": the answer misread it)
    folded = fold(message).text
    stated = Counter(NUMBER.findall(folded))
    replaced = {match.group(1) for match in _NEGATED_NUMBER.finditer(folded) if stated[match.group(1)] == 1}
    if correction.original:
        original = set(NUMBER.findall(correction.original))
        replaced |= original - set(NUMBER.findall(corrected)) | original & negated
    for number in replaced:
        # the first message that says it decides: an answer before a later one came before the first one's too
        first = next((index for index, numbers in enumerate(said) if number in numbers), None)
        if first is not None and not any(number in numbers for numbers in answered[:first]):
            return True
    return False


def _stated(message: str) -> str:
    """What the message states, from its first sentence that does not ask to the end of its last one's statement: the
    fact without the question beside it ("我是金卡，去年十月就升了" without "金卡是不是还能带一个人？")."""
    turn = read(own_words(message), None)
    stated = [sentence for sentence in turn.sentences if not sentence.question]
    if not stated:
        return message.strip()
    end = stated[-1].span.start + stated[-1].stated_end
    return (quote(turn.message, stated[0].span.start, end) or message).strip(" ，,")


def _overlaps(said: str, taught: list[str]) -> bool:
    """Whether folded words hold, or are held in, what a lesson of the message already quotes."""
    return any(said in earlier or earlier in said for earlier in taught)


def ruled_out(message: str, previous_assistant: str | None = None) -> frozenset[str]:
    """The types a look-alike guard (_LOOK_ALIKES) keeps the model alone from finding in `message` (none when the
    rules find a correction): training judges its thresholds by the decision detect makes, guards included."""
    turn = read(own_words(message), previous_assistant)
    if _rules(turn).is_correction:
        return frozenset()
    return frozenset(kind.value for _, holds, types in _LOOK_ALIKES if holds(turn) for kind in types)


def _look_alike(found: Correction, turn: ReadMessage, rules: Correction) -> Correction:
    """`found` (the rules and the model combined), or none where the message is a look-alike (_LOOK_ALIKES) of a type
    the model alone found."""
    if not found.is_correction or rules.is_correction:
        return found
    name = look_alike_of(turn, found.type)
    if name is None:
        return found
    if found.probabilities.get(found.type.value, 0.0) >= LOOK_ALIKE_YIELDS_AT and name not in _FIRM_LOOK_ALIKES:
        return found
    signals = (*found.signals, f"guard:{name}")
    return Correction(CorrectionType.NONE, 0.0, signals=signals, probabilities=found.probabilities)


def look_alike_of(turn: ReadMessage, kind: CorrectionType) -> str | None:
    """The look-alike (_LOOK_ALIKES) that rules `kind` out of the message, if one does."""
    return next((name for name, holds, ruled_out in _LOOK_ALIKES if kind in ruled_out and holds(turn)), None)


def _readings(
    turn: ReadMessage, found: Correction, message: str, previous_assistant: str | None
) -> list[tuple[str, frozenset[str]]]:
    """What the learned model reads: the whole message, and each of its sentences when it has several, with the rule
    families that fired on each. A standing wish followed by a question ("里程按万说吧。那旺季差多少？") reads as a
    question whole; alone, its sentence reads as the wish it is. A question is not read alone, and a user fixing their
    own typo is read whole only: the sentence with the fixed value would read as a correction of the assistant."""
    readings = [(message, families(found, previous_assistant, message))]
    # A message that says it is for this time only ("for this booking only, put it under my sister's name. My own
    # lessons stay under my name") is read whole: its other sentences are about the same one-off.
    if len(turn.sentences) < 2 or rule_outcome(found) == SELF_FIX or turn.for_this_time_only:
        return readings
    for sentence in turn.sentences:
        text = sentence.text.strip()
        # A question is no correction (the rules' guard): alone, "按我们每月用高筋40袋，每月多花多少" read as one.
        if len(text) < _SHORTEST_READING or sentence.asks:
            continue
        reading = _alone(turn, text, previous_assistant)
        if reading is not None:
            readings.append(reading)
            readings += _standing_clauses(turn, sentence.span, previous_assistant)
    return readings


def _alone(turn: ReadMessage, text: str, previous_assistant: str | None) -> tuple[str, frozenset[str]] | None:
    """`text`, a part of the message, as the model reads it alone with the rule families that fired on it; None when
    the rules hold it to be a look-alike (a guard fired and they found nothing): a declined offer or the status quo
    accepted ("no need, gallons is fine"), a one-off request ("just this time make it formal"), reported speech.
    Alone, the model reads the wish words in it as a standing wish."""
    alone = _rules(turn.alone(text))
    # (a condition inside a wish marked standing is the wish's: "whenever you mention a drug, give me the generic
    # name first and put a brand in brackets only if it matters"; so is the document it asks for, every time, and the
    # approval it opens with: "以后你帮我写报价，一律写成…", "Good, but for every member message from now on, sign
    # it off …")
    standing = patterns.marked_standing(text) is not None  # (a folded sentence or clause)
    held = [s for s in alone.signals if s.startswith("guard:") and not (standing and s in _STANDING_KEEPS)]
    if not alone.is_correction and held:
        return None
    return text, families(alone, previous_assistant, text)


_STANDING_KEEPS = frozenset({"guard:conditional", "guard:asks_for_a_document", "guard:approval"})


def _standing_clauses(
    turn: ReadMessage, sentence: Span, previous_assistant: str | None
) -> list[tuple[str, frozenset[str]]]:
    """The clauses of a sentence of several that mark a standing wish (patterns.MARKED_STANDING: 以后, from now on),
    each read alone too: "我平时在香港上班，工资也是港币，…，以后都按港币报吧" is mostly the reason, and read whole the
    wish weighs less than alone."""
    parts = clauses(sentence)
    if len(parts) < 2:
        return []
    texts = (clause.text.strip(" ,，;；") for clause in parts)
    marked = (text for text in texts if len(text) >= _SHORTEST_READING and patterns.marked_standing(text))
    return [reading for text in marked if (reading := _alone(turn, text, previous_assistant)) is not None]


_STANDING = frozenset({CorrectionType.PREFERENCE, CorrectionType.PROCESS})
# What a further wish of a message needs (further_wishes): a stated preference or a binding process (0.85).
FURTHER_WISH_AT = 0.85
# The learned detector's P(preference) or P(process) from which a sentence the rules find nothing in is a further wish.
FURTHER_LEARNED_AT = 0.95


def _learned_wish(learned: Correction, rules: Correction, text: str) -> Correction:
    """A sentence the rules found no stated wish or binding rule in, as a further wish when the learned detector reads
    it alone as one beyond doubt: "Oh and put the customer-ready text first and your notes to me underneath"."""
    kind = max(_STANDING, key=lambda kind: learned.probabilities.get(kind.value, 0.0))
    if learned.probabilities.get(kind.value, 0.0) < FURTHER_LEARNED_AT or _held_as_a_look_alike(learned):
        return rules
    return dataclasses.replace(learned, type=kind, confidence=FURTHER_WISH_AT, corrected=learned.corrected or text)


def _quoted_by_its_step(found: Correction, rules: Correction, turn: ReadMessage) -> Correction:
    """`found` retyped by a model from a wish to a rule of the work or back, with the quote of the rules' step for the
    type chosen when it finds one: the preference step runs first over every sentence, so in "先当着收件人的面拍照…确认
    了才能走退回。还有，你跟我说话别一口一个“亲”" its quote is the later wish, not the rule the model read."""
    if found.type is rules.type or found.type not in _STANDING or rules.type not in _STANDING:
        return found
    step = process if found.type is CorrectionType.PROCESS else preference
    own = step(turn)
    if own is None or own.type is not found.type:
        return found
    # (its step's confidence too: the rules found it, as they would have had the other step not come first)
    return dataclasses.replace(
        found,
        corrected=own.corrected,
        original=own.original,
        topic=own.topic,
        confidence=own.confidence,
        signals=tuple(dict.fromkeys((*own.signals, *found.signals))),
    )


def _next_reading(
    held: Correction,
    others: list[dict[str, float]],
    turn: ReadMessage,
    rules: Correction,
    message: str,
    learned: LearnedDetector,
) -> Correction:
    """When a look-alike guard holds the likeliest reading's type ("上周就是这么报的，结果…" read whole as a fact,
    held: the message asks for a document), the next reading the model is sure of and no guard holds: its sentence
    alone ("以后你帮我写报价，一律写成'基础价X元起'…", a standing wish). `held` when there is none."""
    for probabilities in others:
        candidate = combine(rules, message, probabilities, learned.combination)
        if candidate.is_correction and not candidate.unsure:
            looked = _look_alike(candidate, turn, rules)
            if looked.is_correction:
                return looked
    return held


def _held_as_a_look_alike(found: Correction) -> bool:
    """A look-alike guard (_LOOK_ALIKES) made the detection none ("Fine." alone only approves)."""
    return any(signal == f"guard:{name}" for name, _, _ in _LOOK_ALIKES for signal in found.signals)


def _marks_a_standing_rule(turn: ReadMessage) -> bool:
    text = turn.message.text
    return bool(patterns.marked_standing(text) or patterns.rule_like(text))


def _rules(turn: ReadMessage) -> Correction:
    """The rules' finding, steps 1-6, without its condition."""
    self_fix = patterns.first(patterns.SELF_CORRECTION, turn.message.text)
    if self_fix:
        return Correction(CorrectionType.NONE, 0.0, signals=(f"guard:{self_fix[0]}",))
    if turn.repairs_own_words:
        return Correction(CorrectionType.NONE, 0.0, signals=("guard:self_typo_repair",))
    for step in (preference, process, standing_wish, explicit, implicit):
        found = step(turn)
        if found is not None:
            if found.type in _STANDING and turn.for_this_time_only and not _marks_a_standing_rule(turn):
                # "Just for this issue, two sentences max": a wish or a rule for the one at hand, not a standing one,
                # unless the message marks one beyond doubt ("这次先这样，以后先审批再改", "流程要求：必须…"): in the
                # training corpus no message with a one-off marker and no such mark is a preference or a process.
                return Correction(CorrectionType.NONE, 0.0, signals=(*found.signals, "guard:one_off_wish"))
            return found
    guards = [f"guard:{guard}" for sentence in turn.sentences for guard in sentence.guards]
    return Correction(CorrectionType.NONE, 0.0, signals=tuple(dict.fromkeys(turn.signals + guards)))


# ------------------------------------------------------------------------------------------------ condition
def _with_condition(found: Correction, turn: ReadMessage) -> Correction:
    # The condition must qualify the correction itself: in a message of several requests ("叫我老王。另外以后对比方案
    # 的时候给我一张表"), another sentence's "…的时候" is not this correction's context.
    text, offset = turn.message.text, 0
    corrected = fold(found.corrected).text if found.corrected else ""
    home = next((sentence for sentence in turn.sentences if corrected and corrected in sentence.text), None)
    if home is not None:
        text, offset = home.text, home.span.start
    for condition, table in (
        (Condition.TEMPORAL, patterns.TEMPORAL),
        (Condition.CONTEXT_SPECIFIC, patterns.CONTEXT),
        (Condition.SOURCE_SPECIFIC, patterns.SOURCE),
    ):
        hit = patterns.first(table, text)
        if hit and condition is Condition.TEMPORAL and not turn.for_this_time_only:
            # 这次 in a sentence beside one marked standing ("…以后我的话术里一个都别放。另外这次是线路故障…") says
            # what this case is, not that the wish holds for this conversation only
            hit = None if this_conversation_only(hit[1].group()) else hit
        if hit:
            name, match = hit
            start, end = match.span()
            detail = quote(turn.message, start + offset, end + offset)
            return dataclasses.replace(
                found,
                condition=condition,
                condition_detail=detail or None,
                signals=(*found.signals, f"condition:{name}"),
            )
    return found
