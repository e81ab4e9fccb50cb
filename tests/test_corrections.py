"""The correction detector: every trigger family and every look-alike family, on examples written for these tests
(not taken from the labelled set), the fields it fills, and the acceptance criteria on the labelled holdout split."""

from __future__ import annotations

import pytest

from bench.eval_corrections import evaluate, load
from hindsight_insights.detection.correction_patterns import marked_standing
from hindsight_insights.detection.correction_turn import own_words, read
from hindsight_insights.detection.correction_types import Correction
from hindsight_insights.detection.corrections import (
    Condition,
    CorrectionType,
    _with_condition,
    detect,
    further_wishes,
    ruled_out,
)

FACTUAL, PREFERENCE, PROCESS, NEGATIVE, NONE = (
    CorrectionType.FACTUAL,
    CorrectionType.PREFERENCE,
    CorrectionType.PROCESS,
    CorrectionType.NEGATIVE,
    CorrectionType.NONE,
)

# (family, previous assistant turn, user message)
TRIGGERS: dict[CorrectionType, list[tuple[str, str | None, str]]] = {
    FACTUAL: [
        ("verdict + value zh", "门店营业时间是早上 9 点到晚上 9 点。", "不对，晚上是 10 点关门"),
        ("verdict + cue zh", "您的快递将发往上海市浦东新区。", "地址错了，应该是杭州市西湖区"),
        ("contrast zh", "李总的邮箱是 li@corp.com。", "不是 li@corp.com，是 lizong@corp.com"),
        ("cue zh", "这个接口每秒限流 100 次。", "实际上是每秒 50 次，文档里写的"),
        ("verdict + value zh", "会议室在 3 楼。", "搞错了吧，会议室在 5 楼"),
        ("cue zh", "这款手机是 2022 年发布的。", "明明是 2023 年发布的"),
        ("traditional zh", "公司的报销上限是每月 2000 元。", "報銷上限不對，應該是每月 3000 元"),
        ("contrast 不在…在 zh", "服务器在北京机房。", "服务器不在北京，在广州机房"),
        ("verdict + value en", "Your order will arrive on Friday.", "That's wrong, it's arriving Monday."),
        ("cue en", "The API rate limit is 100 requests per minute.", "Actually it's 60 requests per minute."),
        ("no + value en", "The office is on the 4th floor.", "No, the office is on the 7th floor."),
        ("verdict + name en", "Our CFO is John Lee.", "Wrong, the CFO is Maria Chen."),
        ("X, not Y en", "The discount is 20%.", "The discount is 15%, not 20%."),
        ("X, not Y code en", "The meeting is in room 301.", "It's room 310, not 301."),
        ("mixed zh/en", "你们的 SLA 是 99.9%。", "不对，SLA 是 99.95%"),
        ("update cue mixed", "Release 定在 5 月 20 号。", "release 推迟到 5 月 27 号了"),
        ("implicit number zh", "这台笔记本的内存是 8GB。", "内存是 16GB 的，我刚看了配置单"),
        ("implicit number en", "The parking lot holds 40 cars.", "The lot holds 60 cars since the expansion."),
        ("implicit clock en", "The flight departs at 7 am.", "It departs at 9 am, I just checked the app."),
        ("implicit weekday zh", "您预约的是周三上午。", "我约的是周四上午"),
        ("implicit code mixed", "这个 bug 的 priority 是 P2。", "这个是 P0，线上已经挂了"),
        ("changed fact zh", "退货地址是北京市朝阳区。", "退货地址早就改成上海了"),
        ("changed fact en", "The repo uses Node 16.", "We're on Node 20 now, upgraded last sprint."),
    ],
    PREFERENCE: [
        ("address zh", None, "以后叫我小李就行"),
        ("address rejected zh", "张女士您好，这是您要的资料。", "别叫我张女士，叫我张姐"),
        ("address en", "Hello Mr. Smith, here is the report.", "Just call me Tom."),
        ("address en", "Hi buddy!", "Please address me as Ms. Garcia."),
        ("wording zh", None, "别每次都说“好的呢亲”，太假了"),
        ("wording en", "Sure thing, champ!", "Drop the 'champ', it's weird."),
        ("structure zh", None, "以后回答先说结论，不要铺垫"),
        ("structure en", None, "Bullet points, not paragraphs."),
        ("length zh", None, "回复别太长，五句话以内"),
        ("length complaint zh", "以下是详细分析……（共 2000 字）", "太长了，我没时间看"),
        ("length en", None, "Keep your answers short, I read them on my watch."),
        ("format zh", None, "请用表格列出来，以后都这样"),
        ("format en", None, "I prefer bullet points over long paragraphs."),
        ("units en", "The file is 2,048 KB.", "Sizes in MB please."),
        ("currency zh", None, "金额一律用人民币"),
        ("time zone zh", None, "时间都用北京时间"),
        ("language zh", None, "以后跟我说话用中文"),
        ("language en", None, "Reply in Spanish from now on."),
        ("language, the version marked standing zh", None, "以后英文版都不用了，只要中文。"),
        ("language, the English version marked standing mixed", None, "以后 English version 都不用了，只发中文。"),
        ("standing wish, replies written for the user zh", None, "以后你帮我回问退货的客人，都要讲明运费谁出。"),
        ("code language en", None, "When you give me code, use Python 3 and add type hints."),
        ("tone zh", None, "别用那么多 emoji，我看着累"),
        ("tone en", None, "Please never use emojis in your replies."),
        ("depth zh", None, "解释的时候说人话，我是新手"),
        ("sources en", None, "Please include sources when you quote numbers."),
        ("conversation en", None, "I hate it when you repeat my question back to me."),
        ("numbers zh", None, "我是做财务的，数字都给我精确到分"),
        ("standing wish zh", None, "以后回复我的时候带上订单号"),
        ("standing wish en", None, "Next time, tell me the price before the details."),
        ("wording with 'the word' en", None, "Please don't use the word 'leverage' with me."),
        ("tone zh", "您好！非常感谢您的耐心等待～", "说话直接点就行"),
    ],
    PROCESS: [
        ("gate before zh", "我现在就帮您办理退款。", "退款之前要先确认商品已经退回仓库"),
        ("first…then zh", "我直接把这个版本发布到线上了。", "应该先在预发环境验证，再发布到线上"),
        ("must first zh", "我先把新功能合并到主干。", "合并之前必须先过 code review"),
        ("rule zh", "我直接删除了这些旧数据。", "删数据前要先备份，这是公司规定"),
        ("wait then zh", "我马上安排发货。", "等客户确认了再发货"),
        ("gate after zh", "我把合同发出去了。", "只有法务审过才能发合同"),
        ("route zh", "这个问题我来处理吧。", "这类问题要转给二线处理"),
        ("process without assistant turn zh", None, "流程是先提交申请，主管审批，再由财务打款"),
        (
            "before en",
            "I'll deploy the hotfix straight to production.",
            "You should test it on staging before deploying.",
        ),
        (
            "gate en",
            "I've sent the invoice to the client.",
            "Invoices need the finance team's approval before they go out.",
        ),
        ("until en", "I've closed the ticket.", "Don't close tickets until the customer confirms the fix."),
        ("without en", "I ran the migration on prod.", "Never run migrations on prod without a backup."),
        ("once…then en", "I shipped the order.", "Once the payment clears, then ship it."),
        (
            "instead of en",
            "I emailed the manager about it.",
            "Instead of emailing the manager, file a ticket in the portal.",
        ),
        ("escalate en", "I'll handle the outage myself.", "Escalate it to the on-call SRE."),
        ("mixed", "我直接 merge 了这个 PR。", "merge 之前要等 CI 跑完"),
    ],
    NEGATIVE: [
        ("bare zh", "您的订单已发货。", "不对"),
        ("verb+错 zh", "总计 350 元。", "算错了吧"),
        ("misunderstood zh", "按您的要求，我把报告改成了英文。", "你完全理解错了我的意思"),
        ("not these zh", "我帮您查到了三条记录。", "不是这几条"),
        ("still broken zh", "这是修复后的代码。", "问题还在"),
        ("bare 不是 zh", "您是想退货对吗？", "不是"),
        ("incorrect en", "The capital of Australia is Sydney.", "That's incorrect."),
        ("no en", "I've booked the room for Tuesday.", "No, that's not right."),
        ("not what I asked en", "Here is the summary.", "This isn't what I asked for."),
        ("didn't help en", "Try restarting the service.", "That didn't help."),
        ("wrong thing you sent en", "I've attached the Q3 report.", "You sent the wrong file."),
        ("mixed", "这个 query 的结果是 350 条。", "结果不对啊"),
    ],
}

