"""The library half of redaction: formats and checksums that maintained libraries know better than a regex.

- detect-secrets' FORMAT plugins (AWS, JWT, GitHub, GitLab, Slack, Stripe, basic auth, npm,
  PyPI, SendGrid, Twilio, …). Its high-entropy plugins are made for code: on prose they flag most texts (Chinese
  above all), so their entropy measure is used only on long tokens with no spaces, letters and digits mixed, never
  hex (commit hashes), with the library's own limit;
- phonenumbers for phone numbers, mainland and international: mobile numbers (and numbers that may be mobile)
  everywhere; fixed lines, toll-free and shared-cost business lines (400-…, 0571-…) stay, they are public;
- python-stdnum for checksummed identifiers: cn.ric (resident ID: birth date and GB 11643 check digit), iban,
  luhn (13–19 digit cards, UnionPay 62 included).

Every finder takes the text and returns (start, end) spans in that text; the caller maps them back to the source.
"""

from __future__ import annotations

import datetime
import functools
import re

import phonenumbers
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector
from stdnum import iban, luhn, numdb
from stdnum.cn import ric
from stdnum.exceptions import ValidationError

from hindsight_insights.detection import redaction_patterns as patterns

Span = tuple[int, int]

# Not PrivateKeyDetector: it flags the header line alone (also in prose about PEM files); the block rule
# (redaction_patterns.PRIVATE_KEY) takes a key from its header to its footer.
_FORMAT_PLUGINS: tuple[type[RegexBasedDetector], ...] = (
    ArtifactoryDetector,
    AWSKeyDetector,
    AzureStorageKeyDetector,
    BasicAuthDetector,
    DiscordBotTokenDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    JwtTokenDetector,
    MailchimpDetector,
    NpmDetector,
    OpenAIDetector,
    PypiTokenDetector,
    SendGridDetector,
    SlackDetector,
    SquareOAuthDetector,
    StripeDetector,
    TelegramBotTokenDetector,
    TwilioKeyDetector,
)
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{32,}(?![A-Za-z0-9+/=_-])")
# Kept, whatever their entropy: hashes and UUID-like hex, and words-with-dashes (slugs, file names).
_NOT_A_KEY = re.compile(r"[0-9a-fA-F-]+|[a-z-]+|[A-Za-z_-]+")
# A Subresource Integrity hash (package-lock.json's "integrity", <script integrity>): the hash's name, then base64.
_INTEGRITY_HASH = re.compile(r"sha(?:256|384|512)-")
# An SSH public key's body after its algorithm's name (ssh-ed25519 AAAAC3…): public, meant to be shared; and its
# fingerprint as ssh prints it (SHA256:y9NI…), the hash of that public key, which people compare aloud.
_PUBLIC_KEY_BEFORE = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)\s+$|\bSHA256:$"
)
_PERSONAL_LINES = {
    phonenumbers.PhoneNumberType.MOBILE,
    phonenumbers.PhoneNumberType.FIXED_LINE_OR_MOBILE,
    phonenumbers.PhoneNumberType.PERSONAL_NUMBER,
    phonenumbers.PhoneNumberType.VOIP,
    phonenumbers.PhoneNumberType.PAGER,
}
# Public business lines: kept even when written with +CC (+86 400 …, +1 800 …).
_BUSINESS_LINES = {
    phonenumbers.PhoneNumberType.TOLL_FREE,
    phonenumbers.PhoneNumberType.SHARED_COST,
    phonenumbers.PhoneNumberType.PREMIUM_RATE,
    phonenumbers.PhoneNumberType.UAN,
}


@functools.cache
def _plugins() -> tuple[RegexBasedDetector, ...]:
    return tuple(plugin() for plugin in _FORMAT_PLUGINS)


@functools.cache
def _entropy_plugin() -> Base64HighEntropyString:
    return Base64HighEntropyString()


def format_secrets(text: str) -> list[tuple[Span, str]]:
    """Secrets in detect-secrets' known formats, with the plugin's secret type (case-sensitive text). The plugins'
    own patterns, run with finditer for the span: a group that starts after the match's start is the secret after
    its context (basic auth's password after "://user:"), otherwise the whole match is (a group at the start is a
    prefix alternative, like GitHub's (ghp|gho|…)_)."""
    found: list[tuple[Span, str]] = []
    for plugin in _plugins():
        for pattern in plugin.denylist:
            for match in pattern.finditer(text):
                inner = [i for i in range(1, (match.re.groups or 0) + 1) if match.start(i) > match.start()]
                span = match.span(inner[-1]) if inner else match.span()
                if span[1] - span[0] >= 3:
                    found.append((span, plugin.secret_type))
    return found


