"""Redaction: secrets and personal data removed from a text before anything is stored.

`redact(text)` returns a `Redacted`: the text with each finding replaced by a placeholder, and `found`, the kind of
each replacement in the order they occur. Kinds (placeholders in PLACEHOLDERS, Chinese when the text has any
Chinese character, so a stored quote stays readable in its own language):

  private_key   PEM and OpenSSH private key blocks, header to footer
  api_key       detect-secrets' formats (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, npm, PyPI, …), vendor prefixes
                (sk-, sk-proj-, AKIA, LTAI, ghp_, xoxb-, pcsk_, app-), a key-like value after a key label
                (api_key=…, AccessKey …, secret: …), and long random tokens with no spaces
  password      the value after 密码/口令/password/pwd (or a few words on, when it cannot be a word: 密码我设的 …,
                "the same password everywhere: …"; not what a sentence says of it after "is": empty, wrong, changed),
                a user name and password after a portal or an account and a colon, a Chinese passphrase after
                口令/暗号 and a colon, the password of scheme://user:password@host (an empty user, a bracketed IPv6
                host, "@", ":" or "/" unencoded in it), and Password=…;/Pwd=…;/&password=… in ADO.NET, ODBC, JDBC and
                libpq strings
  token         JWTs, Bearer tokens, token=…
  id_card       a number after 身份证/证件号码/ID card/ID number whatever its checksum (also in quotes or brackets),
                or before it (… 是我身份证号);
                without a label, an 18-character resident ID (whole or grouped 6-8-4 / 6-4-4-4, X or x) with a valid
                check digit, birth date and province (python-stdnum cn.ric; not its county-in-the-birth-year test)
  bank_card     a number after 银行卡/卡号/card number or a card network's name (Amex, 运通, Diners, Visa …), or before
                a card someone owns (… 是我的工资卡号, … (my visa card)); without a
                label, 13–19 digits passing Luhn, whole or grouped 4-4-4-4, 4-6-5 (Amex) or 4-6-4 (Diners)
  iban          an IBAN with a valid check (python-stdnum); in a text about banking (BANKING: an account, a
                transfer, rent), one with its country's structure whatever its check digits; any after the label IBAN
  bank_account  6–25 digits after an account's label (账号, 账户, account, sort code, BSB, routing number) or its
                bank's name (中国工商银行 6212 …), whatever the checksum
  account_holder the name after an account holder's label (户名, 收款人, account name, payee)
  login         a user name said right before its password ("my login is … and password …"), and a remote-desktop
                tool's ID (TeamViewer ID, 向日葵识别码), which a session password opens
  passport      a number after 护照/passport (in the languages people travel with), before it, in the machine-readable
                zone, or in a passport number's shape within 160 characters of the word or of a travel document's
                name (data page, travel document, 资料页: a table's column, a sentence apart)
  employee_id   a number after 工号/员工编号/工牌号/employee number/emp id, or a short clause after it (工号，我的是 …),
                or before it (… 是我的工号), in up to four groups (HZ-2019-0457)
  phone         mobile numbers, mainland and international (phonenumbers); mainland fixed lines dialled with 0 or 86
                (010-6234 5678, (0755) 8888 8888, +86 21 …), unless a public-line label (客服, 热线, 总机, hotline,
                fax) or an organisation (门店电话, the hotel's phone) owns them; any number dialled as +CC or 00CC,
                a fixed line too (not a toll-free, shared-cost or premium line); a national format
                read as the region the text names or dials (UK mobile 07911 …, 香港手机 9123 4567), or after a phone
                label (WhatsApp: 0412 …), or grouped as a common region writes its mobiles (06 12 34 56 78,
                090-1234-5678), or in the North American shape, (415) 555-2671 or 415-555-2671; any number after "my
                phone"/我的电话 or before "that's my mobile"/是我的手机
  email         e-mail addresses, Chinese domains too, and written against scrapers or URL-encoded ((at), [dot], 艾特,
                " @ ", %40, "x at y dot z"); not a stand-in's or a role's mailbox (user@, your.name@,
                support@) on the documentation domains example.com/.org/.net or the reserved .test/.invalid
  birth_date    a full date next to a birth label (出生, 生日, born, b., date of birth, DOB; born in Cork on …; a few
                words between: birthday 填的是 …), as forms print it (05-Mar-1990, 96年10月3号, 一九八七年六月十二日,
                1990년 3월 12일, 12.IV.1979, the month a word of any language before a year of birth);
                a year and a day in words before 出生 (2001年元旦出生); a date in words (the twelfth of March
                nineteen forty-one), with an apostrophe year (Sept 7th, '85), in Chinese numerals or on the lunar
                calendar (九一年五月二号, 2015年腊月廿三), with the month named in the languages of Latin-script forms
  address       a home address: the Chinese grammar (province to town, street or estate or village, down to a room,
                a unit or a village house number; a road's part 大道中/四段, a lane off it 216巷8弄, 道 (Hong Kong,
                Tianjin), a sub-number 号之三, an estate's name between the house number and its building) with a
                room or a home label (家住, 我家地址是, 她住 …);
                a street line with a house number and postcode (floors, doors and regions between them), or with a
                flat or a home label (lives at, address, ship to …) before it; a numbered line with a postcode only
                an address has (UK, Ireland, Canada, a US state and ZIP); a Singapore block and unit; a Japanese
                block (7 Chome-3-1 Hongo); a Singapore unit (#11-246) with its block or postcode; a Hong Kong
                flat and floor (Flat D, 23/F, …); a post-office box or a rural route with its state and ZIP; after
                a home visit's or a parcel's label (上门地址, 寄到我舅舅家) a Chinese address as written; and,
                last, what the learned address finder (address_spans.py) reads as an address in a postal system's
                shape no rule knows (Rua …, 418, apto 72, CEP …; … Sk. No:17 Daire:6, 34710 …); never one said to
                be an organisation's, nor a public place's where a group meets (the Colosseum, Piazza del Colosseo …)

In a pipe table the header names the kind of each column (| Name | Passport | DOB |): a cell with a digit under such
a header goes as that kind; so in a delimited one (name,dob,passport,mobile pasted from a spreadsheet).

`redact_together(texts)` redacts the fields of one write (an insight's topic, action, observation, evidence and tags;
a turn's messages, sources and tool calls) as one text as well: a value found in any of them, its label perhaps in
another, goes from all of them.

Placeholders (YOUR_API_KEY, sk-xxxx, <token>, ****) are not secrets. Never redacted: order, invoice and tracking
numbers (a number right after 订单/单号/order/invoice/tracking/#), prices, dates other than birth dates, versions,
commit hashes, and public business lines (400-…, 800-…, 12345, 95588, 总机 0571-…). Matching runs on NFKC text
without zero-width characters (full-width digits and hidden joiners do not hide a number); the replacement is made in
the original text. A label stays ("密码 [密码已隐藏]", "OPENAI_API_KEY=[API key removed]"); only the value goes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from hindsight_insights.address_model import load_address_model
from hindsight_insights.detection import redaction_checks as checks
from hindsight_insights.detection import redaction_patterns as patterns
from hindsight_insights.detection.text import Folded, fold, has_han, normalize

PLACEHOLDERS = {
    "private_key": ("[私钥已隐藏]", "[private key removed]"),
    "api_key": ("[密钥已隐藏]", "[API key removed]"),
    "password": ("[密码已隐藏]", "[password removed]"),
    "token": ("[令牌已隐藏]", "[token removed]"),
    "id_card": ("[身份证号已隐藏]", "[ID number removed]"),
    "bank_card": ("[银行卡号已隐藏]", "[card number removed]"),
    "card_expiry": ("[有效期已隐藏]", "[expiry removed]"),
    "iban": ("[银行账号已隐藏]", "[IBAN removed]"),
    "bank_account": ("[银行账号已隐藏]", "[account number removed]"),
    "account_holder": ("[户名已隐藏]", "[account holder removed]"),
    "login": ("[登录名已隐藏]", "[login removed]"),
    "passport": ("[护照号已隐藏]", "[passport number removed]"),
    "employee_id": ("[工号已隐藏]", "[employee number removed]"),
    "phone": ("[手机号已隐藏]", "[phone removed]"),
    "email": ("[邮箱已隐藏]", "[e-mail removed]"),
    "birth_date": ("[出生日期已隐藏]", "[date of birth removed]"),
    "address": ("[地址已隐藏]", "[address removed]"),
}
# A value found in one field is looked for in the others from this length on (a 4-digit PIN and up).
_SHORTEST_SHARED = 4
_FORMAT_KINDS = {"Private Key": "private_key", "JSON Web Token": "token", "Basic Auth Credentials": "password"}


@dataclass(frozen=True)
class Redacted:
    text: str
    found: list[str] = field(default_factory=list)


@dataclass(frozen=True, order=True)
class _Finding:
    start: int  # in the source text
    end: int
    kind: str


def redact(text: str, learned: bool = True) -> Redacted:
    """`text` with secrets and personal data replaced by placeholders (see the module docstring); `learned=False`
    leaves the learned address finder out (the rules alone, for a side-by-side figure)."""
    if not text:
        return Redacted(text, [])
    findings = _resolve(_find(text, learned))
    if not findings:
        return Redacted(text, [])
    zh = has_han(text)
    pieces: list[str] = []
    position = 0
    for finding in findings:
        pieces.append(text[position : finding.start])
        pieces.append(PLACEHOLDERS[finding.kind][0 if zh else 1])
        position = finding.end
    pieces.append(text[position:])
    return Redacted("".join(pieces), [finding.kind for finding in findings])


def redact_together(texts: Sequence[str]) -> list[Redacted]:
    """Each of `texts` (the fields of one write) redacted, and also rid of every secret found when they are read as
    one text: a label in one field names the value in another ("passport" in the observation, the number alone in a
    tag or in a topic cut short), and a value found in any field goes from all of them."""
    joined = "\n".join(texts)
    values = sorted(
        {(joined[f.start : f.end], f.kind) for f in _resolve(_find(joined)) if f.end - f.start >= _SHORTEST_SHARED},
        key=lambda value: -len(value[0]),
    )
    results = []
    for text in texts:
        own = redact(text)
        redacted, found = own.text, list(own.found)
        for value, kind in values:
            if value in redacted:
                redacted = redacted.replace(value, PLACEHOLDERS[kind][0 if has_han(text) else 1])
                found.append(kind)
        results.append(Redacted(redacted, found))
    return results


def _find(text: str, learned: bool = True) -> list[_Finding]:
    """Every candidate, most specific first: a key block before the tokens inside it, a labelled number before the
    same digits read by checksum, a JWT before a generic token=value."""
    folded, plain = fold(text), normalize(text)

    def at(source: Folded, spans: Iterable[tuple[int, int]], kind: str) -> list[_Finding]:
        return [_Finding(source.origin[s], source.origin[e - 1] + 1, kind) for s, e in spans if e > s]

    f = folded.text
    found = at(folded, (m.span() for m in patterns.PRIVATE_KEY.finditer(f)), "private_key")
    for span, secret_type in checks.format_secrets(plain.text):
        value = plain.text[span[0] : span[1]]
        if not _placeholder(value.lower()):
            found += at(plain, [span], _FORMAT_KINDS.get(secret_type, "api_key"))
    url_passwords = (m.span("secret") for m in patterns.URL_CREDENTIALS.finditer(f) if not _placeholder(m["secret"]))
    found += at(folded, url_passwords, "password")
    connection = (m.span("secret") for m in patterns.CONNECTION_PASSWORD.finditer(f) if not _placeholder(m["secret"]))
    found += at(folded, connection, "password")
    found += at(folded, (m.span() for m in patterns.JWT.finditer(f)), "token")
    found += at(folded, (m.span("secret") for m in patterns.BEARER.finditer(f) if _looks_secret(m["secret"])), "token")
    prefixed = (m.span("secret") for m in patterns.KEY_PREFIXES.finditer(f) if not _placeholder(m["secret"]))
    found += at(folded, prefixed, "api_key")
    for match in patterns.KEY_LABEL.finditer(f):
        if patterns.PUBLIC_KEY_TYPE.fullmatch(match["secret"]):
            continue  # "public key: ssh-ed25519 AAAA…": the key's type, and a public key
        if re.fullmatch(r"[a-z]+(?:-[a-z]+)+", match["secret"]):
            continue  # "existingSecret: mqtt-broker-creds": the name of where a secret is kept, words and hyphens
        if re.match(r"\s*[(\[]", f[match.end("secret") :]):
            continue  # api_key = os.getenv("OPENAI_API_KEY"): code that reads the key from elsewhere, a call
        if patterns.PUBLIC_KEY_LABEL.search(match["label"]):
            continue  # apt's "NO_PUBKEY 7EA0A9C3F273FCD8", "public_key: …": a public key or its id, shared on purpose
        if _looks_secret(match["secret"]) or _labelled_secret(match["secret"], match["sep"]):
            kind = "token" if "token" in match["label"] or match["label"] == "令牌" else "api_key"
            found += at(folded, [match.span("secret")], kind)
    passwords = (
        m.span("secret")
        for m in patterns.PASSWORD.finditer(f)
        if _looks_like_password(
            _inside_brackets(f, m.start(), m["secret"]), m["sep"], chinese_label="密码" in m["label"]
        )
        and not _a_passwords_state(m["secret"], m["sep"])
    )
    found += at(folded, passwords, "password")
    near_label = (m.span("secret") for m in patterns.PASSWORD_FOR.finditer(f) if _looks_like_password(m["secret"], " "))
    found += at(folded, near_label, "password")
    a_few_words = (m.span("secret") for m in patterns.PASSWORD_A_FEW_WORDS.finditer(f) if _unlike_a_word(m["secret"]))
    found += at(folded, a_few_words, "password")
    found += at(folded, (m.span("secret") for m in patterns.CHINESE_PASSPHRASE.finditer(f)), "password")
    found += at(folded, (m.span("secret") for m in patterns.LOGIN_PAIR.finditer(f)), "password")
    accounts = (m.span("secret") for m in patterns.ACCOUNT_PAIR.finditer(f) if _unlike_a_word(m["password"]))
    found += at(folded, accounts, "password")
    wifi = (m.span("secret") for m in patterns.WIFI_PAIR.finditer(f) if _looks_like_password(m["secret"], " "))
    found += at(folded, wifi, "password")
    found += at(folded, (m.span("secret") for m in patterns.LOGIN_NAME.finditer(f)), "login")
    found += at(folded, (m.span("secret") for m in patterns.LOGIN_AS.finditer(f)), "login")
    found += at(folded, (m.span("secret") for m in patterns.REMOTE_ACCESS_ID.finditer(f)), "login")
    found += at(folded, (m.span("secret") for m in patterns.ACCESS_CODE.finditer(f)), "password")
    found += at(folded, _door_codes(f), "password")
    # An address before the numbers: 13800138000@163.com is an e-mail address, not a phone number plus a domain.
    emails = (
        m.span()
        for pattern in (patterns.EMAIL, patterns.EMAIL_SPELLED)
        for m in pattern.finditer(f)
        if not patterns.EMAIL_PLACEHOLDER.search(m.group())
    )
    found += at(folded, emails, "email")
    for kind, pattern in patterns.NUMBER_LABELS:
        found += at(folded, (m.span("value") for m in pattern.finditer(f)), kind)
    labelled_ids = patterns.ID_A_FEW_WORDS_AFTER.finditer(f)
    found += at(folded, (m.span("value") for m in labelled_ids if checks.resident_id_shape(m["value"])), "id_card")
    if patterns.NAMES_A_RESIDENT_ID.search(f):
        shaped = (m.span() for m in patterns.ID_NUMBER.finditer(f) if checks.resident_id_shape(m.group()))
        found += at(folded, shaped, "id_card")
    found += at(folded, _passports_nearby(f), "passport")
    for kind, spans in (*_table_cells(f), *_delimited_cells(f)):
        found += at(folded, spans, kind)
    holders = [m.span("secret") for m in patterns.ACCOUNT_HOLDER_ZH.finditer(f)]
    found += at(folded, holders, "account_holder")
    found += at(plain, (m.span("secret") for m in patterns.ACCOUNT_HOLDER_EN.finditer(plain.text)), "account_holder")
    found += at(
        folded, (m.span() for m in patterns.ID_NUMBER.finditer(f) if checks.valid_resident_id(m.group())), "id_card"
    )
    banking = bool(patterns.BANKING.search(f))
    found += at(folded, _ibans(f, banking), "iban")
    cards = (m.span() for m in patterns.CARD_NUMBER.finditer(f) if _card(m.group()) and not _is_reference(f, m.start()))
    found += at(folded, cards, "bank_card")
    found += at(folded, _cards_by_name(f), "bank_card")
    phones = (span for span in checks.personal_phones(plain.text) if not _is_reference(plain.text, span[0]))
    found += at(plain, phones, "phone")
    births = [
        match.span(next(name for name in _BIRTH_DATE_GROUPS if match[name]))
        for match in patterns.BIRTH_DATE.finditer(f)
    ]
    births += [m.span("value") for m in patterns.BIRTH_DATE_AFTER_LABEL.finditer(f)]
    births += [m.span("value") for m in patterns.BIRTH_FIELD_THEN_DATE.finditer(f)]
    births += [m.span("value") for m in patterns.BIRTH_LABEL_THEN_OLD_DATE.finditer(f)]
    found += at(folded, births, "birth_date")
    found += at(folded, _documents_beside_a_birth_date(f, births), "passport")
    # A form whose labels no rule knows (Armenian, Georgian…): an old whole date as one field's value
    # (patterns.FORM_OLD_DATE) is its holder's date of birth beside a document number as another's, and the number is
    # the document's; dates already read as births were taken above.
    form_dates = [m.span("value") for m in patterns.FORM_OLD_DATE.finditer(f) if m.span("value") not in births]
    documents = list(_documents_beside_a_birth_date(f, form_dates)) if form_dates else []
    found += at(folded, documents, "passport")
    beside = [d for d in form_dates if any(abs(start - d[0]) <= patterns.PASSPORT_NEARBY for start, _ in documents)]
    found += at(folded, beside, "birth_date")
    # (a date beside a name, read on the text with its case)
    for beside_a_name in (patterns.NAME_THEN_BIRTH, patterns.BRACKETED_BIRTH, patterns.SEX_THEN_BIRTH):
        found += at(plain, (m.span("value") for m in beside_a_name.finditer(plain.text)), "birth_date")
    found += at(folded, _homes(patterns.CHINESE_ADDRESS, f, reach=20), "address")
    found += at(folded, _homes(patterns.CHINESE_ESTATE, f, reach=20), "address")
    found += at(folded, _homes(patterns.CHINESE_VILLAGE, f, reach=20), "address")
    found += at(folded, _labelled_chinese_addresses(f), "address")
    # The formats of one place before the general street lines, whose parts they would cut short.
    found += at(folded, (m.span() for m in patterns.SINGAPORE_ADDRESS.finditer(f)), "address")
    found += at(folded, (m.span() for m in patterns.HONG_KONG_FLAT.finditer(f)), "address")
    found += at(folded, _not_an_organisations(patterns.JAPANESE_POSTAL_ADDRESS, f, reach=48), "address")
    found += at(folded, _not_an_organisations(patterns.KOREAN_ADDRESS, f, reach=48), "address")
    found += at(folded, _not_an_organisations(patterns.BOX_LINE, f, reach=48), "address")
    unit_lines = _not_an_organisations(patterns.UNIT_NUMBER_LINE, f, reach=48)
    with_a_block = (span for span in unit_lines if patterns.UNIT_LINE_IS_ADDRESS.search(f[span[0] : span[1]]))
    found += at(folded, with_a_block, "address")
    found += at(folded, _not_an_organisations(patterns.STREET_WITH_POSTCODE, f, reach=48), "address")
    found += at(folded, _not_an_organisations(patterns.NUMBERED_LINE_WITH_POSTCODE, f, reach=48), "address")
    # An English line reaches further back for its label: "ship to Jane Doe, 42 Elm Street".
    found += at(folded, _homes(patterns.STREET_LINE, f, reach=48), "address")
    found += at(folded, _homes(patterns.CONTINENTAL_LINE, f, reach=48), "address")
    found += at(folded, (m.span() for m in patterns.FLAT_LINE.finditer(f)), "address")
    found += at(folded, _destinations(f), "address")
    found += at(plain, _named_homes(plain.text), "address")
    # Last, the learned finder: the address shapes no rule above knows (not one said to be a business place's).
    if learned:
        found += at(plain, personal_addresses(plain.text, load_address_model().find(plain.text)), "address")
    certificates = [m.span() for m in patterns.CERTIFICATE.finditer(plain.text.lower())]
    random_tokens = (
        span
        for span in checks.high_entropy_tokens(plain.text)
        if not any(s <= span[0] < e for s, e in certificates) and not _placeholder(plain.text[slice(*span)].lower())
    )
    found += at(plain, random_tokens, "api_key")
    found = [finding for finding in found if not _stand_in_number(text[finding.start : finding.end], finding.kind)]
    return found + list(_card_expiries(text, found))


def _card_expiries(text: str, found: list[_Finding]) -> Iterator[_Finding]:
    """The expiry date right after a card number found ("4929 5521 0837 6614，exp 09/27"): with the number it is what
    a payment asks for, so it goes with the card."""
    for finding in found:
        if finding.kind == "bank_card":
            expiry = patterns.CARD_EXPIRY.match(text, finding.end)
            if expiry:
                yield _Finding(expiry.start("value"), expiry.end("value"), "card_expiry")


# The kinds whose value is a number: one that is a stand-in (000000, 8888 8888 8888 8888) or a documented test card
# is nobody's.
# The groups of patterns.BIRTH_DATE that hold the date, one per way of saying it.
_BIRTH_DATE_GROUPS = ("value", "before", "before_word", "before_daypart", "year_before")
_NUMBER_KINDS = frozenset({"bank_card", "bank_account", "id_card", "phone", "employee_id", "passport"})
# The card numbers payment processors publish for testing (Stripe, Adyen, Braintree): every integration guide and
# sandbox screenshot holds them, and they pay nothing.
_TEST_CARDS = frozenset(
    {
        "4242424242424242",
        "4000056655665556",
        "4111111111111111",
        "4012888888881881",
        "4000000000000002",
        "5555555555554444",
        "5105105105105100",
        "2223003122003222",
        "5200828282828210",
        "378282246310005",
        "371449635398431",
        "6011111111111117",
        "6011000990139424",
        "3056930009020004",
        "36227206271667",
        "3566002020360505",
        "6200000000000005",
    }
)


def _stand_in_number(value: str, kind: str) -> bool:
    """A number-kind finding of four digits or more that is a placeholder (_placeholder: one digit repeated, a form's
    000000) or a published test card."""
    if kind not in _NUMBER_KINDS:
        return False
    digits = re.sub(r"\D", "", value)
    return (len(digits) >= 4 and _placeholder(digits)) or digits in _TEST_CARDS


def personal_addresses(text: str, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The address spans of `text` that no word for a business place comes before (an organisation's address is no
    one's personal data); a Chinese one, as the rules read them, only with a unit below the house number or a home's
    or a recipient's word beside it (a shop's 文三路 1 号 stays)."""
    lowered = text.lower()
    return [
        span
        for span in spans
        if not _a_business_place(lowered, span[0], 48)
        and not _business_word(lowered, span)
        and not _a_company_around(lowered, span)
        and (not has_han(text[span[0] : span[1]]) or _a_chinese_home(lowered, span))
        and not _a_list_of_names_and_numbers(text[span[0] : span[1]])
    ]


