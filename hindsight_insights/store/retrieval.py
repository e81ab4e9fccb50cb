"""Reading a project's insights: search, and recall with its two channels (docs/architecture.md, "Retrieval").

The channels: standing rules are preferences and a user's own rules of every kind (filters.standing_channel), with
no similarity gate; situational ones are project-wide and session facts, processes and lessons, behind the gate.

Every search filters in Weaviate first (filters.eligible: scene or general, this user or the project, active,
unexpired; the standing rules read again by id are checked in Python, Insight.in_force_at), then ranks in Python:
the no-match gate and the rank score are in ranking.py. At most one version per slot reaches a result, and at most
one rule per topic reaches a recall.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import numpy as np
from weaviate.classes.query import HybridFusion, MetadataQuery, Sort
from weaviate.collections import Collection as WeaviateCollection

from hindsight_insights import keys, ranking, reranking
from hindsight_insights.config import NO_MARGIN, Settings
from hindsight_insights.connection import weaviate_errors
from hindsight_insights.embedder import Embedder, Vectors
from hindsight_insights.errors import InvalidInput
from hindsight_insights.keys import GENERAL_SCENE
from hindsight_insights.models import Insight, InsightKind, Recall, ScoredInsight
from hindsight_insights.reranking import Reranker, RerankFailed, RerankReport
from hindsight_insights.segment import tokens
from hindsight_insights.store import filters
from hindsight_insights.store.schema import VECTOR_NAME, StoredObject, insight_from, vector_of
from hindsight_insights.store.table import embedding_text

log = logging.getLogger(__name__)

SearchMode = Literal["hybrid", "vector", "bm25"]
MAX_TOP_K = 20
MAX_QUERY_TURNS = 5
MAX_QUERY_CHARS = 4000  # of the recent turns, newest kept: enough context, and a bounded embedding cost
# Recall ranks at most this many eligible standing rules, the most similar to the conversation; a user with more in one
# scene (rare) has the least similar ones left out. Each candidate costs Weaviate a read and the client a decode: at
# a million insights with 300 eligible per user and scene, 50 choose the same rules as 100 in 182 of 200 calls, and
# the ranking read takes about 5.3 against 7.6 ms at p50 for 30 and 100 (docs/scale.md, run 5).
MAX_STANDING_CANDIDATES = 50
# What ranks a standing rule before it is read whole: its words, its age, whether it is about every answer, its slot.
STANDING_RANK_FIELDS = ("search_text", "asserted_at", "kind", "slot_key")
SITUATIONAL_KINDS = (InsightKind.FACT, InsightKind.PROCESS, InsightKind.LESSON)


class Retrieval:
    """The read side of one project's insights: `store.retrieval` of an InsightStore."""

    def __init__(self, insights: WeaviateCollection, embedder: Embedder, settings: Settings) -> None:
        self._insights = insights
        self._embedder = embedder
        self._settings = settings
        self._executor: ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    def search(
        self,
        query: str | Sequence[str],
        *,
        scene: str = GENERAL_SCENE,
        user_id: str | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
        kinds: Sequence[InsightKind] | None = None,
        mode: SearchMode = "hybrid",
        now: datetime | None = None,
        session_id: str | None = None,
    ) -> list[ScoredInsight]:
        """Eligible insights most relevant to the query (one text, or the recent turns oldest first), behind the
        no-match gate (ranking.py). An explicit `score_threshold` is a plain threshold, without the margin."""
        request = self._request(query, top_k, score_threshold, mode)
        now = now or datetime.now(UTC)
        with weaviate_errors("searching insights"):
            candidates = self._candidates(request, scene, user_id, kinds, now, session_id)
        return self._rank(candidates, request, now)

    def recall(
        self,
        query: str | Sequence[str],
        *,
        scene: str = GENERAL_SCENE,
        user_id: str | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
        now: datetime | None = None,
        session_id: str | None = None,
        reranker: Reranker | None = None,
    ) -> Recall:
        """Both retrieval channels (docs/architecture.md, Retrieval): standing rules (preferences, and this user's own
        rules of every kind), and situational facts, processes and lessons (project-wide or of this session). The
        standing rules are read, in another thread, while the situational candidates are searched.
        With a `reranker`, it decides which situational candidates pass (reranking.py), else the no-match gate.
        """
        request = self._request(query, top_k, score_threshold, "hybrid")
        now = now or datetime.now(UTC)
        budget = self._settings.standing_rule_budget
        request.vector(self._embedder)  # embedded once, here, before the standing read that ranks by it starts
        with weaviate_errors("recalling insights"):
            standing_read = (
                self._pool().submit(self._recall_standing, request, scene, user_id, now, budget, session_id)
                if budget
                else None
            )
            try:
                candidates = self._candidates(
                    request, scene, user_id, SITUATIONAL_KINDS, now, session_id, channel=filters.situational_channel
                )
            except BaseException:
                if standing_read is not None:
                    wait([standing_read])  # never leave a read running behind a failed call; its error is moot
                raise
            standing = standing_read.result() if standing_read is not None else []
        reranked, rerank = self._rerank(candidates, request, reranker) if reranker else (None, None)
        situational = self._rank(candidates, request, now, reranked)
        kept = newest_per_topic([*standing, *(hit.insight for hit in situational)])
        return Recall(
            standing=[insight for insight in standing if insight.id in kept],
            situational=[hit for hit in situational if hit.insight.id in kept],
            rerank=rerank,
        )

    def standing_rules(
        self,
        *,
        scene: str,
        user_id: str | None,
        limit: int | None = None,
        now: datetime | None = None,
        session_id: str | None = None,
    ) -> list[Insight]:
        """The standing rules for this scene (preferences, this user's and project-wide, and this user's own rules),
        preferences first, then newest first, within a budget: what holds when there is no conversation to rank them
        by (recall ranks them by relevance first)."""
        limit = self._settings.standing_rule_budget if limit is None else limit
        if limit == 0:
            return []
        with weaviate_errors("reading standing rules"):
            objects = self._standing_candidates(scene, user_id, now or datetime.now(UTC), limit * 2, session_id)
        newest = sorted(newest_per_slot(objects), key=lambda obj: not _about_every_answer(obj))  # stable: newest first
        return [insight_from(obj) for obj in newest][:limit]

    def _request(
        self, query: str | Sequence[str], top_k: int | None, score_threshold: float | None, mode: SearchMode
    ) -> _Request:
        turns = query_turns(query)
        top_k = self._settings.top_k if top_k is None else top_k
        threshold = self._settings.relevance_threshold if score_threshold is None else score_threshold
        problems = []
        if not turns:
            problems.append(("query", "must contain some text"))
        if not 1 <= top_k <= MAX_TOP_K:
            problems.append(("top_k", f"must be between 1 and {MAX_TOP_K}"))
        if not 0.0 <= threshold <= 1.0:
            problems.append(("score_threshold", "must be between 0 and 1"))
        if problems:
            raise InvalidInput(problems)
        query_tokens = tokens("\n".join(turns))
        alpha = {"hybrid": self._settings.hybrid_alpha, "vector": 1.0, "bm25": 0.0}[mode]
        if not query_tokens and mode != "bm25":
            alpha = 1.0
        # The margin is on the vector signal: off when the caller set a plain threshold, or searches by words alone.
        margin = self._settings.margin if score_threshold is None and alpha > 0.0 else NO_MARGIN
        return _Request(turns, query_tokens, alpha, threshold, margin, top_k)

    def _candidates(
        self,
        request: _Request,
        scene: str,
        user_id: str | None,
        kinds: Sequence[InsightKind] | None,
        now: datetime,
        session_id: str | None = None,
        channel: Callable[[Sequence[InsightKind]], filters.WeaviateFilter] = filters.of_kinds,
    ) -> list[StoredObject]:
        """One Weaviate query: the eligible insights nearest the query (of `kinds`, within `channel`), at most one
        version per slot.

        Behind the no-match gate (a margin is set) the candidates are the nearest by cosine, with the distance that
        Weaviate computed: the gate asks a candidate to stand out on cosine, so one that only BM25 finds cannot pass,
        and its keyword coverage is scored here anyway. That query is cheaper than a hybrid one and no vectors travel
        (bench/bench_search.py). With a plain threshold, keyword matches far from the query in vector space can
        pass, so the candidates come from Weaviate's hybrid query."""
        if request.alpha == 0.0 and not request.tokens:
            return []
        vector = request.vector(self._embedder)
        where = filters.eligible(scene, user_id, now, session_id)
        if kinds:
            where = where & channel(kinds)
        limit = max(request.top_k * 4, 20)
        if request.alpha == 1.0 or request.margin != NO_MARGIN:
            result = self._insights.query.near_vector(
                near_vector=vector.tolist(),
                target_vector=VECTOR_NAME,
                filters=where,
                limit=limit,
                return_metadata=MetadataQuery(distance=True),
            )
        elif request.alpha == 0.0:
            result = self._insights.query.bm25(
                query=" ".join(request.tokens),
                query_properties=["search_text"],
                filters=where,
                limit=limit,
                include_vector=True,
            )
        else:
            result = self._insights.query.hybrid(
                query=" ".join(request.tokens),
                vector=vector.tolist(),
                target_vector=VECTOR_NAME,
                alpha=request.alpha,
                query_properties=["search_text"],
                fusion_type=HybridFusion.RELATIVE_SCORE,
                filters=where,
                limit=limit,
                include_vector=True,
                return_metadata=MetadataQuery(score=True),
            )
        return newest_per_slot(result.objects)

    def _standing_candidates(
        self, scene: str, user_id: str | None, now: datetime, limit: int, session_id: str | None = None
    ) -> list[StoredObject]:
        """Eligible standing rules (filters.standing_channel), the newest first."""
        where = filters.eligible(scene, user_id, now, session_id) & filters.standing_channel()
        result = self._insights.query.fetch_objects(
            filters=where, limit=limit, sort=Sort.by_property("asserted_at", ascending=False)
        )
        return newest_per_slot(result.objects)

    def _recall_standing(
        self, request: _Request, scene: str, user_id: str | None, now: datetime, budget: int, session_id: str | None
    ) -> list[Insight]:
        """The standing rules the budget takes (ranking.standing_order), in two reads: the most similar eligible ones
        with only what ranks them (the cosine distance, computed by Weaviate, and STANDING_RANK_FIELDS), then the
        chosen few whole. A hundred whole rules cost more to send and decode than the search itself (at a million
        insights, 22 against 9 ms at p50; docs/scale.md)."""
        where = filters.eligible(scene, user_id, now, session_id) & filters.standing_channel()
        ranked = self._insights.query.near_vector(
            near_vector=request.vector(self._embedder).tolist(),
            target_vector=VECTOR_NAME,
            filters=where,
            limit=MAX_STANDING_CANDIDATES,
            return_properties=list(STANDING_RANK_FIELDS),
            return_metadata=MetadataQuery(distance=True),
        ).objects
        relevance = {obj.uuid: self._score(obj, request)[2] for obj in ranked}
        chosen = ranking.standing_order(
            newest_per_slot(ranked),
            lambda obj: relevance[obj.uuid],
            lambda obj: obj.properties["asserted_at"],
            request.threshold,
            _about_every_answer,
        )[:budget]
        if not chosen:
            return []
        # Read by id alone (the eligibility filter again would cost as much as the read: docs/scale.md, run 5), then
        # checked here: a rule retired between the two reads is left out, not shown stale. Only status and dates
        # change in place; a rule's scene, scope and owner never do, and a deleted one is not read back.
        whole = self._insights.query.fetch_objects(
            filters=filters.with_ids(obj.uuid for obj in chosen), limit=len(chosen)
        ).objects
        by_id = {obj.uuid: insight_from(obj) for obj in whole}
        return [by_id[obj.uuid] for obj in chosen if obj.uuid in by_id and by_id[obj.uuid].in_force_at(now)]

    def _pool(self) -> ThreadPoolExecutor:
        # One worker: the standing rules' read, which waits on Weaviate while this thread embeds and searches.
        # Under the plugin's gevent, it is a greenlet and its gRPC call yields (hindsight_dify.runtime).
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindsight-standing")
        return self._executor

    def gate_inputs(
        self,
        query: str | Sequence[str],
        *,
        scene: str = GENERAL_SCENE,
        user_id: str | None = None,
        kinds: Sequence[InsightKind] | None = SITUATIONAL_KINDS,
        now: datetime | None = None,
    ) -> list[GateInput]:
        """What the no-match gate sees for a recall: every situational candidate (never a user's own rule, which is
        standing) with its similarity, keyword coverage, relevance and background, before any threshold. For
        explaining a result, and for calibration (bench/)."""
        request = self._request(query, None, None, "hybrid")
        with weaviate_errors("searching insights"):
            objects = self._candidates(
                request, scene, user_id, kinds, now or datetime.now(UTC), channel=filters.situational_channel
            )
        scored = [self._score(obj, request) for obj in objects]
        similarities = [similarity for similarity, _, _ in scored]
        copies = copies_of_each(objects)
        return [
            GateInput(
                insight_from(obj),
                similarity,
                keyword,
                relevance,
                ranking.background(similarities, index, self._settings.background_prior, copies[index]),
            )
            for index, (obj, (similarity, keyword, relevance)) in enumerate(zip(objects, scored, strict=True))
        ]

    def _score(self, obj: StoredObject, request: _Request) -> tuple[float, float, float]:
        """(similarity, keyword, relevance) of one candidate."""
        metadata = getattr(obj, "metadata", None)  # every query result has it; StoredObject does not promise it
        distance = getattr(metadata, "distance", None)
        if distance is not None:  # cosine distance, computed by Weaviate
            similarity = 1.0 - float(distance)
        else:
            similarity = float(np.dot(request.vector(self._embedder), vector_of(obj)))
        keyword = ranking.keyword_coverage(request.tokens, (obj.properties.get("search_text") or "").split())
        return similarity, keyword, ranking.relevance(similarity, keyword, request.alpha)

    def _rerank(
        self, objects: Sequence[StoredObject], request: _Request, reranker: Reranker
    ) -> tuple[list[float] | None, RerankReport]:
        """The rerank model's score of each candidate, or None (the built-in gate decides) when it failed."""
        if not objects:
            return None, RerankReport(reranker.label, "not_asked", "no situational candidates", 0, 0)
        documents = [embedding_text(insight_from(obj)) for obj in objects]
        try:
            scores = reranking.checked_scores(reranker, reranking.rerank_query(request.turns), documents)
        except RerankFailed as error:
            log.warning("rerank model %s failed; the built-in gate decides: %s", reranker.label, error)
            detail = f"the rerank model failed, so the built-in gate decided: {error}"
            return None, RerankReport(reranker.label, "failed", detail, len(objects), 0)
        passed = sum(score >= self._settings.rerank_threshold for score in scores)
        detail = f"{passed} of {len(objects)} situational rules scored {self._settings.rerank_threshold:g} or more"
        return scores, RerankReport(reranker.label, "reranked", detail, len(objects), passed)

    def _rank(
        self,
        objects: Sequence[StoredObject],
        request: _Request,
        now: datetime,
        reranked: Sequence[float] | None = None,
    ) -> list[ScoredInsight]:
        """The candidates that pass the gate, best first: the no-match gate, or the rerank model's scores when given
        (then they are the relevance the rank score weighs)."""
        scored = [self._score(obj, request) for obj in objects]
        similarities = [similarity for similarity, _, _ in scored]
        copies = copies_of_each(objects)
        hits = []
        for index, (obj, (similarity, keyword, relevance)) in enumerate(zip(objects, scored, strict=True)):
            if reranked is not None:
                relevance = reranked[index]
                if relevance < self._settings.rerank_threshold:
                    continue
            else:
                background = ranking.background(similarities, index, self._settings.background_prior, copies[index])
                if not ranking.passes_gate(relevance, similarity, background, request.threshold, request.margin):
                    continue
            insight = insight_from(obj)
            score = ranking.rank_score(
                relevance, insight.confidence, insight.asserted_at, now, self._settings.recency_half_life_days
            )
            hits.append(
                ScoredInsight(insight=insight, score=score, relevance=relevance, similarity=similarity, keyword=keyword)
            )
        hits.sort(key=lambda hit: (-hit.score, -hit.insight.asserted_at.timestamp(), str(hit.insight.id)))
        return hits[: request.top_k]


