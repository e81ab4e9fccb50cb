"""The rule tables of the correction detector (corrections.py): every cue it knows, in zh and en.

All patterns run on folded text (text.fold: NFKC, lower case, simplified Chinese), so full-width, traditional and
upper-case spellings need no entries of their own. Each table is a list of (name, pattern); the name is what
`Correction.signals` reports when the pattern fires, so a decision can always be traced to the rule that made it.

Families, in the order the detector consults them:

  guards      look-alikes that must not fire: the user fixing their own typo, reported speech, hypotheticals,
              questions about whether something is right, rhetorical or surprised questions, agreement, praise,
              thanks, declined offers, "actually" that opens a new request, and words that merely contain 错/不对/
              wrong (错题本, 错误提示, "the wrong file" that the user deleted).
  preference  how the user wants to be treated or answered: a form of address (叫我老王, don't call me sir), a
              phrase of the assistant's the user forbids (别说“亲”, drop the 'champ'), or a directive (请, 以后,
              统一, please, use, keep…) or a complaint about the last answer (太长了, too formal) naming an aspect of
              the answers (ASPECTS: structure, length, format, dates, units, currency, language, code, tone,
              numbers, depth, sources, conversation style); a format-like aspect also needs a sign that the wish is
              general (STANDING, or a reason about the user) and no one-off object (ONE_OFF: 这份报告, this
              article, translate…). After the process rules, a standing marker plus the user's answers
              (以后…回复我…, from now on … me) is a preference of any aspect.
  process     how the work must be done: an order (先…再…, X之前先Y, before…, first…then), a gate (审批后才能,
              needs sign-off), a route (go through the portal), a rule (这是规定, policy), or "do X, not the Y you
              proposed".
  verdict     the user says the answer is wrong (错了, 不对, 理解错了, 答非所问, wrong, incorrect, misunderstood, no).
  replacement the right value is stated: a contrast (不是X，是Y / X, not Y), a correction cue (应该是, 其实是,
              should be, actually it's), an update cue (改到, 现在是, moved to, is now), or a plain statement
              "是…/is …" of a concrete or short value next to a verdict; a value that names nothing (有问题, a
              different issue) is no replacement.
  update      the fact changed since the assistant learned it (升级了, 改了, 现在是, changed, now, no longer):
              with a shared subject and a new value, an implicit correction.
  condition   how widely a correction applies: temporal (这个月, this quarter), context_specific (对 VIP 客户,
              for orders over $500), source_specific (官网上写的是, according to the contract).
"""

from __future__ import annotations

import re

Cue = tuple[str, re.Pattern[str]]


def _cues(*pairs: tuple[str, str]) -> list[Cue]:
    return [(name, re.compile(pattern)) for name, pattern in pairs]


def first(cues: list[Cue], text: str) -> tuple[str, re.Match[str]] | None:
    """The first rule of the table that matches `text`, with its match."""
    for name, pattern in cues:
        match = pattern.search(text)
        if match:
            return name, match
    return None


# ---------------------------------------------------------------------------------------------------- guards
# The user corrects their own words: the assistant made no mistake, there is nothing to learn.
SELF_CORRECTION = _cues(
    # (not the hedge of a correction: "可能是我记错了，不过包装盒上印着一级" still says the answer is wrong)
    (
        "self_typo_zh",
        r"(?<!可能)(?<!或许)(?<!也许)(?<!说不定)(?<!可能是)(?<!或许是)(?<!也许是)(?<!说不定是)(?<!如果)(?<!要是)"
        r"我(刚才|刚刚|前面|之前|上面|刚)?"
        r"(说|打|写|输|填|记|看|发|讲|搞|弄|选|给)错",
    ),
    ("self_typo_zh", r"(打错字|笔误|口误|(?<!可能)(?<!或许)(?<!也许)是我(写|打|说|输|记|搞|弄)错|我的错|怪我)"),
    # what the user read, noted or counted a moment ago, with what it was between ("我刚看 calendar 看漏了", in
    # Cantonese "我頭先睇錯咗舊價錢牌"): 24 training messages say so, all none
    (
        "self_typo_zh",
        r"(?<!可能)(?<!或许)(?<!也许)我(?:刚才|刚刚|刚|头先|啱先|啱啱|之前|前面)[^,。!?;你您]{0,12}?"
        r"(?:看|睇|记|写|打|算|填|输|数|抄|听)(?:错|漏)",
    ),
    # with the subject dropped, typing is the user's: 哦刚才打错了，是15栋, 刚才手快打错了 (你刚才打错了 names the
    # assistant)
    ("self_typo_zh", r"(?<![你您])(刚才|刚刚)[^,，。!?！？;；你您]{0,3}?(打|输|填)错"),
    # what the user read or heard as something else a moment ago: "我刚才看成上个月的排期了"
    (
        "self_typo_zh",
        r"(?<!可能)(?<!或许)(?<!也许)我(?:刚才|刚刚|刚|头先|啱先|啱啱|之前|前面)[^,，。!?！？;；你您]{0,8}?(?:看|睇|听|记|抄)成",
    ),
    ("self_typo_en", r"\b(my (bad|mistake|typo)|typo on my (end|side|part)|i (mistyped|misspoke|misread))\b"),
    ("self_typo_en", r"\b(sorry,? i meant|i (typed|wrote|said|gave you) the wrong|i was wrong)\b"),
    # what the user measured or copied wrong themselves: "the bags are about 3 kg not 2, I weighed one on the wrong
    # scale" (6 training messages say so, all none)
    (
        "self_typo_en",
        r"\bi (?:weighed|measured|counted|read|copied|entered|put|picked|took|filled in)\b[^.?!,]{0,25}\bthe wrong\b",
    ),
)

# The user takes back what they said a moment before, in the same message: a hesitation and a "no" after their own
# words ("下周一上。啊不对，下周三", "太热了……不对，是太冷了", "the 13th, ah no sorry, the 20th"). At the message's
# start the same words answer the assistant ("不对不对，票上印的是小厅"); the caller reads only a cue after words.
SELF_REPAIR = re.compile(
    r"(?:[啊哦呃噢额诶哎欸]\s*,?\s*不对|不对不对|(?:\.{2,}|…+)\s*不对|"
    r"\b(?:ah|oh|er|erm|um|uh),? no,? (?:sorry|wait)\b|\bno,? wait\b|"
    # (or a wait and an apology: "on Wednesdays. oh wait, sorry, not Wednesday, the market is Thursday")
    r"\bwait,? sorry\b)"
)

# "never" that marks a wish or a rule standing: not the "never" of "never mind", which marks nothing.
# (not an experience told in the perfect: "our undergrad who's never handled it", "spelling has never been my thing")
_NEVER = r"(?<!has )(?<!have )(?<!had )(?<!'ve )(?<!'s )(?<!’ve )(?<!’s )never(?!\s?mind)"

# Somebody else said it: "老板说这份周报写得不对", "a customer says the tracking number is wrong". Whatever follows
# the frame in the sentence is reported, not the user's verdict on the assistant.
REPORTED = _cues(
    (
        "reported_zh",
        r"(老板|领导|经理|主管|同事|客户|用户|顾客|买家|他们|她们|他|她|对方|有人|别人|大家|学生|老师|家长|朋友|财务|"
        r"hr|pm|qa|人事|上级|甲方|审计|产品|运营|测试|开发|研发|设计|老大|leader|boss|客服|销售|法务|"
        # (the kitchen, a partner, the family, named in either language: 我们 chef 说…, 我 partner 说…, 我妈说…)
        r"chef|partner|staff|manager|厨师|大厨|合伙人|股东|伙计|老公|老婆|我妈|我爸|"
        r"(?<![你您我])(小|老)[\u4e00-\u9fff]|[\u4e00-\u9fff](总|工|哥|姐|经理|老师))"
        r"[^,。!?;]{0,8}?(说|反馈|表示|认为|觉得|投诉|提到|指出|抱怨|吐槽|嫌|质疑|来电|让我|要我|叫我|要求)",
    ),
    ("reported_zh", r"(听说|据说|网上说|有人说)"),
    (
        "reported_en",
        r"\b(boss|manager|lead|customer|client|user|colleague|coworker|he|she|they|someone|somebody|people|"
        r"everyone|qa|finance|legal|auditor|teacher|guide|policy|docs?|article|book|website|manual|handbook|wiki|"
        # (a verb, not the noun after an article or "to": "the claim record", "want to claim for it")
        r"document|email|ticket|"
        # (a person named with their title: "Dr Kaur was saying last week that our texts are too long")
        r"(?:dr|mr|mrs|ms|prof)\.?\s+[a-z'-]+)s?\b[^.?!]{0,24}?(?<!\bto )(?<!\bthe )(?<!\ba )(?<!\ban )\b(said|says|"
        r"say|told me|tells me|asked me|wants me|thinks|think|claims?|complained|complains|reported|reports|mentioned|"
        r"mentions|insists?|pointed out|feels?|(?:was|were|kept|keeps) saying)\b",
    ),
    # someone swore or insisted, whoever it was ("Group of six in the Clockmaker room swore blind the countdown was
    # wrong"): not the user, who would say "I"
    ("reported_en", r"(?<!\bi )(?<!\bwe )\b(?:swore|swears|insisted)\b"),
    # or is sure of it ("Solveig's adamant the sheet's messed up her Sunday", "my dad was convinced the brake lever
    # worked the wrong way round": 4 training messages, all none)
    ("reported_en", r"(?<!\bi )(?<!\bwe )(?<!\bit)(?<!\bthat)\b(?:'s|is|was|are|were) (?:adamant|convinced)\b"),
)

# A condition that makes the message a "what if": 如果运费是 15 元的话，总价是多少？ (Not the 的话 of 我的话术, 电话费.)
CONDITIONAL = re.compile(
    r"(如果|假如|假设|要是|万一|倘若|假使|的话(?![术题语费筒剧])|会不会|"
    r"\bif\b|\bwhat if\b|\bsuppose\b|\bimagine\b|\bwere\b|\bwould\b)"
)

# Questions about whether something is right are not verdicts: 你确定是杭州吗？ wait, is that right?
DOUBT = re.compile(
    r"(确定|对吗|对不对|是不是|没错吧|真的吗|核实一下|核对一下|确认一下|再查一下|再看看|再算一下|有没有搞错|"
    r"\bright\?|\bsure\b|\bcorrect\?|\baccurate\?|double-?check|\bverify\b|are you certain|is that (right|true))"
)

# Rhetorical and surprised questions with a negation: 不是很好吗？ 这不是挺好的嘛 哈哈不是吧 isn't that great?
RHETORICAL = re.compile(
    r"(不是[^,。!?]{0,8}(吗|嘛|么)|^\W*(哈+\W*)?不是吧|不会吧|难道|真的假的|不就是|"
    r"\b(isn'?t|aren'?t|wasn'?t) (that|it|this|they|those) (great|good|nice|perfect|awesome|fine|enough)|"
    r"\bno way\b|\blol\b)"
)