def _a_list_of_names_and_numbers(span: str) -> bool:
    """Three or more parts that are each one word and a small number ("Hannah 8, Rory 10, Lucy 12": a team sheet, a
    score list): an address has two such parts at most (its flat and its district: "Apt 14, …, Dublin 8, D08 …")."""
    return sum(1 for part in re.split(r"[,;]", span) if patterns.NAME_AND_NUMBER.fullmatch(part.strip())) >= 3


def _a_chinese_home(text: str, span: tuple[int, int]) -> bool:
    """A Chinese address span of `text` (lower-cased) that is someone's home: no place of work in it or right after it
    (…菜鸟仓3号库, …1 号仓库), and a unit below the house number (栋, 单元, 室, 三组, 16号4-3) or a word for home
    before it or a recipient after it."""
    start, end = span
    if patterns.CHINESE_BUSINESS_IN_ADDRESS.search(text[start:end]) or patterns.CHINESE_BUSINESS_IN_ADDRESS.match(
        text[end : end + 8].lstrip()
    ):
        return False
    unit = patterns.CHINESE_UNIT_BELOW_HOUSE.search(text[start:end]) is not None
    home = _said_before(patterns.HOME_LABEL, text, start, 24)
    return unit or home or patterns.RECIPIENT_AFTER.match(text[end:].lstrip(" ")) is not None


