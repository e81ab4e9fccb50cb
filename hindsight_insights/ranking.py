"""How a search hit is scored. Pure functions, so the formula is tested on its own.

  similarity = cosine(query vector, insight vector)                     absolute, in [-1, 1]
  keyword    = sum(len(t) for t in query tokens found in the insight) / sum(len(t) for t in query tokens)
               (length-weighted so 退货地址 counts more than a one-character word; absolute, in [0, 1])
  relevance  = alpha * max(similarity, 0) + (1 - alpha) * keyword          thresholded by score_threshold
  score      = relevance * (0.8 + 0.2 * confidence) * (0.85 + 0.15 * 0.5 ** (age_days / half_life_days))

Weaviate's own fused hybrid scores are relative to each result set (the best hit always scores high), so they can
rank candidates but cannot say "nothing here is relevant"; the absolute parts above can.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np

from hindsight_insights.embedder import Vectors
from hindsight_insights.segment import NEGATIONS, tokens


def query_vector(turn_vectors: Vectors, decay: float = 0.7) -> Vectors:
    """One vector for several turns: newest weighs 1, each older turn `decay` times less."""
    count = turn_vectors.shape[0]
    weights = decay ** np.arange(count - 1, -1, -1, dtype=np.float32)
    combined = (turn_vectors * weights[:, None]).sum(axis=0)
    return (combined / max(float(np.linalg.norm(combined)), 1e-12)).astype(np.float32)


def keyword_coverage(query_tokens: Sequence[str], document_tokens: Iterable[str]) -> float:
    unique_query = set(query_tokens)
    total = sum(len(token) for token in unique_query)
    if total == 0:
        return 0.0
    found = unique_query.intersection(document_tokens)
    return sum(len(token) for token in found) / total


def relevance(similarity: float, keyword: float, alpha: float) -> float:
    return alpha * max(similarity, 0.0) + (1.0 - alpha) * keyword


def rank_score(
    relevance_value: float, confidence: float, updated_at: datetime, now: datetime, half_life_days: float
) -> float:
    age_days = max((now - updated_at).total_seconds(), 0.0) / 86400.0
    recency = 0.5 ** (age_days / half_life_days)
    return float(relevance_value * (0.8 + 0.2 * confidence) * (0.85 + 0.15 * recency))


def same_instruction(action_a: str, action_b: str) -> bool:
    """Two actions give the same instruction: the same words, apart from order, punctuation and function words.

    Any other difference (a number, a name, a place, a unit, a negation) makes them different instructions, so a
    correction of one word is never merged away: an embedder scores "return to 88 Zhangjiang Road" and "return to 1
    Wensan Road", or 西湖区 and 滨江区, as near-identical, and merging them would drop the correction.
    """
    words_a, words_b = set(tokens(action_a, keep=NEGATIONS)), set(tokens(action_b, keep=NEGATIONS))
    return bool(words_a) and words_a == words_b
