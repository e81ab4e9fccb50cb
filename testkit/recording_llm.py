"""A stand-in for a Dify tool session's `model.llm` (backwards invocation), for in-process tests: it records each
invoke and answers with the SDK's own LLMResult, or raises as the SDK raises a failed backwards call (a bare Exception
with Dify's message). Through the real daemon, testkit/inner_api.py answers instead."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from testkit.sdk import AssistantPromptMessage, LLMResult, LLMUsage


@dataclass
class RecordingLlm:
    replies: list[str | Exception]
    calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 3100  # the usage Dify reports back with each answer
    completion_tokens: int = 140

    def invoke(
        self,
        model_config: Any,
        prompt_messages: list[Any],
        tools: list[Any] | None = None,
        stop: list[str] | None = None,
        stream: bool = True,
    ) -> Any:
        self.calls.append({"model_config": model_config, "prompt_messages": prompt_messages, "stream": stream})
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        tokens = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}
        usage = LLMUsage.empty_usage().model_copy(update=tokens)
        return LLMResult(model=model_config["model"], message=AssistantPromptMessage(content=reply), usage=usage)