def _business_word(text: str, span: tuple[int, int]) -> bool:
    """A word for a business place in the clause before `span` (up to 48 characters, not past a sentence's end)."""
    before = re.split(r"[.!?。！？;；\n]\s", text[max(span[0] - 48, 0) : span[0]])[-1]
    return patterns.BUSINESS_WORD.search(before) is not None


def _door_codes(text: str) -> Iterator[tuple[int, int]]:
    """The numbers after a door's name in a sentence that speaks of a code lock (CODE_LOCK)."""
    for sentence in patterns.SENTENCE.finditer(text):
        if patterns.CODE_LOCK.search(sentence.group()):
            for match in patterns.DOOR_NUMBER.finditer(sentence.group()):
                yield sentence.start() + match.start("secret"), sentence.start() + match.end("secret")


def _labelled_chinese_addresses(text: str) -> Iterator[tuple[int, int]]:
    """CHINESE_LABELLED_ADDRESS's values that have a number, and after a bare 地址 a room too, or a recipient named
    right after it (…敖包图嘎查，收件人巴特尔: a parcel to someone's home)."""
    for match in patterns.CHINESE_LABELLED_ADDRESS.finditer(text):
        start, end = match.span("value")
        # (parts typed after a space that hold no number and no word of a building or a village are the sentence's,
        # not the address's: "…5号 谢谢", "…巴彦嘎查 牧民收")
        while " " in text[start:end] and not patterns.CHINESE_ADDRESS_PART.search(text[start:end].rsplit(" ", 1)[1]):
            end = start + text[start:end].rindex(" ")
        value = text[start:end]
        # (a herders' or a hamlet's address has no house number: …别力古台镇查干淖尔嘎查)
        # (a house counted in words is numbered too: …李楼村东头第三户)
        numbered = re.search(r"\d|[一二三四五六七八九十]+[户号排]", value) or re.search(r"(?:村|嘎查|屯|寨)$", value)
        # a village's group is its houses' number: …乌兰宝力格嘎查三组 after a bare 地址 too
        village_group = re.search(r"(?:村|嘎查|屯|寨)[一二三四五六七八九十\d]{1,3}(?:组|队)$", value)
        someones = patterns.HOME_UNIT.search(value) or patterns.RECIPIENT_AFTER.match(text[end:].lstrip(" "))
        if village_group or (numbered and (not (match["bare"] or match["english"]) or someones)):
            yield start, end


