"""A user who says they work alone, after an answer that wrote for a team: a fact about the user that holds beyond
the session.

A sole trader asks for a reply to a customer, and the draft speaks of "our engineers", "our sales team" or
我们的技术团队. The user does not say the draft is wrong; they say what their business is ("It's just me and the van.
Washing machines and tumble dryers, that's it …", "店就我一个人，在家里的暗房弄。…"). The class definitions make that a
factual correction (a silent replacement of what the assistant assumed), and every later reply the assistant drafts
for them needs it: a lesson for this user. Read apart from the detector because the description is long and mostly
values with no word of correction, and the detector's best sentence in it is one detail ("Monday to Friday only …"),
not the fact that the user works alone. In the tuning sessions it fires on the twelve messages that describe such a
business after an answer that wrote for a team, and on no other turn.

`works_alone(message, previous_answer)` gives the description as the user wrote it: the sentence that says they work
alone (WORKS_ALONE) and the statements after it, up to a question, a new point (还有, also …), a wish marked as
standing, the request that closes the message ("Try again.", 重新回。) or DESCRIPTION_CHARS; None when the
message says no such thing or the answer before it wrote for no team (ASSUMED_TEAM).
"""

from __future__ import annotations

import re

from hindsight_insights.detection.correction_patterns import CLOSING_REQUEST, NEW_POINT, marked_standing
from hindsight_insights.detection.text import fold, sentences

# The words of a sole trader about their business: it's (only|just) me, just me and the van, I work on my own, a
# one-man band; 就我一个人, 只有我自己, 我一个人做, 得我一個 (Cantonese).
WORKS_ALONE = re.compile(
    r"\b(?:it'?s|it is|there'?s)\s+(?:only|just)\s+me\b|\bjust me and (?:the|my|a)\b|"
    r"\bi work (?:alone|on my own|by myself|solo)\b|\bi'?m (?:on my own|a sole trader|self-employed and alone)\b|"
    r"\bone[- ](?:man|woman|person)\s+(?:band|business|outfit|operation|show|shop|firm)\b|\bsole trader\b|"
    r"\bno (?:team|staff|employees)\b|"
    r"(?:就|只有|只是|都是|全是|全靠)我(?:一个人|一個人|自己)|我一个人(?:做|干|弄|开|经营|跑|搞)|我一個人(?:做|搞|開)|"
    r"(?:得|淨係得|净係得)我一個|没有(?:团队|员工|店员)|冇(?:團隊|員工|伙記)",
    re.IGNORECASE,
)
# An answer written for a business with people in it: our team, one of our engineers, 我们的技术团队, 本店.
ASSUMED_TEAM = re.compile(
    r"\bour (?:\w+ )?(?:team|engineers?|technicians?|staff|colleagues|specialists|experts|drivers|fitters|crew|"
    r"chefs|bakers|stylists|therapists|consultants|advisers|advisors|sales team|people)\b|\bone of our\b|"
    r"\bthe team\b|\bwe have a team\b|"
    r"团队|團隊|本店|师傅们|师傅团队|我们的(?:员工|店员|同事|工程师|技师|师傅)|工程师|同事",
    re.IGNORECASE,
)
# Where a description stops: a new point (correction_patterns.NEW_POINT), and at most this many characters.
DESCRIPTION_CHARS = 400
# The lesson's topic, a slot of its own (a newer description replaces an older one), and the signal that marks it
# for its wording (governance.lessons: "This user works alone …").
BUSINESS_TOPIC = {"en": "the user's own business", "zh": "用户自己的生意"}
WORKS_ALONE_SIGNAL = "offline:works_alone"


def works_alone(message: str, previous_answer: str | None) -> str | None:
    """The user's description of their one-person business (see the module), or None."""
    if not previous_answer or not ASSUMED_TEAM.search(previous_answer):
        return None
    spans = sentences(message)
    first = next((index for index, span in enumerate(spans) if WORKS_ALONE.search(span.text)), None)
    if first is None:
        return None
    end = spans[first].end
    for span in spans[first + 1 :]:
        text = span.text.strip()
        if _closes(text) or span.end - spans[first].start > DESCRIPTION_CHARS:
            break
        end = span.end
    return message[spans[first].start : end].strip()


def _closes(sentence: str) -> bool:
    """A sentence that is no part of the description: a question, a new point, a standing wish, the closing
    request."""
    return (
        sentence.rstrip().endswith(("?", "？"))
        or NEW_POINT.search(sentence) is not None
        or marked_standing(fold(sentence).text) is not None
        or CLOSING_REQUEST.search(sentence) is not None
    )
