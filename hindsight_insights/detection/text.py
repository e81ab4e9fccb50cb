"""Text folding for the governance detectors, with a way back to the user's own words.

Detectors match on a folded form of the text:

  1. format characters (Unicode category Cf: zero-width spaces and joiners, BOM, soft hyphen, bidi marks) dropped;
  2. NFKC per character (full-width ａｂｃ１２３，？ become abc123,?; compatibility forms fold);
  3. lower-cased;
  4. traditional Chinese converted to simplified (keys.to_simplified).

Each character of the folded text remembers which character of the source it came from, so a span found in the
folded text is quoted from the source unchanged (`Folded.quote`): a correction's `corrected` and `original` are the
user's and the assistant's exact words, never the folded ones.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from hindsight_insights.keys import to_simplified

# Sentence ends in both languages, after NFKC (。 stays, ！？； become !?;). An ellipsis ends a sentence too.
# A title or a Latin abbreviation before its period ends nothing ("please call me Dr. Osei", "e.g. 14:00"): the
# lookbehinds name each one, a whole word (lower case: the text is folded).
_NOT_AN_END = "".join(
    rf"(?<!\b{re.escape(word)})" for word in ("dr", "mr", "mrs", "ms", "mx", "prof", "vs", "e.g", "i.e", "approx")
)
# A Latin full stop after a Chinese character ends a sentence too, as people type in mixed text ("真的很烦. anyway").
_SENTENCE_END = re.compile(rf"[。!?;\n]+|\.{{3,}}|…+|(?<=[a-z0-9)\"'\u4e00-\u9fff]){_NOT_AN_END}\.(?=\s|$)")
# Where a sentence of text as written (not folded) ends: a stop, full-width or not, a line break, or a full stop before
# a space or the end ("3.5" goes on). Redaction's reach, the reflection's quotes and an answer's opening read it.
RAW_SENTENCE_END = re.compile(r"[。！？!?\n]|\.(?:\s|$)")
# Clause breaks inside a sentence: commas (not a thousands separator: 3,482), the enumeration comma, colons (not in
# 14:00) and dashes.
_CLAUSE_BREAK = re.compile(r"、|,(?!(?<=\d,)\d{3}(?!\d))|(?<!\d):(?!\d)|\s[-–—]+\s|[–—]+")


@dataclass(frozen=True)
class Folded:
    """`text` is the folded form of `source`; `origin[i]` is the index in `source` of `text[i]`."""

    text: str
    source: str
    origin: tuple[int, ...]

    def quote(self, start: int, end: int) -> str:
        """The source text behind text[start:end], stripped of surrounding spaces and clause punctuation."""
        if start >= end:
            return ""
        raw = self.source[self.origin[start] : self.origin[end - 1] + 1]
        return raw.strip(" \t\n,，。.;；:：、!！?？—–-")


def normalize(source: str) -> Folded:
    """Steps 1-2 of folding only: case and script kept, for formats that are case-sensitive (AKIA…, eyJ…, PEM
    headers)."""
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(source):
        if unicodedata.category(char) == "Cf":
            continue
        for normal in unicodedata.normalize("NFKC", char):
            chars.append(normal)
            origin.append(index)
    return Folded("".join(chars), source, tuple(origin))


# A turn's message and the answer before it are folded by each reader of them (the sentences, the n-grams, the pair
# flags, each rule step): a pure function of the text, so one fold per text serves them all. Only texts of a chat
# message's length are kept (a fold holds an index per character), and only the latest few hundred.
_FOLDS_KEPT = 512
_LONGEST_KEPT = 2000


def fold(source: str) -> Folded:
    return _fold_kept(source) if len(source) <= _LONGEST_KEPT else _fold(source)


@functools.lru_cache(maxsize=_FOLDS_KEPT)
def _fold_kept(source: str) -> Folded:
    return _fold(source)


def forget_folds() -> None:
    """Drop the kept folds (a benchmark times each call on a text never folded before)."""
    _fold_kept.cache_clear()


def _fold(source: str) -> Folded:
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(source):
        if unicodedata.category(char) == "Cf":
            continue
        for folded in unicodedata.normalize("NFKC", char).lower():
            chars.append(folded)
            origin.append(index)
    text = "".join(chars)
    simplified = to_simplified(text)
    if len(simplified) != len(text):
        # OpenCC converts phrase by phrase; in the rare case a phrase changes length, convert char by char so every
        # character keeps its origin.
        simplified = "".join(c if len(s := to_simplified(c)) != 1 else s for c in text)
    return Folded(simplified, source, tuple(origin))


@dataclass(frozen=True)
class Span:
    """A sentence or clause: its folded text and where it starts in the folded text."""

    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


def _split(text: str, start: int, pattern: re.Pattern[str]) -> Iterator[Span]:
    position = 0
    for match in pattern.finditer(text):
        piece = text[position : match.start()]
        if piece.strip():
            yield Span(piece, start + position)
        position = match.end()
    if text[position:].strip():
        yield Span(text[position:], start + position)


def sentences(text: str) -> list[Span]:
    """Sentences of folded text, the end punctuation kept with each (a '?' says it is a question)."""
    result: list[Span] = []
    position = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[position : match.end()]
        if piece.strip():
            result.append(Span(piece, position))
        position = match.end()
    if text[position:].strip():
        result.append(Span(text[position:], position))
    return result


def clauses(sentence: Span) -> list[Span]:
    return list(_split(sentence.text, sentence.start, _CLAUSE_BREAK))


_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n")


def paragraphs(text: str) -> list[Span]:
    """The paragraphs of `text` (apart by a blank line), each with its offset in `text`."""
    return list(_split(text, 0, _PARAGRAPH_BREAK))


# A run of Chinese characters (CJK Unified Ideographs).
HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")


def has_han(text: str) -> bool:
    return any("\u4e00" <= char <= "\u9fff" for char in text)
