"""The rule each kind of correction becomes: prompts/corrections/action.{zh,en}.md.j2 rendered through wording()."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime

import pytest

from hindsight_insights.config import Settings
from hindsight_insights.detection.correction_types import Correction, CorrectionType
from hindsight_insights.detection.corrections import detect
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.governance.lessons import (
    every_wish,
    lesson_for,
    lesson_paragraphs,
    only_wishes,
    whole_rule,
    with_its_value,
    wording,
)
from hindsight_insights.models import Turn


@pytest.mark.parametrize(
    ("message", "previous", "expected"),
    [
        (
            "不对，退货地址已经改成杭州市余杭区良睦路 1399 号了。",
            "请寄到上海市嘉定区宝安公路 2999 号售后部。",
            "当话题涉及「退货地址」时，以用户的纠正为准：「退货地址已经改成杭州市余杭区良睦路 1399 号了」；"
            "不要再说「请寄到上海市嘉定区宝安公路 2999 号售后部」。",
        ),
        (
            "别叫我王老师，叫我老王就行。",
            "王老师您好！",
            "当你回复这位用户时，遵循其要求：「别叫我王老师，叫我老王就行」。",
        ),
        (
            "That did nothing. You should check the upstream app's logs before restarting nginx; the app had crashed.",
            "Try restarting nginx with `sudo systemctl restart nginx`.",
            'Follow the process the user gave: "You should check the upstream app\'s logs before restarting nginx".',
        ),
        (
            "Please always use percentages, not decimals.",
            "The refund rate was 0.034.",
            'When you answer this user, follow their request: "Please always use percentages, not decimals".',
        ),
    ],
)
def test_each_correction_renders_its_rule_in_the_users_language(message: str, previous: str, expected: str) -> None:
    correction = detect(message, previous)
    assert wording(correction, message, Settings()).action == expected


@pytest.mark.parametrize(
    ("message", "topic", "corrected", "expected"),
    [
        (
            "不对，这是新规定。",
            "这是新规定",
            "这是新规定",
            "以用户的纠正为准：「这是新规定」；不要再说「按老规定办」。",
        ),
        (
            "No, it is the new rule.",
            "the new rule",
            "The new rule",
            'Go by the user\'s correction: "The new rule"; do not say "按老规定办" again.',
        ),
        ("不对，新规定是发到总部。", "新规定", "新规定是发到总部", None),
    ],
)
def test_a_factual_rule_without_a_subject_apart_from_its_words_does_not_repeat_them(
    message: str, topic: str, corrected: str, expected: str | None
) -> None:
    correction = Correction(CorrectionType.FACTUAL, 0.9, corrected=corrected, original="按老规定办", topic=topic)
    action = wording(correction, message, Settings()).action
    if expected is None:  # a subject apart from the words: the rule names it
        assert action.startswith(f"当话题涉及「{topic}」时")
    else:
        assert action == expected


def test_a_factual_rule_names_what_changed_not_the_whole_clause() -> None:
    message = "不对，退货地址已经改成杭州市余杭区良睦路 1399 号了。"
    assert detect(message, "请寄到上海市嘉定区宝安公路 2999 号售后部。").topic == "退货地址"
    message = "No, the office address changed to 12 Harbour Road last week."
    assert detect(message, "The office is at 3 Main Street.").topic == "office address"


def test_a_follow_up_request_is_quoted_without_its_connective_and_one_per_row_is_no_one_off() -> None:
    # "一行一个维度" describes a standing format; "另外" only joins the request to the one before it.
    correction = detect("另外以后对比方案的时候直接给我一张表，一行一个维度。", "好的老王！")
    assert (correction.type.value, correction.topic) == ("preference", "输出格式")
    # (the clause after the directive says what the table holds: it is part of the wish)
    assert correction.corrected == "以后对比方案的时候直接给我一张表，一行一个维度"
    assert correction.condition_detail == "以后对比方案的时候"
    english = detect("Also, please always use percentages, not decimals.", "The refund rate was 0.034.")
    assert english.corrected == "please always use percentages, not decimals"


@pytest.mark.parametrize(
    ("message", "previous", "in_rule", "not_in_rule"),
    [
        # A complaint, then the standing wish: the rule carries both, not only the complaint.
        ("太啰嗦了。以后先说结论，再列最多三条理由", "这个问题要从几个方面来看……", "先说结论", None),
        # A question after the wish is not part of it.
        ("别叫我王老师，叫我老王就行。杭州上周涨了多少？", "王老师您好！", "老王", "杭州"),
        (
            "Way too long. From now on give me the commands first and skip the theory.",
            "Kubernetes pods are the smallest deployable unit...",
            "commands first",
            None,
        ),
    ],
)
def test_a_preferences_rule_carries_every_wish_of_the_message(
    message: str, previous: str, in_rule: str, not_in_rule: str | None
) -> None:
    found = detect(message, previous)
    assert found.type.value == "preference"
    action = wording(found, message, Settings()).action
    assert in_rule in action and (not_in_rule is None or not_in_rule not in action)


def test_a_lessons_observation_and_evidence_are_the_paragraph_that_holds_it() -> None:
    message = (
        "Matinees moved to 14:30 from this season, doors at 14:00.\n\n"
        "Back end: I log into boxoffice.example.org and it says 'session expired'. Any idea?"
    )
    said = lesson_paragraphs(message, "Matinees moved to 14:30 from this season")
    assert said == "Matinees moved to 14:30 from this season, doors at 14:00."
    # one paragraph, or words found in none: the whole message
    assert lesson_paragraphs("不对，是 14:30。", "是 14:30") == "不对，是 14:30。"
    assert lesson_paragraphs(message, "something else") == message


def test_a_wish_in_a_clause_among_reasons_stays_in_the_rule() -> None:
    """The second wish sits in a sentence of reasons and a story ("上次有个客户的 CIO 说…"): read whole, that
    sentence is no wish; its clause "draft 里别用感叹号" is, and the rule runs to it. The question after it stays
    out."""
    message = (
        "ok 有用. 但两件事, 以后都按这个来: 你跟我解释的部分用中文, 我看英文长段落很慢. "
        "还有我们的客户都是企业的 IT admin, draft 里别用感叹号, 上次有个客户的 CIO 说我们的邮件 sounds like a toy. "
        "那 SAML tracer 的截图要提醒他们打码哪些字段?"
    )
    rule = every_wish("以后都按这个来: 你跟我解释的部分用中文", message)
    assert rule.startswith("以后都按这个来") and rule.endswith("draft 里别用感叹号")
    assert "SAML" not in rule


def test_the_items_a_wish_counts_out_stay_in_its_rule() -> None:
    message = (
        "两件事以后都这样弄：一是外版书名一律写中文暂定名加书名号，后面括号放原文title。"
        "二是版税率一定要写清楚是按定价还是按实洋算，光写个7%没意义。首印5000的话版税大概多少？"
    )
    rule = every_wish("两件事以后都这样弄：一是外版书名一律写中文暂定名加书名号，后面括号放原文title", message)
    assert rule.endswith("光写个7%没意义") and "首印" not in rule
    # no count opened: a later sentence that is no wish stays out ("first" as a word opens no count)
    assert every_wish("以后书名后面括号放原文title", "以后书名后面括号放原文title。二是我明天请假。") == (
        "以后书名后面括号放原文title"
    )
    plain = "Put the total first. Second thing: I'm in Berlin."
    assert every_wish("Put the total first", plain) == "Put the total first"
    counted = "From now on: first, put the total at the top. Second, no emoji."
    assert (
        every_wish("first, put the total at the top", counted)
        == "From now on: first, put the total at the top. Second, no emoji"
    )


def test_a_long_wish_keeps_its_wishes_and_drops_the_stories_between_them(learned: LearnedDetector) -> None:
    story = (
        "Last spring a family drove an hour for the lambing day, found the barn shut for a vet visit and left a "
        "review calling us liars, and my sister spent the whole weekend answering messages about it. "
    )
    message = (
        "Two things, please, for every post from now on. First, always say which barn the event is in. "
        + story * 3
        + "And please always give the car park postcode on its own line."
    )
    found = Correction(type=CorrectionType.PREFERENCE, confidence=0.9, corrected=message, topic="post layout")
    rule = wording(found, message, Settings(), learned).action
    assert len(rule) <= 500 and "barn the event is in" in rule and "car park postcode" in rule
    assert "sister" not in rule and "…" in rule
    # short enough already: the words unchanged
    assert only_wishes("Always say which barn. It rained.", 100) == "Always say which barn. It rained."


def test_the_wish_right_before_the_quote_and_a_counted_items_standing_sentences_go_with_it() -> None:
    """The rules may quote a message's second wish: the wish in the clause right before it goes with it, not the story
    that opens its sentence. In a count of wishes an item goes on through its sentences marked standing (以后), and
    stops at a one-off (这单送…) that is no wish."""
    message = (
        "We lost a wedding over this last June, the guests waited at the wrong pier, so please, every quote you send "
        "me has to list the ferry times. Never just 'morning crossing'."
    )
    assert every_wish("Never just 'morning crossing'", message) == (
        "every quote you send me has to list the ferry times. Never just 'morning crossing'"
    )
    counted = (
        "两件事以后记住。第一，别给客人打包票。第二，中午不接人。以后回消息都要说只有上午和下午两个时段，中午太晒。"
        "还有，这单送一盒果酱，就这一单。"
    )
    rule = every_wish("第一，别给客人打包票", counted)
    assert rule.endswith("两个时段，中午太晒") and "果酱" not in rule
    # a sentence that asks is no wish before the quote
    assert every_wish("Always list the ferry times", "Can you list the ferry times? Always list the ferry times.") == (
        "Always list the ferry times"
    )


def test_a_long_wish_keeps_a_wish_said_in_a_clause_with_the_rest_of_its_sentence() -> None:
    """Cut down to its wishes, a sentence that is no wish as a whole keeps the clause that is one and its own values
    after it; the story told after it goes."""
    story = "last year a pub ordered 10 thinking it was bottles and got crates, and the return cost me a whole day. "
    message = (
        "every trade price you write for me goes per crate of 12 with the bottle size, so the 330ml is 14.40 a crate. "
        + story * 4
        + "redo it please"
    )
    assert only_wishes(message, 200) == (
        "every trade price you write for me goes per crate of 12 with the bottle size, so the 330ml is 14.40 a crate"
    )


def test_a_wish_quoted_with_its_whole_message_leaves_the_question_after_it_out() -> None:
    message = "这几个词以后我的话术里一个都别放，客户一听就觉得我们在打官腔。另外这次是线路故障，话术里有必要区分吗？"
    assert every_wish(message, message) == "这几个词以后我的话术里一个都别放，客户一听就觉得我们在打官腔"


def test_an_unsure_rejection_writes_no_session_rule_unless_a_workspace_model_settled_it() -> None:
    """ "政策性的，村里统一买的" answers the assistant's own question; a model in its unsure band read it as a
    rejection. The turn keeps the finding (its signals flag the session), but no rule tells the assistant it was
    rejected."""
    # (the wall clock's now: a session's rule expires a day on, and an expiry must be in the future when validated)
    now = datetime.now(UTC)
    turn = Turn(
        id=uuid.uuid4(),
        session_id="s-hail",
        user_id="u-farmer",
        scene="crop_insurance",
        sequence=1,
        turn_index=1,
        user_message="政策性的，村里统一买的",
        created_at=now,
    )
    unsure = Correction(CorrectionType.NEGATIVE, 0.49, unsure=True, signals=("learned:negative:0.49",))
    assert lesson_for(unsure, turn, Settings(), now) is None
    sure = dataclasses.replace(unsure, unsure=False)
    settled = dataclasses.replace(unsure, signals=(*unsure.signals, "workspace_model:negative"))
    for written in (lesson_for(sure, turn, Settings(), now), lesson_for(settled, turn, Settings(), now)):
        assert written is not None and written.content.kind == "lesson"
        assert written.content.expire_at is not None  # a session's rule: it lasts a day


def test_a_process_rule_runs_through_its_steps_and_stops_at_a_question_or_a_reason(learned: LearnedDetector) -> None:
    """A rule of work is rarely one sentence: its steps in the sentences after it, each of which the learned detector
    leans to as a process, are what a later answer must follow. It stops before the request that closes the message,
    and before a reason told after it."""
    message = (
        "Not at this branch. Refunds over 200 euros need the duty manager's sign-off first. The receipt is scanned "
        "into the till and the card gets the money back, never cash. Can you rewrite the steps for the new staff?"
    )
    rule = whole_rule("Refunds over 200 euros need the duty manager's sign-off first", message, learned)
    assert rule.endswith("the card gets the money back, never cash")
    assert "Can you rewrite" not in rule
    asked = whole_rule("退货超过200元要值班经理先签字", "退货超过200元要值班经理先签字。这个规定你记一下？", learned)
    assert asked == "退货超过200元要值班经理先签字"
    reason = "You should check the app's logs before restarting nginx; the app had crashed."
    assert whole_rule("You should check the app's logs before restarting nginx", reason, learned).endswith("nginx")


def test_a_process_rule_that_points_back_takes_the_steps_said_before_it(learned: LearnedDetector) -> None:
    """The steps may come first and the quoted rule refer to them ("do it this way", 都按这个来): the steps before it
    are the rule, the speaker's introduction of themself is not."""
    message = (
        "I run this depot. Returned pallets are counted on arrival, photographed and logged in the yard system "
        "before anyone signs the driver's sheet. From now on tell anyone who asks to do it this way, never sign first."
    )
    rule = whole_rule("From now on tell anyone who asks to do it this way, never sign first", message, learned)
    assert rule.startswith("Returned pallets are counted on arrival") and rule.endswith("never sign first")
    zh = "我是仓库主管。退回的托盘到了先点数、拍照，录进堆场系统，再给司机签单。以后谁问都按这个来，别先签。"
    assert whole_rule("以后谁问都按这个来，别先签", zh, learned).startswith("退回的托盘到了先点数")