def _table_cells(text: str) -> Iterator[tuple[str, list[tuple[int, int]]]]:
    """The cells of a pipe table under a header that names a kind of personal data (TABLE_COLUMNS), by kind: a cell
    with a digit, or with "@" under an e-mail header."""
    rows = list(patterns.TABLE_ROW.finditer(text))
    for index, header in enumerate(rows[:-1]):
        rule = rows[index + 1]
        if not patterns.TABLE_RULE.match(rule.group()) or text[header.end() : rule.start()] != "\n":
            continue
        kinds = [_column_kind(cell) for _, _, cell in _cells(header)]
        position = rule.end()
        for row in rows[index + 2 :]:
            if row.start() != position + 1:
                break  # the table ends at the first line that is not a row
            position = row.end()
            for column, (start, end, cell) in enumerate(_cells(row)):
                kind = kinds[column] if column < len(kinds) else None
                if kind and _a_value_of(kind, cell):
                    yield kind, [(start, end)]


def _delimited_cells(text: str) -> Iterator[tuple[str, list[tuple[int, int]]]]:
    """The same for a delimited table (CSV, tab- or semicolon-separated, pasted from a spreadsheet or a phone memo): a
    header line of three or more short fields, one naming a kind of personal data, then the lines with as many fields
    under the same separator; the table ends at the first line that has not."""
    lines = [(m.start(), m.group()) for m in re.finditer(r"[^\n]+", text)]
    index = 0
    while index < len(lines):
        line = lines[index][1]
        index += 1
        separator = next((sep for sep in ("\t", ",", ";", "，") if line.count(sep) >= 2), None)
        if separator is None:
            continue
        header = _fields(line, separator)
        if any(len(cell) > 30 or re.search(r"\d", cell) for _, _, cell in header):
            continue  # a header names its columns; a sentence with commas or a row of values is none
        kinds = [_column_kind(cell) for _, _, cell in header]
        if not any(kinds):
            continue
        while index < len(lines):
            row_start, row = lines[index]
            cells = _fields(row, separator)
            if len(cells) != len(header):
                break
            index += 1
            for kind, (cell_start, cell_end, cell) in zip(kinds, cells, strict=True):
                if kind and _a_value_of(kind, cell):
                    yield kind, [(row_start + cell_start, row_start + cell_end)]


