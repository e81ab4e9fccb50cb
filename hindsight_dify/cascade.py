"""The workspace-model cascade's Dify side: the model a builder picked on save_insight or record_turn (a
`model-selector`, `form: form`, `scope: llm`), asked through the tool session's backwards LLM invocation
(dify_model.py has the protocol), under the project's daily budget (store/budget.py).

One call per unsure item (the screen's or the correction detector's), `stream=False`, `max_tokens` capped at
cascade.MAX_OUTPUT_TOKENS whatever the builder's completion parameters say. A failed invocation (Dify's or the
daemon's message in a bare Exception), or a call that came without access to Dify's models, is `cascade.ModelFailed`:
the screen holds the item, the detector keeps its own decision; the call still succeeds.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from hindsight_dify.dify_model import LlmInvocation, ModelSelection, PromptMessages, answer_of, sdk_prompt_messages
from hindsight_dify.params import Parameters
from hindsight_insights.cascade import Cascade, MemoryBudget, ModelFailed
from hindsight_insights.store import InsightStore

log = logging.getLogger(__name__)


class DifyVerdictModel:
    """cascade.VerdictModel over the tool session's `model.llm` with the builder's model."""

    def __init__(
        self, llm: LlmInvocation | None, selection: ModelSelection, messages: PromptMessages = sdk_prompt_messages
    ) -> None:
        self._llm = llm
        self._selection = selection
        self._messages = messages

    @property
    def label(self) -> str:
        return f"{self._selection.provider}/{self._selection.model}"

    def complete(self, system: str, user: str, max_tokens: int) -> str:
        if self._llm is None:
            raise ModelFailed("this call came without access to Dify's models (backwards invocation)")
        config: dict[str, Any] = self._selection.model_config_dict()
        params = config["completion_params"]
        try:
            params["max_tokens"] = min(int(params.get("max_tokens") or max_tokens), max_tokens)
        except (TypeError, ValueError):  # a builder's odd value: the cap applies
            params["max_tokens"] = max_tokens
        try:
            result = self._llm.invoke(
                model_config=config,
                prompt_messages=self._messages(system, user, self._selection.mode == "chat"),
                stream=False,
            )
            content = answer_of(result, self._selection.model).content
        except Exception as error:  # the SDK raises a bare Exception carrying Dify's or the daemon's message
            log.warning("the cascade's backwards LLM invocation of %s failed: %s", self.label, error)
            raise ModelFailed(str(error)[:300]) from error
        return content if isinstance(content, str) else json.dumps(content)


def cascade_for(
    store: InsightStore,
    parameters: Parameters,
    llm: LlmInvocation | None,
    messages: PromptMessages = sdk_prompt_messages,
) -> Cascade | None:
    """The call's cascade when the builder set `model`, else None (what the screen is unsure of is then held). A
    malformed selector is InvalidInput naming `model`, before anything is written."""
    value = parameters.mapping("model")
    if not value:
        return None
    selection = ModelSelection.parse(value, "model")
    settings = store.settings
    return Cascade(
        model=DifyVerdictModel(llm, selection, messages),
        budget=store.budget or MemoryBudget(),
        limit=settings.model_calls_per_day,
        prompts_dir=settings.prompts_dir,
        timezone=settings.timezone,
    )