LOOKALIKES: list[tuple[str, str | None, str]] = [
    ("rhetorical zh", "这是新的方案。", "这不是很好吗？就这么办"),
    ("rhetorical surprise zh", "已经帮你订好了。", "这么快？不是说要等明天吗"),
    ("rhetorical en", "The build passed.", "Isn't it amazing how fast that was?"),
    ("i don't know zh", "你好，请问有什么可以帮您？", "我不知道要问什么"),
    ("i don't know actually en", "Here are the results.", "I don't know actually, let me think."),
    ("actually + new request en", "Here is the table.", "Actually, can you also add the totals?"),
    ("actually + new request en", "Here's the draft.", "Actually, could you make a shorter version for Twitter too?"),
    ("adds information zh", "您的订单金额是 199 元。", "另外帮我查一下 88 元那个订单"),
    ("adds information zh", "这款售价 2500 元。", "我上个月也买了一台，花了 3000"),
    ("adds information en", "The office has 20 desks.", "We have 25 people joining next month."),
    ("another period zh", "这个季度目标是 100 万。", "上个季度我们做了 80 万"),
    ("negotiation zh", "报价 299 元/套。", "我只能出 199"),
    ("question about a correction zh", "您要去的城市是杭州。", "你确定是杭州吗？"),
    ("question about a correction en", "The meeting is at 3 pm.", "Wait, is that right?"),
    ("question with another value zh", "您的订单预计周三送达。", "我周三不在家，能周四送吗"),
    ("question with another value en", "Your appointment is on Monday.", "I can't make Monday, can we do Tuesday?"),
    ("reported speech zh", None, "同事说这个报表不对，让我问问你怎么核对"),
    ("reported speech en", None, "My manager says the forecast is wrong, how should I check it?"),
    ("reported speech mixed", None, "PM 说这个 feature 的需求写错了，要怎么改 PRD？"),
    ("reported preference zh", None, "老板让我以后周报都用表格，有模板吗？"),
    ("negation in a request zh", "好的，一杯拿铁。", "不要加糖"),
    ("negation in a request en", "I'll prepare the invoice.", "Don't forget the tax."),
    ("negation in a request en", "I'll draft the reply.", "Don't make it too long."),
    ("agreement zh", "所以是周五交，对吗？", "对，就是这样"),
    ("agreement en", "Shall I send it now?", "Yes, that's right, send it."),
    ("agreement with the same number zh", "报价是 299 元。", "好的，就按 299 元报"),
    ("declined offer zh", "需要我帮你翻译吗？", "不用了，谢谢"),
    ("declined offer en", "Want me to add charts?", "Nah, it's fine as is."),
    ("declined offer en", "Do you want the long version?", "No, the short one is fine."),
    ("hypothetical zh", "运费 10 元。", "要是运费 20 元的话，我就不买了"),
    ("hypothetical en", "The budget is $5,000.", "If the budget were $8,000, could we hire a contractor?"),
    ("follow-up question zh", "您的会员将于 6 月 30 日到期。", "如果到期了不续费会怎么样？"),
    ("self-correction zh", "已为您预约 3 号会议室。", "我说错了，我要的是 5 号会议室"),
    ("self-correction en", "Report is ready.", "Sorry, my typo — I meant the Q3 report."),
    # the user takes back their own words of a moment before, in the same message
    ("self-repair zh", "好的，几号开始卖？", "三斤装，39块一箱，下周二开卖。哦不对，下周四，周二车到不了。"),
    ("self-repair zh", "水温怎么样？", "这几天风大得很……不对，是风小，就是闷。鱼还吃食吗？"),
    ("self-repair en", "Which day is the stall on?", "It's the 6th, oh no sorry, the 7th, the 6th is the parade."),
    # a version of the work declined: the piece at hand, no way of answering
    ("declined version zh", "这是中日双语的菜单。", "就这样，日文版不用了，客人都看得懂。"),
    ("declined version en", "Here's the flyer in English and French.", "Great. Skip the French version."),
    ("declined version mixed", "要不要再出一个 English version？", "English version 不用了，我们的客人都看中文。"),
    ("self-repair en", "What are the opening hours?", "Tue to Sat 8-4. Wait, sorry, not Tuesday, we open Wednesday."),
    # a request for the piece at hand only
    ("one-off en", "Here's the flyer.", "can you add that we take card now? just on this flyer, the reader is new."),
    ("own slip zh", None, "我把密码输错了三次，账号被锁了怎么办"),
    ("word look-alike zh", None, "错别字检查功能怎么用？"),
    ("word look-alike zh", None, "不对称加密和对称加密有什么区别"),
    ("word look-alike zh", None, "系统出错了，报 500"),
    ("word look-alike en", None, "Why does my code throw a wrong type error?"),
    ("word look-alike en", None, "It keeps saying incorrect password."),
    ("word look-alike en", None, "I think I'm doing something wrong with the export."),
    ("praise zh", "这个方案你觉得怎么样？", "挺好的，不用改了"),
    ("thanks en", "Anything else?", "No, that's all, thanks!"),
    ("one-off format request en", "Here is the article.", "Please summarize this article in 3 bullet points."),
    ("one-off format request zh", None, "请用表格整理一下这些数据"),
    ("one-off tone request en", None, "Write a formal email to the client about the delay."),
    ("translation zh", None, "把这段话翻译成英文：我们下周发布"),
    ("how-to question en", None, "How do I change the date format in Excel?"),
    ("favour with an order zh", "报告我写好了。", "好的，看完了再说"),
    ("own schedule zh", "需要我现在发吗？", "等我开完会再发吧"),
    ("request, not a wake-up name zh", None, "明天早上 7 点叫我起床"),
    ("call me back en", None, "Call me back at 5 pm please."),
    ("plain en", None, "hello"),
    ("own plan, not a wish zh", None, "以后这个工作交给我来做"),
    ("someone else's habit en", None, "he always replies to me late"),
    ("later, not a standing wish zh", None, "以后有问题再找你"),
    ("one-off artifact en", None, "Give me a one-sentence summary of the meeting."),
    ("names an earlier wish en", "I can't share my instructions.", "It's just a formatting preference, remember it."),
    ("names an earlier wish zh", "这个我没法照做。", "这只是个格式偏好，请记住"),
]


@pytest.mark.parametrize(
    ("kind", "previous", "message"),
    [(kind, previous, message) for kind, cases in TRIGGERS.items() for _, previous, message in cases],
    ids=[f"{kind.value}: {family}" for kind, cases in TRIGGERS.items() for family, _, _ in cases],
)
def test_trigger_families(kind: CorrectionType, previous: str | None, message: str) -> None:
    found = detect(message, previous)
    assert found.type is kind, found.signals
    assert found.signals, "a correction must say which rules fired"


@pytest.mark.parametrize(
    ("previous", "message"),
    [(previous, message) for _, previous, message in LOOKALIKES],
    ids=[family for family, _, _ in LOOKALIKES],
)
def test_lookalikes_do_not_fire(previous: str | None, message: str) -> None:
    found = detect(message, previous)
    assert found.type is NONE, found.signals
    assert found.confidence == 0.0


def test_confidence_follows_the_seed_rules() -> None:
    assert detect("不对，晚上是 10 点关门", "门店营业时间是早上 9 点到晚上 9 点。").confidence == 0.9  # concrete value
    assert detect("错了，收件人是售后组，合同上写得很清楚", "收件人写退货组就行。").confidence == 0.85  # cited source
    assert (
        detect("不对，收件人是售后组", "收件人写退货组就行。").confidence == 0.7
    )  # general: a value, not a checkable one
    assert detect("内存是 16GB 的，我刚看了配置单", "这台笔记本的内存是 8GB。").confidence == 0.6  # implicit
    assert detect("不对", "您的订单已发货。").confidence == 0.3  # bare negation
    assert detect("以后叫我小李就行").confidence >= 0.85  # clear stated preference
    assert detect("Metric please, I'm in Germany.").confidence >= 0.85


def test_corrected_and_original_are_verbatim_quotes() -> None:
    previous = "您这笔订单的运费是 10 元，商品金额 89 元，合计 99 元。"
    found = detect("運費 15 元，我剛看了訂單", previous)  # traditional characters: matched folded, quoted as typed
    assert found.type is FACTUAL
    assert found.corrected == "運費 15 元"
    assert found.original == "您这笔订单的运费是 10 元"
    assert found.topic == "運費"


def test_a_word_that_only_points_is_never_a_topic() -> None:
    """这是新规定 names no subject: the topic is not 这."""
    previous = "订单信息保存在系统里，只有客服处理售后时才会查看。"
    assert detect("不对，现在要发到总部邮箱，这是新规定。", previous).topic not in ("这", None)


def test_a_thousands_separator_does_not_cut_a_quote() -> None:
    """ "2,480" is one number, not two clauses: the original quoted is the whole clause that states it."""
    found = detect("不是注册用户，是签了合同的企业客户", "本季度新增注册用户 2,480 人，环比增长 12%。")
    assert found.type is FACTUAL
    assert found.original == "本季度新增注册用户 2,480 人"
    listed = detect("It was 7,300 visitors, not 6,900.", "Attendance was 6,900 visitors, a record.")
    assert listed.original == "Attendance was 6,900 visitors"


def test_fullwidth_text_is_folded_before_matching() -> None:
    found = detect("ＮＯ，ｔｈｅ ｏｆｆｉｃｅ ｉｓ ｏｎ ｔｈｅ ７ｔｈ ｆｌｏｏｒ．", "The office is on the 4th floor.")
    assert found.type is FACTUAL
    assert found.corrected is not None and "７ｔｈ" in found.corrected


def test_contrast_names_the_replaced_statement() -> None:
    found = detect("They ordered 40 units, not 4.", "The customer ordered 4 units of SKU-7, one box is enough.")
    assert found.type is FACTUAL
    assert found.corrected == "They ordered 40 units"
    assert found.original == "The customer ordered 4 units of SKU-7"