@dataclass(frozen=True)
class GateInput:
    """One candidate as the no-match gate sees it (ranking.py)."""

    insight: Insight
    similarity: float
    keyword: float
    relevance: float
    background: float


class _Request:
    """One validated search: the turns, their words, and the gate's constants. The vector is embedded once, lazily,
    so that a read that needs no vector can start before it."""

    def __init__(
        self, turns: list[str], query_tokens: list[str], alpha: float, threshold: float, margin: float, top_k: int
    ) -> None:
        self.turns = turns
        self.tokens = query_tokens
        self.alpha = alpha
        self.threshold = threshold
        self.margin = margin
        self.top_k = top_k
        self._vector: Vectors | None = None

    def vector(self, embedder: Embedder) -> Vectors:
        if self._vector is None:
            self._vector = ranking.query_vector(embedder.embed(self.turns, query=True))
        return self._vector


def _about_every_answer(obj: StoredObject) -> bool:
    """A preference (how every answer should look), as against a user's own fact or process (about a subject)."""
    return bool(obj.properties.get("kind") == InsightKind.PREFERENCE.value)


def query_turns(query: str | Sequence[str]) -> list[str]:
    """The last turns (at most MAX_QUERY_TURNS), oldest first, cut to MAX_QUERY_CHARS from the newest backwards."""
    turns = [turn.strip() for turn in ([query] if isinstance(query, str) else list(query)) if turn.strip()]
    kept: list[str] = []
    budget = MAX_QUERY_CHARS
    for turn in reversed(turns[-MAX_QUERY_TURNS:]):
        if budget <= 0:
            break
        kept.append(turn[-budget:])
        budget -= len(kept[-1])
    return kept[::-1]