# Agreement, praise, thanks and declined offers: "对，就是这样", "不用了，谢谢", "no worries", "not bad — ship it".
APPROVAL = re.compile(
    r"(^\W*(对|对的|是的|没错|嗯嗯|好的|好|行|可以|收到|明白|了解|ok|okay|yes|yep|yeah|right|exactly|sure|great|perfect|"
    r"fine|lovely|cool|brilliant|cheers)"
    r"(?=\W|$)|^\W*(?:much |that'?s )?(?:better|good)(?=\s*(?:[.!,;]|$))|"
    r"就是这样|没问题|挺好|很好|不错|就按|就这么|这版|没事|没关系|不要紧|不怪你|辛苦|谢谢|"
    r"\b(thanks|thank you|no worries|no problem|not bad|looks good|sounds good|ship it|that'?s (right|correct|it|"
    r"perfect|great|the one)|(it'?s|is|are) (fine|good|ok|okay|perfect|great)|as is|exactly what|well done|nice)\b)"
    # an approval that a "but" turns at once ("Good, but: every message starts with …", 谢谢，不过以后…) concedes before
    # it puts something right: of the 25 training messages so, 22 are corrections
    r"(?!\W*(?:(?:but|however)\b|但|不过|只是|可是))"
)
DECLINE = re.compile(
    r"(不用了|不用改|不用换|不需要了?|不必了?|算了|先不用|暂时不用|不麻烦|"
    r"\b(no,? thanks|no,? thank you|no need|not now|not needed|i'?m good|that'?s ok|that'?s fine|we'?re good|"
    r"don'?t bother|"
    r"that'?s plenty|won'?t need (?:it|that|one|a|an|the|any))\b)"
)
# A version of the work declined ("英文版不用了，客人都看得懂", "skip the English version"): the piece at hand is not
# wanted, no way of answering is asked for. No training message says so.
VERSION_DECLINED = re.compile(
    # (the version named in English among Chinese: "English version 不用了")
    r"(?:版(?:本)?|\bversion\s*)(?:就|也|先)?(?:不用|不要|不需要)|"
    r"\b(?:skip|no need for|don'?t need|don'?t bother with) (?:the|an?) "
    r"[\w-]+ version\b"
)
# The assistant's turn offers more ("Would you like a comparison checklist?", 需要的话我也可以帮你算一下包装成本): a
# message that declines then declines the offer. Of the 57 training messages that decline after such an offer, all
# are none (after no offer, 9 of 61 that the rules find nothing in are standing wishes: "no need for the Mr.").
OFFERS_MORE = re.compile(
    r"(would you like|do you want|want me to|shall i|should i|i can also|i could also|happy to|if you'?d like|"
    # (an offer with its condition after it: "I can sketch a hint schedule for the room if that helps.")
    r"if you want|\bi can [^.?!]{1,60}\bif (?:that|it) (?:helps|would help|'?s useful)|"
    r"需要的话|要不要|需要我|要我|我可以(?:再|也|帮)|如果需要|如有需要|是否需要)"
)

# How far from its end an assistant's turn may offer more and still close with the offer (a question or two after the
# work: "Shall I add where the gate is and the hours it's stocked? I could also add a line on …").
OFFER_AT_THE_END = 200


def closes_with_an_offer(previous: str) -> bool:
    """The assistant's turn ends by offering more as a question (OFFERS_MORE, then a question mark)."""
    tail = previous[-OFFER_AT_THE_END:]
    offer = OFFERS_MORE.search(tail)
    return offer is not None and re.search(r"[?？]", tail[offer.start() :]) is not None


# Someone else's claim that the user's side got something wrong ("Margaret says we did the raffle wrong last year",
# 新来的小刘老说我把急停和慢停的用法讲错了): about the user's own doing, not the assistant's answer. 59 training
# messages, all none; not the user's own thought ("I think I gave you …") nor the assistant's ("push back if you think
# I'm wrong", a wish).
CLAIM_ON_THE_USER = re.compile(
    r"(?<!\bi )(?<!\byou )\b(says?|said|saying|reckons?|thinks?|told (me|us)|claims?|swears?|insists?|reckoned|"
    r"thought|claimed|swore|insisted)\b[^.?!]{0,12}?\b(we|we've|we'd|i|i've|our|my)\b[^.?!]{0,50}?"
    r"\b(wrong|incorrectly|mistake|messed up)\b|"
    r"(?<![我你])(说|觉得|认为|非说|老说|嫌)[^。！？?!，,]{0,6}(我们|咱们|咱|我)[^。！？?!]{0,30}?(错|不对)"
)


# A report that the assistant's advice was followed and failed: "Did the runner's loop. Walked the site for an hour and
# the heel's still lifting", "白醋擦了三遍，黄印一点没淡". The class definitions make it a rejection with no replacement
# (negative). What marks it: the problem persists or got worse (ADVICE_FAILED, not in a question), after words saying
# it was done (ADVICE_DONE, or "like you said": AS_ADVISED), about what the assistant advised (its turn advises:
# ADVISES; a content word of it echoed, correction_turn.ReadMessage.reports_failed_advice). In the training corpus
# (13,506 messages) 496 such messages are rejections, 8 none, 11 processes (a rule, found first), 5 preferences and 4
# facts; none ones said the advice worked ("照你说的在家先穿了两个晚上，一点都没磨脚，thanks": ADVICE_WORKED) or
# declined it ("算了，手绘不弄了"), and are left out.
ADVICE_FAILED = _cues(
    (
        "advice_failed_en",
        r"\b(still|anyway|again|even worse|worse|no (change|difference|better)|(exactly |just )?the same|"
        r"didn'?t (help|work|change|stop|fix|touch|shift|budge|do anything|make (any|a) difference)|"
        r"made (no|zero) difference|made it worse|nothing changed|"
        # (or grew: "The patch behind the wardrobe has doubled"; 4 training messages, all rejections)
        r"(has|have|had|'s|'ve) (doubled|grown|spread|come back|got bigger|gotten bigger)|"
        # (or is no better, or turned bad: "the marks are just as deep", "the cut face has gone slimy")
        r"just as (bad|deep|\w+ as before)|(has|have|had|'s|'ve) (gone|turned) \w+)\b",
    ),
    (
        "advice_failed_zh",
        r"(还是|仍然|依然|照样|又[^，,。]{0,6}了|更(厉害|严重|糟|多|差|大|明显|重|疼|痛)|"
        # (就又 for what came back soon after: 三天就又软又粘)
        # (and Cantonese: 都系唔弹 "still not springy", 都唔得)
        r"没(用|效果|变化|改善|好转|什么变化|啥用)|不管用|反而|反倒|还在|一点(也|都)?(没|不)|仲系|仲有|冇用|就又|比(之前|以前|原来)还|"
        # (一样 before what still happens, Cantonese above all: 一樣黐晒鑊底; as if not done, 跟没抹一样; every
        # try, 试了三遍都一样; Cantonese 都係 "still": 都係吐返出嚟; not "the same as yours": 跟你这个一样。)
        r"依旧|都系唔|都唔|(?<![不唔])一样(?=[\u4e00-\u9fff])(?![的吗嘅咩])|都一样|(跟|和|像)没\w{0,3}一样|都系(?![咪]))",
    ),
)
ADVICE_DONE = {
    "advice_failed_en": re.compile(
        # (and what has gone on for a while: "I've been doing the wall stretches every night for a week")
        r"\b(did|tried|done|followed|used|put|set|left|ran|hung|gave|kept|made|cut|took|got|\w{3,}ed|been \w+ing)\b"
    ),
    # (and Taiwanese 有 before the verb: 每天收車都有沖熱水; only words before a failure word that name the advice back)
    # (Cantonese 晒 after a verb, "all done": 逐粒收晒)
    "advice_failed_zh": re.compile(r"了|过|已经|咗|都有|有在|(?<=[\u4e00-\u9fff])晒"),
}
# (Cantonese 照你讲, folded from 照你講; what the assistant said, used: 用了你说的 ah-so 开瓶器)
AS_ADVISED = re.compile(
    r"\b(like|as) you (said|suggested|told me)\b|\bthe way you (said|suggested)\b|"
    r"(照|按|照着|按照)(你|您)(说|讲)的?|听(你|您)的|用了(你|您)(说|讲|推荐)的"
)
ADVISES = re.compile(
    # (an imperative opening a sentence or a clause, or after a dash or a colon: "… is cable stretch — give the cable
    # a quarter turn")
    r"(^|[.!?]\s+|, |; |[—–]\s*|:\s+)(try|use|put|add|keep|hang|leave|lace|turn|set|switch|lower|raise|whip|apply|"
    r"run|soak|wipe|rinse|move|tighten|loosen|replace|give|let|make sure|check|seed|tape|spray|rub|clean|dab|mix|heat|"
    r"cool|store|place|dilute|sprinkle|water|feed|fit|oil|sand|reset|restart|unplug|drain|fill|trim|cut|cover|bake|"
    r"wrap|stretch|practise|practice|count|do|drop|reduce|increase|stop|wait|reward|hold|press|steam|brush|stir|"
    # (and the verbs of moving, clearing and handling things: "Pull the barriers back", "Clear the box gutter")
    r"pull|push|clear|swap|scan|open|close|shut|pour|wash|dry|chill|freeze|lift|tilt|seal|reseal|sweep|scrub|shake)\b|"
    # (what it is for, then the advice: "To stop the gate banging, fit a rubber stop", "To reheat, cover the pie")
    r"^\W*to (stop|fix|prevent|avoid|keep|get rid of|cure|sort|clear|reduce)\b|^\W*to \w+(?: \w+){0,3}, \w+|"
    # (what to do in a case, the case first: "If the batter spreads too thin, thicken it with …")
    r"^\W*if\b[^.?!,]{3,100}, |"
    r"\b(you (can|could|should|might|need to)|try|if you|"
    r"will (stop|fix|help|sort|clear|do)|"
    r"(usually|often|normally|generally) (stops|fixes|helps|works|sorts|clears|eases?)|"
    # (what a remedy makes of the problem: "kinks usually come out with a steamer on low")
    r"(usually|often|normally|generally) (come|comes|go|goes) (out|away|off)|"
    r"should (stop|fix|help|sort|clear|do the trick))\b|"
    # (in Chinese, broadly: the echo of the advice's words decides)
    # (and advice for a case: 总抢拍的话，每天对着镜子慢速练十分钟)
    # (and what the advice is said to prevent: 放在阴凉的地方，一般不会有哈喇味)
    r"可以|试试|试一下|建议|就行|就好|就可以|就能|就顺|就会|把|先|多|少|记得|最好|应该|要|用|加|的话[，,]|"
    # (and Cantonese 就得, "that will do")
    r"(一般|通常|就)不会|就得|就够"
)
# (有用 not after 没: "试了没有用" failed)
ADVICE_WORKED = re.compile(
    r"谢|(?<![没不])管用|(?<![没不])有用|太好了|好使|"
    r"\b(thanks|thank you|cheers|worked|works|did the trick|great|brilliant)\b"
)
# A case that has not happened ("If I did the beeswax and it still sticks, what then?"): no failure reported.
ADVICE_NOT_TRIED = re.compile(r"^\W*(if|what if|要是|如果|万一|假如)")