def _a_value_of(kind: str, cell: str) -> bool:
    """Whether a table's cell under a column of `kind` holds a value to redact: a digit, or "@" under an e-mail header
    (a name or a country stays)."""
    return re.search(r"\d", cell) is not None or (kind == "email" and "@" in cell)


def _fields(line: str, separator: str) -> list[tuple[int, int, str]]:
    """A delimited line's fields as (start, end, stripped text); a separator inside double quotes is the field's."""
    fields = []
    start, quoted = 0, False
    for at, char in enumerate(line + separator):
        if char == '"':
            quoted = not quoted
        elif (char == separator and not quoted) or at == len(line):
            part = line[start:at]
            lead = len(part) - len(part.lstrip())
            stripped = part.strip()
            if len(stripped) >= 2 and stripped[0] == stripped[-1] == '"':
                stripped, lead = stripped[1:-1], lead + 1
            fields.append((start + lead, start + lead + len(stripped), stripped))
            start = at + 1
    return fields


def _cells(row: re.Match[str]) -> list[tuple[int, int, str]]:
    """A table row's cells as (start, end, stripped text), the outer pipes' empty edges left out."""
    cells = []
    offset = row.start()
    parts = row.group().split("|")
    for number, part in enumerate(parts):
        edge = number in (0, len(parts) - 1) and not part.strip()
        if not edge:
            lead = len(part) - len(part.lstrip())
            cells.append((offset + lead, offset + lead + len(part.strip()), part.strip()))
        offset += len(part) + 1
    return cells


