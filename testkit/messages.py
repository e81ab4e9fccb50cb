"""What a tool call returns, the same for every runtime: Dify's tool messages, and the error a runtime reports.

A tool node in Dify sees exactly these messages: text, json and variable messages (plus files, which this plugin
never sends). Each runtime client (stdio, PluginRunner, daemon) turns its wire format into `ToolOutput` or raises
`PluginError`, so one assertion helper serves all three.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


class PluginError(Exception):
    """The runtime answered the call with an error instead of tool messages."""

    def __init__(self, error_type: str, message: str, raw: Any = None) -> None:
        self.error_type = error_type
        self.message = message
        self.raw = raw
        super().__init__(f"{error_type}: {message}")


@dataclass
class ToolOutput:
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        return [m["message"]["text"] for m in self.messages if m["type"] == "text"]

    @property
    def json(self) -> dict[str, Any]:
        (body,) = [m["message"]["json_object"] for m in self.messages if m["type"] == "json"]
        return body  # type: ignore[no-any-return]

    @property
    def variables(self) -> dict[str, Any]:
        return {
            m["message"]["variable_name"]: m["message"]["variable_value"]
            for m in self.messages
            if m["type"] == "variable"
        }

    @property
    def types(self) -> list[str]:
        return [str(m["type"]) for m in self.messages]


def credentials_for(url: str, grpc_port: int, project: str, api_key: str, **changes: str) -> dict[str, Any]:
    """The provider credentials as Dify sends them: every field, blanks included, all strings."""
    return {
        "weaviate_url": url,
        "weaviate_api_key": api_key,
        "weaviate_grpc_host": "",
        "weaviate_grpc_port": str(grpc_port),
        "project": project,
        "embedder": "use-m3",
        "embedding_base_url": "",
        "embedding_api_key": "",
        "embedding_model": "",
        "language": "zh",
        "top_k": "5",
        "score_threshold": "0.17",
        **changes,
    }


def parse_session_error(text: str, raw: Any) -> PluginError:
    """The plugin's `{"error_type", "message"}`, as a runtime wraps it: the CLI puts it in a string, the daemon
    nests it in another such object (error_type PluginInvokeError) whose message is that string."""
    error_type, message = "unknown", text
    while message.lstrip().startswith("{"):
        try:
            inner = json.loads(message)
        except json.JSONDecodeError:
            break
        if not isinstance(inner, dict) or "message" not in inner:
            break
        error_type, message = str(inner.get("error_type", error_type)), str(inner["message"])
    return PluginError(error_type, message, raw=raw)


def error_of(output: ToolOutput) -> dict[str, Any]:
    """The `{"error": ...}` body of a failed call, after checking its text says so without a stack trace."""
    text = output.texts[0]
    assert text.startswith("Error ("), output.texts
    assert "Traceback" not in text and 'File "' not in text, text
    return output.json["error"]  # type: ignore[no-any-return]
