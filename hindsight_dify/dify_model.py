"""Reflection with the workspace's own model, through the Dify SDK's backwards invocation: no second key.

The builder picks the model with a `model-selector` parameter (`scope: llm`). Dify's tool node hands its value to
the plugin as a plain dict (api/core/tools/tool_manager.py, `_extract_runtime_selector_value`; the web's
ModelParameterModal writes it):

    {"provider": "langgenius/openai/openai", "model": "gpt-4o-mini", "model_type": "llm", "mode": "chat",
     "completion_params": {"temperature": 0.2, ...}}

which is the SDK's `LLMModelConfig` (provider, model, model_type, mode, completion_params).
`session.model.llm.invoke(model_config, prompt_messages, stream=False)` sends it with the messages to the daemon,
which relays it to Dify's inner API (`POST /inner/api/invoke/llm`); Dify runs the model with the workspace's own
credentials and streams `LLMResultChunk`s back, which the SDK joins into one `LLMResult` when not streaming.

The answer's shape: Dify's LLM invocation cannot promise a JSON schema for every provider, so the schema is asked
for in words (the engine's templates already say "answer with one JSON object only"; the schema itself is appended
to the static system part, as the OpenAI-compatible path does in JSON mode), and the engine validates the answer,
asks once more with the problems, and drops what fails.

`import dify_plugin` monkey-patches the process with gevent, so this module never imports it at module level (the
adapter stays importable by the CLI, tests and benchmarks). The SDK's two message classes are imported inside
`sdk_prompt_messages`, at call time: a reflection only runs inside a tool call, in a plugin process whose main.py
imported dify_plugin (and patched gevent) long before, so that import is a lookup in sys.modules and changes
nothing. They are not taken from the tool object because a Tool carries no message classes, and handing them in
from tools/reflect_session.py would add SDK plumbing to a tool file that is otherwise one line over the adapter.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hindsight_insights.errors import InvalidInput
from hindsight_insights.reflection import LlmAnswer, LlmError, OutputSchema

log = logging.getLogger(__name__)

_THINKING = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)


class ModelSelection(BaseModel):
    """The value of a `model-selector` parameter with `scope: llm`. Keys Dify may add later are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, str_strip_whitespace=True, protected_namespaces=())

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    model_type: Literal["llm"] = "llm"
    mode: Literal["chat", "completion"] = "chat"
    completion_params: dict[str, Any] = {}

    @field_validator("completion_params", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value

    @classmethod
    def parse(cls, value: Mapping[str, Any] | None, parameter: str = "model") -> ModelSelection:
        """The selector's value, or InvalidInput naming `parameter` (the node's model setting)."""
        if not value:
            raise InvalidInput([(parameter, "pick the LLM that reflects, in the node's Model setting")])
        try:
            return cls.model_validate(dict(value))
        except ValidationError as error:
            problems = InvalidInput.from_validation_error(error).problems
            raise InvalidInput([(f"{parameter}.{field}", rule) for field, rule in problems]) from None

    def model_config_dict(self) -> dict[str, Any]:
        """The SDK's LLMModelConfig as a dict (`invoke` builds the model from it)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "model_type": self.model_type,
            "mode": self.mode,
            "completion_params": dict(self.completion_params),
        }


class LlmInvocation(Protocol):
    """What the tool session's `model.llm` offers (dify_plugin's LLMInvocation), as far as it is used here."""

    def invoke(
        self,
        model_config: Any,
        prompt_messages: list[Any],
        tools: list[Any] | None = None,
        stop: list[str] | None = None,
        stream: bool = True,
    ) -> Any: ...


PromptMessages = Callable[[str, str, bool], list[Any]]


def sdk_prompt_messages(system: str, user: str, chat: bool) -> list[Any]:
    """The SDK's prompt messages. Imported here, never at module level: see the module docstring.

    A chat model gets a system and a user message. A completion model gets one user message, the system part first,
    because Dify's completion models take a single prompt.
    """
    from dify_plugin.entities.model.message import SystemPromptMessage, UserPromptMessage

    if chat:
        return [SystemPromptMessage(content=system), UserPromptMessage(content=user)]
    return [UserPromptMessage(content=f"{system}\n\n{user}")]


class DifyModelReflector:
    """A `Reflector` over the tool session's backwards LLM invocation, with the model the builder picked."""

    def __init__(
        self, llm: LlmInvocation, selection: ModelSelection, messages: PromptMessages = sdk_prompt_messages
    ) -> None:
        self._llm = llm
        self._selection = selection
        self._messages = messages

    @property
    def name(self) -> str:
        return "dify"

    @property
    def selection(self) -> ModelSelection:
        return self._selection

    def reflect(self, system: str, user: str, schema: OutputSchema) -> LlmAnswer:
        # Static text, so the system part stays the same for every session (providers that cache prefixes reuse it).
        system = f"{system}\n\nJSON schema of the answer:\n{json.dumps(schema.json_schema, ensure_ascii=False)}"
        messages = self._messages(system, user, self._selection.mode == "chat")
        try:
            result = self._llm.invoke(
                model_config=self._selection.model_config_dict(), prompt_messages=messages, stream=False
            )
        except Exception as error:  # the SDK raises a bare Exception carrying Dify's or the daemon's message
            log.warning("backwards LLM invocation of %s failed: %s", self._label, error)
            raise LlmError(f"Dify's model {self._label} could not be invoked: {error}") from error
        return answer_of(result, self._selection.model)

    @property
    def _label(self) -> str:
        return f"{self._selection.provider}/{self._selection.model}"


def answer_of(result: Any, model: str) -> LlmAnswer:
    """An SDK `LLMResult` as the engine's answer: its text (a leading <think> block removed) and its usage."""
    message = getattr(result, "message", None)
    usage = getattr(result, "usage", None)
    return LlmAnswer(
        content=_THINKING.sub("", _text(getattr(message, "content", None)), count=1),
        tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
        tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
        model=str(getattr(result, "model", None) or model),
    )


def _text(content: Any) -> str:
    """A message's content: text, or a list of content parts of which the text ones count."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence):
        return str(content)
    return "".join(str(part.data) for part in content if str(getattr(part, "type", "")).endswith("text"))
