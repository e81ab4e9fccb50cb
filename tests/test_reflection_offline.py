"""Reflection without a model, on the in-memory store (held to the Weaviate store's rules by the contract tests):
the offline extractor finds what users say outright, quotes them verbatim, and saves through the same rules as a
model's candidates."""

from __future__ import annotations

import pytest

from hindsight_insights.config import Settings
from hindsight_insights.detection.correction_types import GENERAL, Correction, CorrectionType
from hindsight_insights.detection.corrections import acknowledged, detect, further_wishes, own_input_put_right
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.governance.lessons import wording
from hindsight_insights.models import InsightStatus, Scope, TurnDraft
from hindsight_insights.reflection import ReflectionEngine
from hindsight_insights.reflection.offline import (
    OfflineExtractor,
    adopted_requests,
    repeated_wish,
    reported_edits,
    restates,
    sent_versions,
)
from testkit.memory_store import MemoryStore


@pytest.fixture
def store(project_settings: Settings) -> MemoryStore:
    """The store in memory (testkit/memory_store.py): reflection needs the turn log and the saving, not Weaviate."""
    return MemoryStore(project_settings)


def record(store: MemoryStore, session: str, user: str, scene: str, exchanges: list[tuple[str, str]]) -> None:
    for said, answered in exchanges:
        store.turns.append(
            TurnDraft.parse(
                {
                    "session_id": session,
                    "user_id": user,
                    "scene": scene,
                    "user_message": said,
                    "assistant_message": answered,
                }
            )
        )


