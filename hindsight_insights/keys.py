"""Normalised keys: when two topics or two scenes are the same one.

A model fills `topic` and `scene`, and writes the same thing many ways: 退货地址, 退货 地址, 退货地址。, 退貨地址,
"return address" and full-width ｒｅｔｕｒｎ　ａｄｄｒｅｓｓ. Each way must land in one slot, or conflicting rules are
injected side by side. The key of a text is:

  1. Unicode NFKC (full-width letters and digits become ASCII, compatibility forms fold);
  2. traditional Chinese converted to simplified (OpenCC t2s);
  3. case-folded;
  4. only letters, digits and the marks that change a meaning kept (`meaning_marks`): a sign before a number
     ("-1" is not "1"), a decimal point inside one ("1.5" is not "15"), %, comparison and currency signs, + and #
     ("C++", "C#"). Other spaces, punctuation and symbols are dropped.

A text with no letter or digit at all (say, only an emoji) keeps its case-folded NFKC form without spaces, so it
still has a key of its own. The displayed text is never changed; only matching uses the key.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata

import opencc

GENERAL_SCENE = "general"
# Words a Chinese or English builder uses for "applies everywhere"; all mean GENERAL_SCENE.
GENERAL_SCENE_ALIASES = frozenset({"general", "通用", "全部", "all", "*", "default", "默认"})


@functools.cache
def _to_simplified() -> opencc.OpenCC:
    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    return str(_to_simplified().convert(text))


# Symbols that carry meaning wherever they stand; NFKC has already made full-width ones ASCII.
_MEANING_SYMBOLS = "%‰°<>=≤≥≠±$¥€£₹#+"
# Kept: a letter or digit; a meaning symbol; a sign before a digit; a decimal point between two digits.
_KEPT = re.compile(rf"[^\W_]|[{re.escape(_MEANING_SYMBOLS)}]|-(?=\s*\d)|(?<=\d)\.(?=\d)")
# Dashes and minus signs that NFKC leaves apart from "-".
_MINUS = str.maketrans(dict.fromkeys("\u2212\u2010\u2011\u2012\u2013\u2014\ufe63", "-"))


def fold(text: str) -> str:
    """NFKC, simplified Chinese, case-folded, every minus sign "-": what two ways of writing one thing share."""
    return to_simplified(unicodedata.normalize("NFKC", text)).casefold().translate(_MINUS)


def normalize_key(text: str) -> str:
    folded = fold(text)
    kept = "".join(_KEPT.findall(folded))
    return kept or "".join(folded.split())


def names_a_subject(topic: str, corrected: str | None) -> bool:
    """Whether a correction's topic names what it is about, apart from the corrected words: a detector that finds no
    subject ("不对，都说了是开不了机") makes the corrected words the topic, and a rule or a report that showed them as
    the topic would only say them twice."""
    return bool(topic.strip()) and normalize_key(topic) != normalize_key(corrected or "")


def meaning_marks(text: str) -> list[str]:
    """The numbers of a text with their sign, decimal point and unit sign ("-1", "1.5", "20%"), and its meaning
    symbols: what a word-level comparison would drop but a reader would not."""
    return ["".join(mark.split()) for mark in _MARKS.findall(fold(text))]


_MARKS = re.compile(rf"(?:[-+±]\s*)?\d+(?:\.\d+)*[%‰°]?|[{re.escape(_MEANING_SYMBOLS)}]")


def scene_key(scene: str) -> str:
    """The key a scene is filtered by; every alias of the general scene is GENERAL_SCENE."""
    key = normalize_key(scene)
    return GENERAL_SCENE if key in _GENERAL_KEYS or not key else key


_GENERAL_KEYS = frozenset(normalize_key(alias) for alias in GENERAL_SCENE_ALIASES if normalize_key(alias))


def slot_key(topic: str, scene: str, owner: str | None, condition_detail: str | None = None) -> str:
    """Where a newer insight supersedes an older one: the same topic and scene, for the same owner (a user id for
    user scope, None for the project), and, for a correction that holds only in one context or by one source, the
    same context. Hashed: it is only ever compared."""
    parts = [normalize_key(topic), scene_key(scene), "user" if owner else "project", owner or ""]
    if condition_detail:
        parts.append(normalize_key(condition_detail))
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
