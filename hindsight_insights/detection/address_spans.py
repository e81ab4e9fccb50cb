"""A learned finder of home addresses in free text, beside the address rules of redaction.

Addresses are written in as many shapes as there are postal systems (a Brazilian "Rua …, 418, apto 72, CEP …", a
Turkish "Mah. … Sk. No:17 Daire:6", a Philippine "Blk 14 Lot 9, Brgy. …"), and a rule per shape only ever covers the
shapes already seen. This model reads each token with its neighbours and says whether it is part of an address, so it
can carry what it learned (house numbers beside street words, postcodes after place names, flats and floors) to a shape
it never saw.

A text is cut into tokens: a run of letters, a run of digits, one Chinese, Japanese or Korean character, or one other
character (spaces are not tokens). Each token's features are strings (its lower-cased form, its shape, its
prefix and suffix, the same for up to WINDOW neighbours on each side, and the pairs around it), hashed into
2**HASH_BITS columns; a logistic regression (scripts/train_address_spans.py, scikit-learn) weighs them. A run of tokens
scored above the model's threshold, gaps of a punctuation mark or two bridged, becomes one address when it holds at
least MIN_TOKENS words and numbers, a number and two words in a Latin script among them (a street has a name; "2,140
and 2,030" has none). A Chinese run is an address when its characters hold the address system's own words: a level
(区, 路, 村) and a house part after a number (号, 栋, 室, 三组); next to numbers, Chinese characters are far more
often counts and prices than an address, and those hold neither. The rules (redaction_patterns: the grammar of
省/市/区/路/号/室) read the addresses written as the grammar says; this model, those written as people type them
("云南 大理 古城 人民路 中段 46号 二楼", 附3号, 苏木 and 嘎查).

The model is plain arrays (weights, bias, settings as JSON) saved with numpy's .npz without pickle. This module is
pure: arrays in, spans out.
"""

from __future__ import annotations

import itertools
import json
import re
import unicodedata
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

HASH_BITS = 20
WINDOW = 3
MIN_TOKENS = 4
EXTEND_SHARE = 0.5
_TOKEN = re.compile(
    r"[^\W\d_\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+|\d+|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]|[^\s\w]|_",
)
# What may lie between two address tokens without ending the address: a comma, a slash, a hyphen, a full stop, #.
_BRIDGE = frozenset(",，、/-.#:：'()（）")
_LONGEST_BRIDGE = 2
_SENTENCE_END = frozenset("。！？!?；;")
# A word of a Latin-script address (Rua, Sk., Blk, Flat): the rules already read the Chinese grammar of addresses,
# and Chinese characters next to numbers are far more often counts and prices than an address.
_LATIN_WORD = re.compile(r"[^\W\d_\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]{2,}")


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    text: str


def _is_han(token: str) -> bool:
    """A token of one Chinese character (the tokenizer cuts them one by one)."""
    return "\u3400" <= token[0] <= "\u9fff"


