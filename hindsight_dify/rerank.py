"""search_insight's optional rerank model: the workspace's own, through the tool session's backwards invocation.

The builder picks it with a `model-selector` parameter (`rerank_model`, `scope: rerank`, `form: form`). Dify hands its
value to the plugin as a plain dict, `{"provider": "langgenius/cohere/cohere", "model": "rerank-multilingual-v3.0",
"model_type": "rerank"}`. `session.model.rerank.invoke(model_config, docs, query)` sends it to the daemon, which
relays it to Dify's inner API (`POST /inner/api/invoke/rerank`); Dify runs the model with the workspace's credentials
and answers `{"data": RerankResult, "error": ""}`: the documents it kept, each with its `index` in `docs` and its
`score`, best first. We ask for every score (score_threshold 0, top_n all): the decision is the core's
(Settings.rerank_threshold, reranking.py). A document the model left out scores 0.

A failed call (the model missing or unconfigured in the workspace, its quota, the daemon's timeout: a bare Exception
carrying Dify's or the daemon's message), an answer that does not fit, or a call without access to Dify's models is
`reranking.RerankFailed`: recall falls back to the built-in gate and the result says so.

`import dify_plugin` patches gevent, so the SDK's RerankModelConfig is imported at call time (dify_model.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hindsight_dify.params import Parameters
from hindsight_insights.errors import InvalidInput
from hindsight_insights.reranking import RerankFailed

log = logging.getLogger(__name__)

PARAMETER = "rerank_model"


class RerankSelection(BaseModel):
    """The value of a `model-selector` parameter with `scope: rerank`. Keys Dify may add later are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, str_strip_whitespace=True, protected_namespaces=())

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    model_type: Literal["rerank"] = "rerank"

    @classmethod
    def parse(cls, value: Mapping[str, Any], parameter: str = PARAMETER) -> RerankSelection:
        try:
            return cls.model_validate(dict(value))
        except ValidationError as error:
            problems = InvalidInput.from_validation_error(error).problems
            raise InvalidInput([(f"{parameter}.{field}", rule) for field, rule in problems]) from None


class RerankInvocation(Protocol):
    """What the tool session's `model.rerank` offers (dify_plugin's RerankInvocation), as far as it is used here."""

    def invoke(self, model_config: Any, docs: list[str], query: str) -> Any: ...


RerankConfig = Callable[[RerankSelection, int], Any]


def sdk_rerank_config(selection: RerankSelection, documents: int) -> Any:
    """The SDK's RerankModelConfig: every score asked for. Imported here, never at module level (module docstring)."""
    from dify_plugin.entities.model.rerank import RerankModelConfig

    return RerankModelConfig(
        provider=selection.provider, model=selection.model, score_threshold=0.0, top_n=max(documents, 1)
    )


class DifyReranker:
    """reranking.Reranker over the tool session's `model.rerank` with the builder's model."""

    def __init__(
        self, invocation: RerankInvocation | None, selection: RerankSelection, config: RerankConfig = sdk_rerank_config
    ) -> None:
        self._invocation = invocation
        self._selection = selection
        self._config = config

    @property
    def label(self) -> str:
        return f"{self._selection.provider}/{self._selection.model}"

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if self._invocation is None:
            raise RerankFailed("this call came without access to Dify's models (backwards invocation)")
        try:
            result = self._invocation.invoke(
                model_config=self._config(self._selection, len(documents)), docs=list(documents), query=query
            )
        except Exception as error:  # the SDK raises a bare Exception carrying Dify's or the daemon's message
            log.warning("the backwards rerank invocation of %s failed: %s", self.label, error)
            raise RerankFailed(str(error)[:300]) from error
        return scores_of(result, len(documents))


def scores_of(result: Any, count: int) -> list[float]:
    """The SDK's RerankResult as one score per document, in the documents' order (a document left out scores 0)."""
    docs = getattr(result, "docs", None)
    if not isinstance(docs, list):
        raise RerankFailed("the rerank model's answer has no documents")
    scores = [0.0] * count
    for doc in docs:
        index, score = getattr(doc, "index", None), getattr(doc, "score", None)
        if not isinstance(index, int) or not 0 <= index < count or not isinstance(score, int | float):
            raise RerankFailed(f"the rerank model's answer names a document that was not sent ({index!r})")
        scores[index] = float(score)
    return scores


def reranker_for(parameters: Parameters, invocation: RerankInvocation | None) -> DifyReranker | None:
    """The call's reranker when the builder set `rerank_model`, else None (the built-in gate decides). A malformed
    selector is InvalidInput naming it."""
    value = parameters.mapping(PARAMETER)
    if not value:
        return None
    return DifyReranker(invocation, RerankSelection.parse(value))