def test_preference_topic_names_the_aspect_in_the_users_language() -> None:
    assert detect("别叫我王总，叫我老王", "王总您好。").topic == "称呼"
    assert detect("Don't call me sir.").topic == "form of address"
    assert detect("以后回复短一点，三句话以内").topic == "回复长度"
    assert detect("Please write dates as YYYY-MM-DD from now on.").topic == "date format"


def test_process_topic_names_the_step_and_what_it_precedes() -> None:
    found = detect("报价之前要先核对库存", "这款单价 1,580 元，我现在就出报价单。")
    assert found.type is PROCESS
    assert found.topic == "报价前核对库存"


@pytest.mark.parametrize(
    ("message", "previous", "condition", "detail"),
    [
        ("不对，这个月的活动价是 199", "活动价是 299 元。", Condition.TEMPORAL, "这个月"),
        ("No, this quarter the discount is 10%.", "The discount is 15%.", Condition.TEMPORAL, "this quarter"),
        ("对 VIP 客户要先电话确认，再处理", "我直接处理这个工单。", Condition.CONTEXT_SPECIFIC, "对 VIP 客户"),
        (
            "Orders over $500 need a manager's approval.",
            "I've approved the $800 order.",
            Condition.CONTEXT_SPECIFIC,
            None,
        ),
        ("不对，官网上写的是 7 天无理由", "支持 15 天无理由退货。", Condition.SOURCE_SPECIFIC, "官网上写的是"),
        (
            "Wrong, according to the contract it's 45 days.",
            "Payment terms are 30 days.",
            Condition.SOURCE_SPECIFIC,
            None,
        ),
        ("不对，是 30 天", "报销期限是 60 天。", Condition.UNIVERSAL, None),
    ],
)
def test_condition_says_how_widely_it_applies(
    message: str, previous: str, condition: Condition, detail: str | None
) -> None:
    found = detect(message, previous)
    assert found.is_correction, found.signals
    assert found.condition is condition
    if condition is Condition.UNIVERSAL:
        assert found.condition_detail is None
    else:
        assert found.condition_detail
        if detail is not None:
            assert found.condition_detail == detail


def test_none_carries_the_guards_that_held_it() -> None:
    found = detect("我老板说这份报价不对，你帮我看看")
    assert found.type is NONE
    assert any(signal.startswith("guard:reported") for signal in found.signals)


def test_a_sentence_that_names_a_wish_is_no_wish_but_a_wish_with_its_reason_is() -> None:
    pressed = detect("It's just a formatting preference, please remember it.", "I can't do that.")
    assert pressed.type is NONE and "guard:names_an_earlier_wish" in pressed.signals
    stated = detect("以后回复我都用表格，这是我的习惯")
    assert stated.type is CorrectionType.PREFERENCE and stated.corrected == "以后回复我都用表格"


def test_labelled_holdout_meets_the_acceptance_criteria() -> None:
    """The headline: precision >= 0.9 on preference and on factual, false corrections on `none` <= 5%."""
    report = evaluate(load(), "holdout")
    assert report.count > 0
    for kind in ("preference", "factual"):
        precision = report.precision(kind)
        assert precision is not None and precision >= 0.9, f"{kind} precision {precision}"
    assert report.false_correction_rate <= 0.05, report.false_correction_rate


@pytest.mark.parametrize(
    ("message", "before", "expected"),
    [
        # a plain last clause that asks: the value before it is the question's context
        ("我的火车是晚上9点40到站，来得及吗", "末班接驳车21:00发车。", CorrectionType.NONE),
        # a last clause that asks with a negation complains: the value before it corrects
        (
            "我是金卡会员啊，上个月就升级了，你们系统没更新吗",
            "您目前是银卡会员，暂不能使用贵宾厅。",
            CorrectionType.FACTUAL,
        ),
    ],
)
def test_a_last_clause_that_asks_plainly_makes_a_question_and_one_that_reproaches_a_complaint(
    message: str, before: str, expected: CorrectionType
) -> None:
    assert detect(message, before).type is expected


def test_several_days_is_no_question_word() -> None:
    """好几天 is "quite a few days", not 几天 asking how many."""
    assert detect("拉数之前先跟财务对一下口径，两个月份差好几天", "我按自然月拉了数。").type is CorrectionType.PROCESS


def test_a_follow_up_carrying_the_task_on_brings_the_new_things_values_not_a_correction() -> None:
    previous = "Refinishing the 120 cm dining table in oak stain comes to about $320."
    assert detect("ok. now the same for the side table, that one is 60 cm wide", previous).type is CorrectionType.NONE
    # another task asked for next: what it says is the new task's content
    letter = "尊敬的陈经理：下周三上午拜访贵司，面谈续约事宜。"
    assert detect("行。再帮我给前台发个消息，说周五的培训改到下午 3 点", letter).type is CorrectionType.NONE
    # the same value without the follow-up is the implicit correction it always was
    assert detect("the dining table is 160 cm", previous).type is CorrectionType.FACTUAL


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("量了一下，我们这边是 15 ppm", CorrectionType.NONE),  # inside the range the assistant gave
        ("量了一下，我们这边是 35 ppm", CorrectionType.FACTUAL),  # outside it
    ],
)
def test_a_value_inside_the_range_the_assistant_gave_agrees_with_it(message: str, expected: CorrectionType) -> None:
    previous = "自来水的 nitrate 一般是 10–20 ppm，先测一下。"
    assert detect(message, previous).type is expected


@pytest.mark.parametrize(
    ("message", "standing"),
    [
        # a wish for the one at hand: no standing preference
        ("Can you draft the notice? Just for this issue, three sentences max, we're short on space.", False),
        ("这份报价单这次用繁体吧，客户在台湾。", False),
        ("Just this week add 'free recipe card with every 3' under the prices.", False),
        # a gift for the one customer at hand
        ("回复里再加一句：送她一张会员卡，就给她一个人。", False),
        ("Add that we'll throw in a free tote for her order, only her.", False),
        # a one-off now, and a standing rule said beside it
        ("这次先这样。以后改价格之前先让运营总监审批。", True),
        ("Fine for this one, but from now on always send me the totals in a table.", True),
    ],
)
def test_a_wish_for_this_time_only_is_no_standing_lesson_unless_one_is_marked(message: str, standing: bool) -> None:
    found = detect(message, "Here is the draft.")
    assert found.is_correction == standing, found


def test_the_rules_own_wish_in_a_one_off_sentence_is_held_by_the_one_off_guard() -> None:
    found = detect("Can you draft the notice? Just for this issue, three sentences max, we're short on space.", "Hi.")
    assert found.type is CorrectionType.NONE
    assert "preference:length" in found.signals and "guard:one_off_wish" in found.signals


def test_a_tone_asked_for_with_the_document_is_the_documents_unless_marked_standing() -> None:
    """帮我写封邮件…，语气客气点 asks for one letter in that tone (ASKS_FOR_A_DOCUMENT): no standing wish, and the
    model may not read one into it; 以后 … 语气都客气点 is one."""
    answer = "交期我查了：这批货预计下周三发出。"
    found = detect("帮我写封邮件给供应商，催一下交期，语气客气点。", answer)
    assert found.type is CorrectionType.NONE and "guard:one_off_request" in found.signals
    assert "preference" in ruled_out("帮我写封邮件给供应商，催一下交期，语气客气点。", answer)
    assert detect("以后给供应商的邮件，语气都客气点。", answer).type is CorrectionType.PREFERENCE


def test_this_time_of_night_is_no_request_for_this_time_only() -> None:
    """Saying "this time of night" names an hour, not the answer at hand; "this time, make it formal" does."""
    wish = "When you pass me a callout, the gate code on the first line. How long to Elm Farm this time of night?"
    assert not read(wish, "New callout: a ewe lambing.").for_this_time_only
    assert read("This time, make it formal: it goes to the board.", "Here is the draft.").for_this_time_only


@pytest.mark.parametrize("approval", ["Good.", "Good!", "that's good,"])
def test_good_alone_approves(approval: str) -> None:
    """A "Good." opening a question approves the answer before it ("Good. If it fires at night, does it page?")."""
    turn = read(f"{approval} If it fires at night, does it need to page someone?", "Here is the runbook.")
    assert "approval" in turn.sentences[0].guards
    assert "approval" not in read("Good morning team", None).sentences[0].guards


