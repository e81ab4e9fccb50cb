"""Quantities in zh/en text, and the words they are about: what an implicit correction contradicts.

An implicit correction states a different value for something the assistant just stated, without a trigger word
("运费 15 元，我刚看了订单" after "运费是 10 元"; "Austin closes at 6 now" after "closes at 5 pm"). This module finds
the values on both sides and their units, so the detector can compare like with like.

A quantity is a value with a unit class:

  - a number (Arabic digits, with thousands commas and decimals, or Chinese numerals 一…九 两 十 百 千), with an
    optional magnitude (万, 亿, k, million) and an optional unit from `_UNITS` (元 and $ are money, 天/days are
    days, 人/people are persons, and so on); Chinese numerals count only with a unit, since 一 is everywhere;
    an ordinal (第3条, 3rd) is not a value;
  - a weekday (周三, 星期五, 下周一, Monday), a clock time (3 pm, 14:00, 两点), a month-day date (6月3日);
  - a code: letters then digits (A1023, SKU-2210, KF-35GW, P0, Q2).

A bare number has unit "" and is compatible with any unit (the user writes "closes at 6" for "5 pm"). Each quantity
carries `anchors`, the content words of its clause (English words of three letters or more, and Chinese character
bigrams without function characters), so the detector can check that two values are about the same thing.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from hindsight_insights.detection.text import HAN_RUN

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_SCALES = {"十": 10, "百": 100, "千": 1000}
_MAGNITUDES = {"万": 1e4, "亿": 1e8, "k": 1e3, "m": 1e6, "million": 1e6, "billion": 1e9, "w": 1e4}

# Unit spellings (folded, lower case) -> unit class. Longest spellings are tried first.
_UNITS: dict[str, str] = {
    **dict.fromkeys(["元", "块钱", "块", "rmb", "usd", "dollars", "dollar", "美元", "人民币", "欧元", "eur"], "money"),
    **dict.fromkeys(["%", "percent", "个百分点", "百分点"], "percent"),
    **dict.fromkeys(["个月", "months", "month"], "month"),
    **dict.fromkeys(["年", "years", "year"], "year"),
    **dict.fromkeys(["天", "days", "day", "个工作日", "工作日", "business days"], "day"),
    **dict.fromkeys(["周", "个星期", "weeks", "week"], "week"),
    **dict.fromkeys(["个小时", "小时", "hours", "hour", "hrs", "hr", "h"], "hour"),
    **dict.fromkeys(["分钟", "minutes", "minute", "mins", "min"], "minute"),
    **dict.fromkeys(["次", "times"], "times"),
    **dict.fromkeys(["个人", "人", "位", "名", "people", "persons", "person", "employees", "users"], "person"),
    **dict.fromkeys(["个座位", "座位", "seats", "seat"], "seat"),
    **dict.fromkeys(["件", "台", "套", "units", "unit", "pcs", "items", "箱", "cartons", "carton"], "piece"),
    **dict.fromkeys(["级"], "level"),
    **dict.fromkeys(["号楼", "栋"], "building"),
    **dict.fromkeys(["楼", "层", "f", "floor"], "floor"),
    **dict.fromkeys(["折"], "discount"),
    **dict.fromkeys(["倍"], "multiple"),
    **dict.fromkeys(["行", "rows", "row"], "row"),
    **dict.fromkeys(["条", "张", "份", "单", "笔", "orders", "tickets"], "count"),
    **dict.fromkeys(["页", "pages", "page"], "page"),
    **dict.fromkeys(["字", "words", "word"], "word"),
    **dict.fromkeys(["gb", "mb", "tb", "g"], "size"),
    **dict.fromkeys(["岁"], "age"),
    **dict.fromkeys(["度", "°c", "°f", "℃", "℉"], "degree"),
    **dict.fromkeys(["公斤", "kg", "斤", "lbs", "lb"], "weight"),
    **dict.fromkeys(["公里", "km", "米", "feet", "ft", "miles"], "length"),
    **dict.fromkeys(["seats per", "licenses", "license", "席"], "seat"),
}
# A Latin unit must end at a word boundary (35gw is a model name, not 35 g).
_UNIT_RE = "|".join(
    re.escape(unit) + (r"(?![a-z])" if unit[-1].isascii() and unit[-1].isalpha() else "")
    for unit in sorted(_UNITS, key=len, reverse=True)
)
_WEEKDAYS_ZH = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "日": 7, "天": 7}
_WEEKDAYS_EN = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
_CN_NUMBER = r"[零〇一二两三四五六七八九十百千]+"
_BARE_CN_VALUE = re.compile(
    r"[一二两三四五六七八九][零〇一二两三四五六七八九十百千]*[百千][零〇一二两三四五六七八九十百千]*"
)
_QUANTITY = re.compile(
    rf"""
    (?P<weekday>(?P<wmod>下个?|上个?|这个?|本)?(?:周|星期|礼拜)(?P<wday>[一二三四五六日天])(?![一二三四五六七八九十]))
  | (?P<weekday_en>(?P<wmod_en>next|this|last)?\s*\b(?P<wday_en>{"|".join(_WEEKDAYS_EN)})\b)
  | (?P<date>(?P<month>\d{{1,2}}|{_CN_NUMBER})\s*月\s*(?P<day>\d{{1,2}}|{_CN_NUMBER})\s*[日号])
  | (?P<clock>(?<![\d.])(?P<hour>\d{{1,2}}|十[一二]?|[两三四五六七八九])(?::(?P<minute>\d{{2}}))?\s*
        (?P<ampm>a\.?m\.?\b|p\.?m\.?\b|点|o'clock))
  | (?P<hm>(?<![\d.])(?P<hm_hour>\d{{1,2}}):(?P<hm_minute>\d{{2}})(?![\d:]))
  | (?P<code>(?<![a-z0-9])(?:[a-z]{{1,4}}-?(?:\d{{3,}}[a-z]*|\d+[a-z]+)|[a-z]{{1,2}}\d{{1,2}})(?![a-z0-9.]))
  | (?P<number>(?P<ordinal>第\s*)?(?P<currency>[$¥€£]\s*)?(?P<digits>{_NUMBER}|{_CN_NUMBER})
        (?:\s*(?P<magnitude>万|亿|million|billion|k\b|m\b|w\b))?
        (?:\s*(?P<unit>{_UNIT_RE}))?)
    """,
    re.VERBOSE,
)

# Characters that make a Chinese bigram a function-word bigram rather than a content word.
_FUNCTION_CHARS = set(
    "的了是在我你他她它们这那就都也还有个吗呢吧啊呀么和与及或把被给对从到之而但所以因为如果就要能可以让不没很太才又再已经"
)
_EN_STOP = frozenset(
    """the and for with that this these those are was were been have has had not but you your our their they them
    its it's from into onto over under about then than also just only still now can could would should will
    what which when where who why how all any some one per each very more most less there here""".split()
)
_WORD = re.compile(r"[a-z][a-z0-9]+")


@dataclass(frozen=True)
class Quantity:
    """A value with its unit class; `value` is a number, or a tuple for weekdays, dates and clock times."""

    value: float | tuple[str | int, ...] | str
    unit: str
    start: int
    end: int
    anchors: frozenset[str]
    clause: tuple[int, int] = (0, 0)  # [start, end) of the clause it sits in

    def context(self, text: str) -> str:
        """The words of its clause around it (the value itself left out)."""
        return text[self.clause[0] : self.start] + " " + text[self.end : self.clause[1]]

    def same_value(self, other: Quantity) -> bool:
        return self.value == other.value

    def compatible(self, other: Quantity) -> bool:
        """The same kind of value: the same unit, or a bare number against a unit people leave out in a reply
        ("closes at 6" against "5 pm", "182万" against "128 万元")."""
        units = {self.unit, other.unit}
        if len(units) == 1:
            return True
        if "" not in units:
            return False
        return (units - {""}).pop() in _UNITS_LEFT_OUT


_UNITS_LEFT_OUT = frozenset({"clock", "money", "percent", "person", "seat", "piece", "count", "times"})


def cn_number(text: str) -> float | None:
    """A Chinese numeral (三, 十五, 二十, 一百二十, 两千) as a number; None if it is not one."""
    if not text or any(char not in _CN_DIGITS and char not in _CN_SCALES for char in text):
        return None
    if len(text) > 1 and all(char in _CN_DIGITS for char in text):  # read digit by digit: 二〇二四
        return float("".join(str(_CN_DIGITS[char]) for char in text))
    total, current = 0, 0
    for char in text:
        if char in _CN_DIGITS:
            current = _CN_DIGITS[char]
        else:
            total += (current or 1) * _CN_SCALES[char]
            current = 0
    return float(total + current)


def _to_number(digits: str) -> float | None:
    if digits[0].isdigit():
        return float(digits.replace(",", ""))
    return cn_number(digits)


def anchors(text: str) -> frozenset[str]:
    """Content words of a clause: English words (3+ letters, not stop words, plural -s dropped) and Chinese
    character bigrams without function characters or numerals."""
    words = {word.removesuffix("s") for word in _WORD.findall(text) if len(word) >= 3 and word not in _EN_STOP}
    for run in HAN_RUN.findall(text):
        for i in range(len(run) - 1):
            pair = run[i : i + 2]
            if not (set(pair) & _FUNCTION_CHARS) and not set(pair) & (set(_CN_DIGITS) | set(_CN_SCALES)):
                words.add(pair)
    return frozenset(words)


def _value(match: re.Match[str]) -> tuple[float | tuple[str | int, ...] | str, str] | None:
    if match["weekday"]:
        modifier = (match["wmod"] or "").rstrip("个").replace("本", "这")
        return (modifier, _WEEKDAYS_ZH[match["wday"]]), "weekday"
    if match["weekday_en"]:
        modifier = {"next": "下", "last": "上", "this": "这"}.get(match["wmod_en"] or "", "")
        return (modifier, _WEEKDAYS_EN.index(match["wday_en"]) + 1), "weekday"
    if match["date"]:
        month, day = _to_number(match["month"]), _to_number(match["day"])
        return (int(month or 0), int(day or 0)), "date"
    if match["clock"]:
        hour = _to_number(match["hour"]) or 0.0
        if match["ampm"].startswith("p") and hour < 12:
            hour += 12
        return (int(hour), int(match["minute"] or 0)), "clock"
    if match["hm"]:
        return (int(match["hm_hour"]), int(match["hm_minute"])), "clock"
    if match["code"]:
        return match["code"].replace("-", ""), "code"
    if match["ordinal"]:
        return None
    number = _to_number(match["digits"])
    unit = _UNITS.get(match["unit"] or "", "")
    if match["currency"]:
        unit = "money"
    if number is None or (
        not match["digits"][0].isdigit() and not unit and not _BARE_CN_VALUE.fullmatch(match["digits"])
    ):
        return None  # a Chinese numeral without a unit is a word (一下, 一起), not a value, unless it counts hundreds
    #                  or thousands (八百, 三千五: 千万别… is no number)
    if match["magnitude"]:
        number *= _MAGNITUDES[match["magnitude"]]
    return number, unit


def quantities(text: str, clause_spans: list[tuple[int, int]]) -> list[Quantity]:
    """Every quantity in folded text, each with the anchors of the clause it sits in (spans are [start, end))."""
    found: list[Quantity] = []
    starts = [start for start, _ in clause_spans]
    for match in _QUANTITY.finditer(text):
        parsed = _value(match)
        if parsed is None:
            continue
        value, unit = parsed
        start, end = match.span()
        index = bisect.bisect_right(starts, start) - 1
        inside = index >= 0 and clause_spans[index][0] <= start < clause_spans[index][1]
        clause = clause_spans[index] if inside else (0, len(text))
        context = text[clause[0] : start] + " " + text[end : clause[1]]
        found.append(Quantity(value, unit, start, end, anchors(context), clause))
    return found


# Between the two ends of a range: 10–20, $140-$180, 8 到 12, 3 to 5 (not inside a code or a phone number: C-03-12,
# 400-800-1234).
_RANGE_JOIN = re.compile(r"\s*(?:[–—~～-]|到|至|to)\s*")
_CODE_EDGE = re.compile(r"[a-z0-9-]")


def within_a_range(text: str, quantity: Quantity, found: list[Quantity]) -> bool:
    """Whether a numeric value lies inside a range that `text` gives: two values `found` in it, one after the other,
    joined by a dash, 到 or "to", one of them of the value's kind (the unit is often written once: 5到10kW)."""
    if not isinstance(quantity.value, float):
        return False
    for low, high in itertools.pairwise(found):
        if not (_RANGE_JOIN.fullmatch(text[low.end : high.start]) and isinstance(low.value, float)):
            continue
        if not (quantity.compatible(low) or quantity.compatible(high)):
            continue
        if _CODE_EDGE.match(text[low.start - 1 : low.start]) or _CODE_EDGE.match(text[high.end : high.end + 1]):
            continue  # a part of a code or a number written in groups
        if isinstance(high.value, float) and min(low.value, high.value) <= quantity.value <= max(low.value, high.value):
            return True
    return False