def high_entropy_tokens(text: str) -> list[Span]:
    """Long unbroken tokens (32+ characters, letters and digits mixed, not hex) as random as a key: detect-secrets'
    base64 entropy limit (4.5 bits a character), on the token alone, never on prose."""
    plugin = _entropy_plugin()
    found = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if _NOT_A_KEY.fullmatch(token) or not (re.search(r"\d", token) and re.search(r"[A-Za-z]", token)):
            continue
        if _PUBLIC_KEY_BEFORE.search(text[max(match.start() - 40, 0) : match.start()]):
            continue
        if _INTEGRITY_HASH.match(token):
            continue  # sha512-… in a lock file or a script tag: a file's hash (Subresource Integrity), no key
        if plugin.calculate_shannon_entropy(token) >= plugin.entropy_limit:
            found.append(match.span())
    return found


def personal_phones(text: str) -> list[Span]:
    """Mobile (or maybe-mobile) numbers: phonenumbers over the text read as mainland (any country written with + or
    00 too), then read as each region the text names or dials (`phone_regions`: a country word, another +CC number)
    for numbers written in that country's own format (07911 123456 beside "UK"); and a number after a phone label
    (手机, phone, WhatsApp …) that is no mainland number, read as each of the common regions (REGIONS); a number
    in the North American shape, (415) 555-2671, is read as North American wherever it is. A number written in
    international form (`international_phones`) goes whatever its line type, unless it is a business line."""
    found = international_phones(text)
    regions = phone_regions(text)
    for region in ("CN", *regions):
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            if region == "CN" and patterns.NANP_WITH_ONE.fullmatch(match.raw_string.strip()):
                continue  # 1-800-222-1222 is North America's way of writing (read below), no mainland mobile
            line = phonenumbers.number_type(match.number)
            if line in _PERSONAL_LINES or (region == "CN" and _personal_landline(text, match, line, regions)):
                found.append((match.start, match.end))
    # (and 3-3-4 with one kind of separator, 312-555-0147 on a contact sheet: no other numbering writes a phone so)
    nanp_grouped = patterns.NANP_GROUPED_ALONE.finditer(text)
    for nanp in (*patterns.NANP_NUMBER.finditer(text), *patterns.NANP_WITH_ONE.finditer(text), *nanp_grouped):
        number = _parses_as(nanp.group(), "US")
        if number is not None and phonenumbers.number_type(number) in _PERSONAL_LINES:
            found.append(nanp.span())
    for grouped in patterns.NATIONAL_GROUPED.finditer(text):
        # (a product code's label before it makes it a reference: redaction's caller drops those spans)
        if 10 <= len(re.sub(r"\D", "", grouped.group())) <= 11 and _mobile_abroad(grouped.group()):
            found.append(grouped.span())
    for labelled in patterns.PHONE_LABELLED.finditer(text):
        value = labelled["value"]
        landline = patterns.MAINLAND_LANDLINE_SHAPE.fullmatch(value.strip()) and not _public_line(
            text, labelled.start("value")
        )
        # (a home line after "ring me at home on", "call me on": the user's own, wherever it is; or a person's, named)
        label = labelled.group()[: labelled.start("value") - labelled.start()]
        own = patterns.OWN_PHONE_LABEL.search(label) or patterns.PERSON_TO_CALL.search(label)
        if labelled["foreign"] and not own:
            continue
        if _personal_abroad(value, own_line=own is not None) or landline:
            found.append(labelled.span("value"))
    return [span for span in found if not _part_of_an_identifier(text, *span)]


# An IPv4 address or network (198.51.100.0/24): its digits and dots may read as a phone number.
_IP_ADDRESS = re.compile(r"(?<![\d+.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")


def _part_of_an_identifier(text: str, start: int, end: int) -> bool:
    """Digits that are the tail of a code with Latin letters or digits glued before them (a tracking number,
    LP00612345678901), or an IP address: no one's phone number."""
    before = text[start - 1] if start else ""
    addresses = _IP_ADDRESS.finditer(text[start:end])
    in_an_address = any(all(int(octet) <= 255 for octet in match.group().split(".")) for match in addresses)
    return (before.isascii() and before.isalnum()) or in_an_address


