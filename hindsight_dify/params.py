"""Tool parameters as Dify sends them: blanks for empty fields, strings for numbers, lists as text.

Each accessor converts as documented or raises InvalidInput naming the parameter: a number given for text is used
as its digits; an object, a list or a boolean given for text is refused; numbers must be finite, and whole where a
count is asked for; an id (a user or a session) is one line of at most 128 characters, as the core stores ids.
Text that is not Unicode (an unpaired surrogate, such as a JSON "\\ud800" escape) is refused as the call comes in,
whichever parameter holds it: no UTF-8 writer (the protocol's answer, a log line, Weaviate) can take it, and the
SDK, failing to write the answer, would leave the call without one.

`Parameters` remembers what it was asked for, so that a call can report the parameters it ignored (for example a
`user_id` that a model added in an agent node: identity never comes from the model).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from hindsight_dify.credentials import blank_to_none
from hindsight_insights.errors import InvalidInput

# Parameters that name a user or a session; models.Identifier holds ids to these limits.
IDENTIFIERS = frozenset({"end_user_id", "target_user_id", "session_id", "evidence_session_id"})
MAX_IDENTIFIER = 128


class Parameters:
    def __init__(self, values: Mapping[str, Any]) -> None:
        refuse_non_unicode(values, "")
        self._values = values
        self._read: set[str] = set()

    def _get(self, name: str) -> Any:
        self._read.add(name)
        return blank_to_none(self._values.get(name))

    def ignored(self) -> list[str]:
        """Parameters that were given (not blank) and that the operation never read."""
        return sorted(
            name for name, value in self._values.items() if name not in self._read and value not in ("", None)
        )

    def text(self, name: str) -> str | None:
        value = self._get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InvalidInput([(name, f"must be text, not {_kind(value)}")])
        text = str(value).strip() or None
        if text is not None and name in IDENTIFIERS:
            _check_identifier(name, text)
        return text

    def text_list(self, name: str) -> list[str]:
        """A list parameter: a JSON array of texts, or text separated by commas, 、 or new lines."""
        value = self._get(name)
        if value is None:
            return []
        if isinstance(value, str) and value.strip().startswith("["):
            try:
                value = json.loads(value)
            except (json.JSONDecodeError, RecursionError):
                raise InvalidInput([(name, "looks like a JSON array but is not valid JSON")]) from None
        if isinstance(value, list):
            if not all(isinstance(item, str | int | float) and not isinstance(item, bool) for item in value):
                raise InvalidInput([(name, "must be a list of texts")])
            refuse_non_unicode({name: value}, "")  # a JSON escape inside the text decodes to one
            return [str(item).strip() for item in value if str(item).strip()]
        if not isinstance(value, str):
            raise InvalidInput([(name, "must be a JSON array or comma-separated text")])
        return [part.strip() for part in re.split(r"[,，、\n]", value) if part.strip()]

    def mapping(self, name: str) -> dict[str, Any] | None:
        """An object parameter (a model selector's value): a JSON object, or its text."""
        value = self._get(name)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except (json.JSONDecodeError, RecursionError):
                raise InvalidInput([(name, "must be a JSON object, not text")]) from None
        if not isinstance(value, dict):
            raise InvalidInput([(name, f"must be a JSON object, not {_kind(value)}")])
        refuse_non_unicode({name: value}, "")
        return value

    def boolean(self, name: str) -> bool:
        value = self._get(name)
        if value is None or isinstance(value, bool):
            return bool(value)
        lowered = str(value).strip().lower()
        if lowered in ("true", "1", "yes", "是"):
            return True
        if lowered in ("false", "0", "no", "否"):
            return False
        raise InvalidInput([(name, f"must be true or false, not {value!r}")])

    def number(self, name: str, low: float, high: float) -> float | None:
        value = self._get(name)
        if value is None:
            return None
        number = _finite(name, value)
        if not low <= number <= high:
            raise InvalidInput([(name, f"must be between {low:g} and {high:g}, not {number:g}")])
        return number

    def whole_number(self, name: str, low: int, high: int) -> int | None:
        number = self.number(name, low, high)
        if number is None:
            return None
        if not number.is_integer():
            raise InvalidInput([(name, f"must be a whole number between {low} and {high}, not {number:g}")])
        return int(number)


def _check_identifier(name: str, text: str) -> None:
    if len(text) > MAX_IDENTIFIER:
        raise InvalidInput([(name, f"is an id of at most {MAX_IDENTIFIER} characters, not {len(text)}")])
    if any(unicodedata.category(ch) == "Cc" for ch in text):
        raise InvalidInput([(name, "is an id: one line, without control characters")])


def has_surrogate(value: Any) -> bool:
    """Whether a text, or any text inside a list or an object, holds an unpaired surrogate (not Unicode)."""
    if isinstance(value, str):
        return any("\ud800" <= ch <= "\udfff" for ch in value)
    if isinstance(value, Mapping):
        return any(has_surrogate(key) or has_surrogate(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(has_surrogate(item) for item in value)
    return False


def printable_name(name: str) -> str:
    """A parameter name as it can be written: an unpaired surrogate shown as its escape."""
    return name.encode("utf-8", "backslashreplace").decode()


def refuse_non_unicode(values: Mapping[str, Any], what: str) -> None:
    """InvalidInput naming every entry of `values` (parameters, credentials) whose name or value holds an unpaired
    surrogate. Nothing of the value is echoed."""
    problems = [
        (
            f"{what}{printable_name(str(name))}",
            "holds an unpaired surrogate (such as \\ud800), which is not a "
            "character: remove it or send the text as valid UTF-8",
        )
        for name, value in values.items()
        if has_surrogate(name) or has_surrogate(value)
    ]
    if problems:
        raise InvalidInput(problems)


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidInput([(name, f"must be a number, not {_kind(value)}")])
    try:
        number = float(value)
    except ValueError:
        raise InvalidInput([(name, f"must be a number, not {value!r}")]) from None
    if not math.isfinite(number):
        raise InvalidInput([(name, f"must be a finite number, not {value!r}")])
    return number


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def recent_turns(query: str) -> list[str]:
    """The recent turns: a JSON array of strings, or text with one turn per line."""
    if query.startswith("["):
        try:
            loaded = json.loads(query)
        except (json.JSONDecodeError, RecursionError):
            loaded = None
        if isinstance(loaded, list) and all(isinstance(item, str) for item in loaded):
            refuse_non_unicode({"query": loaded}, "")
            return loaded
    return [line for line in query.splitlines() if line.strip()]