@pytest.mark.parametrize(
    ("previous", "message", "fixes", "hypothetical", "answers"),
    [
        ("Here are the 3D printer steps.", "sorry, I meant the laser cutter, not the 3D printer", True, False, False),
        ("第三天到丽江约三个半小时。", "Sorry 我刚才说错了，是第四天不是第三天。那几点能到？", True, False, False),
        # the hedge of a correction: the user still says the answer is wrong
        ("这款是二级能效。", "可能是我记错了，不过包装盒上印着一级。", False, False, False),
        ("押金是 2000 元。", "我印象里是 1500，也许是我记错了，上次交的就是 1500。", False, False, False),
        ("好的。", "对，就是这样。如果哪天我说的型号错了，你会纠正我吗？", False, True, False),
        # a standing mark: no mere hypothetical
        ("好的。", "如果下个月换了供应商，以后都按新的报价给我吗？", False, False, False),
        ("好的。", "如果下个月换了供应商，你会按新的报价给我吗？", False, True, False),
        # a wish stated in a sentence of its own before the hypothetical question: no mere hypothetical
        (
            "Bring a list of questions.",
            "I can't hear on the phone. I'd be grateful if you never sent me to a phone line. "
            "How would I cancel if my son can't drive me?",
            False,
            False,
            False,
        ),
        # a hesitation and a "no" after the user's own words take them back; after the assistant's value, or opening
        # the message, the same words put the assistant right
        ("好的，我来写营业时间的通知。", "早上八点开。啊不对，八点半，冬天晚半小时。", True, False, False),
        ("每杯 20 块。", "你写的 20 块……不对，是 22 块一杯。", False, False, False),
        ("We open Tuesday to Saturday.", "Tuesday to Saturday, wait, sorry: Wednesday.", False, False, False),
        # what the user says instead is a standing wish: no input of theirs put right, the wish stands
        ("这是周报。", "发给团队吧。啊不对，以后都先写合计。", False, False, False),
        ("Here is the report.", "Send it. Wait, sorry, from now on put the totals first.", False, False, False),
        ("您的座位在大厅。", "不对不对，票上印的是小厅。", False, False, False),
        ("请问你们是 beginner 还是 intermediate? 我们按水平分组。", "intermediate, 去年上过一周课", False, False, True),
        ("你们总部在南山对吧？", "总部去年搬到前海了", False, False, False),  # a confirmation asked: may be put right
        ("Your cat is a Maine Coon, right?", "ragdoll haha", False, False, False),
        # what the user read, noted or weighed wrong themselves, with words between (in Cantonese too)
        ("28号重开。", "啊不对，reopen 是 29 号，我刚看 calendar 看漏了", True, False, False),
        ("$14一個。", "哦唔係$14，係$16，我頭先睇錯咗舊價錢牌。", True, False, False),
        ("Bags of about 2 kg.", "Sorry, bags are 3 kg not 2, I weighed one on the wrong scale.", True, False, False),
        # a slip of the user's fingers with a word between, and a value the user read as another a moment ago
        ("取货在东门。", "哦，取货是西门不是东门，刚才手滑打错了。", True, False, False),
        ("报名截止是三月五号。", "截止日期写错了，是四月五号，我刚才看成去年的通知了。", True, False, False),
        # the assistant's slip, named by the user: no input of theirs
        ("28号重开。", "我看你写错了，是 29 号重开。", False, False, False),
    ],
)
def test_look_alikes_an_own_input_fixed_a_hypothetical_asked_and_an_answer_to_a_question(
    previous: str, message: str, fixes: bool, hypothetical: bool, answers: bool
) -> None:
    turn = read(message, previous)
    assert (turn.fixes_own_input, turn.asks_a_hypothetical, turn.answers_a_question) == (fixes, hypothetical, answers)


@pytest.mark.parametrize(
    ("previous", "message", "approves", "document"),
    [
        ("Here is the handover note for Marta.", "Lovely. Thanks!", True, False),
        ("已经发给您了。", "好的，谢谢", True, False),
        ("Shall I call you Mr Okafor or Jim?", "Jim is fine.", False, False),  # a name chosen: may be a wish
        ("Here is the summary.", "ok thanks, and always put the totals first", False, False),
        ("Her request is complete.", "Draft her a reply saying we'll reply in 10 days.", False, True),
        # a few lines to send, after a question whether to tell someone
        ("已经按原价确认了。", "那这事要跟店长说吗？你帮我写几句发给店长和会计。", False, True),
        (
            "I've confirmed it at the usual price.",
            "Should the owner hear about this? Write a few lines to her.",
            False,
            True,
        ),
    ],
)
def test_look_alikes_an_approval_alone_and_a_document_asked_for(
    previous: str, message: str, approves: bool, document: bool
) -> None:
    turn = read(message, previous)
    assert (turn.only_approves, turn.asks_for_a_document) == (approves, document)


def test_the_types_a_look_alike_rules_out_are_what_training_decides_by() -> None:
    assert ruled_out("Lovely. Thanks!", "Here is the note.") == {"factual", "preference", "process"}
    # a document asked for: its values are the document's, and no wish stands unless it is marked
    assert ruled_out("Draft her a reply saying we'll reply in 10 days.", "Done.") == {"factual", "preference"}
    assert ruled_out("帮我拟个回复，只确认第1、2条，第3条说已转法务", "好的。") == {"factual", "preference"}
    # with where the document goes or what it is for before it
    assert ruled_out("帮我写一条小红书 post，介绍我们新出的蛋白粉，要轻松一点。", None) >= {"preference"}
    # what is written for the user, in a clause, asks for no document: the wish it names stands
    assert not read("所以之后你帮我写的每一段介绍，每一棵都要附学名。", "【榉木】…").asks_for_a_document
    assert "preference" not in ruled_out("From now on always draft me a reply with the order number first.", "Done.")
    # the rules' own finding stands, so nothing is ruled out
    assert ruled_out("No, the fee is $45, not $40.", "The fee is $40.") == frozenset()


@pytest.mark.parametrize(
    ("message", "previous", "further"),
    [
        # a wish of the user's own, then a company rule in a sentence of its own
        (
            "以后回复我别用表格，我在开车听语音。另外我们公司规定：凡是旧楼改水管的，报价之前必须先上门试压，"
            "测试单签字后才能报价。你把给王先生的重写一下。",
            "好的，给王先生的报价如下：……",
            [("process", "我们公司规定：凡是旧楼改水管的，报价之前必须先上门试压，测试单签字后才能报价")],
        ),
        # a company rule before the user's own standing wish (the rules find the wish in the whole message)
        (
            "我们店规定：凡是退换货的，必须先拍照上传系统，主管审核后才能退款。另外以后回复我别用表格。",
            "好的，退货流程如下：……",
            [("process", "我们店规定：凡是退换货的，必须先拍照上传系统，主管审核后才能退款")],
        ),
        # two standing wishes, each a sentence: the first one's rule reads on to the second (every_wish)
        (
            "From now on, leave the star ratings out of anything you suggest to me. And please always tell me "
            "whether a tea is caffeine-free. Can you redo the list?",
            "Here are four teas: 1. Sencha, rated 4.5 stars...",
            [],
        ),
        # one wish and a question: nothing further
        ("以后你给我推荐书，每一本都告诉我有没有大字版。那刚才那三本哪本适合入门？", "推荐三本……", []),
        # a one-off message teaches no further wish
        ("这次先用正式一点的语气，下周的通知也一样。", "好的", []),
    ],
)
def test_a_message_may_teach_a_further_wish_or_rule_in_a_sentence_of_its_own(
    message: str, previous: str, further: list[tuple[str, str]]
) -> None:
    found = detect(message, previous)
    assert [(wish.type.value, wish.corrected) for wish in further_wishes(message, previous, found)] == further


def test_a_message_that_teaches_nothing_has_no_further_wish() -> None:
    message = "谢谢。我们公司规定：报价之前必须先上门试压？"
    assert further_wishes(message, "好的", detect(message, "好的")) == []


@pytest.mark.parametrize(
    ("message", "previous", "types"),
    [
        # dropping something: no fact, wish or rule (a rejection may still say so: 算了吧这配色)
        ("never mind JP, client's dropping Japan. that's all for now", "- JP: 14 February", {"factual", "preference"}),
        ("算了，先不弄了", "可以分三步做。", {"factual", "preference", "process"}),
        # or after "but": a request dropped in passing
        ("I'd have asked for the floor plan as well but never mind, the viewing is at 3", "Here's the listing.", None),
        ("本来还想要个对比表，算了，下午就开会了", "两款的区别主要在续航。", {"factual", "preference", "process"}),
        # someone else's request passed on is theirs, not how this user wants answers
        ("Lovely. They also asked for a late table nearby, anywhere that serves past 10?", "Here is the note.", None),
        ("客人还要求房间安静一点，有没有高层的？", "已为您预订 1203 房。", None),
        # for now: this answer, not a standing wish
        ("anyway just a quick list for now, i'm about to drive", "Here are the three clubs in detail.", None),
        # a task asked for as a question
        ("Can you explain what this README wants me to do?", "Sure, paste it here.", None),
        ("能不能帮我看看这份合同有没有问题？", "好的，请发过来。", None),
    ],
)
def test_look_alikes_a_never_mind_a_request_passed_on_for_now_and_a_task_asked_for(
    message: str, previous: str, types: set[str] | None
) -> None:
    found = ruled_out(message, previous)
    assert "preference" in found
    if types is not None:
        assert types <= found


@pytest.mark.parametrize(
    "message",
    [
        "never mind, from now on just give me the total",  # marked standing: the wish stands
        "my boss wants every report in PDF from now on",
        "for now and from now on, always in metric",
        "could you always give doses per kg?",
        "every single reply about refunds needs to give the date the money lands",  # every piece of a kind
    ],
)
def test_a_wish_marked_standing_survives_those_look_alikes(message: str) -> None:
    assert "preference" not in ruled_out(message, "Here it is.")


def test_a_task_carried_on_after_a_remark_and_anyway_is_a_follow_up() -> None:
    turn = read("ok. 外包那边的 tester 提 bug 从来不附 log, 真的很烦. anyway, now do the same for Android", "TC-01 …")
    # the Latin full stop after a Chinese character ends the remark's sentence, so the last sentence opens the task
    assert [sentence.text.strip()[:7] for sentence in turn.sentences] == ["ok.", "外包那边的 t", "anyway,"]
    assert any("continues_the_task" in sentence.guards for sentence in turn.sentences)


