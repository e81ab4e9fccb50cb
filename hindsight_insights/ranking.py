"""How a search hit is scored and when nothing is relevant. Pure functions, so the formula is tested on its own.

  similarity = cosine(query vector, insight vector)                     absolute, in [-1, 1]
  keyword    = sum(len(t) for t in query tokens found in the insight) / sum(len(t) for t in query tokens)
               (length-weighted so 退货地址 counts more than a one-character word; absolute, in [0, 1])
  relevance  = alpha * max(similarity, 0) + (1 - alpha) * keyword
  score      = relevance * (0.8 + 0.2 * confidence) * (0.85 + 0.15 * 0.5 ** (age_days / half_life_days))

The no-match gate. A candidate is injected only if both hold:

  relevance  >= score_threshold                                           it is relevant at all
  margin     =  similarity - background >= background_margin             and it stands out from its scene
  background =  mean similarity of the OTHER candidates of the same query, with background_prior counted as one
                more candidate (a scene with two insights must not decide its background from one of them)

Why a margin: with a weak multilingual embedder, every conversation of a scene is somewhat similar to every insight
of that scene ("office opening hours" vs "return address" in customer service: cosine 0.3, like many true
cross-lingual matches). One global threshold cannot separate them. What separates them better is whether one
insight stands out from the rest of the candidates: a conversation about returns is much closer to the return rule
than to the others; one about opening hours is equally close to all of them.

Calibrated for use-m3 on the "tune" split of bench/data (bench/eval_retrieval.py --calibrate, which reads no
holdout item; it maximises situational recall@5 minus the no-match false-positive rate): score_threshold 0.13,
background_margin 0.16, background_prior 0.10 (config.RETRIEVAL_DEFAULTS). An explicit per-call score_threshold is
a plain global threshold, as before (no margin).

Standing rules (preferences, and a user's own rules of any kind) need no similarity, but when there are more than the
budget, the budget is filled first by those that match the conversation (relevance >= score_threshold), most
relevant first, then by the newest, preferences before a user's facts and processes (`standing_order`). So a
matching rule is never dropped for a newer, unrelated one.

Weaviate's own fused hybrid scores are relative to each result set (the best hit always scores high), so they can
rank candidates but cannot say "nothing here is relevant"; the absolute parts above can.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

import numpy as np

from hindsight_insights.embedder import Vectors
from hindsight_insights.keys import meaning_marks
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


def background(similarities: Sequence[float], index: int, prior: float, copies: Iterable[int] = ()) -> float:
    """The query's similarity to the rest of its candidates: the mean over all but `index` and its `copies` (other
    copies of the same lesson, e.g. the project-wide copy of a user's rule: as close to the query as the candidate
    itself, they would raise its background and drown both), with `prior` counted as one more candidate, so that two
    or three candidates do not decide the background alone."""
    left_out = {index, *copies}
    others = [similarity for position, similarity in enumerate(similarities) if position not in left_out]
    return (float(sum(others)) + prior) / (len(others) + 1)


def passes_gate(
    relevance_value: float, similarity: float, background_value: float, threshold: float, margin: float
) -> bool:
    """The no-match gate (module docstring): relevant at all, and standing out from the scene's background."""
    return relevance_value >= threshold and similarity - background_value >= margin


def standing_order[T](
    rules: Sequence[T],
    relevance_of: Callable[[T], float],
    asserted_at: Callable[[T], datetime],
    threshold: float,
    about_every_answer: Callable[[T], bool] = lambda _: True,
) -> list[T]:
    """Standing rules in the order the budget is filled: those matching the conversation (relevance >= threshold),
    most relevant first; then the others, those about every answer (preferences) before those about a subject (a
    user's own facts and processes), newest first."""
    matching = [rule for rule in rules if relevance_of(rule) >= threshold]
    rest = [rule for rule in rules if relevance_of(rule) < threshold]
    matching.sort(key=lambda rule: (-relevance_of(rule), -asserted_at(rule).timestamp()))
    rest.sort(key=lambda rule: (not about_every_answer(rule), -asserted_at(rule).timestamp()))
    return matching + rest


def rank_score(
    relevance_value: float, confidence: float, updated_at: datetime, now: datetime, half_life_days: float
) -> float:
    age_days = max((now - updated_at).total_seconds(), 0.0) / 86400.0
    recency = 0.5 ** (age_days / half_life_days)
    return float(relevance_value * (0.8 + 0.2 * confidence) * (0.85 + 0.15 * recency))


def same_instruction(action_a: str, action_b: str) -> bool:
    """Two actions give the same instruction: the same words, apart from order, punctuation and function words.

    Any other difference (a number, a name, a place, a unit, a negation, a sign: "写入 -1" and "写入 1") makes them
    different instructions, so a correction of one word is never merged away: an embedder scores "return to 88
    Zhangjiang Road" and "return to 1 Wensan Road", or 西湖区 and 滨江区, as near-identical, and merging them would
    drop the correction. Search tokens drop signs and decimal points, so the numbers are compared whole as well.
    """
    words_a, words_b = set(tokens(action_a, keep=NEGATIONS)), set(tokens(action_b, keep=NEGATIONS))
    marks_a, marks_b = set(meaning_marks(action_a)), set(meaning_marks(action_b))
    return bool(words_a) and words_a == words_b and marks_a == marks_b
