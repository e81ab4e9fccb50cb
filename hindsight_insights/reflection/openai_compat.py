"""Reflection with any OpenAI-compatible chat endpoint (Qwen, DeepSeek, a local vLLM), through the `openai` SDK.

How the answer is held to the schema, in order of preference:
  json_schema  `response_format: {"type": "json_schema", ...}` (strict): OpenAI, vLLM, recent Qwen
  tool         one function tool, and `tool_choice` naming it: servers without json_schema (DeepSeek)
  json_object  JSON mode; the schema goes into the system message (servers with neither)
With `auto` (the default), a 400/422 that rejects the response format or the tools moves to the next mode, once per
process: the rejected request generated nothing. Set the mode explicitly to never send a request that fails.

The system message comes first and never changes, so servers with automatic prefix caching (OpenAI, DeepSeek,
vLLM with prefix caching on) reuse it; their cached-token counts are read from either usage field in use.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from hindsight_insights.config import OpenAIOutput, Settings
from hindsight_insights.errors import HindsightError
from hindsight_insights.reflection.llm import LlmAnswer, LlmError
from hindsight_insights.reflection.output import OutputSchema

log = logging.getLogger(__name__)

Mode = OpenAIOutput
_FALLBACK: dict[str, str] = {"json_schema": "tool", "tool": "json_object"}
_FORMAT_WORDS = ("response_format", "json_schema", "tool", "function", "not support", "unsupported", "unavailable")


class OpenAICompatibleReflector:
    """A `Reflector` over POST {base_url}/chat/completions."""

    def __init__(
        self, client: openai.OpenAI, *, model: str, output: OpenAIOutput = "auto", max_tokens: int = 8192
    ) -> None:
        self._client = client
        self._model = model
        self._auto = output == "auto"
        self._mode: str = "json_schema" if output == "auto" else output
        self._max_tokens = max_tokens

    @classmethod
    def from_settings(
        cls, settings: Settings, *, http_client: httpx2.Client | None = None
    ) -> OpenAICompatibleReflector:
        if not settings.reflection_base_url or not settings.reflection_model:
            raise HindsightError(
                "reflection_llm=openai needs HINDSIGHT_REFLECTION_BASE_URL (e.g. http://127.0.0.1:8000/v1) and "
                "HINDSIGHT_REFLECTION_MODEL"
            )
        key = settings.reflection_api_key.get_secret_value() if settings.reflection_api_key else "none"
        client = openai.OpenAI(
            api_key=key,  # local servers take any key; the SDK insists on one
            base_url=settings.reflection_base_url,
            timeout=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
            http_client=http_client,
        )
        return cls(
            client,
            model=settings.reflection_model,
            output=settings.reflection_output,
            max_tokens=settings.reflection_max_output_tokens,
        )

    @property
    def name(self) -> str:
        return "openai"

    @property
    def mode(self) -> str:
        """The mode in use (after any fallback)."""
        return self._mode

    def request(self, system: str, user: str, schema: OutputSchema, mode: str) -> dict[str, Any]:
        """The chat completion parameters of one reflection in `mode`."""
        if mode == "json_object":
            # JSON mode enforces JSON only: the shape has to be asked for in words.
            system = f"{system}\n\nJSON schema of the answer:\n{json.dumps(schema.json_schema, ensure_ascii=False)}"
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        params: dict[str, Any] = {"model": self._model, "messages": messages, "max_tokens": self._max_tokens}
        if mode == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.json_schema, "strict": True},
            }
        elif mode == "tool":
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": schema.name,
                        "description": schema.description,
                        "parameters": schema.json_schema,
                    },
                }
            ]
            params["tool_choice"] = {"type": "function", "function": {"name": schema.name}}
        else:
            params["response_format"] = {"type": "json_object"}
        return params

    def reflect(self, system: str, user: str, schema: OutputSchema) -> LlmAnswer:
        while True:
            mode = self._mode
            try:
                completion = self._client.chat.completions.create(**self.request(system, user, schema, mode))
            except openai.APIStatusError as error:
                following = _FALLBACK.get(mode)
                if self._auto and following and _rejects_format(error):
                    log.warning("%s rejected %s output (%s); using %s from now on", self._model, mode, error, following)
                    self._mode = following
                    continue
                raise LlmError(f"the chat endpoint answered {error.status_code}: {_message_of(error)}") from error
            except openai.APIError as error:  # connection errors and timeouts, after the SDK's retries
                raise LlmError(f"the chat endpoint is unreachable: {error}") from error
            return self.answer(completion, schema)

    def answer(self, completion: ChatCompletion, schema: OutputSchema) -> LlmAnswer:
        if not completion.choices:
            raise LlmError("the chat endpoint answered without a choice")
        choice = completion.choices[0]
        message = choice.message
        content: str = message.content or ""
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is not None and function.name == schema.name:
                content = function.arguments
                break
        usage = completion.usage
        tokens_in = usage.prompt_tokens if usage else 0
        tokens_out = usage.completion_tokens if usage else 0
        return LlmAnswer(
            content=content,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cached_tokens=_cached_tokens(completion),
            model=completion.model or self._model,
            stop_reason=choice.finish_reason,
            refusal=getattr(message, "refusal", None) or None,
        )


def _cached_tokens(completion: ChatCompletion) -> int:
    """OpenAI and vLLM: usage.prompt_tokens_details.cached_tokens; DeepSeek: usage.prompt_cache_hit_tokens."""
    usage = completion.usage
    if usage is None:
        return 0
    details = usage.prompt_tokens_details
    if details is not None and details.cached_tokens:
        return details.cached_tokens
    extra = usage.model_extra or {}
    hits = extra.get("prompt_cache_hit_tokens")
    return hits if isinstance(hits, int) else 0


def _rejects_format(error: openai.APIStatusError) -> bool:
    """A 400/422 about the response format or the tools: the server lacks that mode, the request itself is fine."""
    if error.status_code not in (400, 422):
        return False
    text = f"{error.message} {json.dumps(error.body, ensure_ascii=False, default=str)}".lower()
    return any(word in text for word in _FORMAT_WORDS)


def _message_of(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return error.message