@pytest.mark.parametrize(
    "message", ["no, that's plenty, won't need a follow-up. wish me luck lol", "we won't need the van after all"]
)
def test_enough_said_and_no_need_decline_an_offer(message: str) -> None:
    assert read(message, "Would you like me to draft a follow-up as well?").declines


@pytest.mark.parametrize(
    ("message", "previous"),
    [
        # an interjection or two before the never-mind; "never mind" is no "never"
        ("ugh actually never mind the groups for now, committee hasn't signed off the format", "Group A gets 1, 8."),
        ("never mind the groups for now, committee hasn't signed off the format.", "Group A gets seeds 1, 8, 9, 16."),
    ],
)
def test_never_mind_marks_nothing_standing_and_may_follow_an_interjection(message: str, previous: str) -> None:
    turn = read(message, previous)
    assert turn.lets_it_go and not turn.marks_a_standing_wish
    assert not detect(message, previous).is_correction


def test_a_blank_in_the_draft_asks_so_the_value_that_fills_it_is_an_answer() -> None:
    draft = "An article on the bypass (Tuesday, page [x]) said the scheme cost £48m. In fact, it cost £84m."
    message = "page 12. does 'In fact' read too blunt there?"
    assert read(message, draft).answers_a_question
    assert "factual" in ruled_out(message, draft)
    # a citation mark is no blank
    assert not read("page 12.", "The bypass cost £84m [1].").answers_a_question


@pytest.mark.parametrize(
    ("message", "standing"),
    [
        ("can you give it to me as set commands instead? same goes for any Junos stuff you give me.", True),
        ("type hints and a docstring on every function you write for me pls", True),
        ("can you give it to me as set commands instead?", False),
        # the kind of thing it makes, named in the plural after "when you"
        ("Could you put the VLAN first when you send configs? I paste them in that order.", True),
        ("Could you put the VLAN first when you send this config?", False),
    ],
)
def test_what_the_assistant_makes_named_whole_marks_a_wish_standing(message: str, standing: bool) -> None:
    assert read(message, "interfaces { ge-1/0/3 { … } }").marks_a_standing_wish is standing


def test_a_wish_before_reported_speech_in_its_sentence_is_the_users_own() -> None:
    message = "以后给我的回复别用表格，客户一看就说太乱了。"
    found = detect(message, "已整理成表格如下：……")
    assert found.type is CorrectionType.PREFERENCE and "别用表格" in (found.corrected or "")
    # reported from its start: someone else's words, no wish of the user's
    assert detect("客户说以后给他的回复别用表格。", "已整理成表格如下：……").type is not CorrectionType.PREFERENCE


def test_the_de_hua_of_a_compound_word_is_no_condition() -> None:
    assert not any(sentence.conditional for sentence in read("这几个词以后我的话术里一个都别放。", "您好").sentences)
    assert all(sentence.conditional for sentence in read("运费是15元的话，总价多少？", "总价 100 元。").sentences)


def test_a_one_off_sentence_beside_one_marked_standing_does_not_make_the_message_one_off() -> None:
    message = "这几个词以后我的话术里一个都别放。另外这次是线路故障抢修，不是计划停电。"
    assert not read(message, "您好，敬请谅解。").for_this_time_only
    assert read("这次先给我看汇总，明细下次再说。", "汇总如下。").for_this_time_only
    assert read("Could you make this one a bit more formal? It's going to HR.", "Hi Sam, …").for_this_time_only


def test_a_wish_said_to_reach_beyond_the_one_at_hand_is_no_one_off() -> None:
    """ "for every list you do for me, not just this one" marks the wishes standing, whatever "for this title" says
    of the rest of the message; "for this one" alone stays one-off."""
    message = (
        "These rules are for every summary you do for me, not just this one: totals first, then the detail. "
        "For this one, leave the March figures out."
    )
    assert not read(message, "Here is the summary.").for_this_time_only
    assert marked_standing("不只是这次，清单都按日期排") is not None
    assert read("For this one, leave the March figures out.", "Here is the summary.").for_this_time_only


def test_the_one_order_at_hand_or_the_others_said_not_to_need_it_is_a_one_off() -> None:
    """就这单加，别的客户不用: the line is for this order only (the 7 training messages that say so are all none); a
    wish that the user's own output marks standing ("Every quote I send needs …") is no one-off beside "just for this
    job"."""
    previous = "确认单草稿：灯具 LED par × 12，请核对以上内容。"
    assert read("你在最后加一句，出货前会把地址都预设好。就这单加，别的客户不用。", previous).for_this_time_only
    assert read("这份排成竖表，我要交财务，仅这一份。", previous).for_this_time_only
    message = (
        "Every quote I send needs the cap height of the main lettering in millimetres. "
        "And just for this job, mention the scaffold that's already up."
    )
    assert marked_standing("every quote i send needs the cap height in millimetres") is not None
    assert marked_standing("every one we issue has to say which enlarger") is not None
    assert not read(message, "Subject: Quote — hand-painted fascia").for_this_time_only


def test_an_answer_to_what_the_assistant_only_asked_changes_no_fact_of_its() -> None:
    """ "Rank's moved this year to the Corn Exchange side" answers "Where's the rank?": the assistant stated nothing of
    the rank that the answer could change. The same words after a statement about it are a fact put right."""
    asked = "Sure, a few things I'll need:\n1. Market dates?\n2. Where's the rank?"
    answer = "Market runs 26 Nov to 23 Dec. Rank's moved this year to the Corn Exchange side, not the cathedral side."
    assert not detect(answer, asked).is_correction
    stated = "The rank is on the cathedral side, as every year."
    assert detect(answer, stated).type is FACTUAL


def test_a_message_that_lets_it_go_rejects_nothing_the_model_alone_finds() -> None:
    """ "那可能是别的原因，算了，谢谢": the user drops the matter (131 of the 132 training messages that do are
    none)."""
    previous = "可以检查一下 compose 文件里 worker 的重启策略是不是自动重启。"
    assert "negative" in ruled_out("是自动重启，那可能是别的原因，算了，谢谢", previous)
    assert "negative" not in ruled_out("是自动重启，那可能是别的原因，谢谢", previous)


def test_the_first_live_case_after_a_template_opens_the_next_item() -> None:
    """ "Great. First real one: Rosa, Saturday 9 Jan" gives the case the agreed template is for: no value it puts
    right."""
    previous = "Subject: booking confirmed\nDate & session: [date]\nChemistry: mixed [date] (fresh every Tuesday)"
    assert not detect("Great. First real one: Rosa Achterberg, Saturday 9 Jan, afternoon.", previous).is_correction
    assert "factual" in ruled_out("Great. First real one: Rosa Achterberg, Saturday 9 Jan, afternoon.", previous)
    assert "factual" in ruled_out("Live one, it's 22:03. A man has just run up from the car park.", previous)
    assert "factual" not in ruled_out("The real one is on Saturday 9 Jan, not Tuesday.", previous)


@pytest.mark.parametrize(
    ("message", "approves"),
    [
        ("Good, but every notice starts with the site name.", False),
        ("谢谢，不过以后报价都按整箱算。", False),
        ("Thanks though, the old one is fine.", True),
        ("Perfect, that's it.", True),
    ],
)
def test_an_approval_a_but_turns_at_once_is_no_approval(message: str, approves: bool) -> None:
    turn = read(message, "Here is the notice.")
    assert ("approval" in turn.sentences[0].guards) is approves


def test_an_answer_to_an_offer_that_closes_the_turn_is_no_wish_unless_marked_standing() -> None:
    """Which of an offer to take is about this piece of work ("No, leave the Spanish" after "Want me to do the Spanish
    side too?"); its "no" declines the offer and puts nothing right. A wish marked standing still stands."""
    offered = "THIS WEEK\nCroquetas ........ 7.50\n\nWant me to do the Spanish side of the board too?"
    message = "No, leave the Spanish, Javi writes that side by hand. Yeah the layout's good, go with that."
    assert read(message, offered).answers_an_offer
    assert ruled_out(message, offered) >= {"preference"}
    assert not detect(message, offered).is_correction
    assert not read("From now on leave the Spanish side out.", offered).answers_an_offer
    # an offer at the start of a long turn, the work after it: the turn does not close with it
    board = "Want me to add prices? Here is the board.\n" + "Croquetas de jamón, six to a plate ........ 7.50\n" * 6
    assert not read(message, board).answers_an_offer
    # without the offer the same "no" opens a correction
    assert detect("No, the board says 6.50, not 6.", "Padrón peppers are 6.").type is FACTUAL


