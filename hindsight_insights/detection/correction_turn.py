"""A user message and the assistant turn before it, read once for the correction detector: sentences with the
guards that hold on them (question, conditional, reported speech, agreement…), and quoting helpers that return the
user's and the assistant's own words."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from hindsight_insights.detection import correction_patterns as patterns
from hindsight_insights.detection.quantities import Quantity, anchors, quantities
from hindsight_insights.detection.text import RAW_SENTENCE_END, Folded, Span, clauses, fold, has_han, sentences

# The rest of a sentence after a word (to its end), whether it asks, and how near the start "done" opens a report.
_SENTENCE_REST = re.compile(r"[。！!.;；\n]")
_ASKS = re.compile(r"[?？吗]")
_DONE_AT_START = 40
# How many English words of the advice a failure report names back when no word says it was done.
_NAMED_BACK = 2


def _echoes(shared: frozenset[str], chinese: int = 2) -> bool:
    """Enough of the assistant's content words (`shared`, from quantities.anchors) to be about its turn: one English
    word, or `chinese` Chinese bigrams."""
    return bool(shared) and (len(shared) >= chinese or any(word.isascii() for word in shared))


@dataclass
class Sentence:
    span: Span
    question: bool
    conditional: bool
    reported_at: int  # offset in the sentence where reported speech starts; len(text) when none
    guards: list[str] = field(default_factory=list)
    tail_at: int = -1  # offset of a last clause that asks (…，能周四送吗), when the rest states; -1 when none
    asks: bool = False  # the sentence or its last clause asks (a question read whole, or a statement ending in one)
    manner: bool = False  # a question, then how to answer it (…能省多少，说个大概就行)

    @property
    def stated_end(self) -> int:
        """Where the user's own statement ends: before reported speech and before a trailing question clause."""
        return min(self.reported_at, self.tail_at if self.tail_at >= 0 else len(self.text))

    @property
    def text(self) -> str:
        return self.span.text


