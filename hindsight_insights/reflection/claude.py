"""Reflection with Claude, through the official `anthropic` SDK.

- The answer's shape: `output_config.format` with the JSON schema (structured outputs; the default), or a forced
  tool (`tools` + `tool_choice: {"type": "tool"}`) for models that take forced tool use. The current Sonnet and Opus
  (5.5) answer forced tool use with a 400, hence the default.
- Prompt caching: the system part is one text block with `cache_control`: the static instructions, and before them
  in the cache order a forced tool's definition, are read from the cache after the first call. Below the model's
  minimum cacheable length nothing is cached; the report's cached share shows it.
- Timeouts and retries are the SDK's own: `timeout` and `max_retries` from the settings; the SDK backs off
  exponentially (honouring retry-after) on 408, 409, 429, 5xx and connection errors.
- `request` builds the parameters once for both a direct call and a Message Batches request (batch.py).
"""

from __future__ import annotations

import logging
from typing import Literal

import anthropic
import httpx2
from anthropic.types import Message, MessageParam, OutputConfigParam, TextBlockParam, ToolParam
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

from hindsight_insights.config import AnthropicOutput, Effort, Settings
from hindsight_insights.reflection.llm import LlmAnswer, LlmError
from hindsight_insights.reflection.output import OutputSchema

log = logging.getLogger(__name__)

CacheTtl = Literal["5m", "1h"]


class AnthropicReflector:
    """A `Reflector` over the Messages API."""

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        model: str,
        output: AnthropicOutput = "json_schema",
        effort: Effort | None = None,
        max_tokens: int = 8192,
    ) -> None:
        self._client = client
        self._model = model
        self._output: AnthropicOutput = output
        self._effort: Effort | None = effort
        self._max_tokens = max_tokens

    @classmethod
    def from_settings(cls, settings: Settings, *, http_client: httpx2.Client | None = None) -> AnthropicReflector:
        """The client the settings describe. `http_client` is for a proxy or custom transport (tests mock it)."""
        client = anthropic.Anthropic(
            api_key=settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else None,
            base_url=settings.anthropic_base_url,
            timeout=httpx2.Timeout(settings.llm_timeout_s, connect=min(10.0, settings.llm_timeout_s)),
            max_retries=settings.llm_max_retries,
            http_client=http_client,
        )
        return cls(
            client,
            model=settings.anthropic_model,
            output=settings.anthropic_output,
            effort=settings.anthropic_effort,
            max_tokens=settings.reflection_max_output_tokens,
        )

    @property
    def name(self) -> str:
        return "anthropic"

    @property
    def model(self) -> str:
        return self._model

    @property
    def client(self) -> anthropic.Anthropic:
        return self._client

    def request(
        self, system: str, user: str, schema: OutputSchema, *, cache_ttl: CacheTtl = "5m"
    ) -> MessageCreateParamsNonStreaming:
        """The Messages API parameters of one reflection."""
        system_block: TextBlockParam = {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
        if cache_ttl != "5m":
            system_block["cache_control"] = {"type": "ephemeral", "ttl": cache_ttl}
        messages: list[MessageParam] = [{"role": "user", "content": user}]
        params: MessageCreateParamsNonStreaming = {
            "model": self._model,
            "max_tokens": self._max_tokens,
            "system": [system_block],
            "messages": messages,
        }
        output_config: OutputConfigParam = {}
        if self._effort is not None:
            output_config["effort"] = self._effort
        if self._output == "tool":
            tool: ToolParam = {
                "name": schema.name,
                "description": schema.description,
                "input_schema": schema.json_schema,
                "strict": True,
            }
            params["tools"] = [tool]
            params["tool_choice"] = {"type": "tool", "name": schema.name, "disable_parallel_tool_use": True}
        else:
            output_config["format"] = {"type": "json_schema", "schema": schema.json_schema}
        if output_config:
            params["output_config"] = output_config
        return params

    def reflect(self, system: str, user: str, schema: OutputSchema) -> LlmAnswer:
        try:
            message = self._client.messages.create(**self.request(system, user, schema))
        except anthropic.APIStatusError as error:
            raise LlmError(f"Anthropic API answered {error.status_code}: {_message_of(error)}") from error
        except anthropic.APIError as error:  # connection errors and timeouts, after the SDK's retries
            raise LlmError(f"Anthropic API unreachable: {error}") from error
        return self.answer(message, schema)

    def answer(self, message: Message, schema: OutputSchema) -> LlmAnswer:
        """What a Messages API response says, with its usage. Used for direct calls and batch results alike."""
        usage = message.usage
        cache_read = usage.cache_read_input_tokens or 0
        cache_write = usage.cache_creation_input_tokens or 0
        refusal = None
        if message.stop_reason == "refusal":
            details = message.stop_details
            refusal = (details.explanation or details.category or "refusal") if details else "refusal"
        tool_inputs = [
            block.input for block in message.content if block.type == "tool_use" and block.name == schema.name
        ]
        text = "".join(block.text for block in message.content if block.type == "text")
        return LlmAnswer(
            content=tool_inputs[0] if tool_inputs else text,
            # input_tokens counts only what follows the last cache breakpoint: the whole prompt is the sum.
            tokens_in=usage.input_tokens + cache_read + cache_write,
            tokens_out=usage.output_tokens,
            cached_tokens=cache_read,
            cache_write_tokens=cache_write,
            model=message.model,
            stop_reason=message.stop_reason,
            refusal=refusal,
        )


def _message_of(error: anthropic.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return f"{inner.get('type', 'error')}: {inner['message']}"
    return str(error)