def _personal_landline(text: str, match: phonenumbers.PhoneNumberMatch, line: int, regions: list[str]) -> bool:
    """A mainland fixed line (010-6234 5678, (0755) 8888 8888) is someone's home or desk: it goes, unless a label
    before it makes it a business's public line (客服, 热线, 总机, hotline, switchboard, fax) or the text names a
    country whose own numbering reads it (020 7946 0958 beside "London" is a London number)."""
    if line != phonenumbers.PhoneNumberType.FIXED_LINE:
        return False
    # Dialled as a phone number: the trunk 0 or the country code 86 first (2024-004471 is no Guangzhou number), and
    # not the tail of an identifier (INV-2024-…, v2.0-…).
    if not re.match(r"[(（]?\s*(?:0|\+?86|0086)", match.raw_string):
        return False
    # Nobody writes a Chinese phone number in pairs of digits: 03 11 17 22 28 31 is a list of figures (lottery balls).
    if re.fullmatch(r"\d{2}(?:\s\d{2}){3,}", match.raw_string.strip()):
        return False
    if match.start and re.match(r"[\w.\-/#]", text[match.start - 1], re.ASCII):
        return False
    if _public_line(text, match.start):
        return False
    return not any(_parses_as(match.raw_string, region) is not None for region in regions)


def international_phones(text: str) -> list[Span]:
    """Numbers dialled in international form, +CC or 00CC (also "(+44) 20 …", "+44 (0)20 …", glued to Chinese
    text): someone gave out a number abroad, a fixed line included. Read with the prose leniency POSSIBLE (the length
    fits the country's plan), since a country's metadata lags behind its new ranges and the + already says it is a
    phone number. Toll-free, shared-cost, premium and UAN lines stay: they are businesses' public lines."""
    found = []
    for match in phonenumbers.PhoneNumberMatcher(text, "CN", leniency=phonenumbers.Leniency.POSSIBLE):
        raw = match.raw_string.lstrip("(")
        if not (raw.startswith("+") or re.match(r"00[1-9]", raw)) or match.number.country_code is None:
            continue
        if match.start and re.match(r"[\d.,]", text[match.start - 1]):  # the tail of a figure: 128,000.00
            continue
        valid = phonenumbers.is_valid_number(match.number)
        if valid and phonenumbers.number_type(match.number) in _BUSINESS_LINES:
            continue
        found.append((match.start, match.end))
    return found


def phone_regions(text: str) -> list[str]:
    """The regions a text points at, in a fixed order: its country words (patterns.REGION_CUES) and the countries of
    the +CC numbers in it (a text that dials +44 once may write its other UK numbers nationally)."""
    lowered = text.lower()
    regions = [region for region, cue in patterns.REGION_CUES if cue.search(lowered)]
    for match in phonenumbers.PhoneNumberMatcher(text, "ZZ", leniency=phonenumbers.Leniency.VALID):
        code = match.number.country_code  # its main region: +44 is GB (region_code_for_number may say GG)
        region = phonenumbers.region_code_for_country_code(code) if code is not None else None
        if region and region not in ("CN", "ZZ"):
            regions.append(region)
    return list(dict.fromkeys(regions))


def _personal_abroad(candidate: str, own_line: bool = False) -> bool:
    """A labelled number that mainland numbering does not know (a mainland hotline keeps mainland's reading) and
    that is a personal line in one of the common regions; or any line but a business's, when the label says it is
    the writer's own or a person's (`own_line`: "ring me at home on (02) 5550 4187", "Appelez Maëlle au …"), and
    then even a number no range is allocated to yet, of eight digits or more and a length some region dials: the
    label says what it is, as a wrong check digit does not unmake a labelled ID."""
    north_american = patterns.NANP_NUMBER.search(candidate) or patterns.NANP_GROUPED.fullmatch(candidate.strip())
    if not north_american and _parses_as(candidate, "CN") is not None:
        return False
    for region in patterns.REGIONS:
        number = _parses_as(candidate, region)
        if number is None:
            continue
        line = phonenumbers.number_type(number)
        if line in _PERSONAL_LINES or (own_line and line == phonenumbers.PhoneNumberType.FIXED_LINE):
            return True
    return (
        own_line
        and len(re.sub(r"\D", "", candidate)) >= 8
        and any(_possible_as(candidate, region) for region in patterns.REGIONS)
    )


def _possible_as(candidate: str, region: str) -> bool:
    """A number of the length `region` dials (phonenumbers' is_possible_number), whatever its range."""
    try:
        return bool(phonenumbers.is_possible_number(phonenumbers.parse(candidate, region)))
    except phonenumbers.NumberParseException:
        return False