def test_a_bare_denial_of_a_fact_takes_the_value_said_after_it() -> None:
    """ "We're not on the starter tier." names no value; the statement after it does, and the rule needs both. A
    question after the denial, or a denial that holds its number, stays as it is."""
    message = "We're not on the starter tier. It's the Team plan with 25 seats, billed yearly. Anything else to check?"
    assert with_its_value("We're not on the starter tier", message) == (
        "We're not on the starter tier. It's the Team plan with 25 seats, billed yearly"
    )
    asking = "We're not on the starter tier. Is the Team plan with 25 seats any different?"
    assert with_its_value("We're not on the starter tier", asking) == "We're not on the starter tier"
    assert with_its_value("it's 25 seats, not 10", "it's 25 seats, not 10. Team plan.") == "it's 25 seats, not 10"


def test_a_fact_quoted_by_one_figure_of_a_list_takes_the_whole_statement() -> None:
    """The rules quote the clause whose number changed ("roughly 45 km to a battery" after "roughly 35 miles"); in a
    statement that lists figures of one thing, that clause alone says nothing of what it is about. A verdict before a
    fact, or a fact of two clauses, keeps its quote."""
    message = (
        "We haven't got vans. It's three e-cargo bikes, 125 kg payload each including the box, roughly 45 km to a "
        "battery, and a spare battery per bike at the hub. Go again?"
    )
    assert with_its_value("roughly 45 km to a battery", message) == (
        "It's three e-cargo bikes, 125 kg payload each including the box, roughly 45 km to a battery, and a spare "
        "battery per bike at the hub"
    )
    assert with_its_value("是开不了机", "不对，都说了是开不了机，跟充电没关系") == "是开不了机"
    assert with_its_value("it's 25 seats, not 10", "it's 25 seats, not 10. Team plan.") == "it's 25 seats, not 10"
    zh = "我们不是自己配送。平台有3辆电动三轮，每辆载重200公斤，一次充电跑40公里。明天怎么排？"
    assert with_its_value("一次充电跑40公里", zh) == "平台有3辆电动三轮，每辆载重200公斤，一次充电跑40公里"