# The user says that what the assistant described is not there: "There's no factory shop on Kettle Lane … never has
# been one", 官网根本没有什么在线商城, 从来就只有一层. The class definitions make it a rejection with no replacement
# (negative). Outside a question, and only about the assistant's words (a content word of its turn near the denial,
# correction_turn.ReadMessage.denies_what_was_described): "Ours is a scout hut, so there's no warming cabinet" after
# "if yours has one" tells the user's own setup. In the training corpus (13,506 messages) 94 such messages are
# rejections, 3 none, 3 facts and 2 rules.
NOT_THERE = _cues(
    (
        "not_there_en",
        r"\b(there'?s no|there is no|there isn'?t (a|an|any)|there are no|there aren'?t any|"
        r"(it|that|this|they|which) (doesn'?t|don'?t|does not|do not) exist|no such)\b",
    ),
    # (and 没有你说的…, "there is no … you spoke of")
    ("not_there_zh", r"根本没有|从来没有|从来就?只有|压根(就|儿)?没有?|不存在|根本冇|从来冇|都冇|没有(你|您)说的"),
)
# How far before and after a denial its subject is looked for (a clause, generously).
NOT_THERE_BEFORE, NOT_THERE_AFTER = 25, 30


# A task asked for as a question: "Can you explain what this README wants me to do?", 能不能帮我看看这份合同？ Of the 10
# training messages that open so, end asking and mark nothing standing, all are none.
TASK_QUESTION = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|hi|hey|thanks|great|and|also|so)\W+){0,2}(?:can|could|would|will) you\b|"
    r"^\W*(?:你)?(?:能不能|能否|可不可以|可以)(?:帮我|帮忙|给我)"
)

# For now: "anyway just a quick list for now", 先这样, and what is declined for now (英文版先不用了). Of the 34
# training messages that say so and mark nothing standing, none is a preference (29 none, 5 processes whose rule stands
# beside it: "… hold the £189 for now").
FOR_NOW = re.compile(r"\bfor now\b|先这样|暂时先|目前先|先不用|暂时不用|先不要|暂时不要|\bnot (?:right )?now\b")

# Someone else's request or wish passed on ("They also asked for a late table nearby", 客人还要求…, "my boss wants"):
# theirs, not a wish about how this user is answered. Of the 24 training messages with such words and no standing mark,
# none is a preference (10 none, 8 rejections citing someone, 3 processes, 3 facts). ("Ask whether they want to", "if
# she wants" name a case, not a request.)
RELAYS_A_REQUEST = re.compile(
    r"(?<!\bwhether )(?<!\bif )\b(?:they|she|he|the (?:client|customer|guest|couple|family|boss|manager)s?|"
    r"my (?:boss|manager|client|wife|husband|mum|mom|dad))\s+(?:also\s+|just\s+)?"
    r"(?:asked|wants?|wanted|requested|would like)\b|(?:他们|她|他|客人|客户|老板|领导)(?:还|也)?(?:说|问|要求|想要)"
)

# A message that drops something, at its start (after an interjection or two: "ugh actually never mind the groups"),
# or after "but" or a comma: "never mind JP, client's dropping Japan", 算了，先这样, "was going to ask for the chart too
# but never mind". Of the 58 training messages that do so and mark nothing standing, 57 are none and one a rejection
# (算了吧这配色…): none a fact, a wish or a rule.
LETS_IT_GO = re.compile(
    r"(?:^\W*(?:(?:ugh|oh|ah|ok|okay|so|hmm|um|well|actually|sorry|wait|哦|啊|哎|唉|嗯|那)\W*){0,2}|\bbut\s+|"
    r"[,，;；]\s*(?:but\s+)?)(?:never\s?mind|nvm|forget (?:it|that|about)|scratch that|算了|不用了)"
)

# A document asked for, named with its article ("draft the confirmation for the allocation only", "write up the
# summary"): a task the conversation continues with, no rule of the work. In the training corpus 5 of the 6 sentences
# it fits are none.
ASKS_FOR_A_DOCUMENT = re.compile(
    r"\b(write|draft|give me|make|create|send|prepare|compose|do)(\s(up|out))?\s(me\s)?(a|an|the|my|our)\s"
    r"([\w-]+\s){0,2}"
    r"(email|letter|message|post|reply|note|memo|bio|summary|table|list|report|draft|version|confirmation|notice|"
    r"response|proposal|announcement|agenda|minutes|outline|description|caption|invoice|quote)\b|"
    # another version of what was drafted, for another place: "A shorter version for the website footer as well"
    r"^\W*(?:(?:ok(?:ay)?|good|great|perfect|lovely|thanks|and|now)\W+){0,2}(?:a|an|one more|another)\s+"
    r"(?:[\w-]+\s){0,2}version\s+(?:of\s+(?:it|that|this)\s+)?for\b|"
    # a reply to someone: "draft her a reply saying we've received it"
    r"\b(write|draft|compose)\s(him|her|them|us)\s(a|an|the)\s([\w-]+\s){0,2}(email|letter|message|reply|note|response)\b|"
    # 帮我拟个回复, 给我起草一份通知, 麻烦写封邮件; with what it is for or where it goes before it (帮我写一条小红书
    # post, 帮我写两句标签上的品尝说明: 8 training messages, none a preference)
    # (not what is written for the user, in a clause: 以后你帮我写的每一段介绍 marks a wish standing)
    r"(?:帮我|给我|麻烦你?|请)(?:拟|写|起草|整理|出|做)(?!的)一?(?:个|份|封|条|篇|下|段|则)?[^,，。!?！？]{0,8}?"
    r"(?:回复|邮件|通知|消息|公告|说明|文案|草稿|报价单?|信|帖子?|文章|推文|朋友圈|海报|简介|介绍|标题|广告|短信|话术|"
    r"脚本|致辞|贺卡|卡片|post|email|caption|message|"
    # (or a few lines to send: 你帮我写几句发给王总和老何)
    r"(?:几|两|三|一)句(?:话)?(?=[^,，。!?！？]{0,4}(?:发给|给|回|跟|告诉)))|"
    r"\b(write|draft|jot)\s(me\s)?(a few|a couple of|two|some)\s(lines|words)\s(to|for)\b"
)

# A request for this time only (the class definition's one-off request: "this time, make it formal", 这次用英文回复):
# a sentence that says so states no standing wish, whatever else it asks for. 今次 and 呢次 are Cantonese for 这次.
ONE_TIME = re.compile(
    # (and the one order or document at hand, or the others said not to need it: 就这单加，别的客户不用)
    r"(这次|这回|这一次|本次|仅此一次|就这一次|今次|呢次|(?:就|只|仅)限?这一?[单份封]|"
    # (the one post or notice at hand, with what is done to it: 只加这一篇, 就这一条; for Saturday's message only,
    # december only: 3 training messages, all none)
    # (只是这条朋友圈: "only this one")
    r"(?:就|只|仅)是?[加放写发用做贴]?这一?[篇条期张]|"
    # (the post at hand named in English, or "only this …, that's all": 只是这个 post 罢了)
    r"(?:就|只|仅)是?这(?:一|个)?\s*(?:post|帖子?)|这(?:一|个)?\s*[a-z]{2,12}\s*(?:罢了|而已)|"
    # (a favour that sets no precedent: 运费这单我们出，下不为例; 13 training messages, 12 none and a rule whose other
    # sentence marks it standing: 余氯一律测两次…今早只测了一次就开了，下不为例)
    r"下不为例|"
    # (a gift or an addition for the one customer at hand: 送她一小段同款蕾丝…就给她一个人, "stick in a free windbreak
    # for her lot, only her, nobody else gets one"; no training message has it, 17 turns of the tuning sessions do, each
    # a one-off beside a wish or in a session with nothing to learn)
    r"(?:就|只|仅)(?:给|送)?(?:她|他|佢)(?:一个人?|一位|一家)|只送(?:她|他)一个|(?:别的|其他)(?:客人|买家|客户)都?不送|"
    r"\b(?:just|only) (?:for )?(?:her|him)(?: though)?(?=\s*[,.;!]|\s*$)|\bnobody else gets\b|"
    # (the day or the week at hand as a clause of its own: "…分一下类，就今晚，我要给主持人串词用", 就这周: 2 training
    # messages, both none)
    # (or a day of this week: 就这周六, 只这个星期天)
    r"[，,、]\s*(?:就|只|仅)(?:今晚|今天|今日|这周|本周|这一?场|今早|明天|"
    r"这个?(?:周|星期|礼拜)[一二三四五六日天末])(?=[，,。！!；;]|$)|"
    r"\bfor (?:this|that|[a-z]+'s) (?:message|post|notice|issue|edition|flyer|email|newsletter|poster) only\b|"
    r"\b(?:january|february|march|april|june|july|august|september|october|november|december) only\b|"
    r"(?:别的|其他|其它)(?:客户|订单|单子?)都?不用|"
    r"\bthis time\b(?! of (?:the )?(?:night|day|year|week|month|morning))|"
    r"\b(?:just )?this once\b|\bfor this [a-z]+ only\b|"
    # "for this one could you make it more formal", "make this one a bit more formal": the one at hand (all 10 and
    # all 7 such training messages are none)
    r"\b(just|only) (?:for|on|in) this [a-z]+\b|\bfor this one\b|"
    # the period or the edition at hand without a preposition: "Just this week add 'free recipe card with every 3'"
    r"\b(?:just|only) this (?:week|weekend|month|season|year|issue|edition|batch|run|round|term|trip|event|order|post|"
    r"board)\b(?!'s|’s)|"
    # (or the day at hand, named: "just this boxing day", "only this saturday")
    r"\b(?:just|only) this (?:[a-z]+ )?(?:day|eve|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b(?!'s|’s)|"
    # (the one version at hand let go: "No need for the newsletter one, just the group")
    r"\b(?:no need for|skip|forget|don'?t bother with) the [a-z]+ (?:one|version)\b|"
    r"\b(?:make|do|write|keep|put|send|word|draft|translate|format|have) (?:this|that) one\b|"
    # the one at hand as the subject of what it must be: "This one needs to be properly formal, it's going to …"
    r"^\W*this one (?:needs|has|must|should|ought)\b|"
    # a document at hand and how to change it, 再…一点 (more …, than the draft): 给作者的回复再客气一点
    r"(?<!以后)(?<!今后)(?:回复|邮件|信|稿子|通知|文案|这段|这篇|这封|这条)再[\u4e00-\u9fff]{1,3}一?[点些]|"
    # the document at hand named by its measure word: 这封就写英文的, 这篇先别加图, 这份用正式一点的
    r"这[封篇份](?:邮件|信|稿子?|回复|通知|文案)?(?:就|先|用|写|改))"
)

# Whether the replies should tell people something: "Should I be warning people about the lane?", "should I mention to
# her that veg-tan darkens", 要不要提醒客人洋甘菊是菊科的？ In the tuning sessions 26 user turns ask so: 14 are where an
# implicit lesson starts (the assistant then tells it unasked in every later reply), the others ask who to tell about a
# planted note or about one case, and the assistant does not keep it (reflection.offline.adopted_requests).
ASKS_WHETHER_TO_TELL = re.compile(
    r"\b(?:should (?:i|we)(?: be)? (?:warn|tell|mention|remind|say|add|include|put|flag)\w*|"
    # (the question put the other way round: "do you think I should be telling people …?")
    r"(?:i|we) should (?:be )?(?:warn|tell|mention|remind|add|include|flag)\w*|"
    r"do (?:i|we|you) need to (?:warn|tell|mention|remind)|is it worth (?:warning|telling|mentioning|adding))\b|"
    # (with an adverb between: 要不要顺便提醒她们一下; or whom and where: 要不要跟客人说一声, 要不要在回复里提醒客人)
    r"(?:要不要|需不需要|该不该|用不用)(?:顺便|也|再|都|先)?(?:(?:跟|给|和|在)[^，,。？?]{1,6}?)?"
    r"(?:提醒|告诉|说一下|说一声|讲一声|写上|加上|注明|提一下|提一句)|"
    r"使唔使(?:提醒|讲)|要唔要(?:提醒|讲)|需唔需要(?:提醒|讲)"
)

