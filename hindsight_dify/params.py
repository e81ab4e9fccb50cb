"""Tool parameters as Dify sends them: blanks for empty fields, strings for numbers, lists as text.

Each accessor converts as documented or raises InvalidInput naming the parameter: a number given for text is used
as its digits; an object, a list or a boolean given for text is refused; numbers must be finite, and whole where a
count is asked for. `Parameters` remembers what it was asked for, so that a call can report the parameters it
ignored (for example a `user_id` that a model added in an agent node: identity never comes from the model).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from hindsight_dify.credentials import blank_to_none
from hindsight_insights.errors import InvalidInput


class Parameters:
    def __init__(self, values: Mapping[str, Any]) -> None:
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
        return str(value).strip() or None

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
            return loaded
    return [line for line in query.splitlines() if line.strip()]