@dataclass
class ReadMessage:
    """The message and the previous assistant turn, folded and split once."""

    message: Folded
    previous: Folded | None
    sentences: list[Sentence]
    signals: list[str] = field(default_factory=list)

    @property
    def zh(self) -> bool:
        return has_han(self.message.source)

    @cached_property
    def for_this_time_only(self) -> bool:
        """A sentence says the message is for this time only (patterns.ONE_TIME: "just this time", 这次), and no other
        sentence marks a wish or a rule standing: "…这几个词以后我的话术里一个都别放…。另外这次是10kV线路故障抢修，…？"
        says what this case is beside a wish for every case. (Of the 9 training messages with both, the 5 where they are
        in sentences apart are all processes; "这次先给我看汇总，明细下次再说" stays one.)"""
        once = [sentence for sentence in self.sentences if "one_time" in sentence.guards]
        others = (sentence for sentence in self.sentences if "one_time" not in sentence.guards)
        return bool(once) and not any(patterns.marked_standing(sentence.text) for sentence in others)

    @property
    def declines(self) -> bool:
        """A sentence declines an offer or lets it go (patterns.DECLINE: "不用了，谢谢", "算了", "never mind")."""
        return any("decline" in sentence.guards for sentence in self.sentences)

    @property
    def declines_an_offer(self) -> bool:
        """The message declines (declines) what the assistant's turn offered (patterns.OFFERS_MORE: "Would you like a
        comparison checklist?" "Perfect. No need for that comparison checklist, I'll just ring round a few.")."""
        return self.declines and self.previous is not None and bool(patterns.OFFERS_MORE.search(self.previous.text))

    @cached_property
    def offered(self) -> bool:
        """The assistant's turn closes by offering more as a question (patterns.closes_with_an_offer: "Shall I add
        where the gate is? I could also make a printable sign.")."""
        return self.previous is not None and patterns.closes_with_an_offer(self.previous.text)

    @property
    def relays_a_claim_on_the_user(self) -> bool:
        """Someone else says the user's side got something wrong (patterns.CLAIM_ON_THE_USER: "Dev reckons we got the
        scoring wrong last month"): no fact of the assistant's answer is put right."""
        return patterns.CLAIM_ON_THE_USER.search(self.message.text) is not None

    @cached_property
    def reports_failed_advice(self) -> str | None:
        """The rule (patterns.ADVICE_FAILED) by which the message reports that the assistant's advice was followed and
        failed: the problem persists or got worse, outside a question, after words saying it was done (or "like you
        said"), and the words before it echo the advice (a content word of the assistant's turn; two Chinese ones
        unless it was done at the message's start). A message that thanks or praises says it worked; one that
        declines (算了，手绘不弄了) lets the advice go untried."""
        previous = self.previous
        text = self.message.text
        if previous is None or not patterns.ADVISES.search(previous.text) or patterns.ADVICE_WORKED.search(text):
            return None
        if self.declines:
            return None
        if patterns.ADVICE_NOT_TRIED.search(text):
            return None
        as_advised = patterns.AS_ADVISED.search(text) is not None
        for name, pattern in patterns.ADVICE_FAILED:
            done = patterns.ADVICE_DONE[name]
            for match in pattern.finditer(text):
                rest = _SENTENCE_REST.split(text[match.end() :], maxsplit=1)[0]
                if _ASKS.search(rest):
                    continue
                before = text[: match.start()]
                if as_advised:
                    return name
                shared = anchors(before) & self.previous_anchors
                if done.search(before):
                    if _echoes(shared, chinese=1 if done.search(before[:_DONE_AT_START]) else 2):
                        return name
                    # (or the amount advised, in English: "Added the 200 g, they still spread like pancakes"; a
                    # Chinese 一年 or 60 分钟 is as often the span of something else)
                    if not self.zh and any(
                        quantity.end <= match.start()
                        and any(
                            quantity.same_value(advised) and quantity.unit == advised.unit
                            for advised in self.previous_quantities
                        )
                        for quantity in self.message_quantities
                    ):
                        return name
                # (no word says it was done, but the advice is named back in English before "still": "Bricks on all
                # four corners, still found three of them rolled", "Two tile vents in since last month. Felt's still
                # dripping"; Chinese failure words, 还是 and 反而 above all, are too often about something else)
                elif match.group() == "still" and sum(word.isascii() for word in shared) >= _NAMED_BACK:
                    return name
        return None

    @cached_property
    def denies_what_was_described(self) -> str | None:
        """The rule (patterns.NOT_THERE) by which the message says that what the assistant described is not there
        ("There isn't a side entrance on Wharf Lane", 根本没有什么酒窖包间): outside a sentence that asks, with a
        content word of the assistant's turn near the denial (one English word, or two Chinese bigrams)."""
        if self.previous is None:
            return None
        for sentence in self.sentences:
            if sentence.asks or sentence.conditional:
                continue
            for name, pattern in patterns.NOT_THERE:
                for match in pattern.finditer(sentence.text):
                    near = sentence.text[
                        max(match.start() - patterns.NOT_THERE_BEFORE, 0) : match.end() + patterns.NOT_THERE_AFTER
                    ]
                    if _echoes(anchors(near) & self.previous_anchors):
                        return name
        return None

    @property
    def answers_an_offer(self) -> bool:
        """The message answers an offer (offered) and marks nothing standing: it says which of the offer to take
        ("Just put 'the Mill Road gate', no hours. Skip the sign."), about this piece of work. Of the 212 training
        messages after such an offer that mark nothing standing, 205 are none and 3 preferences, each about the
        assistant's own manner ("一次问一个吧"); a standing wish there marks itself ("from now on …")."""
        return self.offered and not self.marks_a_standing_wish

    @property
    def continues_the_task(self) -> bool:
        """A sentence carries the task on to another thing (patterns.CONTINUES_THE_TASK: "now the same for March"), or
        the message opens with the next item (patterns.NEXT_ITEM: "fine. next: …"), and no sentence marks a standing
        wish: "… so from now on grades in Font only. redo the spread?" asks for the
        redo under a wish that stands. A short message: an opening word, a remark, the request (the 11 training
        messages that carry the task on have one or two sentences); in a longer one the request closes what the
        sentences before it teach ("Any FNOL where the customer mentions an injury … gets transferred …. I'm the motor
        claims team leader, that's our procedure. … Redo the script and a file note for this call.")."""
        if self.marks_a_standing_wish or len(self.sentences) > _TASK_SENTENCES:
            return False
        if patterns.NEXT_ITEM.search(self.message.text):
            return True
        return any("continues_the_task" in sentence.guards for sentence in self.sentences)

    @property
    def asks_for_a_task(self) -> bool:
        """The message asks for a task as a question (patterns.TASK_QUESTION: "Can you explain what this README wants
        me to do?"), ends asking, and marks nothing as standing ("could you always give doses per kg?" does)."""
        return bool(self.sentences) and self.sentences[-1].asks and self._unmarked(patterns.TASK_QUESTION)

    @property
    def only_asks(self) -> bool:
        """Every sentence asks or approves, the last asks plainly (a question mark, 吗, an opening question word:
        "whats the usual free time at rotterdam, roughly"), and nothing is marked standing: a question, no wish."""
        if not self.sentences or self.marks_a_standing_wish:
            return False
        last = self.sentences[-1]
        # (asked from its start or in one clause: "Dogs with a bite history only go to Priya, can you move him?"
        # states a rule before it asks)
        opens = patterns.QUESTION_EN.search(last.text) or patterns.QUESTION_UNMARKED_EN.search(last.text)
        plain = bool(opens) or len(re.split(r"[,，、;；]", last.text.strip(" ?？.。!！"))) == 1 or last.manner
        return plain and last.asks and all(s.asks or "approval" in s.guards for s in self.sentences)

    @property
    def for_now(self) -> bool:
        """The message asks for something for now (patterns.FOR_NOW: "just a quick list for now", 先这样), and marks
        nothing as standing."""
        return self._unmarked(patterns.FOR_NOW)

    @property
    def relays_a_request(self) -> bool:
        """The message passes on someone else's request or wish (patterns.RELAYS_A_REQUEST: "They also asked for a
        late table nearby"), and marks nothing as standing."""
        return self._unmarked(patterns.RELAYS_A_REQUEST)

    @property
    def lets_it_go(self) -> bool:
        """The message drops something ("never mind JP, client's dropping Japan", 算了，先这样, "was going to ask for
        the chart too but never mind"): patterns.LETS_IT_GO, and nothing marked standing ("never mind, from now on just
        the total")."""
        return self._unmarked(patterns.LETS_IT_GO)

    def _unmarked(self, pattern: re.Pattern[str]) -> bool:
        """`pattern` is in the message, and nothing in it is marked standing."""
        return pattern.search(self.message.text) is not None and not self.marks_a_standing_wish

    @cached_property
    def marks_a_standing_wish(self) -> bool:
        """The message marks something as standing (patterns.MARKED_STANDING: 以后, from now on, always; "never mind"
        marks nothing)."""
        return bool(patterns.marked_standing(self.message.text))

    @property
    def fixes_own_input(self) -> bool:
        """The user puts right their own earlier input (patterns.SELF_CORRECTION: "sorry, I meant …", 我刚才打错了), or
        what they said a moment before in the message (repairs_own_words)."""
        return patterns.first(patterns.SELF_CORRECTION, self.message.text) is not None or self.repairs_own_words

    @cached_property
    def repairs_own_words(self) -> bool:
        """A hesitation and a "no" after the user's own words (patterns.SELF_REPAIR: "下周一上。啊不对，下周三"), where
        those words are not the assistant's: no number of theirs is in its turn, nor half their words, and what the
        user says instead, in the sentence of the "no", is not marked standing. "你写的20块……不对" takes back the
        assistant's value, and a "不对" that opens the message answers it."""
        said = self.previous.text if self.previous is not None else ""
        for cue in patterns.SELF_REPAIR.finditer(self.message.text):
            instead = RAW_SENTENCE_END.split(self.message.text[cue.end() :], maxsplit=1)[0]
            if patterns.marked_standing(instead):
                continue  # what the user says instead is a standing wish ("啊不对，以后都先写合计"): it stands
            own = re.split(r"[.!?。\n]", re.sub(r"[\s,.!?。]+$", "", self.message.text[: cue.start()]))[-1].strip()
            if not own:
                continue
            numbers = re.findall(r"\d+", own)
            words = re.findall(r"[\u4e00-\u9fff]{2}|[a-z]{4,}", own)
            if any(number in said for number in numbers):
                continue
            if not words or sum(word in said for word in words) * 2 < len(words):
                return True
        return False

    @property
    def asks_a_hypothetical(self) -> bool:
        """A sentence asks about a case that has not happened ("如果哪天我说错了, 你会纠正我吗?") and no sentence
        marks a standing rule (以后, always, 必须)."""
        hypothetical = any(
            "conditional" in sentence.guards and ("question" in sentence.guards or "tail_question" in sentence.guards)
            for sentence in self.sentences
        )
        text = self.message.text
        # (a wish stated in a sentence of its own before the question stands: "I'd be grateful if you didn't point
        # me to phone numbers at all. ... How would I rearrange it if my daughter can't drive me?")
        stated_apart = any(
            not sentence.question
            and (patterns.DIRECTIVE.search(sentence.text) or patterns.REQUEST_STATED.search(sentence.text))
            for sentence in self.sentences
        )
        marked = patterns.marked_standing(text) or patterns.rule_like(text)
        return hypothetical and not marked and not stated_apart

    @property
    def asks_for_a_document(self) -> bool:
        """A sentence asks for something to be written (patterns.ASKS_FOR_A_DOCUMENT: "draft her a reply saying …"):
        the values in it are the document's."""
        return any("asks_for_a_document" in sentence.guards for sentence in self.sentences)

    @property
    def only_approves(self) -> bool:
        """The message approves or thanks and says nothing else ("Lovely. Thanks!", "好的，谢谢", "ok thx"): at most
        one word (two Chinese characters) is left beside patterns.APPROVAL. Not a name it approves ("Jim is fine")."""
        text = self.message.text
        if not any("approval" in sentence.guards for sentence in self.sentences) or _APPROVES_A_NAME.search(text):
            return False
        rest = _FILLER.sub(" ", patterns.APPROVAL.sub(" ", text)).strip()
        return len(rest.replace(" ", "")) <= 2 if has_han(rest) else len(rest.split()) <= 1

    @property
    def answers_a_question(self) -> bool:
        """The assistant's turn asked a question: the message is likely its answer ("intermediate, 去年上过一周课" after
        "请问你们的水平是 beginner 还是 intermediate? 我们按水平分组上课。"). A draft with a blank to fill asks too
        ("page 12." after "…(Tuesday, page [x]) said …"): the value fills it, it puts nothing right."""
        if self.previous is None:
            return False
        if _BLANK.search(self.previous.text):
            return True
        if not ("?" in self.previous.text or "？" in self.previous.text):
            return False
        # (not one that asks to confirm its own assumption: "你们总部在南山对吧？" "总部去年搬到前海了" puts it right)
        return not _CONFIRMATION.search(self.previous.text)

    @cached_property
    def only_repeats_the_assistant(self) -> bool:
        """The message says nothing the assistant's turn did not ("周日上午吧" after "周六下午和周日上午有空",
        "Celsius." after "Celsius or Fahrenheit?"): a choice among its options or an echo, no new value or wish."""
        if self.previous is None:
            return False
        said, previous = _FILLER.sub(" ", self.message.text).strip(), _FILLER.sub(" ", self.previous.text)
        if has_han(said):  # Chinese is written without spaces: compare without them
            said, previous = said.replace(" ", ""), previous.replace(" ", "")
            return len(said) >= 2 and said in previous
        return len(said) >= 2 and re.search(rf"(?<![a-z0-9]){re.escape(said)}(?![a-z0-9])", previous) is not None

    @cached_property
    def message_quantities(self) -> list[Quantity]:
        return quantities(self.message.text, clause_spans(self.message))

    @cached_property
    def previous_anchors(self) -> frozenset[str]:
        return anchors(self.previous.text) if self.previous else frozenset()

    @cached_property
    def previous_stated_anchors(self) -> frozenset[str]:
        """The content words of the assistant's turn outside its questions (sentences ending with a question mark,
        full-width ones folded to it)."""
        if self.previous is None:
            return frozenset()
        stated = (span.text for span in sentences(self.previous.text) if not span.text.rstrip().endswith("?"))
        return anchors(" ".join(stated))

    @cached_property
    def previous_quantities(self) -> list[Quantity]:
        return quantities(self.previous.text, clause_spans(self.previous)) if self.previous else []

    def alone(self, text: str) -> ReadMessage:
        """`text` (one of the message's sentences) read against the same previous turn, which is folded and analysed
        once for all of them: its anchors and quantities are shared, not computed again per sentence."""
        turn = ReadMessage(fold(text), self.previous, [])
        turn.sentences = [analyse(span) for span in sentences(turn.message.text)]
        for name in ("previous_anchors", "previous_stated_anchors", "previous_quantities"):
            turn.__dict__[name] = getattr(self, name)
        return turn