def _column_kind(header: str) -> str | None:
    return next((kind for kind, label in patterns.TABLE_COLUMNS if label.search(header)), None)


def _passports_nearby(text: str) -> Iterator[tuple[int, int]]:
    """Numbers in a passport number's shape within PASSPORT_NEARBY characters of a word for a passport, unless
    introduced as an order, invoice or ticket number."""
    words = [match.span() for match in patterns.PASSPORT_WORD.finditer(text)]
    for match in patterns.PASSPORT_SHAPE.finditer(text):
        if len(match.group()) == 8 and match.group().isdigit():
            reach = patterns.PASSPORT_EIGHT_DIGITS_AFTER
            near = any(
                0 <= match.start() - end <= reach and not patterns.SENTENCE_END.search(text[end : match.start()])
                for _, end in words
            )
        else:
            near = any(abs(match.start() - start) <= patterns.PASSPORT_NEARBY for start, _ in words)
        # "passport no. …": the "no." is the passport's, not an order's
        labelled = any(
            end <= match.start() and patterns.PASSPORT_JOIN.fullmatch(text[end : match.start()]) for _, end in words
        )
        if near and (labelled or not _is_reference(text, match.start())):
            yield match.span()


def _documents_beside_a_birth_date(text: str, births: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Numbers in a passport number's shape given as a form's field ("…: K4718206") within PASSPORT_NEARBY characters
    of a date of birth, unless introduced as an order, invoice or ticket number: the identity document of the person
    born that day, whatever the language of its label (Passi number, Αρ. διαβατηρίου, Pașaport nr.)."""
    for match in patterns.PASSPORT_SHAPE.finditer(text):
        field_value = patterns.FIELD_VALUE_BEFORE.search(text, max(match.start() - 4, 0), match.start()) is not None
        near = any(abs(match.start() - start) <= patterns.PASSPORT_NEARBY for start, _ in births)
        if field_value and near and not _is_reference(text, match.start()):
            yield match.span()


def _homes(pattern: re.Pattern[str], text: str, reach: int) -> Iterator[tuple[int, int]]:
    """The spans of `pattern`'s addresses that are someone's: with a room or unit (its `unit` group), or a word for
    home (HOME_LABEL) in the `reach` characters before it, or a parcel's recipient named right after it
    (RECIPIENT_SOON_AFTER), and not said to be a business place's (BUSINESS_LABEL:
    "our showroom is at …, Suite 140"). A shop's address alone stays."""
    for match in pattern.finditer(text):
        end = match.end()
        home = match["unit"].strip() or _said_before(patterns.HOME_LABEL, text, match.start(), reach)
        if not home and (between := _before_a_recipient(text[end:])) is not None:
            home, end = True, end + len(between)  # the parts up to the recipient are the address's
        # 退货寄到：… is a warehouse, unless a person receives there (退货地址：…枣坪村112号 高建军收)
        returns = _said_before(patterns.RETURNS, text, match.start(), 12)
        if not home or (returns and not patterns.RECIPIENT_AFTER.search(text[end:])):
            continue
        if not _a_business_place(text, match.start(), reach):
            yield match.start(), end


def _before_a_recipient(after: str) -> str | None:
    """What comes between an address and a recipient named soon after it (…9楼D座，收件人), its trailing commas left
    out; None without a recipient, or with an organisation's place between (…，锦程设计工作室，收件人 is a studio's)."""
    recipient = patterns.RECIPIENT_SOON_AFTER.search(after)
    if recipient is None or patterns.ORGANISATION_PLACE.search(recipient["between"]):
        return None
    return recipient["between"].rstrip(" ,，:：")