def newest_per_slot(objects: Sequence[StoredObject]) -> list[StoredObject]:
    """At most one version per slot, the newest: while two racing writers settle a slot, or before the expiry sweep
    has run, the filters may let two versions through, and only the newest is the rule."""
    newest: dict[str, StoredObject] = {}
    for obj in objects:
        slot = str(obj.properties.get("slot_key"))
        kept = newest.get(slot)
        if kept is None or (obj.properties["asserted_at"], str(obj.uuid)) > (
            kept.properties["asserted_at"],
            str(kept.uuid),
        ):
            newest[slot] = obj
    return [obj for obj in objects if newest.get(str(obj.properties.get("slot_key"))) is obj]


def copies_of_each(objects: Sequence[StoredObject]) -> list[set[int]]:
    """For each candidate, the positions of the others with its topic (and condition): copies of one lesson for other
    owners (a user's, the project's approved copy, a session's), which are not its background (ranking.background)."""
    topic_of = [
        (
            keys.normalize_key(str(obj.properties.get("topic") or "")),
            keys.normalize_key(str(obj.properties.get("condition_detail") or "")),
        )
        for obj in objects
    ]
    return [
        {other for other, key in enumerate(topic_of) if key == mine and other != index}
        for index, mine in enumerate(topic_of)
    ]


def newest_per_topic(insights: Sequence[Insight]) -> set[uuid.UUID]:
    """The ids to inject: one rule per topic (and condition), the newest. A general-scene rule and a scene rule on the
    same topic (or a project rule and a user's own) would otherwise leave the model to guess which one holds; a rule
    that holds only in one context stands beside the topic's general rule."""
    newest: dict[tuple[str, str], Insight] = {}
    for insight in insights:
        key = (keys.normalize_key(insight.topic), keys.normalize_key(insight.condition_detail or ""))
        kept = newest.get(key)
        if kept is None or (insight.asserted_at, str(insight.id)) > (kept.asserted_at, str(kept.id)):
            newest[key] = insight
    return {insight.id for insight in newest.values()}