def tokens(text: str) -> list[Token]:
    return [Token(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]


def _shape(token: str) -> str:
    out: list[str] = []
    for char in token:
        if char.isdigit():
            mark = "0"
        elif "\u3400" <= char <= "\u9fff":
            mark = "H"
        elif "\u3040" <= char <= "\u30ff":
            mark = "K"
        elif "\uac00" <= char <= "\ud7af":
            mark = "G"
        elif char.isalpha():
            mark = "A" if char.isupper() else "a"
        else:
            mark = char
        if len(out) >= 2 and out[-1] == mark and out[-2] == mark and mark != "0":
            continue  # "Xxxxxx" and "Xxx" are one shape; a digit run keeps its length (a postcode's)
        out.append(mark)
    return "".join(out)


def _form(token: str) -> str:
    return unicodedata.normalize("NFKC", token).lower()


def token_features(items: list[Token]) -> list[list[str]]:
    """The feature strings of each token."""
    forms = [_form(t.text) for t in items]
    shapes = [_shape(t.text) for t in items]
    segment_features = _segments(items)
    rows: list[list[str]] = []
    for i, form in enumerate(forms):
        row = ["bias", f"w={form}", f"s={shapes[i]}", f"p={form[:3]}", f"x={form[-3:]}"]
        for offset in range(-WINDOW, WINDOW + 1):
            j = i + offset
            if offset == 0:
                continue
            if 0 <= j < len(items):
                row += [f"w{offset}={forms[j]}", f"s{offset}={shapes[j]}"]
            else:
                row.append(f"edge{offset}")
        if i > 0:
            row.append(f"ww-1={forms[i - 1]}|{form}")
        if i + 1 < len(items):
            row.append(f"ww+1={form}|{forms[i + 1]}")
        # digits somewhere near, and how far: an address's words sit near its numbers
        near = [abs(j - i) for j in range(max(0, i - 6), min(len(items), i + 7)) if shapes[j].startswith("0")]
        row.append(f"digit_near={min(near) if near else 'none'}")
        row += segment_features[i]
        rows.append(row)
    return rows


_SEGMENT_END = frozenset(",，;；、")


def _coarse(token: str) -> str:
    if token.isdigit():
        return "d" if len(token) <= 3 else "D"
    if _LATIN_WORD.fullmatch(token):
        return "C" if token[0].isupper() else "l"
    if _is_han(token):
        return "H"
    return "p"


def _segments(items: list[Token]) -> list[list[str]]:
    """What each token's comma-separated part says: an address is a run of short parts, each a name or a number
    (Rua das Flores | 210 | apto 31 | CEP 80010-120 | Curitiba), and a street's name comes right before its number."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for i, token in enumerate(items):
        if token.text in _SEGMENT_END:
            bounds.append((start, i))
            start = i + 1
    bounds.append((start, len(items)))
    signatures = ["".join(_coarse(t.text) for t in items[a:b][:5]) for a, b in bounds]
    has_digit = [any(t.text.isdigit() for t in items[a:b]) for a, b in bounds]
    short = [b - a <= 6 for a, b in bounds]
    rows: list[list[str]] = []
    for k, (a, b) in enumerate(bounds):
        run = 1
        while k - run >= 0 and short[k - run] and run < 4:
            run += 1
        after = 0
        while k + after + 1 < len(bounds) and short[k + after + 1] and after < 3:
            after += 1
        common = [
            f"seg={signatures[k]}",
            f"seg_digit={has_digit[k]}",
            f"seg_before={signatures[k - 1] if k else 'none'}",
            f"seg_after={signatures[k + 1] if k + 1 < len(bounds) else 'none'}",
            f"digit_before={has_digit[k - 1] if k else 'none'}",
            f"digit_after={has_digit[k + 1] if k + 1 < len(bounds) else 'none'}",
            f"short_run={run + after if short[k] else 0}",
        ]
        for i in range(a, b + 1 if b < len(items) else b):
            rows.append([*common, f"seg_first={i == a}", f"seg_last={i == b - 1}"])
    return rows


def column(feature: str) -> int:
    return zlib.crc32(feature.encode("utf-8")) & ((1 << HASH_BITS) - 1)


def columns(rows: list[list[str]]) -> list[list[int]]:
    return [[column(feature) for feature in row] for row in rows]


# The words of the Chinese address system, fixed by its administrative levels and its house numbering: the levels
# (省, 市, 区, 县, 旗 and 盟 in Inner Mongolia, 镇, 乡, 苏木, 村, 嘎查), the streets (路, 街, 巷, 道, 弄) and the house
# (号, 栋, 幢, 座, 单元, 楼, 层, 室, 组 of a village).
_CHINESE_LEVEL = frozenset("省市区县旗盟州镇乡村屯寨路街巷道弄里")
_CHINESE_HOUSE = frozenset("号栋幢座楼层室户组队")
_CHINESE_FIGURE = frozenset("一二三四五六七八九十")
MIN_CHINESE_CHARACTERS = 6


def _reads_as_a_chinese_address(content: list[Token]) -> bool:
    """A run the model marked that reads as a Chinese address by its grammar's words: a level (a district, a road, a
    village) and a house part (号, 栋, 室, 组) after a number, in figures or in words (三组), with at least
    MIN_CHINESE_CHARACTERS characters. Next to numbers, Chinese characters are far more often counts and prices ("3箱，
    每箱12瓶"), which have neither."""
    han = [t.text for t in content if _is_han(t.text)]
    if len(han) < MIN_CHINESE_CHARACTERS or not _CHINESE_LEVEL.intersection(han):
        return False
    return any(
        b.text in _CHINESE_HOUSE and (a.text.isdigit() or a.text in _CHINESE_FIGURE or a.text.isascii())
        for a, b in itertools.pairwise(content)
    ) or any(t.text.isdigit() and len(t.text) >= 3 for t in content[-2:])


def _word_start(items: list[Token], index: int) -> int:
    """The first token of the run of Chinese characters, typed with no space between, that holds items[index]: after
    a space, a punctuation mark or the text's start; -1 after a letter or a digit (not a word typed apart)."""
    while index > 0 and _is_han(items[index - 1].text) and items[index - 1].end == items[index].start:
        index -= 1
    if index == 0:
        return 0
    before = items[index - 1]
    return index if before.end < items[index].start or not before.text.isalnum() else -1


def _has_an_amount(run: list[Token]) -> bool:
    """A number with a thousands separator (31,900,000; 1,198): an amount or a count, never a house number or a
    postcode."""
    return any(
        a.text.isdigit() and b.text == "," and c.text.isdigit() and len(c.text) == 3 and a.end == b.start == c.start - 1
        for a, b, c in zip(run, run[1:], run[2:], strict=False)
    )


# The English names of months and weekdays: next to a number they make a date ("Saturday 12 March 1983"), which a
# street line never holds.
_CALENDAR_WORD = re.compile(
    r"(?:jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april|may|june|july|august|"
    r"september|october|november|december|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)",
    re.IGNORECASE,
)


def _has_a_date(run: list[Token]) -> bool:
    """A month's or a weekday's name right before or after a number: a date, not an address."""
    return any(
        (a.text.isdigit() and _CALENDAR_WORD.fullmatch(b.text) is not None)
        or (_CALENDAR_WORD.fullmatch(a.text) is not None and b.text.isdigit())
        for a, b in itertools.pairwise(run)
    )


def grown(probabilities: npt.NDArray[np.float32], threshold: float, items: list[Token]) -> npt.NDArray[np.bool_]:
    """The tokens at `threshold` or above, and next to them (across a punctuation mark or two) those at
    EXTEND_SHARE of it: an address's first and last parts (its house number, its postcode) read weaker alone than its
    middle, and half an address is still one."""
    marked = probabilities >= threshold
    weak = probabilities >= threshold * EXTEND_SHARE
    bridge = np.array([t.text in _BRIDGE for t in items], dtype=bool)
    changed = True
    while changed:
        changed = False
        for i in range(len(items)):
            if marked[i] or not weak[i]:
                continue
            for step in (-1, 1):
                j = i + step
                hops = 0
                while 0 <= j < len(items) and bridge[j] and not marked[j] and hops < _LONGEST_BRIDGE:
                    j += step
                    hops += 1
                if 0 <= j < len(items) and marked[j]:
                    marked[i] = changed = True
                    break
    return marked


@dataclass(frozen=True)
class AddressSpans:
    weights: npt.NDArray[np.float32]  # (2**HASH_BITS,)
    bias: float
    threshold: float
    settings: Mapping[str, Any]

    def token_probabilities(self, items: list[Token]) -> npt.NDArray[np.float32]:
        scores = np.array([self.weights[cols].sum() for cols in columns(token_features(items))], dtype=np.float32)
        return (1.0 / (1.0 + np.exp(-(scores + self.bias)))).astype(np.float32)

    def find(self, text: str) -> list[tuple[int, int]]:
        """The spans of `text` (start, end) the model reads as an address."""
        items = tokens(text)
        if not items:
            return []
        return self.spans(items, grown(self.token_probabilities(items), self.threshold, items))

    @staticmethod
    def spans(items: list[Token], marked: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
        """Runs of marked tokens, bridged over a punctuation mark or two, that hold a digit and MIN_TOKENS tokens."""
        spans: list[tuple[int, int]] = []
        i = 0
        while i < len(items):
            if not marked[i]:
                i += 1
                continue
            first = last = i
            j = i + 1
            while j < len(items):
                if marked[j]:
                    last = j
                    j += 1
                    continue
                gap = j
                while gap < len(items) and not marked[gap] and items[gap].text in _BRIDGE and gap - j < _LONGEST_BRIDGE:
                    gap += 1
                if gap < len(items) and marked[gap] and gap > j:
                    j = gap
                    continue
                break
            run = [t for t in items[first : last + 1]]
            while run and run[0].text in _BRIDGE:
                run.pop(0)
            while run and run[-1].text in _BRIDGE:
                run.pop()
            # (a Chinese place name typed as a word of its own, "西安 雁塔区 …": when the run starts inside it, at most
            # three characters in, the word's first characters join)
            if run and first > 0 and _is_han(run[0].text) and _is_han(items[first - 1].text):
                word = _word_start(items, first - 1)
                if items[first - 1].end == run[0].start and word >= 0 and first - word <= 3:
                    run = items[word:first] + run
            content = [t for t in run if t.text not in _BRIDGE]
            # (a sentence's end inside: two sentences, "…北门。宿舍区3号门", not one address)
            ended = any(t.text in _SENTENCE_END for t in run)
            words = [t for t in content if _LATIN_WORD.fullmatch(t.text)]
            if (
                len(content) >= MIN_TOKENS
                and not ended
                and (
                    (any(t.text.isdigit() for t in content) and len(words) >= 2) or _reads_as_a_chinese_address(content)
                )
                and not _has_an_amount(run)
                and not _has_a_date(run)
            ):
                spans.append((run[0].start, run[-1].end))
            i = last + 1
        return spans

    def to_arrays(self) -> dict[str, npt.NDArray[Any]]:
        """The non-zero weights only (most hashed columns never occur)."""
        meta = {"bias": self.bias, "threshold": self.threshold, "settings": dict(self.settings)}
        used = np.flatnonzero(self.weights).astype(np.int32)
        return {
            "meta": np.array(json.dumps(meta, sort_keys=True)),
            "columns": used,
            "values": self.weights[used].astype(np.float32),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, npt.NDArray[Any]]) -> AddressSpans:
        meta = json.loads(str(arrays["meta"]))
        weights = np.zeros(1 << HASH_BITS, dtype=np.float32)
        weights[np.asarray(arrays["columns"], dtype=np.int64)] = np.asarray(arrays["values"], dtype=np.float32)
        return cls(
            weights=weights,
            bias=float(meta["bias"]),
            threshold=float(meta["threshold"]),
            settings=meta["settings"],
        )
