"""The insight store over weaviate-client 4.x: one collection set per project.

Save rules (docs/architecture.md, "Save rules"), checked in this order:
  1. exact duplicate (same deterministic uuid5 of the content): nothing written, `unchanged`;
     a superseded or expired exact duplicate is revived as the newest rule and supersedes the current one;
  2. near-duplicate (same kind, scene and scope; actions with cosine >= merge_similarity, the same numbers and most
     words shared, see ranking.near_duplicate_actions): merged into the stored one, support_count + 1;
  3. same topic + scene + scope: the new one supersedes the old, which is kept with status `superseded`;
  4. otherwise created.
Every save and import writes all or nothing: when a later write fails, the earlier writes of that call are undone.
forget_user and expire_sweep are idempotent instead: if interrupted, running them again finishes the job.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import weaviate
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter, HybridFusion, MetadataQuery, Sort
from weaviate.util import generate_uuid5

from hindsight_insights import ranking
from hindsight_insights.config import Settings
from hindsight_insights.connection import SAFE_TO_RERUN, weaviate_errors
from hindsight_insights.embedder import Embedder, Vectors
from hindsight_insights.errors import InvalidInput, NotFound, WeaviateUnavailable
from hindsight_insights.models import (
    GENERAL_SCENE,
    ForgetResult,
    Insight,
    InsightDraft,
    InsightKind,
    InsightStatus,
    Recall,
    SaveResult,
    SaveStatus,
    Scope,
    ScoredInsight,
    normalize_scene,
)
from hindsight_insights.segment import segment, tokens
from hindsight_insights.store import filters
from hindsight_insights.store.schema import (
    INSIGHT_FIELDS,
    ProjectCollections,
    StoredObject,
    ensure_collections,
    from_object,
    to_properties,
)
from hindsight_insights.store.turns import TurnLog

log = logging.getLogger(__name__)

SearchMode = Literal["hybrid", "vector", "bm25"]
MAX_TOP_K = 20
MAX_QUERY_TURNS = 5
_VECTOR = "default"  # name of the self-provided vector


class _Undo:
    """Compensating actions for the writes of one call, run in reverse when a later write fails."""

    def __init__(self) -> None:
        self._steps: list[Callable[[], object]] = []

    def add(self, step: Callable[[], object]) -> None:
        self._steps.append(step)

    def run(self) -> None:
        for step in reversed(self._steps):
            try:
                step()
            except Exception:  # keep undoing the rest; the original error is re-raised by the caller
                log.exception("undo step failed")


def _topic_key(topic: str) -> str:
    return " ".join(topic.casefold().split())


Slot = tuple[str, str, Scope, str]


def _slot(topic: str, scene: str, scope: Scope, user_id: str | None) -> Slot:
    """Where a newer insight supersedes an older one: same topic, scene and scope (and user, for user scope)."""
    return _topic_key(topic), scene, scope, user_id or ""


def content_uuid(draft: InsightDraft) -> uuid.UUID:
    """Deterministic id of an insight's content: the same insight saved twice is one object."""
    canonical = [
        draft.kind.value,
        _topic_key(draft.topic),
        draft.scene,
        draft.resolved_scope.value,
        draft.user_id or "",
        " ".join(draft.action.split()),
        " ".join(draft.observation.split()),
        " ".join(draft.evidence.quote.split()),
    ]
    return uuid.UUID(generate_uuid5(json.dumps(canonical, ensure_ascii=False)))


def _embedding_text(topic: str, scene: str, observation: str, action: str) -> str:
    return "\n".join(part for part in (topic, action, observation) if part) + (
        "" if scene == GENERAL_SCENE else f"\n{scene}"
    )


def _search_text(topic: str, scene: str, observation: str, action: str, tags: Sequence[str]) -> str:
    return segment(" ".join([topic, scene, observation, action, *tags]))


def _insight_from(obj: StoredObject) -> Insight:
    return from_object(obj, INSIGHT_FIELDS, Insight)


def _vector_of(obj: StoredObject) -> Vectors:
    vector = obj.vector[_VECTOR] if isinstance(obj.vector, dict) else obj.vector
    return np.asarray(vector, dtype=np.float32)