# An answer in generalities ("一般来说每亩 10 到 15 公斤", "hotels typically turn rooms over by 3 p.m."), not about the
# user's own case (您的, your): what the user says of their own setup next adds to it more often than it corrects it.
GENERIC_ANSWER = re.compile(
    r"(一般|通常|大部分|大多数|多数|普遍|常见|往往|\b(?:typically|usually|generally|most|in general|normally|commonly|"
    r"often|tend to)\b)"
)
ABOUT_THE_USER = re.compile(r"(您的|你的|您家|你家|您这|你这|\byour\b|\byou'?re\b|\byou have\b)")
# The user speaking of their own setup: 我家, 我们, my, our.
OWN_SETUP = re.compile(r"(我家|我们|我的|我这|咱|\b(?:my|our|we|we'?re|i have|mine|ours)\b)")

# An edit of the one thing just drafted, named with "the" and no word of every such thing: "make the briefing five
# bullets, short", "put the shot list in order of time of day" (not "put the vase life next to every flower").
EDIT_OF_THE_DRAFT = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|good|great|fine|right|and|now|then|yes|yep|cool|perfect|lovely|thanks|pls|please)\W+){0,3}"
    r"(?:make|turn|put|rewrite|shorten|format|redo|trim)\s+the\s+[a-z-]+(?<!s)\b(?!\s+(?:is|are|was|were)\b)"
    r"(?!.*\b(?:every|each|all|any|always|whenever|when you|from now on|in future|going forward)\b)"
)
# A follow-up that carries the task on to another thing ("now do the same for March", "ok, same again for the second
# order", "那同样帮我算一下三楼", "再帮我给小李发个微信"): none by the class definitions, whatever values it brings for
# the new thing. Not "the same for every order" (a standing wish).
CONTINUES_THE_TASK = re.compile(
    rf"{EDIT_OF_THE_DRAFT.pattern}|"
    r"^\W*(?:(?:ok(?:ay)?|great|thanks|cool|right|alright|anyway|and|now|then)\W+){0,3}"
    r"(?:do|give me|what about|how about)?\W*"
    r"(?:the\s+)?same\s+(?:again\s+|thing\s+)?for\b(?!\s+(?:every|all|each|any|future|later)\b)|"
    r"^\W*(?:好的?|行|ok)?\W*(?:那|再|然后)?(?:同样|一样|照这样|照这个)(?:的|地)?(?:再|也)?(?:帮我|给我)?"
    r"(?:算|做|来|弄|查|写|估|报|排)(?!了|过)|"  # (not what was done: 照这个做了三周 reports a failure)
    # another task asked for next: "可以。再帮我给小李发个微信，说明天的会改到 10 点"
    r"^\W*(?:(?:好的?|可以|行|ok|嗯)\W*)?(?:(?:再|另外|顺便)(?:帮我|帮忙|麻烦你)|再(?:来|写|做|拟|出)[一]?[个份条张篇])|"
    # the next item of the same task: "Now a normal one for Jade Osei"
    r"^\W*(?:(?:ok(?:ay)?|great|thanks|lovely|right|and)\W+){0,2}now\W+(?:do\W+|write\W+)?(?:a|an|another|one)\b"
    r"[^.!?]{0,30}?\bfor\b|"
    # an edit of what was just drafted: "ok, add a line saying …", "再加一句：…" (ReadMessage.continues_the_task: unless
    # the message marks a wish standing outside the line's own words)
    r"^\W*(?:(?:ok(?:ay)?|good|great|fine|right|and|now|then|yes|yep|cool|perfect|lovely)\W+){0,2}(?:please\s+)?"
    r"(?:add|insert|include|append|remove|drop|cut|delete)\s+(?:a|an|one|another)\s+(?:(?:short|quick|closing)\s+)?"
    r"(?:line|sentence|note|paragraph|ps)\b|"
    r"^\W*(?:(?:好的?|行|可以|嗯|ok|那)\W*)?(?:再|帮我|给我|麻烦)?(?:加|添|补)上?[一两]?[句行段]"
)

# The next item named after "next" or 下一个 at the start of a message: "fine. next: a cracked tile, about
# £340", 下一份：男 47 …, 下一个，周子涵，同一节课…: the values are the next item's (ReadMessage.continues_the_task;
# later in a message, "下一个：" follows what the message has already said).
NEXT_ITEM = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|fine|good|great|thanks|right|cool|好的?|行|可以|嗯)\W+){0,2}"
    r"(?:next\s*[:：]|(?:next one|下一[个份单位条张篇])\s*[:：,，]|"
    # (or the first live case after a rule or a template is agreed: "Great. First real one: Rosa, Saturday 9 Jan …",
    # "Live one, it's 22:03.")
    r"(?:(?:first|another|a)\s+)?(?:real|live|actual)\s+one\s*[:：,，.]|第一(?:个|单)真(?:的|实的)?\s*[:：,，])"
)

# "Actually, can you also…", "Actually 我还想问一下": actually opening a new request, not a correction.
NEW_REQUEST = re.compile(
    r"(\bactually,? (can|could|would|will) you\b|\bactually,? (i|we) (also |still )?(want|need|wonder|have)|"
    r"\balso\b.*\?|我还想|还想问|再问一下|顺便问)"
)

# Another thing, not the same one: 我还有一个订单，金额 50 元 / I have another order for $50. Blocks implicit ones.
ADDS_INFORMATION = re.compile(
    r"(还有一|另外|另一|又一|再加|再来|也|额外|\b(another|also|other|second|too|as well|plus|in addition)\b)"
)

# A favour asked now ("帮我先查物流再看退款", "can you first…") is a request, not a rule of the work.
FAVOUR = re.compile(r"(帮我|帮忙|麻烦你|\b(can|could|would) you\b)")
# Rule-like wording that makes a process stand on its own, without an assistant turn it corrects.
# A sentence that introduces the rule itself ("我们厂的规定是：发现不合格品，先挂红色不合格标签…", "our procedure is:
# …"): the process step quotes it before a verdict on the draft beside it ("第二条不行，生产不能自己返修放行").
# Or one that holds it up against the draft ("我们公司的标准比你写的严：每餐次…", "our standard is stricter: …").
STATES_THE_RULE = re.compile(
    r"(规定|规矩|流程|制度|要求|做法|标准)(是|如下|比你\S{0,4}?)\s*[:：,]|"
    r"\b(the|our|my|company|team)\s+(rule|procedure|process|policy|standard)\s+(is|says)\s*([a-z]+\s+){0,4}?[:,]"
)
RULE_LIKE = re.compile(
    r"(规定|规矩|制度|流程是|以后|每次|一律|必须|务必|"
    rf"\b(always|{_NEVER}|policy|rule|must|every time|whenever)\b)"
)
# The user reports their own slip (我把密码输错了), not a verdict on the assistant.
SELF_REPORT_ZH = re.compile(r"我(?!们|要|想|说的|问的|需要的)[^,。你您]{0,10}$")

# A question that is a polite request (能不能短一点？can you keep answers short?) may state a preference.
POLITE_REQUEST = re.compile(r"(能不能|可不可以|能否|可以[^,。]{0,8}吗|\b(can|could|would|will) you\b)")

# Asking for something, not stating a value: blocks implicit corrections (a number in a request is a parameter).
REQUEST = re.compile(
    r"(帮我|请|麻烦|能不能|能否|可不可以|可以帮|给我|我想|我要|想要|\b(can|could|would|will) you\b|\bplease\b|"
    r"\blet'?s\b|\blet me\b|\bi'?d like\b|\bi want\b|\bi need\b|^\W*(book|send|make|add|create|draft|find|show))"
)

# A question (besides a final '?'): a Chinese clause ending in a question particle or holding a question word.
# 呢 also ends statements (手册上写着呢), so it asks only with a question word.
QUESTION_PARTICLE = re.compile(r"(吗|么)\W*$")
QUESTION_WORD_ZH = re.compile(
    r"(什么|怎么|怎样|为什么|为啥|哪里|哪儿|哪个|哪些|多少|(?<!好)几[点号天个]|是否|有没有|能不能|是不是)"
)
# A last clause that says how to answer the question before it, for this answer: 说个大概就行, 给个数就好.
ANSWER_MANNER = re.compile(r"^\W*[^,，]{0,8}(就行|就好|就可以|即可|就够了)[了啦吧]?\W*$")
# A last clause that asks with a negation or in reproach (没更新吗, 不是说好了吗, 怎么就过保了): a complaint, not a
# question. In the training corpus, of the messages whose last clause alone asks, 93 are none and 6 factual where
# it asks plainly.
RHETORICAL_TAIL = re.compile(r"(没|不|未|难道|怎么就|凭什么)")
QUESTION_EN = re.compile(
    r"^\W*(how|what|what'?s|how'?s|where'?s|who'?s|where|when|why|which|who|is|are|was|were|do|does|did|can i|could i|"
    r"should i|shall i)\b"
)
# An English question typed without its question mark ("ok how do i grep the repo for mail calls"): a question word and
# an auxiliary, or an auxiliary and its subject, at the start, after an interjection or two. (Not "can you …", "could
# you …": a polite request may state a wish.)
QUESTION_UNMARKED_EN = re.compile(
    r"^\W*(?:(?:ok|okay|so|and|but|also|well|hmm|um|right|wait|oh|ah|yikes)\W+){0,2}"
    r"(?:(?:how|what|when|where|why|which|who)\s+(?:do|does|did|is|are|was|were|can|should|would|will|much|many|long|"
    r"often)|(?:do|does|did|is|are|should|have|has)\s+(?:i|we|they|it|there|he|she|you)|(?:what|how|where|who)'?s\s|"
    # an auxiliary and a subject named with its determiner ("do the drivers need dbs checks"), a subject question
    # ("who carries the first aid kit on the day")
    r"(?:do|does|did|should|can|will)\s+(?:the|my|our|your|their|his|her|these|those|all|any)\s+[a-z]+\s+[a-z]+|"
    r"who\s+(?!(?:i|we|you|they)\b)[a-z]+s)\b"
)

