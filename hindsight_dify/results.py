"""What a tool call returns: a text for the chat, a JSON object, and the variables a workflow wires."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hindsight_insights.errors import InvalidInput, NotFound, WeaviateUnavailable


@dataclass
class ToolResult:
    text: str
    json: dict[str, Any]
    variables: dict[str, Any] = field(default_factory=dict)


def error_result(error: Exception) -> ToolResult:
    kinds = {InvalidInput: "invalid_input", NotFound: "not_found", WeaviateUnavailable: "weaviate_unavailable"}
    kind = next((name for cls, name in kinds.items() if isinstance(error, cls)), "error")
    problems = [{"field": f, "rule": r} for f, r in error.problems] if isinstance(error, InvalidInput) else []
    body: dict[str, Any] = {"type": kind, "message": str(error)}
    if problems:
        body["problems"] = problems
    return ToolResult(text=f"Error ({kind}): {error}", json={"error": body})