_NATIONAL = phonenumbers.PhoneNumberFormat.NATIONAL


def _mobile_abroad(candidate: str) -> bool:
    """A number written as a national mobile (NATIONAL_GROUPED) that no mainland numbering reads and that a common
    region's reads as a mobile, grouped as that region writes its numbers: someone's phone, label or not (06 12 34 56
    78 in a French notice). The grouping tells a phone from figures that happen to be valid digits: the draw
    04 09 15 27 33 would be an Australian mobile, which Australians write 0409 152 733."""
    if _parses_as(candidate, "CN") is not None:
        return False
    return any(
        (number := _parses_as(candidate, region)) is not None
        and phonenumbers.number_type(number) == phonenumbers.PhoneNumberType.MOBILE
        and _grouping(phonenumbers.format_number(number, _NATIONAL)) == _grouping(candidate)
        for region in patterns.REGIONS
    )


def _grouping(number: str) -> list[int]:
    """The sizes of a number's groups of digits: 06 12 34 56 78 is [2, 2, 2, 2, 2]."""
    return [len(group) for group in re.findall(r"\d+", number)]


def _public_line(text: str, start: int) -> bool:
    """A label just before the number makes it a business's public line: 客服电话, 热线, 总机, hotline, fax."""
    return bool(patterns.PUBLIC_LINE_LABEL.search(text[max(start - 24, 0) : start].lower()))


def _parses_as(candidate: str, region: str) -> phonenumbers.PhoneNumber | None:
    try:
        number = phonenumbers.parse(candidate, region)
    except phonenumbers.NumberParseException:
        return None
    return number if phonenumbers.is_valid_number(number) else None


def valid_resident_id(number: str) -> bool:
    """An 18-character resident ID, written whole or in groups: its GB 11643 check digit (ISO 7064 MOD 11-2), a real
    birth date, and a province python-stdnum knows. Not stdnum's full `ric.is_valid`: that also wants the county
    code to have existed in the birth year, but a county code is that of where the number was issued, often years
    later (510107, 武侯区 since 1990, is on IDs of people born in 1978), so real numbers would pass unredacted."""
    compact = re.sub(r"[\s-]", "", number).upper()
    if not re.fullmatch(r"\d{17}[\dX]", compact) or ric.calc_check_digit(compact) != compact[-1]:
        return False
    try:
        born = ric.get_birth_date(compact)
    except ValidationError:
        return False
    return 1900 <= born.year <= datetime.date.today().year and _known_province(compact[:2])


def resident_id_shape(number: str) -> bool:
    """18 characters with a known province and a real birth date, whatever the check digit: a resident ID someone
    typed wrong is still theirs."""
    compact = re.sub(r"[\s-]", "", number).upper()
    if not re.fullmatch(r"\d{17}[\dX]", compact):
        return False
    try:
        born = datetime.date(int(compact[6:10]), int(compact[10:12]), int(compact[12:14]))
    except ValueError:
        return False
    return 1900 <= born.year <= datetime.date.today().year and _known_province(compact[:2])


@functools.cache
def _known_province(code: str) -> bool:
    return any("province" in properties for _, properties in numdb.get("cn/loc").info(code))


def valid_iban(number: str) -> bool:
    """The IBAN's own check (ISO 7064 mod 97) and its country's length and structure. Not the country modules' bank
    registries: stdnum's Belgian module refuses "BE68 5390 0754 7034", the textbook example, for a bank code missing
    from its list, and a bank missing from a list still holds someone's money."""
    try:
        return bool(iban.validate(number, check_country=False))
    except ValueError:
        return False


def iban_shaped(number: str) -> bool:
    """An IBAN whose country and account structure are right, whatever its check digits: "NL16 RABO 0312 4587 90",
    its check digits recomputed, is a valid Dutch IBAN, so the user mistyped a digit of a real account (the bank's
    app said "IBAN ongeldig"). The structure is fixed per country (four letters and ten digits for the Netherlands),
    so little but an account number has it; the caller still wants a word of banking beside it (a specification's
    example with a digit changed is no one's account)."""
    compact = iban.compact(number)
    if len(compact) < 15 or not compact[:2].isalpha():
        return False
    try:
        return valid_iban(compact[:2] + iban.calc_check_digits(compact) + compact[4:])
    except ValueError:
        return False


def valid_card(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and bool(luhn.is_valid(digits))