def _not_an_organisations(pattern: re.Pattern[str], text: str, reach: int) -> Iterator[tuple[int, int]]:
    """The spans of `pattern`'s addresses without a word for a business place (BUSINESS_LABEL) in the `reach`
    characters before them: a street with a postcode is someone's unless it is said to be an office's or a shop's, a
    company's name ends right before it (LEGAL_FORM_BEFORE), opening hours follow it (OPEN_AFTER), or a business
    announces it has moved there (BUSINESS_MOVED)."""
    for match in pattern.finditer(text):
        if not _a_company_around(text, match.span()) and not _a_business_place(text, match.start(), reach):
            yield match.span()


def _a_company_around(text: str, span: tuple[int, int]) -> bool:
    """A company's name ending right before the address (LEGAL_FORM_BEFORE) or opening hours after it (OPEN_AFTER)."""
    start, end = span
    before = text[max(start - 60, 0) : start]
    # The company's line may be the one before the span's (its street on a line of its own), or the span's own first
    # line (the learned finder's span may start on it: "GmbH\nLindwurmstraße 201, 80337").
    line_break = text.find("\n", start, end)
    lines = (before, before.rpartition("\n")[0], text[max(start - 60, 0) : line_break] if line_break >= 0 else "")
    company = any(patterns.LEGAL_FORM_BEFORE.search(line) for line in lines if line)
    return company or patterns.OPEN_AFTER.search(text[end : end + 60]) is not None


def _a_business_place(text: str, at: int, reach: int) -> bool:
    """A word for a business place in the `reach` characters before `at` (BUSINESS_LABEL), a business announcing
    its move in the 40 before (BUSINESS_MOVED), or a public place named as where a group meets (MEETING_PLACE)."""
    return (
        _said_before(patterns.BUSINESS_MOVED, text, at, 40)
        or _said_before(patterns.BUSINESS_LABEL, text, at, reach)
        or _said_before(patterns.MEETING_PLACE, text, at, 80)
    )


def _named_homes(text: str) -> Iterator[tuple[int, int]]:
    """NAME_THEN_ADDRESS's addresses, unless the name is an organisation's (Acme Ltd) or a business place is said
    before it ("Our office: …")."""
    lowered = text.lower()
    for match in patterns.NAME_THEN_ADDRESS.finditer(text):
        if patterns.ORGANISATION_PLACE.search(match["name"].lower()) or _a_business_place(lowered, match.start(), 48):
            continue
        yield match.span("value")


def _destinations(text: str) -> Iterator[tuple[int, int]]:
    """DESTINATION's values that are addresses: a digit and an address's shape (ADDRESS_SHAPE), and no organisation's
    place in them (ORGANISATION_PLACE: a warehouse, a court's reception) nor a return just before their label, and no
    business announcing a move before it (BUSINESS_MOVED: "Our clinic moved! new address: …")."""
    for match in patterns.DESTINATION.finditer(text):
        value = match["value"].strip()
        # (returns go to a warehouse: 退货请寄到…)
        if patterns.ORGANISATION_PLACE.search(value) or _said_before(patterns.RETURNS, text, match.start(), 12):
            continue
        if _said_before(patterns.BUSINESS_MOVED, text, match.start(), 40):
            continue
        label, after = text[match.start() : match.start("value")], text[match.end("value") :]
        if has_han(label) and (named := patterns.RECIPIENT_NAMED.search(value)):
            value = value[: named.end()]  # the recipient ends the destination: what follows is the message's
        if patterns.SENDING_VERB.search(label) and not _someones(label, value, after):
            continue
        if match["bare_address"] and not patterns.RECIPIENT_AFTER.search(after):
            continue
        if re.search(r"\d", value) and patterns.ADDRESS_SHAPE.search(value):
            start = match.start("value") + (len(match["value"]) - len(match["value"].lstrip()))
            yield start, start + len(value)


def _someones(label: str, value: str, after: str) -> bool:
    """Whether a destination after a verb of sending names a person (SENDING_VERB's comment)."""
    if has_han(label):
        return bool(
            patterns.PERSON_IN_LABEL.search(label)
            or patterns.RECIPIENT_AFTER.search(after)
            or patterns.RECIPIENT_LAST.search(value)
        )
    return bool(patterns.NAME_FIRST.search(value))


def _said_before(label: re.Pattern[str], text: str, at: int, reach: int) -> bool:
    """Whether `label` ends within the `reach` characters before `at`."""
    return bool(label.search(text[max(at - reach, 0) : at]))


def _resolve(findings: list[_Finding]) -> list[_Finding]:
    """Non-overlapping findings in text order; of two that overlap, the one found first (more specific) wins, except
    two passwords or two addresses, which merge."""
    kept: list[_Finding] = []
    for finding in findings:
        overlapping = [other for other in kept if finding.start < other.end and other.start < finding.end]
        if not overlapping:
            kept.append(finding)
        elif finding.kind in _MERGED and all(other.kind == finding.kind for other in overlapping):
            # Two readings of one credential (a URL's userinfo, a "password=" field in it) or of one address (a
            # village house, and the same house after its label with the recipient): their union goes, so neither
            # cuts the other's secret short.
            for other in overlapping:
                kept.remove(other)
            start = min(finding.start, *(other.start for other in overlapping))
            end = max(finding.end, *(other.end for other in overlapping))
            kept.append(_Finding(start, end, finding.kind))
    return sorted(kept)


_MERGED = frozenset({"password", "address"})


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _ibans(text: str, banking: bool) -> Iterator[tuple[int, int]]:
    """IBAN's spans, each the longest run of its groups that is one (_iban): the pattern's last short group may be the
    next word ("…7034 when you can" reads "when" as the last group)."""
    for match in patterns.IBAN.finditer(text):
        value = match.group()
        while value:
            if _iban(value, banking):
                yield match.start(), match.start() + len(value)
                break
            value = value[: value.rfind(" ")] if " " in value else ""