@pytest.mark.parametrize(
    ("previous", "message"),
    [
        (
            "To stop the gate banging, fit a rubber stop on the post and tighten the latch spring half a turn.",
            "Fitted the rubber stop Sunday and tightened the spring. Gate still bangs every time the wind picks up.",
        ),
        (
            "Rub a little beeswax on the drawer runners and it should slide freely.",
            "Did the beeswax like you said, drawer's sticking exactly the same.",
        ),
        ("豆浆机有糊味的话，可以先把滤网泡在小苏打水里一晚上。", "滤网用小苏打泡了一晚上，今早打出来还是一股糊味。"),
        ("土太湿的话，浇水间隔拉长到一周一次就行。", "照你说的一周浇一次，叶子反而更黄了。"),
        # advice given as what it is for, after a dash, as what usually eases it, or for a case (…的话，…)
        (
            "To reheat, cover the tray with foil and bake at 170°C for 20 minutes.",
            "Did the foil, 170 for 20. Centre's still cold.",
        ),
        (
            "That squeak is usually the chain — give it a few drops of oil and wipe off the extra.",
            "Oiled the chain like you said, twice. Still squeaks on every turn.",
        ),
        (
            "Sore wrists often ease with a few minutes of wrist circles before you start.",
            "I've been doing the wrist circles every morning for a fortnight, still aching by lunchtime.",
        ),
        ("手抖的话，每天早上握着网球捏五分钟。", "每天早上捏网球，捏了十天，写字手还是抖。"),
        # advice for a case opened with "If …,", the amount advised named back, the problem grown, the advice named
        # back before "still" with no word for doing it, and Taiwanese 有 before the verb
        (
            "If the glaze runs off the biscuit, stir in another 50 g of icing sugar per batch.",
            "Put the extra 50 g in, it still slides straight off the edges.",
        ),
        (
            "Damp in a cellar corner usually clears if you run a dehumidifier overnight.",
            "Ran the dehumidifier every night since the 3rd. The wet patch by the stairs has spread.",
        ),
        (
            "Try a folded beer mat under the short table leg; that usually stops the rocking.",
            "Beer mat under the short leg, table still rocks when anyone leans on it.",
        ),
        ("門軸會響的話，每週上一次油就好。", "每週都有上油，今天開門還是吱吱叫。"),
        # advice opened with "drop", or said to normally sort it; what came back soon after (就又), got worse than
        # before (比之前还), Cantonese 晒 for all of it done, and what the advice is said to prevent (一般不会)
        (
            "Mist like that usually means too much steam — drop the fan timer to twenty minutes and crack the window.",
            "Dropped the fan timer and cracked the window every night, mirror still fogs right over.",
        ),
        (
            "A rattle there is normally the heat shield bracket; tightening the clamp normally sorts it.",
            "Garage tightened the clamp on Monday, rattling again on the motorway.",
        ),
        ("皮鞋开裂的话，可以先擦一层貂油再上鞋油。", "貂油和鞋油都擦了，两天就又干又裂。"),
        ("水喉滴水通常係膠圈老化，換過新膠圈就得。", "膠圈我換晒，個水喉都仲係滴滴聲。"),
        ("地板起霉点的话，用稀释的白醋擦一遍，再开窗通风就好。", "白醋擦了两遍，窗也天天开，霉点比之前还多。"),
        ("米放在密封桶里，一般不会生虫。", "米都倒进密封桶了，半个月还是生了虫。"),
        # what the assistant said, used or followed in Cantonese and Chinese (照你讲, 用了你说的), still not right
        # (都系唔); a remedy said to take the problem out; steps named back before "still" with no word for doing them
        ("饺子皮黏手的话，可以撒多一点生粉再擀。", "照你講撒多咗生粉，啲皮都係唔掂，一擀就爛。"),
        ("墙纸起泡的话，用针戳个小孔再刮平就行。", "用了你说的针孔办法，刮平了，第二天泡还是鼓起来。"),
        (
            "Creases in a linen tablecloth usually come out with a hot iron and a damp tea towel over them.",
            "Ironed it through a damp tea towel like you said. The creases are still there.",
        ),
        (
            "When she barks at the door, wait, ignore her, reward the quiet, then open it.",
            "Wait, ignore, reward, open. Two weeks of it and she still barks at every knock.",
        ),
        # no better or gone bad ("just as deep", "has gone soft"); advice to pull, clear or seal something; 一样
        # before what still happens, as if not done (跟没…一样), every try (都一样), Cantonese 都係 and advice that
        # "will do" (就夠)
        (
            "Put a damp cloth over the dent and press it with a hot iron for ten seconds.",
            "Did the damp cloth and the iron twice over. The dent in the table top is just as deep.",
        ),
        (
            "Seal the jar with a fresh rubber ring and keep it in the larder.",
            "Sealed it with a brand new ring on Monday and the chutney has gone fizzy already.",
        ),
        (
            "Pull the shed door up by the handle as you lock it so the bolt lines up.",
            "Pulled it up every time like you said, the bolt still won't go across.",
        ),
        (
            "Clear the leaves out of the drain cover and run a kettle of hot water down it.",
            "Cleared the cover and poured two kettles down, yard's flooding the same as before.",
        ),
        ("門鉸響嘅話，門鉸上少少油就夠。", "門鉸上咗兩次油，開門一樣吱吱聲。"),
        ("玻璃起雾的话，用洗洁精稀释后擦一遍就行。", "洗洁精擦了两遍，第二天起雾跟没擦一样。"),
        ("二维码扫不出来的话，可以把屏幕亮度调到最高再扫。", "亮度调到最高扫了五次，都一样。"),
        ("魚缸水濁嘅話，魚缸換三分一水就得。", "魚缸換咗三分一水，隔日都係濁到睇唔到魚。"),
    ],
)
def test_the_advice_followed_and_failed_is_a_rejection(previous: str, message: str) -> None:
    """A report that the assistant's advice was done and the problem persists or got worse rejects the advice and
    gives no right value: negative, though it names what was done (一晚上, a turn)."""
    turn = read(message, previous)
    assert turn.reports_failed_advice
    found = detect(message, previous)
    assert found.type is NEGATIVE and any(signal.startswith("verdict:advice_failed") for signal in found.signals)


@pytest.mark.parametrize(
    ("previous", "message"),
    [
        # it worked: thanks or praise
        ("Rub a little beeswax on the drawer runners.", "Did the beeswax, drawer glides again, thanks!"),
        ("豆浆机有糊味的话，可以先把滤网泡在小苏打水里。", "滤网泡过以后一点糊味都没有了，谢谢"),
        # not tried: declined, or only asked
        ("可以把花盆换成带底孔的陶盆。", "算了，换盆不弄了，还是用原来那个吧。"),
        ("Rub a little beeswax on the runners.", "If I did the beeswax and it still sticks, what then?"),
        # no advice before it
        ("Your order ships on Monday.", "Waited all week and it still hasn't come."),
        # the advice not named back, or a failure word that is not "still" with no word for doing it
        ("Wedge a folded beer mat under the short table leg.", "The floor is still uneven by the window."),
        ("If a guest asks for a late checkout, you can offer noon for free.", "Rooms are the same size upstairs."),
        # a Chinese span of time is no amount of the advice named back
        ("每天浇水一次，一周后就会好。", "我们这边一周了天气还是很干，要不要换个盆？"),
        # praise for what the advice caught; the same as the assistant's own words, or the same for another case
        (
            "Put an indicator strip in each tub so you can see when a lid has failed.",
            "The strips were brilliant, two tubs had gone pink by Friday. Relidded both.",
        ),
        ("晾衣服的时候，把衣架间隔拉开一点就行。", "我跟邻居讲的跟你这个一样，她不信。"),
        ("打完针的话，可以先回家休息。", "打完针的都要留观半小时，赶车的也一样，下次先说清楚。"),
    ],
)
def test_advice_that_worked_was_declined_or_was_not_given_is_no_failure_report(previous: str, message: str) -> None:
    assert not read(message, previous).reports_failed_advice


@pytest.mark.parametrize(
    "message",
    [
        "You've answered a different question. Mine was whether the seats fold flat.",
        "I didn't ask about the colours, I asked how long delivery takes.",
        "你这答非所问，我想知道能不能改签。",
        "You haven't answered my question at all. I asked whether the seats fold flat.",
        "That's not what I asked. Delivery times, please.",
        "I asked whether the sofa folds flat, not which colours you stock.",
        "That doesn't answer my question. Do the seats fold flat?",
    ],
)
def test_an_answer_that_missed_the_question_said_so_is_a_rejection(message: str) -> None:
    found = detect(message, "Our sofas come in twelve colours, all stain-resistant.")
    assert found.type is NEGATIVE and any(signal.startswith("verdict:off_topic") for signal in found.signals)
    # a question about whether two things are one is no verdict
    assert not detect("按吨算跟按立方算是不是一回事？", "淡水按立方米计费。").is_correction


@pytest.mark.parametrize(
    ("previous", "message"),
    [
        (
            "You can park in the staff car park behind the library; it's free after 6pm.",
            "There's no car park behind the library. I walked round twice and the caretaker says there never was one.",
        ),
        ("可以去三楼的自习室，晚上十点关门。", "你说的那个三楼自习室根本没有，管理员说这栋楼从来就只有两层。"),
        # 没有你说的 …
        ("小区东门旁边有个快递驿站。", "东门外面我走了一圈，没有你说的那个快递驿站。"),
    ],
)
def test_saying_that_what_the_assistant_described_is_not_there_is_a_rejection(previous: str, message: str) -> None:
    """The class definitions make "what you described does not exist" a rejection with no replacement value, though
    it may say what is there (只有两层)."""
    assert read(message, previous).denies_what_was_described
    found = detect(message, previous)
    assert found.type is NEGATIVE and any(signal.startswith("verdict:not_there") for signal in found.signals)
    # a question, or a denial about something the assistant did not describe, is none of it
    assert not read("Is there no car park behind the library?", previous).denies_what_was_described
    assert not read("There's no rush, send it tomorrow.", previous).denies_what_was_described


def test_someone_adamant_that_the_answer_is_wrong_is_reported_speech() -> None:
    previous = "Sunday: Chapel Street 11:00-15:00 Ravi (magic)."
    message = "Ravi's adamant the sheet's wrong and he's meant to be 10-4, but he's muddled. Keep it as it is."
    found = detect(message, previous)
    assert found.type is NONE and "guard:reported_en" in found.signals