# A document the user pasted to ask about: a code fence (a README, a config), lines quoted with ">", or whatever
# follows a separator line (---, ===) or a forwarded e-mail's header (From:, 发件人：) up to a closing separator. Those
# are a third party's words; an instruction in them (planted or not) is no lesson from this user.
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_QUOTED_LINE = re.compile(r"^[ \t]*>.*$\n?", re.M)
_DOCUMENT_START = re.compile(
    r"^[ \t]*(?:-{3,}|={3,}|_{3,}|\*{3,}|-+\s*(?:original message|forwarded message)\s*-+|"
    r"(?:from|sent|subject|发件人|主题)\s*[:：]).*$",
    re.I | re.M,
)
_SEPARATOR = re.compile(r"^[ \t]*(?:-{3,}|={3,}|_{3,}|\*{3,})[ \t]*$", re.M)


def own_words(message: str) -> str:
    """`message` without what the user pasted into it (above): the words the user wrote. A paragraph that opens the
    next item of the task ("Next one: power failure at the Marsh Lane exchange, …", patterns.NEXT_ITEM) ends them: the
    values from there on are the next task's, no correction of the answer before."""
    text = _QUOTED_LINE.sub("", _FENCE.sub("", message))
    start = _DOCUMENT_START.search(text)
    while start is not None and text.count("\n", start.end()) >= 2:  # a document runs over several lines
        close = _SEPARATOR.search(text, start.end() + 1)
        text = text[: start.start()] + (text[close.end() :] if close else "")
        start = _DOCUMENT_START.search(text, start.start())
    next_item = _NEXT_ITEM_PARAGRAPH.search(text)
    return (text[: next_item.start()] if next_item and text[: next_item.start()].strip() else text).strip()