class InsightStore:
    """Insights and turns of one project. Create with `InsightStore.open(client, settings, embedder)`."""

    def __init__(
        self,
        collections: ProjectCollections,
        embedder: Embedder,
        settings: Settings,
        client: weaviate.WeaviateClient | None = None,
    ) -> None:
        self._insights = collections.insights
        self.turns = TurnLog(collections.turns)
        self._embedder = embedder
        self._settings = settings
        self._client = client  # set when this store owns the connection (open_store)

    @classmethod
    def open(
        cls, client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder, *, owns_client: bool = False
    ) -> InsightStore:
        with weaviate_errors("creating the project's collections"):
            collections = ensure_collections(client, settings.project, embedder)
        return cls(collections, embedder, settings, client if owns_client else None)

    @property
    def settings(self) -> Settings:
        return self._settings

    def is_connected(self) -> bool:
        return self._client is None or self._client.is_connected()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    # ---- insights -------------------------------------------------------------------------------------------

    def save(self, draft: InsightDraft, now: datetime | None = None) -> SaveResult:
        now = now or datetime.now(UTC)
        new_id = content_uuid(draft)
        with weaviate_errors("saving an insight"):
            existing = self._insights.query.fetch_object_by_id(new_id)
            if existing is not None:
                return self._save_exact_duplicate(_insight_from(existing), now)
            vector = self._embedder.embed([_embedding_text(draft.topic, draft.scene, draft.observation, draft.action)])[
                0
            ]
            if draft.status is InsightStatus.PENDING_REVIEW:  # decided on approval, not now
                self._insert(new_id, draft, vector, now, supersedes=[])
                return SaveResult(id=new_id, status="created", insight_status=InsightStatus.PENDING_REVIEW)
            near = self._near_duplicate(draft, vector)
            if near is not None:
                return self._merge(near, draft, now)
            old = self._same_slot(draft.topic, draft.scene, draft.resolved_scope, draft.user_id)
            undo = _Undo()
            try:
                self._insert(new_id, draft, vector, now, supersedes=[insight.id for insight in old])
                undo.add(lambda: self._insights.data.delete_by_id(new_id))
                self._mark_superseded(old, now, undo)
            except BaseException:
                undo.run()
                raise
        status: SaveStatus = "superseded" if old else "created"
        return SaveResult(
            id=new_id, status=status, insight_status=InsightStatus.ACTIVE, supersedes=[insight.id for insight in old]
        )

    def import_many(self, drafts: Sequence[InsightDraft], batch_size: int = 256, now: datetime | None = None) -> int:
        """Bulk load (migrations, seeding, benchmarks). Returns how many insights were written.

        Exact duplicates collapse and the same topic + scene + scope supersedes, within the batch and against the
        store, as in `save`; near-duplicates are not merged (use `save` for one-by-one learning). All or nothing:
        if any write fails, everything this call wrote is undone.
        """
        now = now or datetime.now(UTC)
        undo = _Undo()
        written = 0
        try:
            for start in range(0, len(drafts), batch_size):
                written += self._import_batch(drafts[start : start + batch_size], now, undo)
        except BaseException:
            undo.run()
            raise
        return written

    def _import_batch(self, drafts: Sequence[InsightDraft], now: datetime, undo: _Undo) -> int:
        unique = {content_uuid(draft): draft for draft in drafts}
        with weaviate_errors("importing insights"):
            stored = self._insights.query.fetch_objects(
                filters=Filter.by_id().contains_any(list(unique)), limit=len(unique)
            )
            for obj in stored.objects:
                unique.pop(uuid.UUID(str(obj.uuid)), None)
            if not unique:
                return 0
            ids, batch = list(unique), list(unique.values())
            vectors = self._embedder.embed([_embedding_text(d.topic, d.scene, d.observation, d.action) for d in batch])
            # Newest wins per slot: later drafts in the batch supersede earlier ones and the stored active ones.
            slot_of = {i: _slot(d.topic, d.scene, d.resolved_scope, d.user_id) for i, d in zip(ids, batch, strict=True)}
            latest: dict[Slot, uuid.UUID] = {}
            for object_id in ids:
                latest[slot_of[object_id]] = object_id
            stored_active = self._insights.query.fetch_objects(
                filters=Filter.by_property("status").equal(InsightStatus.ACTIVE.value)
                & Filter.by_property("topic_key").contains_any(sorted({slot[0] for slot in latest})),
                limit=10_000,
            )
            supersedes: dict[uuid.UUID, list[uuid.UUID]] = {object_id: [] for object_id in ids}
            replaced = []
            for insight in map(_insight_from, stored_active.objects):
                winner = latest.get(_slot(insight.topic, insight.scene, insight.scope, insight.user_id))
                if winner is not None:
                    supersedes[winner].append(insight.id)
                    replaced.append(insight)
            statuses = {}
            for object_id, draft in zip(ids, batch, strict=True):
                winner = latest[slot_of[object_id]]
                if draft.status is InsightStatus.ACTIVE and winner != object_id:
                    supersedes[winner].append(object_id)
                    statuses[object_id] = InsightStatus.SUPERSEDED
                else:
                    statuses[object_id] = draft.status
            objects = [
                DataObject(
                    uuid=object_id,
                    properties=self._properties(draft, now, supersedes[object_id], statuses[object_id]),
                    vector={_VECTOR: vector.tolist()},
                )
                for object_id, draft, vector in zip(ids, batch, vectors, strict=True)
            ]
            undo.add(lambda: self._insights.data.delete_many(where=Filter.by_id().contains_any(ids)))
            result = self._insights.data.insert_many(objects)
            if result.has_errors:
                first = next(iter(result.errors.values()))
                raise WeaviateUnavailable(
                    f"Weaviate rejected {len(result.errors)} of {len(objects)} insights: {first.message}"
                )
            self._mark_superseded(replaced, now, undo)
        return len(objects)

    def _insert(
        self, object_id: uuid.UUID, draft: InsightDraft, vector: Vectors, now: datetime, supersedes: list[uuid.UUID]
    ) -> None:
        self._insights.data.insert(
            self._properties(draft, now, supersedes, draft.status), uuid=object_id, vector={_VECTOR: vector.tolist()}
        )

    @staticmethod
    def _properties(
        draft: InsightDraft, now: datetime, supersedes: list[uuid.UUID], status: InsightStatus
    ) -> dict[str, Any]:
        insight = Insight(
            id=uuid.UUID(int=0),  # the id is the object's, not a property
            **draft.model_dump(exclude={"status", "scope"}),
            scope=draft.resolved_scope,
            status=status,
            supersedes=supersedes,
            created_at=now,
            updated_at=now,
        )
        return to_properties(
            insight,
            INSIGHT_FIELDS,
            topic_key=_topic_key(draft.topic),
            search_text=_search_text(draft.topic, draft.scene, draft.observation, draft.action, draft.tags),
        )

    def _mark_superseded(self, old: Sequence[Insight], now: datetime, undo: _Undo) -> None:
        for insight in old:
            self._insights.data.update(
                uuid=insight.id, properties={"status": InsightStatus.SUPERSEDED.value, "updated_at": now}
            )
            undo.add(
                lambda insight=insight: self._insights.data.update(  # type: ignore[misc]
                    uuid=insight.id, properties={"status": insight.status.value, "updated_at": insight.updated_at}
                )
            )

    def _save_exact_duplicate(self, stored: Insight, now: datetime) -> SaveResult:
        if stored.status not in (InsightStatus.SUPERSEDED, InsightStatus.EXPIRED):
            return SaveResult(id=stored.id, status="unchanged", insight_status=stored.status)
        if stored.expire_at is not None and stored.expire_at <= now:
            raise InvalidInput([("expire_at", "this insight already expired; save it with a new expire_at")])
        # Saying an older rule again makes it the newest one.
        old = [
            i for i in self._same_slot(stored.topic, stored.scene, stored.scope, stored.user_id) if i.id != stored.id
        ]
        undo = _Undo()
        try:
            self._insights.data.update(
                uuid=stored.id,
                properties={"status": InsightStatus.ACTIVE.value, "updated_at": now, "supersedes": [i.id for i in old]},
            )
            undo.add(
                lambda: self._insights.data.update(
                    uuid=stored.id,
                    properties={
                        "status": stored.status.value,
                        "updated_at": stored.updated_at,
                        "supersedes": stored.supersedes,
                    },
                )
            )
            self._mark_superseded(old, now, undo)
        except BaseException:
            undo.run()
            raise
        return SaveResult(
            id=stored.id,
            status="superseded" if old else "created",
            insight_status=InsightStatus.ACTIVE,
            supersedes=[i.id for i in old],
        )

    def _near_duplicate(self, draft: InsightDraft, vector: Vectors) -> Insight | None:
        """The stored insight in the same slot and kind whose action says the same (ranking.near_duplicate_actions)."""
        result = self._insights.query.near_vector(
            near_vector=vector.tolist(),
            target_vector=_VECTOR,
            limit=5,
            distance=0.5,  # a wide net; the decision is made on the actions below
            filters=filters.active_in_slot(draft.scene, draft.resolved_scope, draft.user_id)
            & Filter.by_property("kind").equal(draft.kind.value),
        )
        if not result.objects:
            return None
        candidates = [_insight_from(obj) for obj in result.objects]
        action_vectors = self._embedder.embed([draft.action, *(c.action for c in candidates)])
        new_tokens = tokens(draft.action)
        for candidate, candidate_vector in zip(candidates, action_vectors[1:], strict=True):
            similarity = float(np.dot(action_vectors[0], candidate_vector))
            if ranking.near_duplicate_actions(
                similarity, new_tokens, tokens(candidate.action), self._settings.merge_similarity
            ):
                return candidate
        return None

    def _same_slot(self, topic: str, scene: str, scope: Scope, user_id: str | None) -> list[Insight]:
        result = self._insights.query.fetch_objects(
            filters=filters.active_in_slot(scene, scope, user_id)
            & Filter.by_property("topic_key").equal(_topic_key(topic)),
            limit=100,
        )
        return [_insight_from(obj) for obj in result.objects]

    def _merge(self, stored: Insight, draft: InsightDraft, now: datetime) -> SaveResult:
        expire_at = (
            None if stored.expire_at is None or draft.expire_at is None else max(stored.expire_at, draft.expire_at)
        )
        tags = list(dict.fromkeys([*stored.tags, *draft.tags]))[:10]
        properties: dict[str, Any] = {
            "support_count": stored.support_count + 1,
            "confidence": max(stored.confidence, draft.confidence),
            "tags": tags,
            "updated_at": now,
            "search_text": _search_text(stored.topic, stored.scene, stored.observation, stored.action, tags),
        }
        if expire_at is None and stored.expire_at is not None:
            # A partial update cannot null a property, so the object is replaced whole (same id and vector):
            # still one write, so the merge is all or nothing.
            full = self._insights.query.fetch_object_by_id(stored.id, include_vector=True)
            if full is None:
                raise NotFound(f"insight {stored.id} was deleted while merging; save again")
            kept = {key: value for key, value in full.properties.items() if key != "expire_at" and value is not None}
            self._insights.data.replace(
                uuid=stored.id, properties=kept | properties, vector={_VECTOR: _vector_of(full).tolist()}
            )
        else:
            if expire_at is not None:
                properties["expire_at"] = expire_at
            self._insights.data.update(uuid=stored.id, properties=properties)
        return SaveResult(id=stored.id, status="merged", insight_status=stored.status)

    def get(self, insight_id: uuid.UUID | str) -> Insight:
        with weaviate_errors("reading an insight"):
            obj = self._insights.query.fetch_object_by_id(_as_uuid(insight_id))
        if obj is None:
            raise NotFound(f"no insight {insight_id} in project {self._settings.project!r}")
        return _insight_from(obj)

    def list_insights(
        self,
        *,
        status: InsightStatus | None = None,
        user_id: str | None = None,
        scene: str | None = None,
        kind: InsightKind | None = None,
        limit: int = 100,
    ) -> list[Insight]:
        """Insights matching every given filter, newest first."""
        parts = []
        if status is not None:
            parts.append(Filter.by_property("status").equal(status.value))
        if user_id is not None:
            parts.append(Filter.by_property("user_id").equal(user_id))
        if scene is not None:
            parts.append(Filter.by_property("scene").equal(normalize_scene(scene)))
        if kind is not None:
            parts.append(Filter.by_property("kind").equal(kind.value))
        with weaviate_errors("listing insights"):
            result = self._insights.query.fetch_objects(
                filters=Filter.all_of(parts) if parts else None,
                limit=limit,
                sort=Sort.by_property("updated_at", ascending=False),
            )
        return [_insight_from(obj) for obj in result.objects]

    def set_status(self, insight_id: uuid.UUID | str, status: InsightStatus, now: datetime | None = None) -> Insight:
        insight = self.get(insight_id)
        with weaviate_errors("changing an insight's status"):
            self._insights.data.update(
                uuid=insight.id, properties={"status": status.value, "updated_at": now or datetime.now(UTC)}
            )
        return self.get(insight.id)

    def delete(self, insight_id: uuid.UUID | str) -> None:
        insight = self.get(insight_id)
        with weaviate_errors("deleting an insight"):
            self._insights.data.delete_by_id(insight.id)

    def expire_sweep(self, now: datetime | None = None) -> int:
        """Mark active and pending insights whose expire_at has passed as expired. Returns how many."""
        now = now or datetime.now(UTC)
        due = Filter.by_property("expire_at").less_or_equal(now) & Filter.by_property("status").contains_any(
            [InsightStatus.ACTIVE.value, InsightStatus.PENDING_REVIEW.value]
        )
        count = 0
        with weaviate_errors("expiring insights", SAFE_TO_RERUN):
            result = self._insights.query.fetch_objects(filters=due, limit=10_000)
            for obj in result.objects:
                self._insights.data.update(
                    uuid=obj.uuid, properties={"status": InsightStatus.EXPIRED.value, "updated_at": now}
                )
                count += 1
        return count

    def count(self, *, user_id: str | None = None) -> tuple[int, int]:
        """(insights, turns), optionally of one user."""
        where = filters.owned_by(user_id) if user_id is not None else None
        with weaviate_errors("counting"):
            insights = self._insights.aggregate.over_all(filters=where, total_count=True).total_count
        return int(insights or 0), self.turns.count(user_id=user_id)

    def forget_user(self, user_id: str) -> ForgetResult:
        """Delete one user's insights and turns, and nothing else. Idempotent: if interrupted, run it again."""
        if not user_id.strip():
            raise InvalidInput([("user_id", "must not be empty")])
        with weaviate_errors("forgetting a user", SAFE_TO_RERUN):
            insights = self._insights.data.delete_many(where=filters.owned_by(user_id))
        return ForgetResult(insights_deleted=insights.successful, turns_deleted=self.turns.forget_user(user_id))

    # ---- search ---------------------------------------------------------------------------------------------

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
    ) -> list[ScoredInsight]:
        """Eligible insights most relevant to the query (one text, or the recent turns oldest first)."""
        turns = [turn.strip() for turn in ([query] if isinstance(query, str) else list(query)) if turn.strip()]
        turns = turns[-MAX_QUERY_TURNS:]
        top_k = self._settings.top_k if top_k is None else top_k
        threshold = self._settings.score_threshold if score_threshold is None else score_threshold
        problems = []
        if not turns:
            problems.append(("query", "must contain some text"))
        if not 1 <= top_k <= MAX_TOP_K:
            problems.append(("top_k", f"must be between 1 and {MAX_TOP_K}"))
        if not 0.0 <= threshold <= 1.0:
            problems.append(("score_threshold", "must be between 0 and 1"))
        if problems:
            raise InvalidInput(problems)

        now = now or datetime.now(UTC)
        query_tokens = tokens("\n".join(turns))
        vector = ranking.query_vector(self._embedder.embed(turns, query=True))
        alpha = {"hybrid": self._settings.hybrid_alpha, "vector": 1.0, "bm25": 0.0}[mode]
        if not query_tokens:
            if mode == "bm25":
                return []
            alpha = 1.0
        where = filters.eligible(scene, user_id, now)
        if kinds:
            where = where & Filter.by_property("kind").contains_any([kind.value for kind in kinds])
        limit = max(top_k * 4, 20)
        with weaviate_errors("searching insights"):
            if alpha == 1.0:
                result = self._insights.query.near_vector(
                    near_vector=vector.tolist(), target_vector=_VECTOR, filters=where, limit=limit, include_vector=True
                )
            elif alpha == 0.0:
                result = self._insights.query.bm25(
                    query=" ".join(query_tokens),
                    query_properties=["search_text"],
                    filters=where,
                    limit=limit,
                    include_vector=True,
                )
            else:
                result = self._insights.query.hybrid(
                    query=" ".join(query_tokens),
                    vector=vector.tolist(),
                    target_vector=_VECTOR,
                    alpha=alpha,
                    query_properties=["search_text"],
                    fusion_type=HybridFusion.RELATIVE_SCORE,
                    filters=where,
                    limit=limit,
                    include_vector=True,
                    return_metadata=MetadataQuery(score=True),
                )
        return self._rank(result.objects, vector, query_tokens, alpha, threshold, top_k, now)

    def _rank(
        self,
        objects: Sequence[StoredObject],
        vector: Vectors,
        query_tokens: Sequence[str],
        alpha: float,
        threshold: float,
        top_k: int,
        now: datetime,
    ) -> list[ScoredInsight]:
        hits = []
        for obj in objects:
            insight = _insight_from(obj)
            similarity = float(np.dot(vector, _vector_of(obj)))
            keyword = ranking.keyword_coverage(query_tokens, (obj.properties.get("search_text") or "").split())
            relevance = ranking.relevance(similarity, keyword, alpha)
            if relevance < threshold:
                continue
            score = ranking.rank_score(
                relevance, insight.confidence, insight.updated_at, now, self._settings.recency_half_life_days
            )
            hits.append(
                ScoredInsight(insight=insight, score=score, relevance=relevance, similarity=similarity, keyword=keyword)
            )
        hits.sort(key=lambda hit: (-hit.score, -hit.insight.updated_at.timestamp(), str(hit.insight.id)))
        return hits[:top_k]

    def standing_rules(
        self, *, scene: str, user_id: str | None, limit: int | None = None, now: datetime | None = None
    ) -> list[Insight]:
        """Preferences for this scene (this user's and project-wide ones): they hold whatever the question is, so no
        similarity threshold; newest first, within a budget."""
        limit = self._settings.standing_rule_budget if limit is None else limit
        if limit == 0:
            return []
        where = filters.eligible(scene, user_id, now or datetime.now(UTC)) & Filter.by_property("kind").equal(
            InsightKind.PREFERENCE.value
        )
        with weaviate_errors("reading standing rules"):
            result = self._insights.query.fetch_objects(
                filters=where, limit=limit, sort=Sort.by_property("updated_at", ascending=False)
            )
        return [_insight_from(obj) for obj in result.objects]

    def recall(
        self,
        query: str | Sequence[str],
        *,
        scene: str = GENERAL_SCENE,
        user_id: str | None = None,
        top_k: int | None = None,
        score_threshold: float | None = None,
        now: datetime | None = None,
    ) -> Recall:
        """Both retrieval channels (docs/architecture.md, Retrieval): standing preferences, and situational facts,
        processes and lessons."""
        now = now or datetime.now(UTC)
        situational = self.search(
            query,
            scene=scene,
            user_id=user_id,
            top_k=top_k,
            score_threshold=score_threshold,
            now=now,
            kinds=[InsightKind.FACT, InsightKind.PROCESS, InsightKind.LESSON],
        )
        return Recall(standing=self.standing_rules(scene=scene, user_id=user_id, now=now), situational=situational)


def _as_uuid(value: uuid.UUID | str) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value).strip())
    except ValueError:
        raise InvalidInput([("id", f"{value!r} is not an insight id (a UUID)")]) from None
