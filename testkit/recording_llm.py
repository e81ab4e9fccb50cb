"""Stand-ins for a Dify tool session's `model.llm` and `model.rerank` (backwards invocation), for in-process tests:
each records every invoke and answers with the SDK's own LLMResult or RerankResult, or raises as the SDK raises a
failed backwards call (a bare Exception with Dify's message). Through the real daemon, testkit/inner_api.py answers
instead."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from testkit.sdk import AssistantPromptMessage, LLMResult, LLMUsage, RerankDocument, RerankResult


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


@dataclass
class RepliesByQuestion(RecordingLlm):
    """A workspace model asked several kinds of question: each call is answered with the reply of the first marker
    found in its system prompt, so a test does not depend on which questions come, or in what order."""

    by_marker: dict[str, str] = field(default_factory=dict)

    def invoke(
        self,
        model_config: Any,
        prompt_messages: list[Any],
        tools: list[Any] | None = None,
        stop: list[str] | None = None,
        stream: bool = True,
    ) -> Any:
        system = str(prompt_messages[0].content)
        self.replies = [next(reply for marker, reply in self.by_marker.items() if marker in system)]
        return super().invoke(model_config, prompt_messages, tools, stop, stream)

    def asked(self, marker: str) -> list[dict[str, Any]]:
        return [call for call in self.calls if marker in str(call["prompt_messages"][0].content)]


@dataclass
class ScoresByWords:
    """A rerank model's scores chosen by a test: a document containing one of `scores`' words gets that word's score
    (the first that matches), any other `otherwise`. Used in process and by the inner-API stand-in alike."""

    scores: dict[str, float]
    otherwise: float = 0.03

    def __call__(self, docs: list[str]) -> list[float]:
        return [next((s for word, s in self.scores.items() if word in doc), self.otherwise) for doc in docs]


@dataclass
class RecordingRerank:
    """`session.model.rerank`: scores documents with `scores`, or raises `failure` as the SDK raises a failed call.
    Answers as Dify does: the documents at the config's score_threshold or more, best first, at most top_n."""

    scores: ScoresByWords | None = None
    failure: Exception | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)

    def invoke(self, model_config: Any, docs: list[str], query: str) -> Any:
        self.calls.append({"model_config": model_config, "docs": docs, "query": query})
        if self.failure is not None:
            raise self.failure
        assert self.scores is not None
        ranked = sorted(
            (
                RerankDocument(index=index, text=doc, score=score)
                for index, (doc, score) in enumerate(zip(docs, self.scores(docs), strict=True))
                if score >= model_config.score_threshold
            ),
            key=lambda doc: -doc.score,
        )
        return RerankResult(model=model_config.model, docs=ranked[: model_config.top_n])