def test_stated_preferences_and_corrections_become_rules_quoted_verbatim(store: MemoryStore) -> None:
    record(
        store,
        "s1",
        "lao-wang",
        "方案对比",
        [
            ("帮我比较一下 Redis 和 Memcached", "王老师您好，Redis 支持持久化……"),
            ("别叫我王老师，叫我老王就行。", "好的老王。"),
            ("谢谢！", "不客气。"),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s1")
    assert report.outcome == "ok" and report.llm_calls == 0 and report.dropped == []
    (created,) = report.created
    rule = store.get(created)
    assert (rule.kind, rule.scope, rule.user_id, rule.source) == (
        "preference",
        Scope.USER,
        "lao-wang",
        "reflection:offline",
    )
    assert rule.evidence.quote == "别叫我王老师，叫我老王就行。" and rule.evidence.turn == 1 and "老王" in rule.action
    again = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s1")
    assert again.created == [] and again.unchanged == [created]  # reflecting twice never duplicates


def test_a_company_rule_and_a_wish_in_one_message_become_two_rules_and_two_wishes_one(store: MemoryStore) -> None:
    record(
        store,
        "s-two",
        "tea-buyer",
        "tea_shop",
        [
            ("Suggest four teas for the autumn shelf.", "Here are four teas: 1. Sencha, rated 4.5 stars..."),
            (
                "From now on, leave the star ratings out of anything you suggest to me. And please always tell me "
                "whether a tea is caffeine-free. Can you redo the list?",
                "Sure: 1. Sencha (contains caffeine) ...",
            ),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s-two")
    (wishes,) = [store.get(created) for created in report.created]
    assert (wishes.kind, wishes.scope, wishes.evidence.turn) == ("preference", Scope.USER, 1)
    assert "star ratings" in wishes.action and "caffeine-free" in wishes.action  # one rule reads on to the next wish
    record(
        store,
        "s-rule",
        "shop-lead",
        "returns_desk",
        [
            ("怎么给客户退货？", "好的，退货流程如下：收到退货后直接退款。"),
            (
                "我们店规定：凡是退换货的，必须先拍照上传系统，主管审核后才能退款。另外以后回复我别用表格。",
                "明白，已按新流程改好。",
            ),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s-rule")
    # (the process is the project's: a copy for the user who taught it and one held for review)
    kinds = {store.get(created).kind for created in report.created + report.pending_review}
    assert kinds == {"preference", "process"}


def test_a_session_with_nothing_to_learn_leaves_nothing(store: MemoryStore) -> None:
    record(store, "s2", "carol", "general", [("Thanks, that was exactly what I needed!", "Glad it helped!")])
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s2")
    assert report.outcome == "ok" and report.saved_ids == [] and store.count() == (0, 1)


def test_a_fact_is_the_users_at_once_and_waits_for_verification_and_a_bare_no_teaches_nothing(
    store: MemoryStore,
) -> None:
    record(
        store,
        "s3",
        "u1",
        "售后服务",
        [
            ("退货寄到哪里？", "请寄到上海市嘉定区宝安公路 2999 号。"),
            ("不对，退货地址已经改成杭州市余杭区良睦路 1399 号了，官网上周发的通知。", "抱歉，已更正。"),
            ("不对。", "抱歉。"),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s3")
    (created,) = report.created
    (pending,) = report.pending_review
    mine, project = store.get(created), store.get(pending)
    assert (mine.kind, mine.scope, mine.status) == ("fact", Scope.USER, InsightStatus.ACTIVE)
    assert (project.scope, project.status) == (Scope.PROJECT, InsightStatus.PENDING_REVIEW)
    assert "良睦路 1399 号" in mine.action and project.review_reason is not None


@pytest.mark.parametrize(
    ("wish", "answer"),
    [
        # (the model retrained on 2026-12-03 reads the terser "公里就行" at P(correction) 0.83, in the unsure band: a
        # workspace model, when set, is asked there; the thirty-sixth read "用公里就行" at P(preference) 0.953, under
        # its correction_at 0.96; the thirty-seventh at 0.962, over its 0.94; the forty-second at 0.943 (P(correction)
        # 0.948), under its 0.96)
        pytest.param(
            "用公里就行",
            "全程大约 120 英里。",
            marks=pytest.mark.xfail(
                strict=True,
                reason="known miss of the thirty-sixth, forty-second and forty-third models: P(correction) 0.953, "
                "0.948 and 0.955, under their correction_at 0.96",
            ),
        ),
        ("简体就好", "這個問題的答案是……"),
        ("半角标点", "好的，我已经改好了！"),
        ("two sentences max", "Here is a long answer with many sentences, each adding a little more detail."),
        ("GBP please", "Q2 revenue was $1.1M."),
    ],
)
def test_a_standing_wish_without_trigger_words_becomes_the_users_preference_with_the_learned_detector(
    store: MemoryStore, learned: LearnedDetector, wish: str, answer: str
) -> None:
    """Units, script, punctuation, length: the rules find no trigger word; the learned detector's preference class
    does, and the extractor reading with it (as the worker runs it) learns a preference for that user only."""
    record(store, "w1", "u-terse", "general", [("帮我看一下这个 / have a look", answer), (wish, "OK.")])
    assert ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("w1").saved_ids == []  # rules
    report = ReflectionEngine(store, OfflineExtractor(store.settings).with_detector(learned)).reflect_session("w1")
    (created,) = report.created
    rule = store.get(created)
    assert (rule.kind, rule.scope, rule.user_id) == ("preference", Scope.USER, "u-terse")
    assert rule.evidence.quote == wish and wish in rule.action
    assert report.pending_review == []  # no project-wide copy: a wish about answers is the user's, not everyone's


def test_a_terse_wish_the_user_comes_back_to_in_the_session_is_a_preference(
    store: MemoryStore, learned: LearnedDetector
) -> None:
    """ "hours please" alone is below the learned detector's bar (P(preference) 0.70 against 0.90 since the sixteenth
    sets were retired into the corpus); the user asking for hours again shows it stands. (Which terse wish sits below
    the bar moves with each retraining: "minutes would be easier" read 0.85 before, 0.91 now.)"""
    once = [
        ("How long did the nightly upload take?", "The upload took 5,400 seconds."),
        ("hours please", "1.5 hours."),
    ]
    record(store, "h1", "u-ops", "故障排查", once)
    extractor = OfflineExtractor(store.settings).with_detector(learned)
    assert ReflectionEngine(store, extractor).reflect_session("h1").saved_ids == []
    again = [*once, ("And the restore test, in hours?", "The restore ran for 0.2 hours.")]
    record(store, "h2", "u-ops", "故障排查", again)
    report = ReflectionEngine(store, extractor).reflect_session("h2")
    (created,) = report.created
    rule = store.get(created)
    assert (rule.kind, rule.scope, rule.evidence.quote) == ("preference", Scope.USER, "hours please")
    assert rule.evidence.turn == 1 and rule.confidence < store.settings.must_confidence  # a "consider" rule


def test_the_opening_request_is_never_taken_for_a_returning_wish(store: MemoryStore, learned: LearnedDetector) -> None:
    record(
        store,
        "h3",
        "u-sales",
        "sales",
        [
            ("Draft a follow-up email to Northwind after yesterday's demo.", "Hi Northwind team, ..."),
            ("Now one for Contoso, like the Northwind one.", "Hi Contoso team, ..."),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings).with_detector(learned)).reflect_session("h3")
    assert [store.get(i).evidence.quote for i in report.saved_ids if store.get(i).kind == "preference"] == []


def test_a_terse_echo_of_a_wish_already_found_is_not_a_second_lesson(
    store: MemoryStore, learned: LearnedDetector
) -> None:
    """The user comes back to a wish they stated outright: the stated wish is the lesson; the terse echo only refers
    back to it (as "it's just a preference, remember it" refers back to a request the screen held)."""
    record(
        store,
        "h4",
        "u-ops",
        "故障排查",
        [
            ("How long did the nightly backup take?", "The job ran for 7,200 seconds."),
            ("From now on, always give me durations in hours.", "Understood: 2 hours."),
            ("And the restore test?", "The restore ran for 5,400 seconds."),
            ("hours please", "1.5 hours."),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings).with_detector(learned)).reflect_session("h4")
    quotes = [store.get(i).evidence.quote for i in report.saved_ids if store.get(i).kind == "preference"]
    assert quotes == ["From now on, always give me durations in hours."]


@pytest.mark.parametrize(
    ("exchanges", "quotes"),
    [
        pytest.param(
            [
                ("我的手机还是不行", "可能是充电线坏了，建议您换一根新的充电线。"),
                ("不对，我的手机是开不了机，不是充不上电", "那可能是充电口接触不良，您换一根原装充电线试试。"),
                ("不对，都说了是开不了机，跟充电没关系", "非常抱歉，请先长按电源键十秒强制重启。"),
            ],
            ["不对，我的手机是开不了机，不是充不上电"],
            id="zh: 都说了 repeats the correction that names the phone",
        ),
        pytest.param(
            [
                ("When is the report due?", "The deadline is Monday."),
                ("No, the deadline is Friday, not Monday.", "Got it, Monday then."),
                ("No, I said Friday.", "Sorry: Friday."),
            ],
            ["No, the deadline is Friday, not Monday."],
            id="en: 'I said Friday' repeats the deadline",
        ),
        pytest.param(
            [
                ("退货寄到哪里？", "请寄到上海市嘉定区宝安公路 2999 号售后部。"),
                ("不对，退货地址已经改成杭州市余杭区良睦路 1399 号了", "好的。那您的手机还有别的问题吗？"),
                ("我的手机还是不行", "可能是充电线坏了，建议您换一根新的充电线。"),
                ("不对，都说了是开不了机，跟充电没关系", "非常抱歉，请先长按电源键十秒强制重启。"),
            ],
            ["不对，退货地址已经改成杭州市余杭区良睦路 1399 号了", "不对，都说了是开不了机，跟充电没关系"],
            id="zh: a correction with no subject that repeats nothing is learned",
        ),
    ],
)
def test_a_correction_with_no_subject_that_repeats_an_earlier_one_is_not_a_second_rule(
    store: MemoryStore, exchanges: list[tuple[str, str]], quotes: list[str]
) -> None:
    """The customer's "都说了是开不了机" ("as I said: it won't boot") names no subject of its own: as a rule of its
    own it would only sit beside the earlier correction that names the phone, in a slot of its own. The earlier one
    is the lesson."""
    record(store, "r1", "zhang-san", "售后服务", exchanges)
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("r1")
    assert report.outcome == "ok"
    # A fact may be saved twice, for its user and as a project-wide copy waiting for a reviewer: one quote each.
    assert sorted({store.get(i).evidence.quote for i in report.saved_ids}) == sorted(quotes)


@pytest.mark.parametrize(
    ("later", "earlier", "repeats"),
    [
        ("都说了是开不了机", "我的手机是开不了机", True),
        ("I said Friday", "the deadline is Friday", True),
        ("是 5 号", "交货日期是 5 号", True),
        ("是 6 号", "交货日期是 5 号", False),  # a value the earlier one lacks is news
        ("It is 30 days", "The return window is 14 days", False),
        ("开不了机", "退货地址已经改成杭州", False),
        ("", "退货地址已经改成杭州", False),
    ],
)
def test_what_restates_an_earlier_correction(later: str, earlier: str, repeats: bool) -> None:
    assert restates(later, earlier) is repeats


def test_a_message_that_asks_is_no_returning_wish() -> None:
    """A message the detector leans to as a preference, whose words come back in another message of the session, is a
    wish the user repeats, unless it asks: a question about a pasted supplier e-mail's prices is no wish, even when
    its last clause asks without a question mark."""
    leaning = Correction(
        CorrectionType.NONE,
        0.0,
        probabilities={"factual": 0.1, "preference": 0.5, "process": 0.0, "negative": 0.0, "none": 0.4},
    )
    others = ["供应商邮件：高筋粉每袋由158元调整为172元。"]
    answer = "好的，我帮您算一下。"
    asking = repeated_wish(leaning, "吓一跳。按每月用高筋粉40袋算，每月多花多少", answer, others)
    assert asking.type is CorrectionType.NONE
    stating = repeated_wish(leaning, "高筋粉的价格按每袋算给我", answer, others)
    assert stating.type is CorrectionType.PREFERENCE and "offline:repeated_wish" in stating.signals


def test_a_message_for_this_time_only_is_no_returning_wish(store: MemoryStore, learned: LearnedDetector) -> None:
    """ "just this time make it formal" names the wish's words again later in the session, yet it asks for this time
    only: no preference, repeated or not."""
    record(
        store,
        "h4",
        "u-hoa",
        "inspections",
        [
            ("How did the chimney at 9 Birch Row look?", "Hey! Chimney's fine, cap a bit rusty."),
            ("This one goes to the council, so just this time make it formal.", "Inspection summary, 9 Birch Row: ..."),
            ("formal is right for the council, thanks", "Glad it works."),
        ],
    )
    extractor = OfflineExtractor(store.settings).with_detector(learned)
    assert ReflectionEngine(store, extractor).reflect_session("h4").saved_ids == []


def test_an_approval_or_a_task_carried_on_is_no_returning_wish() -> None:
    """ "ok cool just top rope then" names words the user said before, yet it approves the answer; "now do the same
    for the armchair" carries the task on: neither is a wish repeated."""
    others = ["been top roping with my brother since", "the armchair has one seat cushion"]
    answer = "Lead climbing needs a separate lead test."
    for guard, message in (
        ("guard:approval", "ok cool just top rope then"),
        ("guard:continues_the_task", "now do the same for the armchair, one seat cushion"),
    ):
        leaning = Correction(
            CorrectionType.NONE,
            0.0,
            signals=(guard,),
            probabilities={"factual": 0.0, "preference": 0.5, "process": 0.0, "negative": 0.0, "none": 0.5},
        )
        assert repeated_wish(leaning, message, answer, others).type is CorrectionType.NONE


def test_wishes_the_detector_names_no_subject_of_keep_a_slot_each(store: MemoryStore) -> None:
    """Two preferences the detector found without a topic are two rules: the later one does not supersede the earlier
    (a topic is a slot, and one wish must not silence another)."""
    first = Correction(CorrectionType.PREFERENCE, 0.9, corrected="Please write my stuff in British spelling")
    second = Correction(CorrectionType.PREFERENCE, 0.9, corrected="Give walking times in minutes, not km")
    topics = {wording(c, c.corrected or "", store.settings).topic for c in (first, second)}
    assert len(topics) == 2 and all(topic.startswith("reply preference: ") for topic in topics)
    said = "回复就按 800 来"
    fact = wording(Correction(CorrectionType.FACTUAL, 0.9, corrected=said), said, store.settings)
    assert fact.topic.startswith("事实纠正：") and not fact.names_a_subject
    # (no "when corrected fact comes up": a rule without a subject says the correction alone)
    assert "事实纠正" not in fact.action


_LEANING = Correction(
    CorrectionType.NONE,
    0.0,
    signals=("guard:question",),
    probabilities={"factual": 0.45, "preference": 0.05, "process": 0.0, "negative": 0.0, "none": 0.5},
)


@pytest.mark.parametrize(
    ("reply", "fixed"),
    [
        ("抱歉，是我看错了套餐，按年卡给您算：每次可以带一位朋友。", True),
        ("明白了，那情况不一样。自由职业者要自己按月缴。", True),
        ("Thanks for clarifying — with a season pass the parking is included.", True),
        ("You're right, my apologies. The Tuesday class is at 18:30.", True),
        ("That changes things. With a hybrid rota you log the sleep after each shift.", True),
        # an apology that declines: the user insisted on a wrong value
        ("抱歉，这个我不能照办：保存时长以柜机上公布的72小时为准。", False),
        ("I'm sorry, I can't note a different date; the deadline is set by the council.", False),
        ("Sorry, I won't tell other customers that.", False),
        # an apology for something else, or an answer that owns nothing
        ("I'm so sorry to hear about the flooding. Here is how to claim.", False),
        ("Sorry for the wait! The parcel leaves tomorrow.", False),
        ("好的，周六上午十点已为您预约。", False),
    ],
)
def test_an_answer_that_owns_an_error_makes_the_message_before_it_a_fact_put_right(reply: str, fixed: bool) -> None:
    """The assistant's next answer opening with an admitted error ("抱歉，是我看错了", "that changes things") shows
    that the message before it put something right, when the detector leaned to a correction below its bar."""
    message = "我是年卡会员，上个月续的。年卡是不是能带朋友？"
    found = acknowledged(_LEANING, message, reply)
    if fixed:
        assert found.type is CorrectionType.FACTUAL and found.confidence == GENERAL
        assert found.corrected == "我是年卡会员，上个月续的" and "acknowledged_by_the_answer" in found.signals
    else:
        assert found is _LEANING


def test_an_acknowledgement_needs_the_detector_to_lean_and_never_retypes_a_finding() -> None:
    owning = "Sorry, my mistake: the pool closes at 21:00 on Fridays."
    unlikely = Correction(
        CorrectionType.NONE,
        0.0,
        probabilities={"factual": 0.1, "preference": 0.05, "process": 0.0, "negative": 0.0, "none": 0.85},
    )
    assert acknowledged(unlikely, "what time does the pool close on fridays?", owning) is unlikely
    one_off = Correction(CorrectionType.NONE, 0.0, signals=("guard:one_time",), probabilities=_LEANING.probabilities)
    assert acknowledged(one_off, "just this time, 9pm", owning) is one_off
    preference = Correction(CorrectionType.PREFERENCE, 0.85, corrected="24-hour times please")
    assert acknowledged(preference, "24-hour times please", owning) is preference
    assert acknowledged(_LEANING, "it closes at nine", None) is _LEANING


@pytest.mark.parametrize(
    ("reply", "learned_for_the_user"),
    [
        # (the thirty-fourth model read the message at P(correction) 0.29, under ACKNOWLEDGED_AT, 0.3)
        ("明白了，那情况不一样。灵活就业人员是自己缴存的，漏缴的那个季度可以到缴存网点补缴。", True),
        ("漏缴的那个季度可以到缴存网点补缴，带上身份证就行。", False),
    ],
)
def test_a_fact_the_answer_owns_up_to_is_learned_for_the_user(
    store: MemoryStore, learned: LearnedDetector, reply: str, learned_for_the_user: bool
) -> None:
    """Through the offline reflection: the user's own situation put right beside a question, which the detector
    alone leaves below its bar, is learned for that user when the answer after it owns the error, and not otherwise.
    (The twenty-ninth model finds "我没单位，自由职业，自己按季度交的。" alone, P(fact) 0.92: this message, P 0.41,
    stays below its bar.)"""
    record(
        store,
        "ack1",
        "u-mei",
        "housing fund",
        [
            ("公积金断缴一个月有影响吗？", "如果你是在职职工，公积金是单位每个月从工资里代扣的，断缴要问单位。"),
            ("我是灵活就业，自己交的，漏了一个季度咋补？", reply),
            ("好的谢谢", "不客气！"),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings).with_detector(learned)).reflect_session("ack1")
    saved = [store.get(insight_id) for insight_id in report.saved_ids]
    facts = [
        i for i in saved if i is not None and i.kind == "fact" and i.scope is Scope.USER and "灵活就业" in i.action
    ]
    assert bool(facts) is learned_for_the_user


def test_a_number_the_user_gave_first_put_right_is_their_own_input_not_a_lesson(
    store: MemoryStore, learned: LearnedDetector
) -> None:
    """The user's own earlier input put right is none by the class definitions: the answer only echoed the number the
    user gave first. A number the answer brought first, put right, is a fact the user taught."""
    own = [
        ("my son is 9 and wants to join the chess club, which group?", "At 9 he'd join the juniors on Thursdays."),
        ("oh wait, he's 10 now, had his birthday in may", "At 10 he'd join the intermediates on Fridays."),
    ]
    record(store, "own1", "u-ravi", "chess club", own)
    report = ReflectionEngine(store, OfflineExtractor(store.settings).with_detector(learned)).reflect_session("own1")
    saved = [store.get(insight_id) for insight_id in report.saved_ids]
    assert not [i for i in saved if i is not None and i.kind == "fact"]
    own_fix = own_input_put_right(
        Correction(CorrectionType.FACTUAL, GENERAL, corrected="he's 10 now", original="At 9 he'd join the juniors"),
        "oh wait, he's 10 now, had his birthday in may",
        ["my son is 9 and wants to join the chess club, which group?"],
        ["At 9 he'd join the juniors on Thursdays."],
    )
    assert own_fix.type is CorrectionType.NONE and "guard:own_earlier_input" in own_fix.signals
    # the answer said 9 first: the user puts the answer right, not their own input
    answers_fix = own_input_put_right(
        Correction(CorrectionType.FACTUAL, GENERAL, corrected="it's 10 now", original="The fee is 9 euros"),
        "no, it's 10 now",
        ["what's the fee?", "and for two people 9 euros each?"],
        ["The fee is 9 euros.", "Yes, 9 euros each."],
    )
    assert answers_fix.type is CorrectionType.FACTUAL
    # the corrected text names the user's old number as the one it replaces: still their own input put right
    typo_fix = own_input_put_right(
        Correction(CorrectionType.FACTUAL, GENERAL, corrected="ap 是 8 不是 10", original="ap 10 mm 等于 1×D"),
        "ap 是 8 不是 10",
        ["帮我看下这个 program 的 feed：S8000，F1800，ap 10 mm，ae 3 mm。", "roughing，side milling。"],
        ["每齿进给 0.075 mm/z。先确认一下：这一刀是 roughing 还是 finishing？", "ap 10 mm 等于 1×D。"],
    )
    assert typo_fix.type is CorrectionType.NONE
    # the answer held no value to replace: the number the message says it is not is the user's own (21, said first
    # by the user and by no answer), so it is their input put right; one the answer said first is not
    moved = "是搬到15栋，不是21栋。网上说移机费是100块？"
    no_original = Correction(CorrectionType.FACTUAL, GENERAL, corrected="是搬到15栋")
    own_move = own_input_put_right(no_original, moved, ["从锦华苑12栋搬到21栋，要多久？"], ["师傅3个工作日内上门。"])
    assert own_move.type is CorrectionType.NONE
    their_move = own_input_put_right(no_original, moved, ["搬家要多久？"], ["21栋的端口3个工作日内开通。"])
    assert their_move.type is CorrectionType.FACTUAL
    # the number it says it is not, after an article, was the user's first and the answer only repeated it
    echoed = own_input_put_right(
        Correction(CorrectionType.FACTUAL, GENERAL, corrected="argh it's the 22nd not the 21st"),
        "argh it's the 22nd not the 21st, my calendar's a mess",
        ["open day post please", "Sunday 21st, 10 till 4, £5 a head"],
        ["Happy to! Which date?", "Open day on Sunday 21st, 10am-4pm, £5 a head."],
    )
    assert echoed.type is CorrectionType.NONE
    # one the answer said first and the user never had is the answer's, put right
    answers_date = own_input_put_right(
        Correction(CorrectionType.FACTUAL, GENERAL, corrected="it's the 22nd not the 21st"),
        "it's the 22nd not the 21st",
        ["when is the open day?"],
        ["The open day is Sunday 21st."],
    )
    assert answers_date.type is CorrectionType.FACTUAL
    # the number it says it is not, said again as still true of something: the answer misread the user's input
    misread = own_input_put_right(
        Correction(CorrectionType.FACTUAL, GENERAL, corrected="累计工作年限是11年"),
        "不是4年哈。我在这边4年，之前在别的单位干了7年，累计工作年限是11年。",
        ["我入职公司4年了，年假几天？"],
        ["你入职4年，按5天算。"],
    )
    assert misread.type is CorrectionType.FACTUAL


_DOOR_QUOTE = (
    "Quotation – Leeds Product: Oak veneer door leaf, 2040×820×40 mm Price: USD 31.60/m² FOB Xiamen Quantity: 1 × 40HQ "
    "Lead time: 35 days after deposit"
)


# (the thirty-eighth model read the wish's sentence alone at P(preference) 0.944, under the further-lesson bar,
# FURTHER_LEARNED_AT 0.95; the thirty-seventh and thirty-ninth read it over it)
def test_a_wish_beside_the_users_own_number_put_right_is_still_learned(
    store: MemoryStore, learned: LearnedDetector
) -> None:
    """The fact the detector reads in the message replaces the price the user gave first (their own input: no
    lesson), and the standing wish in the sentence after it is still the user's preference."""
    message = (
        "你写的 'Oak veneer door leaf' 就是上次出事的写法。Bristol 那个客户，我们 quote 上就写 oak door 40mm，他收到 "
        "solid core 说他要的是 LVL，最后赔了 USD 2,600。所以以后所有 quote 里面 core 材料和防火等级都必须写清楚，一个都"
        "不能省。这个重新出一下，Leeds 要的是 LVL。"
    )
    first = "帮我给 Leeds 那个客户出个 quote，oak veneer 门板，2040×820×40mm，一个 40HQ，FOB Xiamen 价格 USD 31.60/m²。"
    found = detect(message, _DOOR_QUOTE, learned)
    # The thirtieth and thirty-first models read a fact put right (P 0.99), the user's own input: no lesson. The
    # thirty-second reads the wish (P 0.97) where the rules read the value, and so quotes the whole message.
    if found.type is CorrectionType.FACTUAL:
        assert own_input_put_right(found, message, [first], [_DOOR_QUOTE]).type is CorrectionType.NONE
    else:
        assert found.type is CorrectionType.PREFERENCE and found.corrected == message
    record(
        store,
        "door1",
        "u-lin",
        "door quotes",
        [(first, _DOOR_QUOTE), (message, "Quotation – Leeds: core LVL, fire rating FD30 …"), ("OK 谢谢", "不客气！")],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings).with_detector(learned)).reflect_session("door1")
    saved = [store.get(insight_id) for insight_id in report.saved_ids]
    kinds = {(i.kind, i.scope) for i in saved if i is not None}
    wishes = [i for i in saved if i is not None and i.kind == "preference" and "防火等级" in i.action]
    assert wishes and ("fact", Scope.USER) not in kinds, kinds


def test_a_look_alike_of_a_wish_is_no_returning_wish() -> None:
    """What the rules know as no wish stays none however the model leans and whatever words come back: the user's
    own slip put right, a never-mind, someone else's request passed on."""
    leaning = Correction(
        CorrectionType.NONE,
        0.0,
        probabilities={"factual": 0.0, "preference": 0.6, "process": 0.0, "negative": 0.0, "none": 0.4},
    )
    answer = "3D printer induction: 1. Show the emergency stop."
    for message, others in (
        ("sorry, I meant the laser cutter, not the 3D printer. laser cutter please", ["the laser cutter is new"]),
        ("never mind JP, client's dropping Japan. that's all for now", ["deadlines for US, EP, CN and JP"]),
        ("They also asked for a late table nearby, anywhere open past ten", ["a late table for two"]),
    ):
        assert repeated_wish(leaning, message, answer, others).type is CorrectionType.NONE, message


def adopted_session(store: MemoryStore, session: str, later: list[tuple[str, str]]) -> None:
    record(
        store,
        session,
        "u-broker",
        "customs",
        [
            (
                "我们有一批 ceramic mugs 要进美国，duty 大概多少？",
                "按 6912 估算：基本税率约 10%，USD 1,200；MPF 约 USD 42。",
            ),
            ("换算成人民币大概多少?", "按 1 USD ≈ 7.1 RMB：基本关税约 RMB 8,520；MPF 约 RMB 298。"),
            *later,
        ],
    )


def test_a_question_whose_answer_the_assistant_then_gives_every_time_is_the_users_preference(
    store: MemoryStore,
) -> None:
    """Shown, not stated: the user asks once for RMB beside a dollar estimate, and the assistant gives RMB beside
    every amount after it unasked. The rule quotes the question and what the assistant kept giving; a "consider"
    rule for this user only."""
    adopted_session(
        store,
        "a1",
        [
            ("走海运的话还有哪些 fees?", "ISF filing：约 USD 35（约 RMB 249）；报关费约 USD 125（约 RMB 888）。"),
            ("customs bond 买哪种?", "一年进 1-3 票选 single entry，每票约 USD 80（约 RMB 568）。"),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("a1")
    (created,) = report.created
    rule = store.get(created)
    assert (rule.kind, rule.scope, rule.user_id) == ("preference", Scope.USER, "u-broker")
    assert rule.evidence.quote == "换算成人民币大概多少?" and rule.evidence.turn == 1
    assert "之后你每次都补上" in rule.action and "RMB" in rule.action
    assert rule.confidence < store.settings.must_confidence


def test_a_question_the_assistant_answered_once_teaches_nothing(store: MemoryStore) -> None:
    """RMB given once, then not again: no wish shown. Nor chair time given every time after a message that answered
    the assistant's own question: the question it asked, not the user, brought it in."""
    adopted_session(
        store,
        "a2",
        [
            ("走海运的话还有哪些 fees?", "ISF filing 约 USD 35；报关费约 USD 125。"),
            ("customs bond 买哪种?", "一年进 1-3 票选 single entry，每票约 USD 80。"),
        ],
    )
    assert ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("a2").created == []
    record(
        store,
        "a4",
        "u-clinic",
        "dental",
        [
            ("What's involved in a root canal on a molar?", "Which tooth is it, and is it a first visit?"),
            ("Lower molar. How long is she in the chair?", "Chair time: 60-90 minutes per visit, two visits."),
            ("and a scale and polish?", "Scale and polish: ultrasonic scaler, then polish. Chair time: 30 minutes."),
            ("the crown later?", "Crown: two appointments. Chair time: about an hour at the first."),
        ],
    )
    assert ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("a4").created == []


DRAFT_NOTICE = (
    "各位业主：\n您好！为保障小区供水安全，物业将于12月12日（周六）上午9:00至12:00对二次供水水箱进行清洗消毒，"
    "届时3号楼至6号楼将暂停供水。请各位业主提前做好储水准备。给您带来的不便，敬请谅解。\n特此通知。\n××物业服务中心"
)
SENT_NOTICE = "【停水｜3-6号楼】\n12月12日（周六）9:00→12:00\n原因：水箱清洗消毒\n请提前储水\n有事找前台 分机 8021"


def sent_version_session(store: MemoryStore, session: str, next_answer: str) -> None:
    record(
        store,
        session,
        "u-estate",
        "物业通知",
        [
            ("帮我写个停水通知：12月12日周六上午9点到12点，3到6号楼，水箱清洗。", DRAFT_NOTICE),
            (
                f"我最后发出去的是这样的：\n{SENT_NOTICE}\n\n下一个：12月15日电梯年检，1号楼两部电梯，14:00到16:00停用。",
                next_answer,
            ),
            ("好，就这么发。", "好的。"),
        ],
    )


def test_a_version_the_user_sent_in_place_of_the_draft_and_the_assistant_then_followed_is_their_preference(
    store: MemoryStore,
) -> None:
    """Shown, not stated: the user pastes the notice they actually sent, laid out their own way, and the assistant
    writes the next one in that layout. The rule quotes the version as the user wrote it; a "consider" rule for this
    user only."""
    followed = "【电梯年检｜1号楼】\n12月15日 14:00→16:00\n两部电梯停用\n请走楼梯\n有事找前台 分机 8021"
    sent_version_session(store, "v1", followed)
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("v1")
    (created,) = report.created
    rule = store.get(created)
    assert (rule.kind, rule.scope, rule.user_id) == ("preference", Scope.USER, "u-estate")
    assert "实际发出的版本" in rule.action and "【停水｜3-6号楼】" in rule.action
    assert "也写得和它一样简短（约" in rule.action  # the notice sent is a third of the draft's length
    assert rule.evidence.turn == 1 and rule.confidence < store.settings.must_confidence


def test_a_version_the_assistant_did_not_follow_or_that_rewrites_no_draft_teaches_nothing(store: MemoryStore) -> None:
    """The assistant went on in its own layout: nothing shows the user wanted theirs kept. Details pasted after a
    colon that the answer before never held (a form filled in) are no rewrite of it."""
    own_layout = (
        "各位业主：\n您好！为配合电梯年度检验，确保电梯运行安全，1号楼两部电梯将于12月15日（周二）14:00至16:00暂停使用，"
        "届时请各位业主走楼梯通行。给您带来的不便，敬请谅解。\n特此通知。\n××物业服务中心"
    )
    sent_version_session(store, "v2", own_layout)
    assert ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("v2").created == []
    assert (
        sent_versions(
            ["帮我登记访客。", "登记信息如下：\n姓名：林晓\n车牌：粤B 7K2Q9\n到访：2号楼1203\n时间：周五下午"],
            ["好的，请提供访客的姓名、车牌和到访房号。", "【访客登记】\n林晓｜粤B 7K2Q9\n2号楼1203｜周五下午"],
        )
        == {}
    )


def test_a_one_line_version_shows_its_layout_by_its_separators() -> None:
    """A version of one line ("库存表里最后填的是：" and a row split by |) is too short to compare line lengths: the
    separators it brought and the draft lacked show the layout, and the answer that separates its fields the same
    way followed it. An answer in the draft's own layout did not."""
    messages = [
        "帮我整理一下这件卫衣的入库信息：藏青色，L 码，3 件，放 B 区 2 号架，供应商是拾光服饰。",
        "库存表里最后填的是：\nHD-2031|藏青|L|3|B-02|拾光服饰\n\n下一件：米白色帆布包，均码，5 个，A 区 7 号架。",
    ]
    draft = "入库信息：\n款号：HD-2031\n颜色：藏青色\n尺码：L\n数量：3 件\n货位：B 区 2 号架\n供应商：拾光服饰"
    followed = "好的，帆布包按这个格式：\nBG-0415|米白|均码|5|A-07|拾光服饰"
    assert sent_versions(messages, [draft, followed])[1].text == "HD-2031|藏青|L|3|B-02|拾光服饰"
    own_layout = "入库信息：\n款号：BG-0415\n颜色：米白色\n尺码：均码\n数量：5 个\n货位：A 区 7 号架"
    assert sent_versions(messages, [draft, own_layout]) == {}
    # a date's slashes separate no fields: "2026/12/05" in the version and the answer shows no layout
    sent = "最后登记的是：\nHD-2031 藏青 L 3 件 2026/12/05 入库\n\n下一件：帆布包 5 个。"
    dated = ["帮我记一下入库：卫衣 3 件。", sent]
    first = "入库：款号 HD-2031，藏青色，L 码，3 件。"
    assert sent_versions(dated, [first, "帆布包 BG-0415 米白 5 个 2026/12/05 入库"]) == {}


def test_pictograms_that_open_a_versions_lines_are_its_layout() -> None:
    """A version that marks its fields with pictograms ("⏰ 时间：", "📍 范围：") brought a layout the draft lacked (its
    lines as long as the draft's), and the next answer that keeps them followed it; an answer in the draft's layout
    did not."""
    draft = (
        "【停水通知】青松苑 2 栋 明天\n停水时间：9:00—13:00\n停水范围：青松苑 2 栋全部住户\n停水原因：管道维修\n"
        "温馨提醒：提前储水"
    )
    messages = [
        "明天青松苑 2 栋停水，9 点到 13 点，帮我写个通知。",
        "最后发群里的是：\n【停水通知】青松苑 2 栋 明天\n⏰ 时间：9:00—13:00\n📍 范围：青松苑 2 栋全部住户\n"
        "🔧 原因：管道维修\n💧 提醒：提前储水\n\n下一个：后天 3 栋，10 点到 12 点，换水表。",
    ]
    followed = (
        "【停水通知】青松苑 3 栋 后天\n⏰ 时间：10:00—12:00\n📍 范围：青松苑 3 栋全部住户\n🔧 原因：更换水表\n"
        "💧 提醒：提前储水"
    )
    assert sent_versions(messages, [draft, followed])[1].text.startswith("【停水通知】青松苑 2 栋 明天\n⏰ 时间")
    own_layout = (
        "【停水通知】青松苑 3 栋 后天\n停水时间：10:00—12:00\n停水范围：青松苑 3 栋全部住户\n停水原因：更换水表\n"
        "温馨提醒：提前储水"
    )
    assert sent_versions(messages, [draft, own_layout]) == {}


def test_an_answer_to_the_assistants_own_question_is_no_returning_wish() -> None:
    """The assistant asked, the user answered: whatever the model leans to and whatever words come back later, the
    answer states no wish unless it marks one as standing."""
    leaning = Correction(
        CorrectionType.NONE,
        0.0,
        probabilities={"factual": 0.05, "preference": 0.6, "process": 0.0, "negative": 0.0, "none": 0.35},
    )
    answer = "How many years has Ines run the allotment shop, and is there one season people still talk about?"
    others = ["put the drought summer in the headline too"]
    message = "Twelve years. Everyone still talks about the drought summer, when she rationed the water butts."
    assert repeated_wish(leaning, message, answer, others).type is CorrectionType.NONE
    standing = repeated_wish(leaning, "From now on, the drought summer in every piece about her.", answer, others)
    assert standing.type is CorrectionType.PREFERENCE


def test_a_follow_up_question_with_its_reason_after_it_still_only_asks(store: MemoryStore) -> None:
    """ "换算成人民币大概多少？财务要看。" asks, then says why: the assistant giving RMB every time after it shows the
    wish as well as the bare question does."""
    record(
        store,
        "a5",
        "u-broker",
        "customs",
        [
            ("我们有一批 ceramic mugs 要进美国，duty 大概多少？", "按 6912 估算：基本税率约 10%，USD 1,200。"),
            ("换算成人民币大概多少？财务要看。", "按 1 USD ≈ 7.1 RMB：基本关税约 RMB 8,520。"),
            ("走海运的话还有哪些 fees?", "ISF filing：约 USD 35（约 RMB 249）；报关费约 USD 125（约 RMB 888）。"),
            ("customs bond 买哪种?", "一年进 1-3 票选 single entry，每票约 USD 80（约 RMB 568）。"),
        ],
    )
    (created,) = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("a5").created
    assert store.get(created).evidence.quote == "换算成人民币大概多少？财务要看。"


# The twenty-eighth model (C 30, the twenty-sixth set retired) missed this: it read the whole message as a wish and a
# rule nearly alike (preference 0.51, process 0.49). The twenty-ninth reads it as the rule the rules find again.
def test_a_wish_beside_a_rule_that_only_the_learned_detector_reads_is_a_second_lesson(
    store: MemoryStore, learned: LearnedDetector
) -> None:
    """A company's rule, then the user's own wish in words the rules lack ("put the text for the customer first and
    your notes to me below it"): the learned detector, reading that sentence alone, takes it for a wish beyond doubt,
    so the message teaches both. The request between them ("Redo it asking him for a survey date.") teaches
    nothing."""
    record(
        store,
        "w1",
        "u-kitchens",
        "quotes",
        [
            (
                "Draft a reply to Mr Osei about his kitchen refit.",
                "Here's a draft: the refit would come to about £9,800.",
            ),
            (
                "No. We don't send a kitchen price without the site survey — Dana measures the room and checks the "
                "plumbing runs, and she signs the survey sheet before any number goes out. That's the rule for every "
                "refit. Redo it asking him for a survey date. Oh and put the text for the customer first and your "
                "notes to me below it, I paste straight from the top.",
                "Dear Mr Osei, could you let us know a date for the site survey? ...",
            ),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings).with_detector(learned)).reflect_session("w1")
    rules = [store.get(created) for created in report.created]
    kinds = sorted(rule.kind for rule in rules)
    assert "process" in kinds and "preference" in kinds, kinds
    (wish,) = [rule for rule in rules if rule.kind == "preference"]
    assert "customer first" in wish.action and "survey date" not in wish.action


def test_a_version_that_runs_on_into_the_users_own_words_is_its_leading_lines() -> None:
    """No blank line parts the version from what the user goes on to say ("就这两行…下一个…"): the version is the
    paragraph's leading lines that still rewrite the draft together."""
    draft = "温馨提示：本周四下午两点至四点，三号楼电梯进行年度维护保养，维护期间电梯暂停使用，请您合理安排出行。"
    messages = [
        "帮我写个电梯保养的提示，贴电梯口。",
        "我贴出去的是这样的：\n【电梯保养】周四 14:00→16:00\n三号楼 电梯停用 → 走楼梯\n"
        "就这两行，字打得大大的，老人也看得清。再来一个：车库周六冲洗。",
    ]
    answer = "【电梯保养】周五 9:00→11:00\n五号楼 电梯停用 → 走楼梯"
    assert sent_versions(messages, [draft, answer])[1].text == "【电梯保养】周四 14:00→16:00\n三号楼 电梯停用 → 走楼梯"


@pytest.mark.parametrize(
    ("message", "said"),
    [
        (
            "我自己把称呼改成了“各位家长”才发的群里。下一条：周三的课改到晚上七点。",
            "我自己把称呼改成了“各位家长”才发的群里。",
        ),
        ("发的是：“周三课改七点，地点不变。” 下一条：周五停课。", "发的是：“周三课改七点，地点不变。”"),
        (
            "sent it as 'Van 3, 09:10, Ms K.L., Dock Road -> Hillside Clinic.' next one is van 5 at ten.",
            "sent it as 'Van 3, 09:10, Ms K.L., Dock Road -> Hillside Clinic.'",
        ),
        (
            "I trimmed the greeting and the sign-off before I sent it. Now the one for Thursday's delivery.",
            "I trimmed the greeting and the sign-off before I sent it.",
        ),
    ],
)
def test_what_the_user_says_they_changed_before_sending_the_draft_is_found(message: str, said: str) -> None:
    assert reported_edits(["帮我写一条通知。", message], ["各位家长好：……", "……"]) == {1: said}


def test_a_change_reported_before_sending_becomes_the_users_preference_and_a_plain_report_does_not(
    store: MemoryStore,
) -> None:
    """Shown, not stated: the user says how they changed the draft before sending it; the rule asks for the same
    change, a "consider" rule for this user only. A message that sends nothing (a fact, a question) is no such report,
    and a report needs a draft before it."""
    record(
        store,
        "e1",
        "u-class",
        "班级通知",
        [
            ("帮我写个通知，周三的书法课改到晚上七点。", "尊敬的各位家长：您好！本周三的书法课调整至晚上七点……"),
            ("我自己把开头改成了“各位家长”才发的群里。下一条：周五停课一次。", "各位家长：本周五书法课停课一次。"),
        ],
    )
    (created,) = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("e1").created
    rule = store.get(created)
    assert (rule.kind, rule.scope, rule.user_id) == ("preference", Scope.USER, "u-class")
    assert "发出前对你草稿的改法" in rule.action and "各位家长" in rule.action
    assert rule.confidence < store.settings.must_confidence
    assert reported_edits(["你好", "周三的课改到七点了吗？"], ["你好！", "改了。"]) == {}
    assert reported_edits(["发的是：“周三课改七点。”"], [None]) == {}


def test_a_short_version_the_answer_then_opens_or_signs_off_like_is_their_layout() -> None:
    """A version of one or two lines cannot show its layout by line lengths: the answer after that opens with its
    first words (the draft did not), or signs off with its last words, followed it; a date both end with does not."""
    draft = "Dear customer, we are sorry to say a burst water main on Mill Lane has cut your supply until 17:00."
    messages = [
        "Burst main on Mill Lane, 60 homes, fix by 17:00. Text please.",
        "Sent this instead:\n\nAqualine: REF W-2210. Burst main on Mill Lane. No water till about 17:00.\n\n"
        "Next one: low pressure in Oak Road, 25 homes, no fix time yet.",
    ]
    opens_alike = "Aqualine: REF W-[number]. Low pressure in Oak Road. No fix time yet."
    version = sent_versions(messages, [draft, opens_alike])[1].text
    assert version.startswith("Aqualine: REF W-2210")
    assert sent_versions(messages, [draft, "Dear customer, we are sorry to tell you about low pressure …"]) == {}
    signed = [
        "Note for a late guest, room 2, key box.",
        "What went out:\n\nKey box by the red door, room 2, code by text.\n— Front desk, Gull Inn",
    ]
    welcome = "Hi there! Welcome to our lovely inn! Your key for room 2 is in the key box by the door, code by text."
    answer = "Bag drop: locker behind reception, £3.\n— Front desk, Gull Inn"
    assert 1 in sent_versions(signed, [welcome, answer])


INVITATION_DRAFT = (
    "Dear Ms Rowe,\n\nI hope this message finds you well. On behalf of the organising committee of the Harbour Arts "
    "Fair, I am delighted to invite you to give a talk on printmaking at this year's fair on Saturday 6 June. We "
    "believe your experience would be of great interest to our visitors, and we would be most grateful for a reply "
    "at your earliest convenience.\n\nWith kind regards,\nFair Office\nHarbour Arts Fair"
)


def test_a_version_keeps_a_line_the_user_wrote_into_it_and_ends_at_their_next_request() -> None:
    """A line the user added to the draft ("Can't make it? Suggest a colleague.") stays in the version when the
    sign-off after it rewrites the draft again; the paragraph that asks for the next one ("Now one for …:") is the
    user's request, no part of it. The version is less than two thirds of the draft: it was cut down."""
    messages = [
        "Invite Ms Rowe to talk on printmaking at the fair, Saturday 6 June.",
        "I trimmed it, this is what went out:\n\nDear Ms Rowe,\n\nCould you give a talk on printmaking at the "
        "Harbour Arts Fair on Saturday 6 June?\n\nCan't make it? Suggest a colleague.\n\nFair Office\nHarbour Arts "
        "Fair\n\nNow one for Mr Dale: a woodcut demo on Sunday 7 June.",
    ]
    answer = (
        "Dear Mr Dale,\n\nCould you give a woodcut demo at the Harbour Arts Fair on Sunday 7 June?\n\n"
        "Can't make it? Suggest a colleague.\n\nFair Office\nHarbour Arts Fair"
    )
    version = sent_versions(messages, [INVITATION_DRAFT, answer])[1]
    assert "Suggest a colleague.\n\nFair Office" in version.text and "Mr Dale" not in version.text
    assert version.cut_down is not None and 3 * version.cut_down[0] <= 2 * version.cut_down[1]
    # without the sign-off after it, the added line ends the version: nothing after it rewrites the draft
    unsigned = [messages[0], messages[1].replace("Fair Office\nHarbour Arts Fair\n\n", "")]
    assert all("Suggest" not in found.text for found in sent_versions(unsigned, [INVITATION_DRAFT, answer]).values())


def test_a_version_cut_down_says_how_short_in_the_rule(settings: Settings) -> None:
    """The rule quotes a version's first characters only: when the user cut the draft down, it says how short."""
    shown = Correction(CorrectionType.PREFERENCE, 0.5, corrected="Dear Ms Rowe, could you give a talk …")
    english = wording(shown, "this is what went out:", settings, sent=True, cut_down=(38, 95)).action
    assert "keep it as short as theirs (about 38 words; your draft had 95)" in english
    chinese = wording(shown, "我最后发出去的是：", settings, sent=True, cut_down=(40, 160)).action
    assert "也写得和它一样简短（约40字，你的草稿约160字）" in chinese
    assert "short" not in wording(shown, "this is what went out:", settings, sent=True).action


def test_a_fact_read_into_the_version_the_user_sent_is_none(store: MemoryStore, learned: LearnedDetector) -> None:
    """The version the user pasted is what they sent, no fact put right; the next item's values after it are the next
    task's. What is learned is the layout."""
    record(
        store,
        "ver1",
        "u-water",
        "outage texts",
        [
            (
                "Burst main on Mill Lane, 60 homes, fix by 17:00. Text please.",
                "Dear customer, we are sorry to tell you that a burst water main on Mill Lane has interrupted your "
                "supply. Our engineers expect to restore it by around 5pm.",
            ),
            (
                "What actually went out:\n\nAqualine: REF W-2210. Burst main on Mill Lane. No water till about 17:00. "
                "Updates: aqualine.example/live\n\nNext one: low pressure in Oak Road, 25 homes, next update 15:30.",
                "Aqualine: REF W-[number]. Low pressure in Oak Road. Next update 15:30. Updates: aqualine.example/live",
            ),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings).with_detector(learned)).reflect_session("ver1")
    kinds = [rule.kind for rule in (store.get(i) for i in report.saved_ids) if rule is not None]
    assert kinds and set(kinds) == {"preference"}


def test_a_question_once_and_its_subject_in_the_next_tasks_answer_is_a_wish_shown() -> None:
    """One later answer to a new request is enough when it gives the question's own words ("wet weather plan"); an
    answer that shares only other words with it is chance, and so is a rewrite asked for this time only."""
    messages = [
        "Plan the school sports day, 9 to 3, 200 kids.",
        "and what if it rains? wet weather plan?",
        "Now the parents' fun run on Sunday, 8 to 11.",
        "Great, thanks",
    ]
    answers = [
        "09:00 registration · 09:30 sprints · 11:00 relays · 13:00 tug of war · 15:00 prizes",
        "Wet weather plan: move sprints to the sports hall, relays become shuttle runs, decide by 07:30.",
        "08:00 check-in · 08:30 warm-up · 09:00 5 km start · 10:30 medals. Wet weather plan: start from the hall.",
        "You're welcome!",
    ]
    findings = [None, None, None, None]
    assert list(adopted_requests(messages, answers, findings)) == [1]
    other = [*answers[:2], "08:00 check-in · 08:30 warm-up, move to the hall if needed · 10:30 medals.", answers[3]]
    assert adopted_requests(messages, other, findings) == {}
    rewrite = [*messages[:2], "这次把上面的安排翻成中文。", "Great, thanks"]
    assert adopted_requests(rewrite, answers, findings) == {}
    recap = [*messages[:2], "Could you give me the whole day as a checklist this once? It goes on the staffroom wall."]
    assert adopted_requests([*recap, "Great, thanks"], answers, findings) == {}
    # the question with what the user has for it and its reason after it still only asks
    with_values = [
        messages[0],
        "Good. Finish times too, can you put them in? I've got sprints 09:50, relays 11:40. Parents always ask.",
        *messages[2:],
    ]
    kept = [
        answers[0],
        "Finish times: sprints 09:50, relays 11:40.",
        "08:00 check-in · 10:30 medals. Finish times: 5 km 10:15.",
        answers[3],
    ]
    assert list(adopted_requests(with_values, kept, findings)) == [1]


_TARIFF_ANSWER = "At the standard rate of 0.56 per kWh, the heater costs about 268 a month."


@pytest.mark.xfail(
    strict=True,
    reason="known miss of the twenty-second to thirtieth models: they read the tariff sentences together under "
    "the further-fact bar (FURTHER_LEARNED_AT 0.95; P(fact) 0.9495 and 0.9186 with the twenty-second and twenty-third; "
    "the twenty-first model read them above it)",
)
def test_a_fact_beside_a_stated_wish_is_learned_too(learned: LearnedDetector) -> None:
    """One message, two lessons: the rules find the wish, and the other sentences, read together by the model beyond
    doubt, put a fact of the user's own right (their tariff)."""
    message = (
        "0.56 isn't my rate. We've been on a time-of-use tariff for two years: 0.31 per kWh from 10pm to 8am and "
        "0.62 in the day, and the heater only runs after 10pm. And from now on just tell me the cost, skip the "
        "formulas."
    )
    assert_a_wish_and_the_fact_beside_it(message, _TARIFF_ANSWER, learned)


# (the thirty-sixth model read the tariff sentences together at P(fact) 0.952, under its factual_at 0.96, and the
# forty-second at 0.955, under its correction_at 0.96; the thirty-fifth and thirty-seventh read them over their 0.94,
# and the forty-third learns it again)
def test_a_fact_beside_a_stated_wish_is_learned_too_zh(learned: LearnedDetector) -> None:
    """The same in Chinese: the wish is the rules' finding, the tariff the sentences before it put right."""
    previous = "按照每度0.56元算，这台电暖器一个月大概268元。"
    message = (
        "你那个0.56不是我家的价。我家前年就申请了峰谷电，晚上十点到早上八点一度0.31，白天0.62，电暖器只在晚上开。"
        "还有，你以后算账直接告诉我多少钱就行，别列公式。"
    )
    assert_a_wish_and_the_fact_beside_it(message, previous, learned)


def assert_a_wish_and_the_fact_beside_it(message: str, previous: str, learned: LearnedDetector) -> None:
    """The message's finding is the wish, and its one further lesson the tariff (0.31) put right beside it."""
    found = detect(message, previous, learned)
    further = further_wishes(message, previous, found, learned)
    assert found.type is CorrectionType.PREFERENCE
    assert [lesson.type for lesson in further] == [CorrectionType.FACTUAL]
    assert "0.31" in (further[0].corrected or "")


def test_a_question_beside_a_stated_wish_adds_no_fact(learned: LearnedDetector) -> None:
    asking = "And from now on just tell me the cost, skip the formulas. What would a 2 kW heater cost at night?"
    found = detect(asking, _TARIFF_ANSWER, learned)
    assert found.type is CorrectionType.PREFERENCE
    assert further_wishes(asking, _TARIFF_ANSWER, found, learned) == []


def test_a_line_asked_for_once_and_kept_in_every_later_draft_is_a_wish_shown() -> None:
    """ "后面再加一句…" asks for a line in the draft at hand; when the next drafts of new items keep a line of that kind
    unasked, the assistant adopted it as this user's wish. A draft that drops it again shows nothing."""
    messages = [
        "帮我写个练琴反馈，小雨，今天音阶进步很大。",
        "行。最后再加一句本周练习：音阶每天十遍，周五前发视频。",
        "下一个，王小川，节奏稳，不爱看谱。",
        "再写一个，刘果果，唱得好，坐不住。",
    ]
    answers = [
        "小雨妈妈您好！今天音阶进步很大，手型也更稳了。",
        "小雨妈妈您好！今天音阶进步很大，手型也更稳了。\n本周练习：音阶每天十遍，周五前发视频。",
        "小川妈妈您好！小川节奏很稳，看谱还要加强。\n本周练习：视奏每天五分钟。",
        "果果妈妈您好！果果唱得很放得开，专注力还要练。\n本周练习：【请补充】",
    ]
    findings: list[Correction | None] = [None, None, None, None]
    assert list(adopted_requests(messages, answers, findings)) == [1]
    dropped = [*answers[:2], "小川妈妈您好！小川节奏很稳，看谱还要加强。", "果果妈妈您好！果果唱得很放得开。"]
    assert adopted_requests(messages, dropped, findings) == {}
    # a line said to be for this draft only ("只加这一篇") is no wish, whatever the later drafts keep
    only_this_one = [messages[0], "行。最后再加一句本周练习：音阶每天十遍，周五前发视频，只加这一篇。", *messages[2:]]
    assert adopted_requests(only_this_one, answers, findings) == {}


def test_asking_whether_the_replies_should_tell_people_something_is_a_wish_shown_when_kept() -> None:
    """Whether the replies should tell people something ("Should I be warning people about the ford?") asks about what
    the drafts hold, in the opening request too and with its reasons after it; it is a wish shown when the assistant
    then tells it unasked in every later reply. A question about whom to tell is not kept, and teaches nothing."""
    messages = [
        "Reply to this one: 'Can we visit the bluebell wood on Sunday?' Also, should we warn people about the ford? "
        "It floods after rain and the footbridge is 200 m upstream. Last week a car got stuck.",
        "Next: 'Is there parking for a minibus?' There's room for one by the gate.",
        "And: 'Are dogs allowed?' On leads, yes.",
    ]
    answers = [
        "Yes, Sunday is fine. Note: the ford floods after rain, use the footbridge 200 m upstream.",
        "There's room for one minibus by the gate. After rain the ford floods: use the footbridge upstream.",
        "Dogs are welcome on leads. If it has rained, the ford floods, so cross at the footbridge.",
    ]
    found = adopted_requests(messages, answers, [None, None, None])
    assert list(found) == [0] and "ford" in found[0]
    # 要不要提醒 in Chinese, after the first draft
    chinese = [
        "帮我回客人：周六可以带孩子来采茶吗？",
        "好的。要不要提醒客人茶园里蚊子多，记得穿长袖？上周有个孩子被咬得很厉害。",
        "下一个：能帮忙寄两斤明前茶到北京吗？",
        "再一个：团购二十斤有优惠吗？",
    ]
    replies = [
        "可以的，周六上午九点开园，孩子可以一起采茶。",
        "建议提醒。草稿：周六上午九点开园。园里蚊子多，请穿长袖长裤。",
        "可以寄，顺丰两天到北京。来园里的话蚊子多，记得穿长袖。",
        "二十斤可以打九折。来提货时园里蚊子多，请穿长袖。",
    ]
    assert list(adopted_requests(chinese, replies, [None] * 4)) == [1]
    # the question put the other way round, and an adverb between 要不要 and 提醒
    turned = [messages[0].replace("should we warn people", "do you think we should be warning people"), *messages[1:]]
    assert list(adopted_requests(turned, answers, [None, None, None])) == [0]
    by_the_way = [chinese[0], chinese[1].replace("要不要提醒", "要不要顺便提醒"), *chinese[2:]]
    assert list(adopted_requests(by_the_way, replies, [None] * 4)) == [1]
    # whom and where between (要不要跟客人说一声, 要不要在回复里提醒), and the question's mark past a semicolon
    to_whom = [chinese[0], chinese[1].replace("要不要提醒客人", "要不要跟客人说一声"), *chinese[2:]]
    assert list(adopted_requests(to_whom, replies, [None] * 4)) == [1]
    where = [chinese[0], "好的。要不要在回复里提醒客人：茶园里蚊子多，记得穿长袖；还有雨天路滑也要说？", *chinese[2:]]
    assert list(adopted_requests(where, replies, [None] * 4)) == [1]
    # the question's own words show it, not a signature the same message asked for in every reply
    signed = [
        "帮我回客人：周六可以带孩子来采茶吗？另外要不要提醒客人茶园里蚊子多，记得穿长袖？落款云岭茶园 阿梅。",
        "下一个：能帮忙寄两斤明前茶到北京吗？",
        "再一个：团购二十斤有优惠吗？",
    ]
    signed_replies = [f"{reply}\n云岭茶园 阿梅" for reply in replies[1:]]
    found = adopted_requests(signed, signed_replies, [None] * 3)
    assert list(found) == [0] and "蚊子" in found[0]
    # a turn with no words (an upload alone) asks nothing and breaks nothing
    assert list(adopted_requests(["", *chinese[1:]], replies, [None] * 4)) == [1]
    # the assistant does not keep it: nothing shown
    dropped = [*answers[:2], "Dogs are welcome on leads."]
    assert adopted_requests(messages, dropped, [None, None, None]) == {}


def test_a_version_the_assistant_follows_from_the_answer_after_next_is_still_shown() -> None:
    """The answer right after the version only remarks on it ("这个清楚多了"), and the next drafts follow its layout:
    the version is still the wish the user showed."""
    draft = (
        "刘女士您好！感谢您一直以来的支持～您的自行车我们已经检查完毕，后刹车片磨损比较严重，建议更换，"
        "费用大约八十元，今天下午就能修好。如有任何疑问，欢迎随时联系我们！"
    )
    version = "【车检结果】刘女士\n问题：后刹车片磨平\n方案：换刹车片\n报价：八十\n取车：今天下午\n回“换”就动手——小吴"
    messages = [
        "帮我写个消息给刘女士，后刹车片要换，八十块，今天下午好。",
        f"我最后发的是这个：\n\n{version}",
        "再写一个给钱先生：链条断了，换链条六十，明天取。",
    ]
    remark = "这个清楚多了，一眼就能看到价钱和时间。之后我就照这个格式写。"
    followed = "【车检结果】钱先生\n问题：链条断了\n方案：换链条\n报价：六十\n取车：明天\n回“换”就动手——小吴"
    found = sent_versions(messages, [draft, remark, followed])
    assert found[1].text == version
    assert (
        sent_versions(messages, [draft, remark, "钱先生您好！您的自行车链条断了，需要更换，费用六十元，明天可取。"])
        == {}
    )


def test_a_user_who_says_they_work_alone_after_an_answer_for_a_team_teaches_a_fact_for_them(
    store: MemoryStore, learned: LearnedDetector
) -> None:
    """The draft wrote for a team ("one of our fitters"); the user describes the one-person business instead, and asks
    for the reply again. The description is a fact for this user (the rule says they work alone, in their words),
    and the wish in the same message is a second lesson."""
    record(
        store,
        "alone-1",
        "u-glazier",
        "glazier_replies",
        [
            (
                "Reply to this: 'Can you replace a cracked pane in my back door this Saturday? Dan'",
                "Hi Dan, thanks for getting in touch. One of our fitters can come out on Saturday morning, "
                "and our team will bring the glass cut to size.",
            ),
            (
                "It's only me, working out of my garage in Hove. I measure on a first visit and fit on a second, "
                "usually three or four days later, and I don't work weekends. From now on sign my replies as Pete. "
                "Try again.",
                "Hi Dan, thanks for getting in touch. I work on my own, so I'd measure up first on a weekday. Pete",
            ),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings, learned)).reflect_session("alone-1")
    rules = [store.get(created) for created in report.created]
    facts = [rule for rule in rules if rule.kind == "fact" and rule.scope is Scope.USER]
    assert len(facts) == 1 and "works alone" in facts[0].action
    assert "It's only me, working out of my garage in Hove." in facts[0].action
    assert "sign my replies as Pete" not in facts[0].action and "Try again" not in facts[0].action
    assert any(rule.kind == "preference" and "Pete" in rule.action for rule in rules)