# ----------------------------------------------------------------------------------------------- preference
# A form of address. The name must end its clause (叫我老王就行, call me Sam): 叫我起床 and "call me back" are requests.
_NOT_A_NAME = r"(?!起|去|来|做|帮|查|看|吃|回|等|别|不|一下|一声|过去|电话|打)"
ADDRESS = _cues(
    (
        "address_zh",
        rf"(以后|今后|请|就)?(?<![别要用再必])(叫|称呼|喊)我(为)?\s*{_NOT_A_NAME}(?P<name>[^,。!?;]{{1,12}}?)"
        r"(就行|就好|就可以|即可|吧|好了|,|。|!|$)",
    ),
    ("address_zh", r"(别|不要|不用|别再|不要再|不必)(叫|称呼|喊)我(?P<old>[^,。!?;\s]{1,6}?)(?=了|啦|,|。|!|$|听|太)"),
    ("address_zh", r"(别|不要|不用|别再|不要再|不必)(叫|称呼|喊)我"),
    ("address_zh", r"(不喜欢|讨厌|别|不要)(被|人家)(叫|称呼|喊)(我)?(做|作|为)?(?P<old>[^,。!?;\s]{1,6})"),
    ("address_zh", r"别(叫|称呼|喊)(?P<old>[^,。!?;\s]{1,4}?)(了|啦|,|。|!|$)"),
    (
        "address_en",
        r"\bcall me (?!back|later|tomorrow|at\b|when|if\b|on\b|in\b|after|before|asap|now|again|tonight|sometime)"
        r"(?P<name>[a-z][\w.'-]{0,15}(?: [a-z][\w.'-]{0,15})?)(?=[,.!;]|$| please| instead| from now| going forward)",
    ),
    (
        "address_en",
        r"\b(don'?t|do not|stop|never) call(ing)? me\b|\baddress me as\b|\bi'?m not (a |an )?(sir|ma'?am)\b",
    ),
    # A phrase of the assistant's that the user forbids: 别每次都说“好的呢亲”, drop the 'champ'.
    (
        "wording_zh",
        r"(别|不要|不用|别再|不要再|不许)(每次|老是|总是)?(都)?(说|叫|用|写|加)\s*[“\"'‘「](?P<old>[^”\"'’」]{1,20})[”\"'’」]",
    ),
    (
        "wording_en",
        r"\b(drop|stop saying|stop using|don'?t say|don'?t use|quit saying|no more|lose) (the )?((words?|"
        r"phrases?|terms?) )?[“\"'‘]"
        r"(?P<old>[^”\"'’]{1,20})[”\"'’]",
    ),
)

# Aspects of an answer, each with its topic (zh, en). A preference names one of them.
ASPECTS: list[tuple[str, str, str, re.Pattern[str]]] = [
    (name, zh, en, re.compile(pattern))
    for name, zh, en, pattern in [
        (
            "structure",
            "回答结构",
            "answer structure",
            r"(结论|要点|重点|总结|摘要|summary|conclusion|tl;?dr|bottom line|\bdetails?\b|放最前|放前面|放后面|"
            r"分点|分条|直接(给|说)(答案|结论|结果)|选项|一大堆|推荐一个|绕弯子|\boptions\b|\balternatives\b)",
        ),
        (
            "length",
            "回复长度",
            "answer length",
            r"(短一[点些]|简短|简洁|精简|长一[点些]|详细一[点些]|啰嗦|太长|太短|(?<![\d一二三四五六七八九十两])[\d一二三四五六七八九十两]{1,5}\s*(个字|字|句话|句)"
            r"(以内|之内|左右)?|\bunder \d+ words\b|\bshorter\b|\bconcise\b|\bbrief\b|too long|get to the point|"
            r"one paragraph|wall of text|disclaimers?|caveats?|免责|铺垫|废话|套话|"
            r"\b(answers|replies|responses|messages|it|them)\s+(short|brief|tight|concise)\b|short(er)? version|"
            r"\bshort (answers|replies|responses)\b|\b(in|to) (one|a single|two|three|\d+) (sentences?|lines?|"
            r"paragraphs?|bullets?)\b|"
            r"简短版|简版|(控制|限制)在|不(要)?超过|\b(at most|max|no more than)\b)",
        ),
        (
            "format",
            "输出格式",
            "format",
            r"(表格|(一张|列个|列张|用|做成|列成|整理成)表(?![示达现扬明态白])|列表|清单|编号|序号|markdown|加粗|小标题|格式|"
            r"json|纯文本|代码块|署名|签名|落款|图表|"
            r"\bbullet|\bnumbered\b|\btables?\b|plain text|\bheadings?\b|\bbold\b|\bformat|\bsignature\b|\bsign off\b|"
            r"\bcharts?\b|\bparagraphs\b)",
        ),
        (
            "dates",
            "日期时间格式",
            "date format",
            r"(日期|时间用|时间格式|yyyy|dd/mm|mm/dd|24\s*小时制|时区|北京时间|\bdates\b|"
            r"\b(?:every|each|all|any) date\b|date format|time format|24-hour|time ?zone|\butc\b|\bgmt\b)",
        ),
        (
            "units",
            "单位",
            "units",
            r"(单位|换成万|万元|亿元|摄氏|华氏|公制|英制|公斤|公里|\bmetric\b|\bimperial\b|celsius|fahrenheit|\bunits\b|"
            r"\bin (mb|gb|kb|tb|km|miles|kg|lbs|pounds|inches|cm|celsius|fahrenheit)\b)",
        ),
        ("currency", "币种", "currency", r"(\busd\b|美元|人民币|\brmb\b|\bdollars\b|\beuros?\b|\bcurrency\b)"),
        (
            "language",
            "回复语言",
            "answer language",
            r"(中文|英文|英语|简体|繁体|粤语|日语|韩语|法语|德语|西班牙语|俄语|缩写|术语|大白话|通俗|\bchinese\b|\benglish\b|"
            r"\bjapanese\b|\bkorean\b|\bspanish\b|\bfrench\b|\bgerman\b|\brussian\b|\bportuguese\b|\bitalian\b|"
            r"\blanguage\b|\bjargon\b|acronyms?|abbreviations?|\bbritish\b|\bamerican spelling\b|\bspelling\b)",
        ),
        (
            "code",
            "示例代码语言",
            "code language",
            r"((示例|代码|code|snippet|example|样例)[^.。]{0,20}(\bgo\b|golang|python|java\b|typescript|\bts\b|"
            r"javascript|\bjs\b|rust|c\+\+|kotlin|swift|php|ruby|shell|bash)|(\bgo\b|golang|python|java|typescript|"
            r"javascript|rust|kotlin|swift|php|ruby)\s*(版本|的)?[^,.。]{0,6}(示例|代码|code|snippets?|examples?)|"
            r"(代码|code|sql|脚本|script|quer(y|ies)|函数|functions?)[^.。]{0,30}(注释|comments?|type hints|类型注解))",
        ),
        (
            "tone",
            "语气",
            "tone",
            r"(语气|口吻|客气|正式|随意|轻松|口语化|寒暄|客套|开场白|感叹号|表情|颜文字|道歉|敬语|直接[一点]+|说话直接|别绕|"
            r"\bstraightforward\b|\bbe direct\b|emoji|\bcasual\b|\bformal\b|"
            r"\bfriendl|\btone\b|pleasantries|exclamation|small talk|\bfluff\b|apologi[sz]|开头用|结尾用|"
            r"开头别|结尾别|问候语|(?:跟|和|对)我说话|\bgreeting|\bsign-?off\b)",
        ),
        (
            "numbers",
            "数字格式",
            "number format",
            r"(小数|保留[\d一两二三]位|千分位|精确到|阿拉伯数字|汉字数字|大写数字|\bdecimals?\b|\brounded?\b|"
            r"decimal places)",
        ),
        (
            "depth",
            "讲解深度",
            "level of detail",
            r"(一步一步|分步骤|举[个几]?例子|举例|初学者|新手|小白|说人话|深入一[点些]|专业一[点些]|只要代码|直接给代码|"
            r"不用解释|别解释|讲思路|说思路|讲原理|只讲|step by step|explain like|\bbeginner|\bin depth\b|high-level|"
            r"code only|just the code|"
            r"no explanations?|don'?t explain|more detail|less detail|with examples)",
        ),
        (
            "sources",
            "引用来源",
            "sources",
            r"(出处|来源|引用|参考链接|附上链接|带上链接|\bsources?\b|\bcitations?\b|\bcite\b|\breferences?\b|\blinks?\b)",
        ),
        (
            "conversation",
            "对话方式",
            "conversation style",
            r"(重复我的问题|复述我的|别问我|少问|反问|repeat my question|restate my question|ask me so many|"
            r"stop asking|follow-up questions|with a question|\bend(ing)? (every|each|your) (message|answer|reply))",
        ),
    ]
]
# Aspects that only ever describe answers; the others (format, units, language…) also occur in one-off requests
# ("把这份报告整理成表格"), so those need a sign that the wish is general.
INHERENT_ASPECTS = frozenset({"structure", "length", "tone", "conversation"})