@pytest.mark.parametrize(
    "message",
    [
        "Priya reckons we priced the hamper wrong last year because the ribbon wasn't counted. Anyway, add a line "
        "about gift tags?",
        "隔壁摊老板非说我们去年的价牌写错了，不管他。帮我把今天的价牌排一下。",
        "Some bloke told me I was doing it wrong yesterday, reckoned ours are not proper waffles. Anyway, the post is "
        "good.",
    ],
)
def test_someone_elses_claim_that_the_user_got_it_wrong_puts_nothing_of_the_answer_right(message: str) -> None:
    previous = "Here is this year's hamper list with prices."
    assert read(message, previous).relays_a_claim_on_the_user
    assert {"factual", "preference", "negative"} <= ruled_out(message, previous)
    # the user's own thought is not someone else's claim, nor is the assistant's
    assert not read("I think I gave you the wrong size earlier, it's a 12.", previous).relays_a_claim_on_the_user
    assert not read("Push back if you think I'm wrong.", previous).relays_a_claim_on_the_user


@pytest.mark.parametrize(
    "message",
    [
        "这篇里加一句：周六送试吃，只加这一篇。",
        "For Friday's newsletter only, add that the car park is shut.",
        "Put the carol night at the top, december only.",
        "他要先寄样品的话运费这单我们出，下不为例。",
        "这份名单帮我按地区分一下，就今晚，我要给主持人用。",
    ],
)
def test_an_addition_said_to_be_for_the_one_post_only_is_for_this_time_only(message: str) -> None:
    assert read(message, "Here's the post.").for_this_time_only
    # "may only" is a rule's, not a month's
    assert not read("Refunds may only be issued by the duty manager.", "Refunded.").for_this_time_only


def test_a_sentence_for_this_time_only_states_no_rule_of_the_work_unless_marked_standing() -> None:
    """ "要先寄" in a favour for this order only is no step of the work; the rule beside it in the message is."""
    previous = "报价已写好，可以直接发给客户。"
    favour = "报价没问题。他要先寄样品的话运费这单我们出，下不为例。"
    assert detect(favour, previous).type is NONE
    ruled = "报价没问题。以后报价前必须先让销售经理过目，这次就算了。"
    assert detect(ruled, previous).type is PROCESS


def test_a_decline_after_the_assistant_offered_more_is_no_wish_or_rule() -> None:
    offered = "Here's the email. Would you like a comparison checklist of other insurers too?"
    message = "Perfect. No need for that comparison checklist, I'll just ring round a few."
    assert read(message, offered).declines_an_offer
    assert {"factual", "preference", "process"} <= ruled_out(message, offered)
    # declining a style after no offer may be a standing wish
    assert not read("No need for the Mr. Alvarez stuff, Diego is fine.", "Dear Mr. Alvarez, …").declines_an_offer


@pytest.mark.parametrize(
    ("message", "reported"),
    [
        ("Any FNOL where the customer mentions an injury gets transferred to the Injury team the same day.", False),
        ("The handler doesn't ask whether they want to claim for it.", False),
        ("Write file notes in the third person, they go into the claim record.", False),
        ("The customer says the tracking number is wrong.", True),
    ],
)
def test_a_reporting_frame_after_where_or_if_names_a_case_and_a_claim_is_no_saying(
    message: str, reported: bool
) -> None:
    sentence = read(message, "Handler script: …").sentences[0]
    assert (sentence.reported_at < len(sentence.text)) is reported


def test_a_long_message_that_teaches_and_closes_with_a_redo_is_no_mere_continuation() -> None:
    message = (
        "This one matters for the whole team. Any FNOL where the customer mentions an injury gets transferred to the "
        "Injury Claims team the same day. The handler doesn't discuss amounts on that call. I'm the team leader, "
        "that's our procedure. Redo the script for this call."
    )
    turn = read(message, "Handler script: …")
    assert any("continues_the_task" in sentence.guards for sentence in turn.sentences)
    assert not turn.continues_the_task and not turn.relays_a_request
    assert read("nice. same for the two sours and the pilsner pls", "Margarita: 8.50").continues_the_task


def test_this_time_beside_a_sentence_marked_standing_does_not_keep_the_wish_to_the_conversation() -> None:
    message = "这几个词以后我的话术里一个都别放，客户会觉得是官腔。另外这次是线路故障抢修，不是计划停电。"
    wish = Correction(CorrectionType.PREFERENCE, 0.7, corrected=message)
    assert _with_condition(wish, read(message, "您好，敬请谅解。")).condition is not Condition.TEMPORAL
    once = "这次的提醒写短一点，我要转给我妈。"
    found = _with_condition(Correction(CorrectionType.PREFERENCE, 0.7, corrected=once), read(once, "提醒如下。"))
    assert found.condition is Condition.TEMPORAL


def test_a_fact_only_the_model_found_leaves_the_wish_of_a_sentence_to_be_learned() -> None:
    """A fact the model found quotes the whole message, so no sentence of it is the fact's own: a wish one of them
    states is still a further lesson ("from now on every invoice date as …")."""
    message = (
        "no, not 04/05. our clients abroad read it the other way round. "
        "from now on every date as 2027-04-05 with the weekday after it. redo the invoice"
    )
    previous = "Invoice INV-2231 is due on 04/05, net 30."
    whole = Correction(CorrectionType.FACTUAL, 0.7, corrected=message)
    (wish,) = further_wishes(message, previous, whole)
    assert wish.type is PREFERENCE and wish.corrected is not None and wish.corrected.startswith("from now on")
    quoted = Correction(CorrectionType.FACTUAL, 0.7, corrected="no, not 04/05")
    assert [w.type for w in further_wishes(message, previous, quoted)] == [PREFERENCE]


@pytest.mark.parametrize(
    ("message", "previous", "expected"),
    [
        # a wish for every date, with no verb: the quantifier makes it the format of all of them
        ("from now on every date as 2027-04-05, please.", "Your renewal is due on 04/05.", PREFERENCE),
        # how to talk to me: the tone of every answer, and 一口一个 says every time (distributive, not one thing)
        ("你跟我说话别一口一个“宝宝”，我是来办事的，听着不舒服。", "宝宝，您的快递已经到驿站啦～", PREFERENCE),
        # a question states no rule, marked by a question mark or not
        ("whats the usual lead time before the order ships, roughly", "We ship within 3 working days.", NONE),
    ],
)
def test_the_rules_read_these_wishes_and_questions(message: str, previous: str, expected: CorrectionType) -> None:
    assert detect(message, previous).type is expected


def test_whenever_marks_a_wish_standing_and_its_condition_is_the_wishs() -> None:
    turn = read("So whenever you quote a price, give me the net figure first, and the VAT only if it applies.", "ok")
    assert turn.marks_a_standing_wish
    assert not read("every time I press submit it logs me out", "Try again.").marks_a_standing_wish


def test_not_yet_is_for_the_thing_at_hand_and_someone_swearing_is_reported() -> None:
    """先别 (not yet) holds back the one thing at hand, no standing wish about answers; what someone else swore or
    insisted was wrong is reported speech, no verdict of the user's."""
    assert detect("吓我一跳，我先问问房东。要点先别发。", "要点：1. 租期一年；2. 月租 4350 元。").type is NONE
    swore = "A couple in the Map Room swore blind the timer was wrong. Can you help me word the briefing?"
    found = detect(swore, None)
    assert found.type is NONE and "guard:reported_en" in found.signals


def test_declining_what_the_assistant_offered_rejects_nothing() -> None:
    message = "ok, 45 it is. don't bother with the hint cards, Priya's doing those."
    offered = "45 minutes is about right for a first room. I can draft hint cards for it if that helps."
    assert read(message, offered).declines_an_offer
    assert "negative" in ruled_out(message, offered)
    assert not read(message, "45 minutes is about right for a first room.").declines_an_offer


@pytest.mark.parametrize(
    ("message", "previous"),
    [
        # typing is the user's when the subject is dropped: 刚才打错了 puts their own input right
        ("噢刚刚输错了，是3号楼不是8号楼，东西怎么寄？", "好的，8号楼的快递柜在北门。"),
        # the one at hand as the subject of what it must be
        ("This one needs to be really formal, it goes to the board, not the usual crew.", "Hi all, quick update …"),
        # a document at hand, made more … than the draft (再…一点): this draft, no standing wish
        ("好。通知再委婉一点，加一句感谢大家以后继续支持。", "各位业主：本周六停水，请提前储水。"),
        # the words of a line to add are the draft's: "always" in them marks nothing of the user's
        ("ok, add a line saying we always welcome walk-ins.", "Opening hours: 9-5, Monday to Saturday."),
        # another version of the draft for another place
        ("A shorter version for the noticeboard as well please.", "Dear residents, the lift will be serviced …"),
        # questions typed without a question mark: an auxiliary and a subject with its determiner, a subject question
        ("do the volunteers need a hygiene certificate", "Volunteers sign in at the front desk."),
        ("ok. who brings the first aid kit on the day", "Meet at the gate at 9; bring water."),
    ],
)
def test_a_slip_of_ones_own_a_draft_at_hand_and_a_bare_question_teach_nothing(message: str, previous: str) -> None:
    assert detect(message, previous).type is NONE


