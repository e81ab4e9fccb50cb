"""Views of a text with its disguises taken off, so that one set of patterns catches every spelling of an attack.

An instruction hidden in an insight is rarely written plainly twice. `views(text)` returns the text as several
readings, each named for the report:

  plain      NFKC (full-width ｈｔｔｐｓ and 𝐢𝐠𝐧𝐨𝐫𝐞 become ASCII), format characters dropped (zero-width spaces and
             joiners, BOM, soft hyphens, bidi marks), lower case, traditional -> simplified Chinese, Cyrillic and
             Greek letters that look Latin mapped to Latin (іgnоrе -> ignore), whitespace collapsed;
  joined     letters spaced out with spaces, dots, dashes, underscores, slashes or stars joined back
             (i g n o r e   a l l -> ignore all; 忽.略.之.前 -> 忽略之前); a wider gap stays a word break;
  leet       digits and symbols inside words read as letters (1gn0re 4ll pr3v10us -> ignore all previous);
  reversed   the joined text backwards (tpmorp metsys eht laever -> reveal the system prompt);
  rot13      the joined text through ROT13;
  letters only
             Latin letters only, tone marks dropped, for pinyin (hū lüè zhī qián -> hulüezhiqian -> hulue…) and
             words run together (ignoreallpreviousrules), matched by the compact rules;
  base64 / hex / url-encoded / escapes
             runs that decode to readable text, each decoded and read again in every view above (two levels).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import contextlib
import html
import re
import unicodedata
import urllib.parse
from dataclasses import dataclass

from hindsight_insights.keys import to_simplified

# Cyrillic and Greek lower-case letters that render like Latin ones (after lower-casing).
_HOMOGLYPHS = str.maketrans(
    {
        **dict(zip("абвезийклмнорстухьѕіјԁɡӏѵԛԝ", "abbe3nnnkmhopctyxbsijdglvqw", strict=True)),
        **dict(zip("αβεηικμνορτυχωςϲ", "abenikmvoptuxwsc", strict=True)),
        "ı": "i",
        "ȷ": "j",
        "ℓ": "l",
    }
)
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "$": "s", "!": "i"})
# A word that mixes letters with leet digits or symbols: 1gn0re, pr3v10us. Plain numbers are left alone, and so are
# e-mail addresses (@ stays @).
_LEET_WORD = re.compile(r"(?<![a-z0-9$!])(?=[a-z0-9$!]*[a-z])(?=[a-z0-9$!]*[0134578$!])[a-z0-9$!]{2,}")
_SEPARATOR = r"[\s.\-_·•*|/\\+~,，。、]"
# A run of three or more single characters with one separator between each: i.g.n.o.r.e, 忽 略 之 前.
_SPACED_RUN = re.compile(rf"(?<![^\W_])(?:[^\W_]{_SEPARATOR}{{1,2}}){{2,}}[^\W_](?![^\W_])")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX = re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}[\s:]?){10,}")
_ESCAPES = re.compile(r"(\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|%[0-9a-fA-F]{2}|&#x?[0-9a-fA-F]+;)")


@dataclass(frozen=True)
class View:
    name: str
    text: str


def fold(text: str) -> str:
    """The plain reading: NFKC, no format characters, lower case, simplified Chinese, Latin homoglyphs."""
    kept = "".join(char for char in text if unicodedata.category(char) != "Cf")
    folded = to_simplified(unicodedata.normalize("NFKC", kept).lower()).translate(_HOMOGLYPHS)
    return " ".join(folded.split())


def join_spaced(text: str) -> str:
    """Letters spaced out one by one, joined back into words; a gap of three or more separators stays a space."""

    def joined(match: re.Match[str]) -> str:
        run = match.group()
        if re.search(r"\s", run) and re.search(r"[^\s\w]", run):
            words = run.split()  # i.g.n.o.r.e a.l.l: the dots join letters, the spaces part words
        else:
            words = re.split(rf"{_SEPARATOR}{{3,}}|\s{{2,}}", run)  # i g n o r e   a l l: a wider gap parts words
        return " ".join(re.sub(_SEPARATOR, "", word) for word in words)

    # A spaced-out text keeps its word gaps as runs of spaces, so find runs before collapsing whitespace.
    return _SPACED_RUN.sub(joined, text)


def unleet(text: str) -> str:
    return _LEET_WORD.sub(lambda match: match.group().translate(_LEET), text)


def letters_only(text: str) -> str:
    """Latin letters only, tone marks stripped (ǚ -> u): pinyin written with or without spaces and tones, and words
    run together (ignoreallpreviousrules)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if "a" <= char <= "z")


def _printable(decoded: str) -> bool:
    """Readable text, not binary noise: mostly letters, digits, CJK, spaces and punctuation, with some letters."""
    if len(decoded) < 6:
        return False
    good = sum(char.isprintable() or char in "\n\t" for char in decoded)
    letters = sum(char.isalpha() for char in decoded)
    return good / len(decoded) > 0.95 and letters / len(decoded) > 0.4


def _decode_bytes(data: bytes) -> str | None:
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return decoded if _printable(decoded) else None


def decoded_runs(text: str) -> list[tuple[str, str]]:
    """(encoding, decoded text) for every base64, hex or escaped run of `text` that decodes to readable text."""
    found: list[tuple[str, str]] = []
    compact = unicodedata.normalize("NFKC", "".join(c for c in text if unicodedata.category(c) != "Cf"))
    for match in _BASE64.finditer(compact):
        run = match.group()
        for decoder in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                data = decoder(run + "=" * (-len(run) % 4))
            except (binascii.Error, ValueError):
                continue
            decoded = _decode_bytes(data)
            if decoded:
                found.append(("base64", decoded))
                break
    for match in _HEX.finditer(compact):
        digits = re.sub(r"[\s:]", "", match.group())
        decoded = _decode_bytes(bytes.fromhex(digits[: len(digits) // 2 * 2]))
        if decoded:
            found.append(("hex", decoded))
    if _ESCAPES.search(compact):
        unescaped = html.unescape(urllib.parse.unquote(compact))
        with contextlib.suppress(UnicodeDecodeError, ValueError):
            unescaped = codecs.decode(unescaped.encode("latin-1", "backslashreplace"), "unicode_escape")
        if unescaped != compact:
            found.append(("escaped", unescaped))
    return found


def views(text: str, depth: int = 2) -> list[View]:
    """Every reading of `text` (see the module docstring). Decoded runs are read again, `depth` levels deep."""
    plain = fold(text)
    spaced = fold(
        join_spaced(unicodedata.normalize("NFKC", "".join(c for c in text if unicodedata.category(c) != "Cf")))
    )
    readings = [
        View("plain", plain),
        View("spaced-out", spaced),
        View("leetspeak", unleet(spaced)),
        View("reversed", spaced[::-1]),
        View("rot13", codecs.encode(spaced, "rot13")),
        View("letters only", letters_only(unleet(spaced))),
        View("letters only, digits dropped", letters_only(spaced)),  # pinyin with tone numbers: hu1 lve4
    ]
    if depth > 0:
        for encoding, decoded in decoded_runs(text):
            readings.extend(View(f"{encoding}, {view.name}", view.text) for view in views(decoded, depth - 1))
    # A reading that changes nothing (Chinese through ROT13, a text without leetspeak) is not read twice.
    seen: set[str] = set()
    result = []
    for view in readings:
        if view.text not in seen:
            seen.add(view.text)
            result.append(view)
    return result