def _iban(value: str, banking: bool) -> bool:
    """A valid IBAN; or, in a text about banking, one with its country's structure whatever its check digits."""
    return checks.valid_iban(value) or (banking and checks.iban_shaped(value) and not _placeholder(value))


def _placeholder(value: str) -> bool:
    """Documentation's stand-ins (YOUR_API_KEY, sk-xxxx, <token>, ****): they protect nothing."""
    return bool(patterns.PLACEHOLDER.search(value.lower()))


def _looks_secret(value: str) -> bool:
    """A key, not a word: letters and digits mixed (or long), varied enough (Shannon entropy ≥ 3 bits/char), and
    not a placeholder."""
    mixed = bool(re.search(r"\d", value)) and bool(re.search(r"[a-z]", value))
    return len(value) >= 12 and (mixed or len(value) >= 24) and _entropy(value) >= 3.0 and not _placeholder(value)


def _labelled_secret(value: str, separator: str) -> bool:
    """secret=…, token: …: what a label assigns is the secret when it is not a word (a digit or a symbol in it)."""
    return bool(separator.strip()) and bool(re.search(r"[\d\W_]", value)) and not _placeholder(value)


def _looks_like_password(value: str, separator: str, chinese_label: bool = False) -> bool:
    """After "password:" almost anything is the password; after a bare space ("密码 Test@2024") it must look like
    one (a digit or a symbol), so "password reset link" keeps its words; after 密码 and a space, a short code with a
    digit is one too (店门密码 2580#: no Latin word follows 密码). Placeholders are not passwords."""
    value = value.rstrip(".,;:!?")
    if not value or re.fullmatch(r"[\W_]+", value) or _placeholder(value):
        return False
    if separator.strip() or (chinese_label and re.search(r"\d", value)):
        return len(value) >= 4
    return bool(re.search(r"[\d\W_]", value)) and len(value) >= 6


def _a_passwords_state(value: str, separator: str) -> bool:
    """What a sentence says about a password after "is" or "was" (PASSWORD_STATE: empty, wrong, changed), not the
    password: "$SMTP_PASSWORD is empty in the nightly job", "the password's wrong"."""
    verb = re.search(r"\b(?:is|was)\b|^['’]s\b", separator) is not None
    return verb and patterns.PASSWORD_STATE.fullmatch(value.rstrip(".,;:!?")) is not None


def _inside_brackets(text: str, label_at: int, value: str) -> str:
    """The value without the bracket that closes the one the label sits in: MySQL's "(using password: YES)" says
    whether a password was sent, and "YES" is no password."""
    opened = text.rfind("(", 0, label_at) > text.rfind(")", 0, label_at)
    return value.split(")")[0] if opened and ")" in value and "(" not in value else value


def _unlike_a_word(value: str) -> bool:
    """A value that no sentence would say for its own sake: letters and digits with a symbol between, or at least
    three digits and two letters ("Hz@0517lin", "girassol#1983"); not a URL or a placeholder."""
    value = value.rstrip(".,;:!?")
    if len(value) < 6 or _placeholder(value) or "://" in value or not re.search(r"[a-z]", value):
        return False
    if not re.search(r"\d", value):
        return False
    symbol = re.search(r"[@#$%^&*!?_+=~]", value) is not None
    return symbol or (len(re.findall(r"\d", value)) >= 3 and len(re.findall(r"[a-z]", value)) >= 2)


def _cards_by_name(text: str) -> Iterator[tuple[int, int]]:
    """Card-shaped numbers with the card named beside them, whatever their check digit: a user who says it is their
    card is not wrong about what it is. Grouped in fours as the networks print them (GROUPED_CARD_NUMBER) after a
    card's or a bank's word (CARD_WORD) in the 40 characters before; any card shape (CARD_NUMBER) that starts as the
    networks issue (CARD_ISSUER_PREFIX) with a network's name or a card's kind (CARD_NAME) in the 40 characters before
    or the CARD_NAME_AFTER after; a number both grouped and issued so with a card spoken of within
    GROUPED_CARD_TALK characters either side; and one issued so, run together at a card's usual length, with its card
    number spoken of (CARD_NUMBER_TALK) as near."""
    for match in patterns.CARD_NUMBER.finditer(text):
        before = text[max(match.start() - 40, 0) : match.start()]
        after = text[match.end() : match.end() + patterns.CARD_NAME_AFTER]
        grouped = patterns.GROUPED_CARD_NUMBER.fullmatch(match.group()) is not None
        issued = patterns.CARD_ISSUER_PREFIX.match(re.sub(r"\D", "", match.group())) is not None
        named = issued and (patterns.CARD_NAME.search(before) or patterns.CARD_NAME.search(after))
        talk = text[max(match.start() - patterns.GROUPED_CARD_TALK, 0) : match.end() + patterns.GROUPED_CARD_TALK]
        run_together = match.group().isdigit() and len(match.group()) in patterns.CARD_RUN_LENGTHS
        spoken_of = issued and (
            (grouped and bool(patterns.CARD_WORD.search(talk) or patterns.CARD_NAME.search(talk)))
            or (run_together and patterns.CARD_NUMBER_TALK.search(talk) is not None)
        )
        if (named or spoken_of or (grouped and patterns.CARD_WORD.search(before))) and not _is_reference(
            text, match.start()
        ):
            yield match.span()


def _card(candidate: str) -> bool:
    return checks.valid_card(re.sub(r"\D", "", candidate))


def _is_reference(text: str, at: int) -> bool:
    return bool(patterns.REFERENCE_LABEL.search(text[max(at - 16, 0) : at].lower()))
