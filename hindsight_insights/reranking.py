"""The situational gate by a rerank model (docs/architecture.md, Retrieval: "A rerank model as the gate").

A builder may hand recall a `Reranker` (in the plugin: the workspace's rerank model through Dify's backwards
invocation, hindsight_dify/rerank.py). Then the rerank model, not the built-in no-match gate, decides which
situational candidates pass: those it scores at Settings.rerank_threshold or more. A reranker reads the conversation
and the rule together (a cross-encoder), so it can tell "about the same thing" from "near in vector space", which is
what the gate approximates with a margin over the scene's background.

A rerank call that fails (the model missing or unconfigured in the workspace, its quota, a timeout, an answer that
does not fit) raises RerankFailed; recall then decides with the built-in gate, and its RerankReport says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

# The conversation as the rerank model reads it: the newest turns, cut from the end. Rerank models read a few hundred
# tokens of query and document together; a long query would crowd out the rule.
MAX_RERANK_QUERY_CHARS = 1000

RerankOutcome = Literal["reranked", "failed", "not_asked"]


class RerankFailed(Exception):
    """The rerank model gave no usable scores; the message says why (Dify's or the daemon's words)."""


class Reranker(Protocol):
    """A rerank model: how relevant each document is to the query."""

    @property
    def label(self) -> str:
        """The model's name, for the result and the log (e.g. "langgenius/cohere/cohere/rerank-multilingual-v3.0")."""
        ...

    def rerank(self, query: str, documents: Sequence[str]) -> Sequence[float]:
        """One relevance score per document, in the documents' order, from 0 (unrelated) to 1. Raises RerankFailed."""
        ...


@dataclass(frozen=True)
class RerankReport:
    """What the rerank model did in one recall: `reranked` (it decided), `failed` (the built-in gate decided; `detail`
    says why) or `not_asked` (no situational candidate to judge)."""

    model: str
    outcome: RerankOutcome
    detail: str
    candidates: int
    passed: int


def rerank_query(turns: Sequence[str]) -> str:
    """The recent turns, oldest first, one per line, cut to MAX_RERANK_QUERY_CHARS from the newest backwards."""
    return "\n".join(turns)[-MAX_RERANK_QUERY_CHARS:]


def checked_scores(reranker: Reranker, query: str, documents: Sequence[str]) -> list[float]:
    """The reranker's scores, or RerankFailed when there is not one finite score in [0, 1] per document."""
    scores = [float(score) for score in reranker.rerank(query, documents)]
    if len(scores) != len(documents):
        raise RerankFailed(f"the rerank model scored {len(scores)} of {len(documents)} rules")
    if not all(math.isfinite(score) and 0.0 <= score <= 1.0 for score in scores):
        raise RerankFailed("the rerank model gave a score outside 0 to 1, or none")
    return scores