# A paragraph of its own (after a blank line) that opens with the next item: patterns.NEXT_ITEM, not at the start.
_NEXT_ITEM_PARAGRAPH = re.compile(r"\n[ \t]*\n(?=" + patterns.NEXT_ITEM.pattern.removeprefix("^") + ")", re.I)


def read(message: str, previous: str | None) -> ReadMessage:
    """Fold both turns and read the message's sentences."""
    turn = ReadMessage(fold(message), fold(previous) if previous else None, [])
    turn.sentences = [analyse(span) for span in sentences(turn.message.text)]
    return turn


# ------------------------------------------------------------------------------------------------ sentences
def analyse(span: Span) -> Sentence:
    """A sentence with its guards: whether it asks (a final '?', 吗, a question word in its last clause), whether
    only its last clause asks, whether it is conditional, where reported speech starts, and the look-alike guards."""
    text = span.text
    body = text.rstrip(" .。!?")
    question = text.rstrip().endswith("?") or bool(patterns.QUESTION_PARTICLE.search(body))
    parts = re.split(r"[,、]", body)
    # 呢 also ends statements (手册上写着呢); a question word in the last clause asks (账号被锁了怎么办).
    question = question or (
        not text.rstrip().endswith(("。", "!")) and bool(patterns.QUESTION_WORD_ZH.search(parts[-1]))
    )
    # A question and, after it, how to answer it ("那跟油车比一年能省多少，说个大概就行"): it asks, for this answer.
    manner = (
        len(parts) > 1
        and bool(patterns.ANSWER_MANNER.search(parts[-1]))
        and any(patterns.QUESTION_WORD_ZH.search(part) for part in parts[:-1])
        and not patterns.marked_standing(text)
    )
    question = question or manner
    asks = question or bool(patterns.QUESTION_UNMARKED_EN.search(body))
    tail_only = len(parts) > 1 and has_han(parts[-1]) and not patterns.QUESTION_EN.search(text)
    rhetorical_tail = bool(patterns.RHETORICAL_TAIL.search(parts[-1]))
    if question and tail_only and rhetorical_tail and not any(patterns.QUESTION_WORD_ZH.search(p) for p in parts[:-1]):
        # 我是铂金会员啊，上个月就升级了，你们系统没更新吗: a last clause that asks with a negation complains; the
        # others state. A plain one asks (我航班11点半落地，来得及吗): what comes before it is the question's context.
        question = False
    reported = patterns.first(patterns.REPORTED, text)
    if reported and _A_CASE_BEFORE.search(text[: reported[1].start()]):
        reported = None  # "any FNOL where the customer mentions an injury …": the case a rule is about, not a report
    sentence = Sentence(span, question, bool(patterns.CONDITIONAL.search(text)), len(text), asks=asks, manner=manner)
    if reported:
        sentence.reported_at = reported[1].start()
        sentence.guards.append(reported[0])
    if question:
        sentence.guards.append("question")
    elif (tail_only and text.rstrip().endswith("?")) or patterns.QUESTION_PARTICLE.search(body):
        sentence.guards.append("tail_question")
        sentence.tail_at = len(body) - len(parts[-1])
    if sentence.conditional:
        sentence.guards.append("conditional")
    for name, pattern in (
        ("rhetorical", patterns.RHETORICAL),
        ("approval", patterns.APPROVAL),
        ("decline", patterns.DECLINE),
        ("one_time", patterns.ONE_TIME),
        ("asks_for_a_document", patterns.ASKS_FOR_A_DOCUMENT),
        ("new_request", patterns.NEW_REQUEST),
        ("continues_the_task", patterns.CONTINUES_THE_TASK),
        ("doubt", patterns.DOUBT),
    ):
        if pattern.search(text):
            sentence.guards.append(name)
    return sentence