def test_a_change_without_a_value_takes_the_short_statement_after_it() -> None:
    """ "We moved to Leeds in June, so the Manchester depot is out of the way now." names no new value; the short
    statement after it does ("Bradford is our depot."). A request, a courtesy or a question after it is not taken."""
    message = (
        "We moved to Leeds in June, so the Manchester depot is out of the way now. Bradford is our depot. "
        "Can you redo the route?"
    )
    assert with_its_value("We moved to Leeds in June", message) == (
        "We moved to Leeds in June, so the Manchester depot is out of the way now. Bradford is our depot"
    )
    for after in ("Thanks for sorting it.", "Please redo the route.", "Is Bradford any nearer?"):
        assert with_its_value("We moved to Leeds in June", f"We moved to Leeds in June. {after}") == (
            "We moved to Leeds in June"
        )


def test_the_wish_earlier_in_the_quotes_own_sentence_goes_with_it() -> None:
    """The detector quoted a later clause of the wish's sentence: the rule starts where the wish does (the sentence,
    read whole as a wish by the rules; the clause marked standing, "every single reply … needs to say", where it is
    not), with the values between; the story after it stays out."""
    message = (
        "ok but listen, every single reply about our pasties needs to say they're baked that morning, keep them "
        "in the fridge and eat them within 2 days, never leave them in a warm car. "
        "a lady last week kept hers in the boot for a day."
    )
    rule = every_wish("never leave them in a warm car", message)
    assert "every single reply about our pasties needs to say" in rule and "in the fridge" in rule
    assert rule.endswith("never leave them in a warm car") and "a lady" not in rule