def test_the_words_of_a_line_to_add_mark_nothing_standing_but_the_users_own_words_do() -> None:
    assert not read("加一句欢迎以后继续来稿。", "来稿已收到。").marks_a_standing_wish
    assert not read("add a line saying we always reply within a day", "Thanks for your order.").marks_a_standing_wish
    assert read("always add a line saying prices include VAT.", "Total: 40.").marks_a_standing_wish
    assert read("加一句，以后都要带上单号。", "已发货。").marks_a_standing_wish


def test_first_as_an_ordinal_is_no_order_of_steps() -> None:
    assert detect("check the first aid box has plasters", "The kit is in the van.").type is not PROCESS
    assert detect("ring the client first, then book the van", "I'll book the van now.").type is PROCESS


def test_a_paragraph_opening_the_next_item_ends_what_the_message_corrects() -> None:
    """The values after "Next one:" in a paragraph of their own belong to the next task: the message read up to
    there corrects nothing ("…no fix time yet, next update at 15:30" is the next outage's, not a correction)."""
    previous = "We expect service to be restored by around 6pm this evening."
    message = "Thanks, sent.\n\nNext one: mains failure at the Elm Street cabinet, no fix time yet, next update 15:30."
    assert own_words(message) == "Thanks, sent."
    assert detect(message, previous).type is NONE


def test_a_process_quotes_the_rule_a_sentence_introduces_not_the_verdict_beside_it() -> None:
    message = (
        "第三步不行，不能直接退款。我是客服主管，我们的规定是：先核对订单和物流记录；金额超过500元的报主管审批；"
        "审批通过后才能退款。其他照旧。"
    )
    found = detect(message, "处理步骤：1. 核对订单；2. 直接原路退款；3. 短信通知客户。")
    assert found.type is PROCESS and found.corrected is not None
    assert found.corrected.startswith("先核对订单") and "报主管审批" in found.corrected


def test_a_wish_marked_standing_by_whenever_is_quoted_from_its_mark() -> None:
    message = "whenever you mention pressures give me the figure in bar and the safe range, never words like low or ok."
    found = detect(message, "The pressure looks a bit low.")
    assert found.type is PREFERENCE and found.corrected is not None
    assert found.corrected.startswith("whenever you mention pressures")


def test_from_now_on_marks_a_wish_not_a_changed_value() -> None:
    """ "From now on when you …" addresses the assistant's answers: a standing wish, and "now" in it says no value
    changed (the rules had read a changed fact into a bracket of the list)."""
    message = (
        "Looks right. From now on when you give me a checklist, tick box each item and put the owner in brackets: "
        "(me), (site team), (supplier). Can you redo this one?"
    )
    found = detect(message, "1. Order the scaffold\n2. Book the skip\n3. Confirm the start date")
    assert found.type is PREFERENCE and found.corrected is not None
    assert found.corrected.startswith("From now on when you give me a checklist")


def test_the_next_item_of_the_same_task_is_no_wish() -> None:
    """下一个，… and 再写一个，… ask for the next item with its own details: the model alone reads no wish in them."""
    previous = "小雨妈妈您好！今天练了音阶和《小星星》，手型进步很大，回家每天练十五分钟。"
    assert "preference" in ruled_out("下一个，王小川，同一天的课，节奏稳但是不爱看谱。", previous)
    assert "preference" in ruled_out("再写一个，大班的，刘果果，唱歌很放得开，就是坐不住。", previous)
    assert "preference" not in ruled_out("下一个，以后每条反馈都加上下节课的时间。", previous)


def test_a_rule_held_up_against_the_draft_is_a_process() -> None:
    """ "我们公司的标准比你写的严：…" introduces the company's rule, whatever words it is in: the process quotes it."""
    previous = "冷库温度控制在-15℃以下即可，每天记录一次。"
    message = "我们公司的标准比你写的严：冷库温度不高于-18℃，每天早晚各记录一次；超温要当班主管签字。你照这个重写。"
    found = detect(message, previous)
    assert found.type is PROCESS and found.corrected is not None
    assert found.corrected.startswith("冷库温度不高于-18℃") and "签字" in found.corrected


def test_a_correction_quotes_every_value_of_its_sentence_it_puts_right() -> None:
    previous = "Returns are accepted within 14 days and refunded as store credit."
    message = "That's wrong. Returns are accepted within 30 days, and they're refunded to the card, not as credit."
    found = detect(message, previous)
    assert found.type is FACTUAL and found.corrected is not None
    assert "30 days" in found.corrected and "refunded to the card" in found.corrected


def test_never_in_the_perfect_tells_an_experience_and_marks_nothing_standing() -> None:
    """ "who's never done it" says what someone has not done; a one-off request beside it stays one-off."""
    message = (
        "This one's for a new volunteer who's never used the till - just for this sheet, could you write the steps "
        "without the shortcut keys? Everyone else is fine with the usual version."
    )
    assert detect(message, "Till steps: F2 opens the drawer, F7 voids a line.").type is NONE
    assert marked_standing("never use the shortcut keys in these sheets") is not None
    assert marked_standing("a new volunteer who's never used the till") is None


@pytest.mark.parametrize(
    ("message", "previous"),
    [
        # 看看反应 is seeing how people react, no 看反了 (read backwards): answers to the assistant's questions
        (
            "周六下午两点到五点，最多8个人，茶具我这边准备。这次先别写价格，让他们私信问，看看反应。",
            "好的！先确认几个信息：\n1. 日期和时间？\n2. 人数上限？\n3. 茶具谁准备？\n4. 价格要写吗？",
        ),
        # what is declined for now is no standing wish about the answers' language
        ("行。你说的英文版先不用了，下周再说。", "可以这样回：Not wrong at all! 椅子上弹完全可以。"),
    ],
)
def test_a_word_that_starts_with_fan_and_what_is_declined_for_now_teach_nothing(message: str, previous: str) -> None:
    assert detect(message, previous).type is NONE


def test_a_wish_declined_for_now_still_stands_when_marked_standing() -> None:
    assert detect("以后英文版都不用了，直接发中文就行。", "Here is the English version: …").type is PREFERENCE


def test_a_wish_that_announces_its_content_quotes_what_follows_up_to_a_new_point() -> None:
    """ "two things i want in every reply from now on" says what it asks for in the sentences after it: the quote
    takes them, with their reasons, and stops at a new point ("oh and …", a one-off for one customer) or the closing
    request."""
    message = (
        "close! two things i want in every reply from now on: 1) say the van needs a clear drive to park on. "
        "the last one had me parked two streets away with the ladders. 2) put the price per window, not a total. "
        "oh and knock a fiver off for Mrs Dale, she's had us for years, that's just her. redo it pls"
    )
    found = detect(message, "Hi Mrs Dale, we can clean your windows on Tuesday morning.")
    assert found.type is PREFERENCE and found.corrected is not None
    assert found.corrected.startswith("two things i want in every reply from now on")
    assert "clear drive" in found.corrected and "price per window, not a total" in found.corrected
    assert "Mrs Dale" not in found.corrected and "redo" not in found.corrected


def test_a_further_wish_that_announces_its_content_quotes_the_sentences_after_it() -> None:
    """The model found a wish in the message's one-off (quoted after it); the sentence that announces the standing
    wish, read alone, quotes the sentences that say it too, up to the new point ("also …")."""
    message = (
        "ok but from now on put something in every reply for me. a family booked and then moaned the pool was cold. "
        "so the pool is heated to 27 and the sauna shuts at 8, say both. also put in that the Hendersons get their "
        "first month free, that's for them only. redo it"
    )
    previous = "Hi Hendersons, welcome to the club! Your family membership starts on Monday."
    one_off = "put in that the Hendersons get their first month free, that's for them only"
    found = Correction(PREFERENCE, 0.9, corrected=one_off)
    further = [wish.corrected or "" for wish in further_wishes(message, previous, found)]
    announced = [said for said in further if said.startswith("ok but from now on put something in every reply for me")]
    assert announced and "heated to 27" in announced[0] and "Hendersons" not in announced[0]


@pytest.mark.parametrize(
    ("message", "previous"),
    [
        # someone of the user's own side (the chef, a partner) says it is wrong; the user keeps it
        (
            "我们 chef 说这样写不对，说汤里没有奶油。其实我们一直放奶油的，他刚来不知道，照写。",
            "Our soup of the day: leek and potato with a swirl of cream.",
        ),
        ("我 partner 说价格写错了，其实就是这个价，他记成旧价了，不用改。", "套餐价 RM12，含饮料。"),
        # an addition for the post at hand only, named in English
        ("OK 可以。这个 post 加多一句，头 20 个客人送 cendol，只是这个 post 罢了。", "Here's the post: Grand opening…"),
    ],
)
def test_someone_of_the_users_side_saying_wrong_and_an_addition_for_this_post_only_teach_nothing(
    message: str, previous: str
) -> None:
    found = detect(message, previous)
    assert found.type is NONE, found.signals


def test_a_wish_for_a_bit_more_announces_nothing() -> None:
    """短一点 ("a bit shorter") names what it asks for: the quote stays the wish's own sentence."""
    message = "以后回复我短一点。我都是在手机上看，字多了看不完。"
    found = detect(message, "好的，以下是详细说明：第一，……第二，……")
    assert found.type is PREFERENCE and found.corrected is not None
    assert "手机" not in found.corrected