# The most sentences a message that carries the task on has (continues_the_task).
_TASK_SENTENCES = 3

# What opens a case (where, when, if, 如果, 凡是), just before a frame of reported speech: the frame names the case.
_A_CASE_BEFORE = re.compile(
    r"(\b(?:where|when|whenever|if|once|unless|in case)\s+(?:an?|the|any)?\s*|如果|要是|假如|万一|凡是|只要)$"
)

# A blank the assistant left in a draft for the user to fill: [x], [number], [your name]. (Not a citation, [1].)
_BLANK = re.compile(r"\[(?:x+|…|\.{3}|[a-z]+(?: [a-z]+){0,2})\]")

# A question that asks to confirm what the assistant assumed ("…, right?", "…对吧？"): its answer may put it right.
_CONFIRMATION = re.compile(
    r"(对吧|是吧|对吗|是吗|没错吧|吧\s*[?？]|"
    r"\b(?:right|correct|isn'?t it|aren'?t you|don'?t you|didn'?t you|is that right|yes or no)\s*[?？])"
)

# A word the approval is about: a name or an option chosen ("Jim is fine", "Tuesday works"), not an approval alone.
_APPROVES_A_NAME = re.compile(r"^\W*[a-z]+\s+(?:is|are|works)\s+(?:fine|good|ok|okay|perfect|great)\b")

