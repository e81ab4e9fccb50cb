"""Tool parameters as Dify sends them: blanks for empty fields, strings for numbers, lists as text."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from hindsight_dify.credentials import blank_to_none
from hindsight_insights.errors import InvalidInput


def text(params: Mapping[str, Any], name: str) -> str | None:
    value = blank_to_none(params.get(name))
    return None if value is None else str(value).strip()


def text_list(params: Mapping[str, Any], name: str) -> list[str]:
    """A list parameter: a JSON array, or text separated by commas, 、 or new lines."""
    value = blank_to_none(params.get(name))
    if value is None:
        return []
    if isinstance(value, list):
        return [str(item).strip() for item in value if str(item).strip()]
    raw = str(value).strip()
    if raw.startswith("["):
        try:
            loaded = json.loads(raw)
        except json.JSONDecodeError:
            raise InvalidInput([(name, "looks like a JSON array but is not valid JSON")]) from None
        if not isinstance(loaded, list):
            raise InvalidInput([(name, "must be a JSON array or comma-separated text")])
        return [str(item).strip() for item in loaded if str(item).strip()]
    return [part.strip() for part in re.split(r"[,，、\n]", raw) if part.strip()]


def boolean(params: Mapping[str, Any], name: str) -> bool:
    value = blank_to_none(params.get(name))
    if value is None or isinstance(value, bool):
        return bool(value)
    lowered = str(value).strip().lower()
    if lowered in ("true", "1", "yes", "是"):
        return True
    if lowered in ("false", "0", "no", "否"):
        return False
    raise InvalidInput([(name, f"must be true or false, not {value!r}")])


def number(params: Mapping[str, Any], name: str, kind: Callable[[str], float | int]) -> Any:
    value = text(params, name)
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        raise InvalidInput([(name, f"must be a number, not {value!r}")]) from None


def recent_turns(query: str) -> list[str]:
    """The recent turns: a JSON array of strings, or text with one turn per line."""
    if query.startswith("["):
        try:
            loaded = json.loads(query)
        except json.JSONDecodeError:
            loaded = None
        if isinstance(loaded, list) and all(isinstance(item, str) for item in loaded):
            return loaded
    return [line for line in query.splitlines() if line.strip()]
