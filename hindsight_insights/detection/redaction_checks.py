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
from stdnum import iban, luhn
from stdnum.cn import ric

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
_PERSONAL_LINES = {
    phonenumbers.PhoneNumberType.MOBILE,
    phonenumbers.PhoneNumberType.FIXED_LINE_OR_MOBILE,
    phonenumbers.PhoneNumberType.PERSONAL_NUMBER,
    phonenumbers.PhoneNumberType.VOIP,
    phonenumbers.PhoneNumberType.PAGER,
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
        if plugin.calculate_shannon_entropy(token) >= plugin.entropy_limit:
            found.append(match.span())
    return found


def personal_phones(text: str) -> list[Span]:
    """Mobile (or maybe-mobile) numbers, mainland by default and any country written with +: phonenumbers."""
    found = []
    for match in phonenumbers.PhoneNumberMatcher(text, "CN", leniency=phonenumbers.Leniency.VALID):
        if phonenumbers.number_type(match.number) in _PERSONAL_LINES:
            found.append((match.start, match.end))
    return found


def valid_resident_id(number: str) -> bool:
    return bool(ric.is_valid(number.upper()))


def valid_iban(number: str) -> bool:
    return bool(iban.is_valid(number))


def valid_card(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and bool(luhn.is_valid(digits))