# What carries no content in a short reply: punctuation and the sentence-final particles (吧, 呢, 啊, 吗 …).
_FILLER = re.compile(r"[\W_吧呢啊呀哦嗯的了吗]+")

# A connective that opens a quote joins it to what came before; it is not part of what the user asked for.
_CONNECTIVE = re.compile(r"\s*(另外|此外|而且|并且|\b(also|and also|and|besides|plus|oh and)\b)\W*", re.IGNORECASE)


def quote(folded: Folded, start: int, end: int) -> str | None:
    """The user's own words for folded[start:end], without an opening connective (另外, also)."""
    lead = _CONNECTIVE.match(folded.text, start, end)
    if lead and lead.end() < end:
        start = lead.end()
    return folded.quote(start, end) or None


def clause_of(sentence: Span, position: int) -> Span:
    """The clause of `sentence` holding absolute offset `position`."""
    for clause in clauses(sentence):
        if clause.start <= position < clause.end:
            return clause
    return sentence


def short(text: str, zh: bool) -> str | None:
    if not text:
        return None
    text = text.strip(" ,.;:!?，。；：！？")
    if zh:
        return text[:20]
    return " ".join(text.split()[:6]).strip(" ,.;:!?")


def clause_spans(folded: Folded) -> list[tuple[int, int]]:
    return [(c.start, c.end) for s in sentences(folded.text) for c in clauses(s)]