# Directive: the user asks for something (zh particles and verbs, en imperatives).
DIRECTIVE = re.compile(
    r"(以后|今后|往后|下次|每次|一律|统一|请|麻烦|换成|改成|写成|用|给|加上|去掉|别|不要|不用|放|能不能|可不可以|"
    r"可以[^,。]{0,8}吗|就行|就好|即可|吧\W*$|一[点些]|的时候|控制在|限制在|不超过|而不是|"
    r"\b(don'?t|do not|stop|avoid|next time)\b|,\s*not\b|^\W*[a-z ]{2,30}\bplease\W*$|"
    r"\bwhen(ever)? you\b[^,]{2,40},\s*(please )?[a-z]+|"
    rf"^\W*(please|use|give|keep|make|skip|drop|stop|avoid|write|put|no|always|{_NEVER}|just|cut|"
    r"add|switch|answer|"
    r"reply|respond|show|format|lead|start|don'?t|do not|can you|could you|would you|less|more|include|explain|"
    r"list|talk|speak|be|try|limit|leave|spell|cite|link|break|split|number|tell|send)\b|\bplease\b|"
    rf"from now on|going forward|\balways\b|\b{_NEVER}\b|i'?d (like|prefer|rather)|\bi prefer\b|\bi want\b|"
    r"我不喜欢|我讨厌|受不了|不喜欢|我喜欢|\bi (hate|don'?t like|can'?t stand|like|love) (it )?when\b|"
    r"\bi (hate|don'?t like|can'?t stand|like|love|prefer|want)\b)"
)
# A complaint about the answer just given is a wish for the next ones: 太长了, too formal. Only with an assistant turn.
COMPLAINT = re.compile(
    r"(太(长|啰嗦|多|短|复杂|专业|正式|随意|假|官方|绕)|\btoo (long|wordy|verbose|formal|casual|short|much|technical|"
    r"stiff|robotic)\b|\bway too\b)"
)
# Signs that a wish is general, not a one-off request.
STANDING = re.compile(
    r"(以后|今后|往后|下次|每次|一律|统一|都|所有|全部|的时候|给我的回复|回复|回答|输出|"
    rf"from now on|going forward|in future|next time|\balways\b|\b{_NEVER}\b|\ball\b|\bany\b|\bevery\b|"
    r"when(ever)? you (talk|write|reply|give|send|answer|explain)|\bwith me\b|\bto me\b|总是|老是|"
    r"\b(answers|replies|responses|figures|dates|numbers|emails|messages|code|tables|bullets|bullet points|"
    r"emojis|exclamation marks|headings|acronyms|abbreviations)\b|\bplease\b|"
    r"i prefer|i'?d prefer|"
    r"i'?d rather|\bi like\b|我喜欢|我更喜欢|我习惯|我不喜欢|我讨厌|受不了|\bi (hate|don'?t like|can'?t stand)\b|"
    r"same language|whatever language)"
)
# The assistant's answers to this user, named: 给我, 回复我, 跟我, reply, with me. A standing marker plus one of these
# is a wish about how to be answered, whatever its aspect (以后回复我的时候带上订单号).
ADDRESSED = re.compile(
    # (and the replies the assistant writes for the user: 以后你帮我覆任何问见唔见到海豚嘅客，都要讲明…)
    r"((?<![交留借还带])给我|发我|回复我|回我|回答我|跟我|对我|和我|告诉我|(?<![交留借还带])帮我(?:回|覆|答复)|"
    r"\b(reply|respond|answer|talk to me|write to me|with me|to me|give me|send me|show me|tell me)\b|"
    # what the assistant does whenever it does a kind of thing: "when you list steps, number them"
    r"\b(when|whenever|each time|every time) you\b)"
)
# A sentence about someone else or the user's own plan (he always replies to me late, 我以后来做) is no wish.
NOT_A_WISH = re.compile(r"^\W*(he|she|they|his|her|their|i'?ll|i will|他|她|他们|她们|我会|我来|我要|我以后|我今后)\b")
# A sentence that files an earlier request under a name ("it's just a formatting preference", 这只是个格式偏好) states
# no wish of its own: the wish, if any, is in the earlier sentence, and pressing for it is no sign that it is sound.
NAMES_A_WISH = re.compile(
    r"(\b(it'?s|it is|that'?s|that is|this is)\s+(just|only|simply|merely)?\s*an?\s+([\w-]+\s+)?"
    r"(preference|habit|style choice|request)\b|(这|那|它)(只是|就是|不过是|只不过是)(个|一个)?\S{0,4}(偏好|习惯|要求))"
)
# Words that mark a wish as standing beyond doubt; they outweigh a one-off object. ("Never mind" marks nothing.) Also
# whatever the assistant makes for the user, named whole: "same goes for any Junos stuff you give me", "type hints on
# every function you write" (6 training messages, all preferences).
MARKED_STANDING = re.compile(
    r"(以后|今后|往后|下次|统一|一律|每次|from now on|going forward|next time|\bwhenever\b|\bevery time you\b|"
    rf"\balways\b|\b{_NEVER}\b|in future|"
    r"\b(?:any|every|all)\b[^.?!;]{0,40}\byou (?:give|send|write|show|make|draft|prepare|do|create|produce)\b|"
    # (or that the user sends out: "Every quote I send needs the cap height …", "every one I send has to say …")
    r"\b(?:any|every|each)\b[^.?!;]{0,40}\b(?:i|we) (?:send|write|give|draft|prepare|quote|issue|post|print)\b|"
    # (or every piece of a kind, said to need something: "every single reply about scotch eggs needs to say …")
    r"\bevery (?:single )?(?:reply|answer|quote|message|email|e-mail|response|post|letter|invoice|confirmation)\b"
    r"[^.?!;]{0,40}\b(?:needs? to|has to|have to|must|should)\b|"
    # beyond the one at hand, said so: "they're for every list you do for me, not just this one", 不只是这次
    r"\bnot (?:just|only) (?:for )?(?:this|that) (?:one|time|once)\b|"
    # what the assistant does whenever it makes a kind of thing, named in the plural: "Can you number the steps when
    # you send checklists?", "plain text only when you send quotes" (19 training messages, all preferences)
    r"\bwhen you (?:send|write|give|make|draft|prepare|list|do|put together|post|quote)(?: me| us)? "
    r"(?:(?!this\b)\w+ )?(?!this\b|its\b|his\b)\w+s\b|"
    r"(?:不只是|不光是?|不止|不仅是?)(?:这次|这一次|这回|这个))"
)
# The words of a line the user asks to add to the draft (加一句欢迎以后继续赐稿, "add a line saying we always welcome
# walk-ins") are the draft's: a 以后 or an "always" in them marks no wish of the user's standing (marked_standing).
LINE_TO_ADD = re.compile(
    r"(?:加|添|补)上?[一两]?[句行段]话?[:：]?\s*[“\"「]?(?P<line>[^,，。!！?？\n][^。!！?？\n]*)|"
    r"\b(?:add|insert|include|append|put in)\s+(?:a|an|one|another)\s+(?:[a-z]+\s+)?(?:line|sentence|note|ps)\s*"
    r"(?:saying|that says|to say|:)\s*(?P<line_en>[^.!?\n]+)"
)


# A new point in a message: 还有…, 另外…, also …, oh and …
NEW_POINT = re.compile(r"^\s*(?:还有|另外|另|對了|对了|also\b|oh and\b|and one more|plus\b|p\.?s\.?\b)", re.IGNORECASE)
# The request that closes the message: "Try again.", "Now write Helen back.", "Redo it?", 重新回。, 再写一次。
CLOSING_REQUEST = re.compile(
    r"^\W*(?:(?:now|ok|okay|so|right|please|and)\W+)?(?:try|redo|rewrite|write|reply|answer|do it|send|go again|"
    r"have another go|again)\b|^\W*(?:那|好|请|麻烦)?(?:重新|再(?:写|回|来|改)|帮我|重写|重来|改一下|回一下|写一下)",
    re.IGNORECASE,
)
# A wish that announces what it asks for without saying it: "two things i want in EVERY booking reply from now on",
# "i need something in all of these from now on", 以后回复有两件事, 按以下几点. What it asks for follows it
# (correction_wishes._directive_span). (Not 点 alone: 短一点 is "a bit shorter", 两点 two o'clock.)
ANNOUNCES = re.compile(
    r"\b(?:something|a (?:few|couple of) things|(?:two|three|four|2|3|4) (?:things|points)|the following|"
    r"these (?:things|points))\b|(?:两|三|几)(?:件事|样东西|个要求|点要求)|以下|下面(?:几点|这几点|几件事)",
    re.IGNORECASE,
)
# What a wish that announces its content quotes, at most: the announcing sentence and the sentences after it.
ANNOUNCED_CHARS = 600


def marked_standing(text: str) -> re.Match[str] | None:
    """MARKED_STANDING in `text`, outside the words of a line to add (LINE_TO_ADD)."""
    return MARKED_STANDING.search(without_lines_to_add(text))


def rule_like(text: str) -> re.Match[str] | None:
    """RULE_LIKE in `text`, outside the words of a line to add (LINE_TO_ADD)."""
    return RULE_LIKE.search(without_lines_to_add(text))


def without_lines_to_add(text: str) -> str:
    """`text` with the words of each line to add blanked out, every other character where it was."""
    for line in LINE_TO_ADD.finditer(text):
        for group in ("line", "line_en"):
            if line.group(group):
                text = text[: line.start(group)] + " " * (line.end(group) - line.start(group)) + text[line.end(group) :]
    return text


# A reason about the user ("我都是在手机上看", "I'm in Germany") makes a wish a standing one.
REASON = re.compile(r"(我|我们|咱们|\bi\b|\bi'?m\b|\bwe\b|\bwe'?re\b|\bour\b|\bmy\b|\bme\b)")
# A clause that gives the reason after a wish: the user speaking of themself, or a word for why.
REASON_CLAUSE = re.compile(
    r"^\W*(因为|由于|毕竟|这是|这样|不然|否则|免得|省得|我|我们|咱们|because|since|as\b|cause\b|cos\b|so that\b|"
    r"otherwise\b|that'?s\b|it'?s\b|i\b|i'?m\b|i'?ve\b|we\b|we'?re\b|my\b|our\b)"
)
# A one-off object: this report, 这句话, "make it…" (not a distributive 一行一个). Translation and how-to questions are
# requests, not preferences.
ONE_OFF_ITEM = re.compile(r"(把它|\b(make|write|get) it\b)")
# A request put as a statement ("I'd be grateful if you didn't …", "tell me the text route instead"): beside a
# hypothetical question, a wish of its own.
REQUEST_STATED = re.compile(
    r"\bi'?d (be grateful|prefer|rather|appreciate|like it)\b|\b(tell|give|send|show) me\b|请|麻烦|希望你|希望您"
)
# A clause whose subject is the single thing being written (这条是给宝妈们看的, "this one's for the parents'
# group"): the wish beside it is for that thing. One of them, not "these" (which may be every such thing).
ONE_OFF_SUBJECT = re.compile(
    r"^\W*(这条|这篇|这封|这段|这张|这份|这一条|这一篇)(是|要|得|会)|"
    r"^\W*this (one|post|message|email|e-mail|note|caption|draft|letter)('s| is| will be| goes)\b"
)
ONE_OFF = re.compile(
    # (先别, 暂时不要: not yet, for the thing at hand: "要点先别发")
    r"(这句|这段|这篇|这份|这张|这个表|这封|这条|这些|这几|这次|上面|下面的|刚才的|一下|先别|先不要|暂时别|暂时不要|(?<!一[行列段条项页人天口])一[个份篇封段条](?!就|即可)|"
    r"翻译|\btranslate\b|\b(this|these|the following|the above|attached)\s(?!is\b|was\b|one\b|way\b|sounds\b|looks\b|"
    r"reads\b|seems\b|feels\b|go\b|goes\b|are\b|were\b)[a-z]+|"
    rf"{ASKS_FOR_A_DOCUMENT.pattern}|{EDIT_OF_THE_DRAFT.pattern}|^\W*how (do|can|should) i\b)"
)

