"""Request lines the SDK would drop: a lone UTF-16 surrogate, written as a JSON escape ("\\ud800") or as raw bytes.

The SDK's stdio reader parses each line with pydantic, which refuses both, and answers with an error that carries no
session id: the caller's session never gets an answer and the call never ends. Each lone surrogate is replaced by
U+FFFD before the SDK parses the line, as Go's JSON decoder (Dify's plugin daemon is written in Go) does when it
decodes one, so every parameter of every tool gets an answer.
"""

from __future__ import annotations

import re
from typing import Any

# A \uD800-\uDFFF escape, or a high-low pair of them (matched first, and kept), not itself escaped: only an even run
# of backslashes may stand before it ("\\\\ud800" is the text \ud800).
_SURROGATE_ESCAPES = re.compile(
    rb"(?<!\\)((?:\\\\)*)(\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
)
REPLACEMENT = rb"\ufffd"


def repair_line(line: bytes) -> bytes:
    """The request line with each lone surrogate (escaped or raw) replaced by U+FFFD; other lines unchanged."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        line = line.decode("utf-8", "replace").encode("utf-8")
    if b"\\u" not in line:
        return line
    return _SURROGATE_ESCAPES.sub(_repair, line)


def _repair(match: re.Match[bytes]) -> bytes:
    backslashes, escape = match.group(1), match.group(2)
    return match.group(0) if len(escape) == 12 else backslashes + REPLACEMENT


def repair_request_lines() -> None:
    """Have the SDK's stdio reader parse repaired lines (dify_plugin 0.x reads each line with
    `TypeAdapter(dict[str, Any]).validate_json(line)`; tested over the stdio protocol)."""
    from dify_plugin.core.server.stdio import request_reader
    from pydantic import TypeAdapter

    class RepairingAdapter:
        """TypeAdapter as the reader uses it, parsing the repaired line (TypeAdapter itself is final)."""

        def __init__(self, type_: Any) -> None:
            self._adapter: TypeAdapter[Any] = TypeAdapter(type_)

        def validate_json(self, data: str | bytes | bytearray, /, *args: Any, **kwargs: Any) -> Any:
            raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
            return self._adapter.validate_json(repair_line(raw), *args, **kwargs)

    request_reader.TypeAdapter = RepairingAdapter