def quote_previous(turn: ReadMessage, words: str) -> str | None:
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
    return quote(previous, best[1].start, best[1].end) if best else None


def original_overlap(turn: ReadMessage, text: str) -> str | None:
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
    return quote(previous, best[1].start, best[1].end) if best else None


def quote_previous_at(turn: ReadMessage, quantity: Quantity) -> str | None:
    assert turn.previous is not None
    for sentence in sentences(turn.previous.text):
        if sentence.start <= quantity.start < sentence.end:
            clause = clause_of(sentence, quantity.start)
            return quote(turn.previous, clause.start, clause.end)
    return None


# Fillers, pronouns and function words before a subject: a possessive's 的 (我的手机 is about 手机) and "I said
# already" (都说了是… names no subject) included.
_LEADING = re.compile(
    r"^(\W|no\b|nope\b|actually\b|错了|搞错了|不对|其实|都说了|说了|我们|我|你们|你|他们|的|这款|这个(?!月|周|星期|季度|礼拜)|那个|"
    r"那间|这间|该|本|the\b|our\b|my\b|your\b|their\b|it\b|they\b|we\b|we're\b|this\b|that\b|is\b|are\b|was\b|"
    r"now\b|现在|已经|早就)+"
)
# A word that only points at something (这是新规定 is about nothing the words name): never a subject.
_ONLY_POINTS = frozenset({"这", "那", "它", "这里", "那里", "这些", "那些", "this", "that", "it", "these", "those"})
_TRAILING = re.compile(
    r"(\W|是|为|有|就|只能|才|改到|改成|换成|现在|已经|了|的|at|to|on|in|for|by|is|are|was|were|now|moved|changed|"
    r"about|around|of|from|starts|start|costs?|takes?)+$"
)


def head(folded: Folded, clause: Span, at: int | None = None) -> str | None:
    """What a statement is about: the words before its copula (or before its value, at absolute offset `at`),
    without fillers, pronouns, articles and trailing function words; None when nothing short is left."""
    text = clause.text
    limit = len(text) if at is None else at - clause.start
    # A change verb ends the subject as a copula does (退货地址已经改成… is about 退货地址).
    copula = re.search(
        r"(不是|是|为|已经改|改成|改为|换成|变成|调成)|\b(is|are|was|were|'s|'re|changed to|moved to)\b", text[:limit]
    )
    lead = text[: copula.start() if copula else limit]
    core = _TRAILING.sub("", _LEADING.sub("", lead.strip()))
    if core and len(core) <= 24 and re.search(r"\w", core) and core.lower() not in _ONLY_POINTS:
        offset = clause.start + lead.find(core)
        return folded.quote(offset, offset + len(core)) or None
    return None


def subject(turn: ReadMessage, clause: Span, value: Quantity | None = None) -> str | None:
    """The subject before the copula or the value; else the noun right after the value (一级能效 -> 能效)."""
    found = head(turn.message, clause, value.start if value else None)
    if found:
        return found
    if value is not None:
        after = re.match(
            r"\s*([\u4e00-\u9fff]{1,4}?)(的|了|啊|呢|$)|\s*([a-z][a-z-]+)", turn.message.text[value.end : clause.end]
        )
        if after:
            start = value.end + after.start(1 if after.group(1) else 3)
            end = value.end + after.end(1 if after.group(1) else 3)
            return turn.message.quote(start, end) or None
    return short(turn.message.quote(clause.start, clause.end), turn.zh)


def previous_subject(turn: ReadMessage, original: str | None) -> str | None:
    """The subject of the assistant's replaced statement, when the user's own clause has none (错了，是30天内)."""
    if not original:
        return None
    folded = fold(original)
    return head(folded, Span(folded.text, 0), _first_value_at(folded.text))


def _first_value_at(text: str) -> int | None:
    found = quantities(text, [(0, len(text))])
    return found[0].start if found else None