# --------------------------------------------------------------------------------------------------- process
# An order of the ANSWER's parts (conclusion first, 先给我命令), not of the work: how answers should look is the user's
# preference (correction_wishes.process), never a process for everyone.
_ANSWER_PART_EN = (
    r"(the )?(answer|conclusion|summary|bottom line|tl;?dr|yes or no|verdict|recommendation|commands?|code)"
)
ANSWER_SHAPE = re.compile(
    rf"^\W*{_ANSWER_PART_EN}s? (first|up front|at the top)\b|"
    rf"\b(give|show|tell|put|say|need|want|lead with|start with|list)\b( me| us)?( an?)?\s{_ANSWER_PART_EN}s?\b"
    r"[^,.;]{0,20}\b(first|up front|at the top|in the first\s+line)\b|"
    r"先(说|讲|给我?|写|放|列出?)(结论|答案|结果|命令|代码|要点|重点|总结|推荐)|"
    r"(结论|答案|命令|代码|要点)(要|请)?(放|写)(在)?(最)?前面"
)
PROCESS = _cues(
    # (not 再说, 再议: what is put off, 先不用了，下周再说)
    ("order_first_then_zh", r"先(?P<first>[^。;]{1,30}?)[,]?\s*(再(?![说议])|然后|之后|才|后)(?P<then>[^,。;]{1,30})"),
    (
        "wait_then_zh",
        r"等(?!我|一下|会儿|等)(?P<first>[^,。;]{2,24}?)(了|完|之后|以后|后)?[,]?\s*再(?!说|看|聊|讲|决定|议)(?P<then>[^,。;]{1,24})",
    ),
    (
        "done_then_zh",
        r"(?P<first>[^,。;]{1,24}?)(完了|完|好了|之后|以后)再(?!说|看|聊|讲|决定|议)(?P<then>[^,。;]{1,24})",
    ),
    (
        "gate_before_zh",
        r"(?P<then>[^,。;]{1,24}?)(之前|以前|前)[,]?\s*(得|要|必须|需要|应该|务必|一定要|先)+(?P<first>[^,。;]{1,30})",
    ),
    ("gate_after_zh", r"(?P<first>[^,。;]{1,24}?)(后|之后|以后|了|完|通过)才(能|可以|可)(?P<then>[^,。;]{1,24})"),
    ("gate_only_zh", r"只有(?P<first>[^,。;]{2,24}?)才(能|可以|可)(?P<then>[^,。;]{1,24})"),
    (
        "gate_not_before_zh",
        r"(没|未)(?P<first>[^,。;]{2,24}?)(之前|以前|前)(不能|不可以|不要|别|不准)(?P<then>[^,。;]{1,24})",
    ),
    ("route_to_zh", r"(要|得|必须|需要|应该|统一)(转给|交给|找|提交给|上报给|报给)[^,。;]{1,16}"),
    ("first_step_zh", r"第一步(是|要|先|得)|步骤是|(?<![对做说])(处理|操作)流程"),
    ("must_first_zh", r"(要|得|必须|需要|应该|务必|一定要)先(?P<first>[^,。;]{1,30})"),
    ("not_directly_zh", r"(别|不要|不能|不可以|不准)(直接|上来就|急着|马上|自己)(?P<then>[^,。;]{1,24})"),
    ("rule_zh", r"(这是|是我们|按|公司的|组里的|部门的|我们组的|我们的)(规定|规矩|流程|制度|要求|惯例)|流程是"),
    ("obligation_zh", r"(要|必须|得|需要|务必)(抄送|走|经过|报备|备案|登记|审批|审核|复核|验证|核验|核对)"),
    ("route_zh", r"(要|得|必须|需要|应该|统一)?(走|通过|找)(?P<first>[^,。;]{1,16}?)(流程|审批|系统|平台|门户|工单)"),
    ("before_en", r"^\W*before (?P<then>[^,]{3,40}),? (?P<first>[^.;]{3,80})"),
    ("before_en", r"(?P<first>[^,.;]{3,80}?)\s+before\s+(?P<then>[^,.;]{3,40})"),
    ("first_then_en", r"\bfirst\b[^.;]*?\bthen\b|,? then (?!you'?ll|we'?ll|it|i )[a-z]+"),
    # (not the ordinal of "the first aid kit", "their first visit")
    (
        "imperative_first_en",
        r"^\W*(?!i\b|we\b|it\b|the\b)[a-z]+\b[^,.;]{0,60}(?<!\bthe )(?<!\ba )(?<!\bmy )(?<!\bour )(?<!\byour )"
        r"(?<!\btheir )(?<!\bhis )(?<!\bher )(?<!\bits )\bfirst\b(?![\s-]aid\b)",
    ),
    ("order_en", r"\b(not the other way (a)?round|not after|not before|in that order)\b"),
    ("once_then_en", r"^\W*once (?P<first>[^,]{3,60}),\s*(then )?(?P<then>[^.;]{3,60})"),
    ("instead_en", r"^\W*instead of (?P<then>[^,]{3,60}),\s*(?P<first>[^.;]{3,60})"),
    ("steps_en", r"\b(the (process|procedure|steps?) (is|are)|step (1|one)|the first step)\b"),
    ("make_sure_en", r"\b(make sure|be sure|remember) (to|you)\b[^.;]{3,80}\b(before|first|then)\b"),
    (
        "escalate_en",
        r"\b(escalate (it |this |these )?to|loop in|always cc|cc the|"
        r"check with (the |your )?[a-z ]{1,20} (before|first))\b",
    ),
    (
        "route_en",
        r"\b(go(es)? through|handled by|routed? (to|through)|should go to|"
        r"goes to the [a-z ]{1,20}(team|desk|portal|queue))\b",
    ),
    (
        "gate_en",
        r"\b(needs?|requires?|must get|has to get|have to get)\b[^.;]{0,40}\b(sign-?off|approval|review|sign off)\b|"
        r"\bmust be (approved|reviewed|signed off)\b|\bonly after\b|\bnot until\b|"
        r"\b(don'?t|do not|never)\b[^.;]{0,50}\b(until|without)\b",
    ),
    ("rule_en", r"\b(policy|our rule|the rule is|standard procedure|sop|that'?s the process|by the book)\b"),
)
# Process rules that need an obligation or an imperative around them to be a rule and not a narrative.
NEEDS_OBLIGATION = frozenset({"before_en", "first_then_en"})
OBLIGATION_EN = re.compile(
    r"(\b(you|we) (need to|have to|must|should|always|are supposed to|'ve got to|gotta)\b|\bneeds?\b|\brequires?\b|"
    rf"\bmust\b|\balways\b|\b{_NEVER}\b|\bhave to\b|\bshould\b|^\W*(?!i\b|i'|we\b|we'|it\b|it'|"
    r"the\b|this\b|that\b|"
    r"there\b|they\b|he\b|she\b|my\b|our\b|let\b|let's\b|can\b|could\b|would\b|will\b|if\b|so\b|and\b|but\b|ok\b|yes\b|no\b|"
    r"thanks\b|what\b|how\b|why\b|when\b|where\b|who\b|is\b|are\b|was\b|were\b|do\b|does\b|did\b)[a-z]+\b|"
    r"\b(for|on|in) (a |an |the )?[a-z0-9]+,? you [a-z]+)"
)
# A process the rule cites as binding raises the confidence: 这是规定, policy, always.
BINDING = re.compile(r"(规定|规矩|制度|必须|务必|一定要|\bpolicy\b|\bmust\b|\balways\b|\brule\b|\brequired?\b)")
# "X，别Y": the user replaces the action the assistant proposed. Y must echo the assistant's turn.
INSTEAD_ZH = re.compile(r"(?P<do>[^,。;]{2,24}),\s*(别|不要|不能|不用)(?P<dont>[^,。;]{2,24})")

# ---------------------------------------------------------------------------------------------------- verdict
_WRONG_VERBS = r"(搞|弄|记|写|看|算|查|填|听|读|拼|标|选|发|找|想|认|配|设|列|译|用|理解|统计|计算|翻译|报价|说)"
VERDICT = _cues(
    # An answer that missed the question, said so ("You've answered a different question. Mine was whether …",
    # "我问的是有没有大码，你讲怎么洗干什么"): 41 training messages, 39 rejections, a question (none) and a wish ("I
    # didn't ask for life advice. Don't moralize at me"); a question is no verdict.
    (
        "off_topic_en",
        r"\b(you'?ve |you )?(answered|answering) (a different|another|the wrong|something (i|else)|a question i)|"
        r"\b(my|the) question was\b|\bmine was (whether|if|about|how|what|when)\b|\bi (didn'?t|did not) ask "
        r"(about|for|that|how|what)|"
        # ("You haven't answered my question at all", "That's not what I asked": 21 training messages, all rejections)
        r"\byou (haven'?t|have not|didn'?t|did not|never) (actually |even |really )?answer(ed)? (my|the) question|"
        r"\bnot what i (asked|was asking)\b|"
        # (what was asked, said again, opening a sentence: "I asked whether you have a high seat for my toddler, not
        # what's popular"; "That doesn't answer my question": 29 training messages, all rejections)
        r"(^|[.!—–-]\s*)i asked (whether|if|what|when|where|how|which|who|about)\b|"
        r"\b(doesn'?t|does not|didn'?t|did not) answer (my|the) question\b",
    ),
    ("off_topic_zh", r"答非所问|我问的是.{1,40}(你|您)(讲|说|回|答|扯|给)|不是一回事|我又?没问|我问的不是|问嘅系"),
    ("wrong_zh", rf"{_WRONG_VERBS}(得)?错"),
    # (not the words that start with 反: 看看反应, 说反馈, 算反正)
    ("wrong_zh", r"(看|搞|弄|写|说|算|排)反(?![应馈映思省对正复而倒弹感悔击差向])了?"),
    ("wrong_zh", r"(?<![出报])错了|错啦|是错的|都错|全错|又错"),
    (
        "wrong_zh",
        r"(?<!对)不对(?![劲称外应齐等口付比于照接准])|不太对|不正确|有误|不准确|(?<!是)不是这样|并不是|根本不是|才不是|(?<!是)不是的",
    ),
    (
        "wrong_zh",
        r"答非所问|不是我(要|想要|问|说)的|(?<!是)不是这个意思|跟我(说|要|问)的不一样|和我(说|要|问)的不一样|(?<!是)不是那[个张份本家条]",
    ),
    (
        "wrong_zh",
        r"(?<!是)不是(这|那)[个张份里几些条件位家本种款]|还是不行|不管用|牛头不对马嘴|胡说|瞎说|没听懂|误会了|理解偏了|没有的事|哪有",
    ),
    ("wrong_en", r"\bwrong\b|\bincorrect\b"),
    (
        "wrong_en",
        r"\bnot (right|correct|true|accurate|quite|it)\b|\bisn'?t (right|correct|true|accurate)\b",
    ),
    ("wrong_en", r"\bthat'?s not (it|how|what|true|right|correct)\b|\bmisunderstood\b|\bmisread\b|\bmisheard\b"),
    ("wrong_en", r"\bmixed (it |them |those )?up\b|\bbackwards\b|\b(don'?t|doesn'?t) add up\b|\bdoesn'?t match\b"),
    (
        "wrong_en",
        r"\b(not|isn'?t|wasn'?t) what i (asked|meant|wanted|said|needed)\b|\bthat'?s false\b|\bnonsense\b|"
        r"\bnot even close\b",
    ),
    (
        "wrong_en",
        r"\b(that|this)( fix| solution| answer| suggestion| one)? (doesn'?t|does not|didn'?t|did not|won'?t) work\b",
    ),
    (
        "wrong_zh",
        r"离谱|胡扯|瞎编|乱说|乱讲|扯淡|不靠谱|差远了|没解决|问题还在|还是错|完全不对|你在说什么|不是这个问题",
    ),
    ("wrong_zh", r"^\W*(不是|没有|不)(啊|呀|的)?\W*$"),
    (
        "wrong_en",
        r"\b(makes no sense|doesn'?t make (any )?sense|what are you talking about|you'?re wrong|you are wrong|"
        r"that'?s a mistake|i never said|i didn'?t (say|ask for)|not helpful)\b|^\W*(please )?try again\b",
    ),
    (
        "wrong_en",
        r"\b(it|that|this|your (fix|answer|solution|suggestion)|the fix)\s+(still\s+)?(didn'?t|doesn'?t|won'?t|"
        r"does not|did not)\s+(work|help|fix)\b|\bstill (wrong|broken|not working|failing)\b",
    ),
    ("wrong_en", r"\bout of date\b|\boutdated\b|\bthat'?s (an )?old\b"),
    ("no_en", r"^\W*((hmm+|uh|um|well|ugh)\W+)?(no|nope|nah)\b(?=\s*[,.!;]|\s*$|\s+(no|just|not|that|it|you)\b)"),
)
# "wrong" used of a thing, not as a verdict: "a wrong commit", "incorrect password" (unless "you … the wrong"). The
# nouns excluded here are what an answer gets wrong ("wrong date", "wrong total"), which stays a verdict.
WRONG_NOUN = re.compile(
    r"(wrong|incorrect)\s+(?!again\b|about\b|on\b|there\b|here\b|though\b|too\b|answer\b|number\b|date\b|figure\b|"
    r"one\b|day\b|time\b|amount\b|total\b|person\b|address\b|price\b)[a-z]{3,}"
)
# A verdict word used as an adjective of a thing in a request: 请把表里不对的数据标红, 错的那几行.
VERDICT_ATTRIBUTIVE_ZH = re.compile(r"(不对|错|错误)的(?=[\u4e00-\u9fff])")
# Verdict words inside a how/where question or a request to look: 帮我看看哪里不对.
VERDICT_IN_REQUEST = re.compile(
    r"(哪里|哪儿|什么地方|为什么|怎么|是否|有没有|看看|检查|找出|标出|帮我|\bwhat'?s\b|\bwhy\b|\bhow\b)"
)

