"""Redaction: secrets and personal data removed from a text before anything is stored.

`redact(text)` returns a `Redacted`: the text with each finding replaced by a placeholder, and `found`, the kind of
each replacement in the order they occur. Kinds and placeholders:

  kind       placeholder (text with Chinese)  placeholder (otherwise)  what
  api_key    [密钥已隐藏]                     [API key removed]        sk-…, AKIA…, ghp_…, app-… (Dify), xox…, AIza…,
                                                                       and a high-entropy value after a key label
                                                                       (api_key=…, x-api-key: …, Secret 是 …)
  password   [密码已隐藏]                     [password removed]       the value after 密码/口令/password/pwd
  token      [令牌已隐藏]                     [token removed]          JWTs (eyJ….eyJ….…), Bearer tokens, token=…
  id_card    [身份证号已隐藏]                 [ID number removed]      18-digit resident ID (last may be X) with a
                                                                       valid birth date and checksum
  bank_card  [银行卡号已隐藏]                 [card number removed]    13–19 digits, plain or in groups of 4, with a
                                                                       card-network prefix and a valid Luhn digit
  phone      [手机号已隐藏]                   [phone removed]          mainland mobile 1[3-9]x xxxx xxxx, with +86,
                                                                       spaces or dashes
  email      [邮箱已隐藏]                     [e-mail removed]         e-mail addresses

The placeholder language follows the text: a text with any Chinese character gets the Chinese placeholders, so a
stored quote stays readable in its own language. A label stays ("密码 [密码已隐藏]", "OPENAI_API_KEY=[API key
removed]"); only the secret goes.

Never redacted: order, invoice and tracking numbers (a number right after 订单/单号/order/invoice/tracking/#, or
glued to letters like SF1402378856123), prices, dates, versions, commit hashes, and public business lines (400-…,
0571-…): they are not mobile numbers, fail the card checks, or carry no key label. Matching runs on NFKC text
without zero-width characters (full-width digits and hidden joiners do not hide a number); the replacement is made
in the original text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from hindsight_insights.detection.text import fold, has_han

PLACEHOLDERS = {
    "api_key": ("[密钥已隐藏]", "[API key removed]"),
    "password": ("[密码已隐藏]", "[password removed]"),
    "token": ("[令牌已隐藏]", "[token removed]"),
    "id_card": ("[身份证号已隐藏]", "[ID number removed]"),
    "bank_card": ("[银行卡号已隐藏]", "[card number removed]"),
    "phone": ("[手机号已隐藏]", "[phone removed]"),
    "email": ("[邮箱已隐藏]", "[e-mail removed]"),
}

# Everything below runs on folded (lower-case) text.
_JWT = re.compile(r"eyj[a-z0-9_-]{5,}\.eyj[a-z0-9_-]{5,}\.[a-z0-9_-]{10,}")
_BEARER = re.compile(r"\bbearer\s+(?P<secret>[a-z0-9._~+/=-]{16,})")
_KEY_PREFIXES = re.compile(
    r"(?<![a-z0-9])(?P<secret>sk-(?:proj-|ant-|live-|test-)?[a-z0-9_-]{20,}|(?:akia|asia)[0-9a-z]{16}|"
    r"gh[pousr]_[a-z0-9]{30,}|github_pat_[a-z0-9_]{30,}|xox[abprs]-[a-z0-9-]{10,}|aiza[0-9a-z_-]{30,}|"
    r"app-[a-z0-9]{20,}|dataset-[a-z0-9]{20,}|glpat-[a-z0-9_-]{20,}|hf_[a-z0-9]{30,}|[sr]k_live_[a-z0-9]{20,})"
    r"(?![a-z0-9])"
)
_SEPARATOR = r"\s*(?:[:=]|是|为|is|was)\s*[\"'“]?\s*|\s+"
_KEY_LABEL = re.compile(
    r"(?<![a-z0-9_.-])(?P<label>[a-z0-9_.-]{0,40}?(?:api[_-]?key|apikey|secret(?:[_-]?(?:access[_-]?)?key)?|access[_-]?key(?:[_-]?id)?|"
    r"private[_-]?key|client[_-]?secret|access[_-]?token|refresh[_-]?token|auth[_-]?token|token|authorization)|"
    r"密钥|秘钥|令牌)"
    rf"(?:{_SEPARATOR})(?P<secret>[a-z0-9+/=_.~-]{{12,}})"
)
_PASSWORD = re.compile(
    r"(?P<label>(?<![a-z0-9_])[a-z0-9_]{0,40}?(?:password|passwd|pwd)|pass(?:code|phrase)|密码|口令)"
    r"(?P<sep>\s*(?:[:=]|是|为|改成了|改成|改为|设为|设置为|is|was)\s*[\"'“]?\s*|\s+)"
    r"(?P<secret>[\x21-\x7e]{4,64}?)(?=[\"'”]?(?:[\s,。，;；、)）]|[.!?](?:\s|$)|$|[\u4e00-\u9fff]))"
)
_ID_CARD = re.compile(
    r"(?<![0-9a-z])[1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dx](?![0-9a-z])"
)
_CARD = re.compile(
    r"(?<![0-9a-z.\-/])(?:\d{4}[ -]){3}\d{4}(?:[ -]\d{1,3})?(?![0-9a-z])|(?<![0-9a-z.\-/])\d{13,19}(?![0-9a-z])"
)
_MOBILE = re.compile(r"(?<![\d+])(?:(?:\+|00)?\(?86\)?[\s-]?)?1[3-9]\d(?:[\s-]?\d{4}){2}(?![\d])")
_EMAIL = re.compile(r"(?<![a-z0-9._%+-])[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?![a-z0-9-])")
# A number introduced as an order, invoice or tracking number is a reference, not personal data.
_REFERENCE_LABEL = re.compile(
    r"(订单|单号|运单|快递|物流|发票|编号|流水|工单|order|invoice|tracking|ticket|ref|no\.|#)\W{0,3}$"
)
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10x98765432"


@dataclass(frozen=True)
class Redacted:
    text: str
    found: list[str] = field(default_factory=list)


@dataclass(frozen=True, order=True)
class _Finding:
    start: int
    end: int
    kind: str


def redact(text: str) -> Redacted:
    """`text` with secrets and personal data replaced by placeholders (see the module docstring)."""
    folded = fold(text)
    findings = _resolve(_find(folded.text))
    if not findings:
        return Redacted(text, [])
    zh = has_han(text)
    pieces: list[str] = []
    position = 0
    for finding in findings:
        start, end = folded.origin[finding.start], folded.origin[finding.end - 1] + 1
        pieces.append(text[position:start])
        pieces.append(PLACEHOLDERS[finding.kind][0 if zh else 1])
        position = end
    pieces.append(text[position:])
    return Redacted("".join(pieces), [finding.kind for finding in findings])


def _find(text: str) -> list[_Finding]:
    """Every candidate, most specific first (a JWT before a generic token=value, an ID number before a card)."""
    found = [_Finding(*m.span(), "token") for m in _JWT.finditer(text)]
    found += [_Finding(*m.span("secret"), "token") for m in _BEARER.finditer(text)]
    found += [_Finding(*m.span("secret"), "api_key") for m in _KEY_PREFIXES.finditer(text)]
    for match in _KEY_LABEL.finditer(text):
        if _looks_secret(match["secret"]):
            kind = "token" if "token" in match["label"] or match["label"] == "令牌" else "api_key"
            found.append(_Finding(*match.span("secret"), kind))
    for match in _PASSWORD.finditer(text):
        if _looks_like_password(match["secret"], match["sep"]):
            found.append(_Finding(*match.span("secret"), "password"))
    found += [_Finding(*m.span(), "id_card") for m in _ID_CARD.finditer(text) if _valid_id(m.group())]
    found += [_Finding(*m.span(), "bank_card") for m in _CARD.finditer(text) if _valid_card(m.group(), text, m.start())]
    found += [_Finding(*m.span(), "phone") for m in _MOBILE.finditer(text) if not _is_reference(text, m.start())]
    found += [_Finding(*m.span(), "email") for m in _EMAIL.finditer(text)]
    return found


def _resolve(findings: list[_Finding]) -> list[_Finding]:
    """Non-overlapping findings in text order; of two that overlap, the one found first (more specific) wins."""
    kept: list[_Finding] = []
    for finding in findings:
        if all(finding.end <= other.start or finding.start >= other.end for other in kept):
            kept.append(finding)
    return sorted(kept)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _looks_secret(value: str) -> bool:
    """A key, not a word: letters and digits mixed (or long), and varied enough (Shannon entropy ≥ 3 bits/char)."""
    mixed = bool(re.search(r"\d", value)) and bool(re.search(r"[a-z]", value))
    return (mixed or len(value) >= 24) and _entropy(value) >= 3.0


def _looks_like_password(value: str, separator: str) -> bool:
    """After "password:" almost anything is the password; after a bare space ("密码 Test@2024") it must look like
    one (a digit or a symbol), so "password reset link" keeps its words."""
    value = value.rstrip(".,;:!?")
    if not value or re.fullmatch(r"[\W_]+", value):
        return False
    if separator.strip():
        return len(value) >= 4
    return bool(re.search(r"[\d\W_]", value)) and len(value) >= 6


def _valid_id(number: str) -> bool:
    """The GB 11643 checksum of an 18-digit resident ID number."""
    total = sum(int(digit) * weight for digit, weight in zip(number[:17], _ID_WEIGHTS, strict=True))
    return _ID_CHECK[total % 11] == number[17].lower()


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _valid_card(candidate: str, text: str, at: int) -> bool:
    """13–19 digits with a card network's first digits (Visa 4, Mastercard 51–55/22–27, Amex 34/37, JCB 35,
    UnionPay 62, Discover 60/65), a valid Luhn check digit, and not introduced as an order or tracking number."""
    digits = re.sub(r"\D", "", candidate)
    if not 13 <= len(digits) <= 19 or not re.match(r"4|5[1-5]|2[2-7]|3[457]|6[025]", digits):
        return False
    return _luhn(digits) and not _is_reference(text, at)


def _is_reference(text: str, at: int) -> bool:
    return bool(_REFERENCE_LABEL.search(text[max(at - 16, 0) : at]))