# -------------------------------------------------------------------------------------------------- replacement
CONTRAST = _cues(
    ("contrast_zh", r"不是(?P<old>[^,。;!?]{1,20}?)[,]?\s*(而)?是(?P<new>[^,。;!?]{1,30})"),
    ("contrast_zh", r"(?P<new>是[^,。;!?]{1,20}?)[,]?\s*不是(?P<old>[^,。;!?]{1,20})"),
    (
        "contrast_zh",
        r"不(在|用|叫|走|姓|属于)(?P<old>[^,。;!?]{1,20}?)[,]?\s*(而)?(是|在|用|叫|走|姓|属于)(?P<new>[^,。;!?]{1,30})",
    ),
    ("contrast_en", r"\bnot (?P<old>[^,.;!?—]{1,30}?),? but (?P<new>[^,.;!?—]{1,40})"),
    ("contrast_en", r"(?P<new>[^,.;!?—]{2,60}?),?\s+(though,?\s+)?not (?P<old>[^,.;!?—]{1,30})"),
)
# Cues that the assistant was wrong and here is the right value (应该是, 其实是, should be, actually it's).
CORRECTION_CUE = _cues(
    (
        "cue_zh",
        r"(应该是|应是|其实是|实际上是|实际是|明明是|本来就?是|正确的是|准确地说|才对|才是)(?P<new>[^,。;!?]{0,30})",
    ),
    (
        "cue_en",
        r"\b(should be|actually (it'?s|it is|is|was|are|were|they)|it'?s actually|in fact|"
        r"the (right|correct) [a-z]+ is)\b(?P<new>[^,.;!?]{0,40})",
    ),
)
# Cues that the fact changed since the assistant learned it (改到, 现在是, moved to, is now): on their own, an
# implicit correction; next to a verdict, the replacement.
UPDATE_CUE = _cues(
    ("update_zh", r"(改到|改成了|改为|换成了|变成了?|调成了?|调整为|现在是|已经是)(?P<new>[^,。;!?]{0,30})"),
    (
        "update_en",
        r"\b((is|are) now|(was|were|has been|have been|got) (moved|changed|pushed|updated|raised|lowered|increased|"
        r"reduced) to|moved to|changed to)\b(?P<new>[^,.;!?]{0,40})",
    ),
)
# A guess is not a correction: 应该是网络问题吧, I think it's the cache.
HEDGE = re.compile(
    r"(吧\W*$|可能|也许|大概|估计|我觉得|我猜|我想|\bmaybe\b|\bprobably\b|\bi think\b|\bi guess\b|\bperhaps\b)"
)
# A plain statement of a value, next to a verdict: "错了，是30天内", "no, Northwind's AM is Raj Patel now". Not
# 不是/还是/但是 (a negation or a conjunction), not a progressive ("I was asking about…").
COPULA_VALUE = _cues(
    (
        "copula_zh",
        r"(?<![不没非可但还也总要于凡只若])(是|为)\s*(?!这|那|不是|的|吧|啊|吗|么|什么|多少|怎么|哪)(?P<new>[^,。;!?]{1,30})",
    ),
    (
        "copula_en",
        r"\b(is|are|was|were|'s|'re)\s+(?!not\b|n'?t\b|wrong|right\b|correct|incorrect|how\b|what\b|that\b|this\b|it\b|"
        r"fine\b|ok\b|okay\b|true\b|false\b|the same\b|just\b|also\b|[a-z]+ing\b)(?P<new>[^,.;!?—]{1,40})",
    ),
)
# A stated value that names no value: 有问题, 是另一个, "a different issue", "something else".
GENERIC_VALUE = re.compile(
    r"(问题|错误|毛病|不同|不一样|别的|其他|另一|另外|一回事|两回事|\b(different|another|other|same|problem|issue|"
    r"mistake|error|something|nothing|confus\w*|off|missing|broken)\b)"
)
# Words of a value that is only pointed at, not given: 不是这里, not that one.
DEMONSTRATIVE = re.compile(r"^\W*(这|那|这样|那样|这里|那里|这个|那个|这么|那么|that|this|it|what|how|one)\W*$")

# ------------------------------------------------------------------------------------------------------ update
# "From now on" and 从现在起 mark a standing wish or rule, not a value that changed.
UPDATE = re.compile(
    r"(升级了|降级了|改了|换了|变了|调了|调整了|更新了|涨了|降了|改成|改到|换成|调成|变成|现在是|已经是|早就|"
    r"现在(?!起|开始|以后)|(?<!from )\bnow\b(?! on\b)|\bchanged\b|\bmoved\b|\bno longer\b|\banymore\b|"
    r"\bused to\b|\braised\b|\blowered\b|"
    r"\bupgraded\b|\bswitched\b|\brenamed\b|\bupdated\b|\bsince\b)"
)
# A period a value belongs to: values of different periods are about different things.
PERIOD = re.compile(
    r"((上|这|本|下)个?(月|季度|周|星期|年|财年)|去年|今年|明年|前年|(last|this|next) (month|quarter|week|year)|"
    r"q[1-4]|h[12]|\d{4}\s*年)"
)
# A copula statement about something: 我是铂金会员, it's the Team plan.
STATEMENT = re.compile(r"(^|[^不])(是|为)|改成|改到|换成|变成|调成|\b(is|are|was|were|'s|'re)\b")

# --------------------------------------------------------------------------------------------------- condition
TEMPORAL = _cues(
    (
        "temporal_zh",
        r"(这个月|本月|这周|本周|这星期|今天|今晚|明天|今年|本季度|这季度|这个季度|(这次|本次)(活动|促销|大促)(期间)?|"
        r"这次|本次|这一次|这回|本轮对话|这轮对话|活动期间|促销期间|大促期间|"
        r"春节期间|国庆期间|节假日期间|双十一期间|双11期间|暂时|临时|目前|截至[^,。]{1,10}|截止到[^,。]{1,10}|"
        r"(?<![\d一二三四五六七八九十])[\d一二三四五六七八九十]{1,3}月(底|\d{1,2}[日号])前|年底前|限时)",
    ),
    (
        "temporal_en",
        r"\b(this (month|week|quarter|year|time|weekend|conversation|chat|session)|just this once|today|tonight|"
        r"for now|temporarily|"
        r"(until|through|till) (the end of (the )?(month|week|quarter|year)|"
        r"(january|february|march|april|may|june|july|august|september|october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
        r"next [a-z]+)( \d{1,2}(st|nd|rd|th)?)?|\d{1,2}(st|nd|rd|th)|\d{4}-\d{2}-\d{2})|"
        r"during (the )?[a-z]+( [a-z]+)?|for the (holidays|promotion|sale)|limited time)\b",
    ),
)
CONTEXT = _cues(
    (
        "context_zh",
        r"(对于?|针对)\s*(?P<detail>[^,。]{1,12}?)(客户|用户|订单|单子|员工|会员|工单)|"
        r"(?P<detail2>[^,。]{1,12}?)(以上|以下)的(单子|订单|客户|金额|合同)|如果是(?P<detail3>[^,。]{1,12})|"
        r"(遇到|碰到)(?P<detail4>[^,。]{1,12})|当(?P<detail5>[^,。]{1,12})(时|的时候)|(?P<detail6>[^,。]{1,12})的情况下|"
        r"(?P<detail7>[^,。]{1,12})的时候",
    ),
    (
        "context_en",
        r"\b(for (vip|enterprise|new|existing|premium|business|international|wholesale|p[0-4]|sev[0-4]|internal|"
        r"external)\b[a-z0-9 ]{0,20}|if (it'?s|the|a|an|you'?re) [^,.]{1,30}|"
        r"when(ever)? (?!you (talk|write|reply|respond|answer))[^,.]{1,30}|"
        r"(for )?(orders|anything|amounts|discounts) (over|above|under|below) \S+|only (for|in|on|when) [^,.]{1,30})",
    ),
)
SOURCE = _cues(
    (
        "source_zh",
        r"(官网|官方网站|合同|手册|员工手册|文档|说明书|包装盒?|标签|发票|收据|订单|系统|后台|群里|邮件|通知|公告|"
        r"规章|制度|截图|页面)(上|里|中)?(写的是|写着|写得|显示|说的|标着|印着|贴着|注明|规定)|"
        r"根据[^,。]{1,15}|按照[^,。]{1,15}(规定|要求|文件|合同|制度)",
    ),
    (
        "source_en",
        r"\b(according to (the )?[^,.]{1,30}|(it'?s|it is) (printed|written|listed|stated) (right )?(on|in) "
        r"(the |our )?[a-z ]{1,20}|the (website|docs|documentation|contract|handbook|receipt|label|invoice|policy|"
        r"manual|email|notice|spec) (says|said|shows|states|lists)|per (the )?[a-z]+ (policy|contract|handbook|docs)|"
        r"(hr|it|finance|pm|legal|the vendor) (sent|posted|announced|confirmed) [^,.]{1,30})",
    ),
)

# -------------------------------------------------------------------------------------------- acknowledgement
# The assistant's next answer opens by owning an error (抱歉，是我看错了等级; "Thank you for explaining, and sorry —";
# "that changes things"): the message before it put something right (corrections.acknowledged). Read on the answer's
# opening sentence, folded. Not an apology for something else ("sorry to hear", "sorry for the wait", 非常抱歉此次入住
# in a drafted reply), and REFUSES rules out one that declines: a user insisting on a wrong value is apologised to too.
ACKNOWLEDGES_AN_ERROR = re.compile(
    r"^\W*(?:(?:好的|好|明白了?|了解|收到|ok|okay|got it|understood|ah|oh)\W*)?(?:"
    r"(?:抱歉|不好意思|对不起)\W*(?:是我|我(?:把|按|看|搞|记|算|理解|刚才|之前)|刚才|之前|系统|记录|信息|资料)|"
    r"[您你]说得?的?对|(?:谢谢|感谢)(?:您的?)?(?:指正|纠正|说明|提醒|告知)|(?:那|这)?情况不一样|"
    r"sorry\b(?! to hear| for your loss| for the (?:wait|inconvenience|trouble))|(?:my )?apologies\b|"
    r"you'?re (?:quite |absolutely )?right|you are right|my mistake|good catch|"
    r"thanks?(?: you)? for (?:the )?(?:correct|clarif|explain|pointing|letting me know|the update)|that changes things)"
)
REFUSES = re.compile(r"\b(?:can'?t|cannot|won'?t|unable)\b|不能|无法|不可以|没法|不会")
