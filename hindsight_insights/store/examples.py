"""Few-shot examples: (what the agent said -> what the user corrected it to, with the question before it), one
collection per project (`Hindsight_<project>_Example`), vectorised with the project's embedder so that
`search_insight` can match them to a conversation by meaning.

- Made only from detected corrections (governance/recording.py), from the stored turns, which admission redacted,
  and redacted again by admission.admit_example: no unredacted text is ever stored.
- Scoped like lessons: an example is its user's (scope "user") until a reviewer promotes it (scope "project").
- Deduplicated by meaning: an example whose vector is at least `fewshot_duplicate_similarity` from one its owner
  already has replaces that one's wording (the newest correction wins) and counts one more (`merged`); the matches
  of a search collapse the same way, so two near-identical examples are never shown together.
- Expire: `fewshot_ttl_days` after they were last learned; an expired one is never shown and `sweep` deletes it.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import weaviate
from weaviate.classes.config import Configure, DataType, StopwordsPreset
from weaviate.classes.query import Filter, FilterReturn, MetadataQuery
from weaviate.collections import Collection as WeaviateCollection

from hindsight_insights import ranking
from hindsight_insights.config import Settings
from hindsight_insights.connection import SAFE_TO_RERUN, weaviate_errors
from hindsight_insights.embedder import Embedder
from hindsight_insights.errors import EmbedderMismatch, InvalidInput, NotFound
from hindsight_insights.fewshot import ExampleDraft, FewShotExample
from hindsight_insights.keys import GENERAL_SCENE, scene_key
from hindsight_insights.store.bulk import delete_all
from hindsight_insights.store.retrieval import query_turns
from hindsight_insights.store.schema import (
    VECTOR_NAME,
    Index,
    StoredField,
    StoredObject,
    collection_names,
    from_object,
    to_properties,
    vector_of,
)

MAX_EXAMPLES = 3  # shown per search, at most
CANDIDATES = 12  # read per search before near-duplicates collapse
_NAMESPACE = uuid.UUID("3f4b2a71-0c5e-4b7d-8a3e-2d9c6f1e5a40")


def example_collection_name(project: str) -> str:
    return collection_names(project).insights.removesuffix("_Insight") + "_Example"


EXAMPLE_FIELDS = (
    StoredField("user_id", DataType.TEXT, Index.KEYWORD),
    StoredField("scope", DataType.TEXT, Index.KEYWORD),
    StoredField("session_id", DataType.TEXT, Index.KEYWORD),
    StoredField("turn_id", DataType.UUID),
    StoredField("scene", DataType.TEXT, Index.STORED),
    StoredField("scene_key", DataType.TEXT, Index.KEYWORD, path=None),
    StoredField("topic", DataType.TEXT, Index.STORED),
    StoredField("type", DataType.TEXT, Index.KEYWORD),
    StoredField("context", DataType.TEXT, Index.STORED),
    StoredField("said", DataType.TEXT, Index.STORED),
    StoredField("corrected", DataType.TEXT, Index.STORED),
    StoredField("learned_at", DataType.DATE),
    StoredField("expire_at", DataType.DATE),
    StoredField("merged", DataType.INT),
    StoredField("promoted_by", DataType.TEXT, Index.STORED, none_as=""),
)


def embedding_text(example: ExampleDraft) -> str:
    """The user's words around the correction: a later conversation about the same thing resembles them."""
    return "\n".join(part for part in (example.context, example.corrected) if part)


def example_uuid(user_id: str, turn_id: uuid.UUID) -> uuid.UUID:
    """One example per corrected turn: recording a retried message again keeps the same one."""
    return uuid.uuid5(_NAMESPACE, f"{user_id}\n{turn_id}")


def _visible(user_id: str, scene: str, now: datetime) -> FilterReturn:
    key = scene_key(scene)
    scenes = [GENERAL_SCENE] if key == GENERAL_SCENE else [key, GENERAL_SCENE]
    mine = Filter.by_property("scope").equal("user") & Filter.by_property("user_id").equal(user_id)
    return Filter.all_of(
        [
            Filter.by_property("scene_key").contains_any(scenes),
            mine | Filter.by_property("scope").equal("project"),
            Filter.by_property("expire_at").greater_than(now),
        ]
    )


class ExampleLibrary:
    """A project's few-shot examples in Weaviate."""

    def __init__(self, collection: WeaviateCollection, embedder: Embedder, settings: Settings) -> None:
        self.collection = collection
        self._embedder = embedder
        self._settings = settings

    @classmethod
    def ensure(cls, client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder) -> ExampleLibrary:
        name = example_collection_name(settings.project)
        binding = {"project": settings.project, "embedder": embedder.id, "dimension": embedder.dimension}
        with weaviate_errors("creating the project's few-shot examples"):
            if not client.collections.exists(name):
                try:
                    client.collections.create(
                        name,
                        description=json.dumps(binding, ensure_ascii=False),
                        properties=[field.weaviate_property() for field in EXAMPLE_FIELDS],
                        vector_config=Configure.Vectors.self_provided(),
                        inverted_index_config=Configure.inverted_index(stopwords_preset=StopwordsPreset.NONE),
                    )
                except weaviate.exceptions.UnexpectedStatusCodeError as error:
                    if "already exists" not in str(error):  # another process created it first
                        raise
            collection = client.collections.use(name)
            found = json.loads(collection.config.get().description or "{}")
        if (found.get("embedder"), found.get("dimension")) != (embedder.id, embedder.dimension):
            raise EmbedderMismatch(
                f"collection {name} holds vectors of {found.get('embedder')} ({found.get('dimension')} dims), but the "
                f"configured embedder is {embedder.id}: configure the original embedder, or use another project name."
            )
        return cls(collection, embedder, settings)

    # ---- writing --------------------------------------------------------------------------------------------

    def keep(self, draft: ExampleDraft, now: datetime | None = None) -> FewShotExample:
        """Keep a redacted example for its user (admission.admit_example made `draft`). A near-duplicate of one they
        have takes that one's place: its wording becomes the newest, its TTL starts again, it counts one more."""
        now = now or datetime.now(UTC)
        vector = self._embedder.embed([embedding_text(draft)])[0]
        expire_at = now + timedelta(days=self._settings.fewshot_ttl_days)
        with weaviate_errors("keeping a few-shot example"):
            same = self._nearest_own(draft.user_id, vector, now)
            if same is not None:
                example = FewShotExample(
                    **draft.model_dump(),
                    id=same.id,
                    scope=same.scope,
                    learned_at=now,
                    expire_at=expire_at,
                    merged=same.merged + (0 if same.turn_id == draft.turn_id else 1),
                    promoted_by=same.promoted_by,
                )
                self.collection.data.update(uuid=example.id, properties=self._properties(example), vector=_v(vector))
                return example
            example = FewShotExample(
                **draft.model_dump(), id=example_uuid(draft.user_id, draft.turn_id), learned_at=now, expire_at=expire_at
            )
            try:
                self.collection.data.insert(self._properties(example), uuid=example.id, vector=_v(vector))
            except weaviate.exceptions.UnexpectedStatusCodeError as error:
                if "already exists" not in str(error):  # the same turn, kept by a racing retry
                    raise
            return example

    def _nearest_own(self, user_id: str, vector: np.ndarray, now: datetime) -> FewShotExample | None:
        """The user's own living example nearest to `vector`, if it is a near-duplicate."""
        where = (
            Filter.by_property("user_id").equal(user_id)
            & Filter.by_property("scope").equal("user")
            & Filter.by_property("expire_at").greater_than(now)
        )
        result = self.collection.query.near_vector(
            near_vector=vector.tolist(), filters=where, limit=1, return_metadata=MetadataQuery(distance=True)
        )
        if not result.objects:
            return None
        obj = result.objects[0]
        distance = obj.metadata.distance if obj.metadata.distance is not None else 2.0
        return _example(obj) if 1.0 - distance >= self._settings.fewshot_duplicate_similarity else None

    def _properties(self, example: FewShotExample) -> dict[str, Any]:
        return to_properties(example, EXAMPLE_FIELDS, scene_key=scene_key(example.scene))

    def promote(self, example_id: uuid.UUID | str, reviewer: str) -> FewShotExample:
        """A reviewer makes an example the project's: shown to every user of its scene."""
        example = self.get(example_id)
        if example.scope == "project":
            raise InvalidInput([("id", f"example {example.id} was promoted already by {example.promoted_by}")])
        promoted = example.model_copy(update={"scope": "project", "promoted_by": reviewer})
        with weaviate_errors("promoting a few-shot example"):
            self.collection.data.update(
                uuid=example.id, properties=to_properties(promoted, EXAMPLE_FIELDS, only={"scope", "promoted_by"})
            )
        return promoted

    def delete(self, example_id: uuid.UUID | str) -> None:
        example = self.get(example_id)
        with weaviate_errors("deleting a few-shot example"):
            self.collection.data.delete_by_id(example.id)

    def sweep(self, now: datetime | None = None) -> int:
        """Delete the examples past their TTL; returns how many."""
        now = now or datetime.now(UTC)
        with weaviate_errors("deleting expired few-shot examples", SAFE_TO_RERUN):
            return delete_all(self.collection, Filter.by_property("expire_at").less_or_equal(now))

    def forget_user(self, user_id: str) -> int:
        """Every example made from this user's conversations, promoted ones too (they quote the user)."""
        with weaviate_errors("forgetting a user's few-shot examples", SAFE_TO_RERUN):
            return delete_all(self.collection, Filter.by_property("user_id").equal(user_id))

    # ---- reading --------------------------------------------------------------------------------------------

    def get(self, example_id: uuid.UUID | str) -> FewShotExample:
        try:
            key = uuid.UUID(str(example_id))
        except ValueError:
            raise InvalidInput([("id", f"{example_id!r} is not an example id")]) from None
        with weaviate_errors("reading a few-shot example"):
            obj = self.collection.query.fetch_object_by_id(key)
        if obj is None:
            raise NotFound(f"no few-shot example {key} in project {self._settings.project!r}")
        return _example(obj)

    def recent(self, *, user_id: str | None = None, limit: int = 100) -> list[FewShotExample]:
        """Examples, newest first (expired ones too, until the sweep)."""
        where = Filter.by_property("user_id").equal(user_id) if user_id is not None else None
        with weaviate_errors("listing few-shot examples"):
            result = self.collection.query.fetch_objects(filters=where, limit=limit)
        return sorted((_example(obj) for obj in result.objects), key=lambda e: e.learned_at, reverse=True)

    def matching(
        self, query: str | list[str], *, user_id: str, scene: str, now: datetime | None = None, limit: int = 3
    ) -> list[FewShotExample]:
        """At most `limit` (and MAX_EXAMPLES) living examples this user may see (their own, and promoted ones) of the
        scene or the general scene, nearest to the recent turns by meaning, at least `fewshot_min_similarity`
        close; near-duplicates collapse to the nearest."""
        now = now or datetime.now(UTC)
        turns = query_turns(query)
        if not turns:
            return []
        vector = ranking.query_vector(self._embedder.embed(turns, query=True))
        with weaviate_errors("matching few-shot examples"):
            result = self.collection.query.near_vector(
                near_vector=vector.tolist(),
                filters=_visible(user_id, scene, now),
                limit=CANDIDATES,
                include_vector=True,
                return_metadata=MetadataQuery(distance=True),
            )
        kept: list[tuple[FewShotExample, np.ndarray]] = []
        for obj in result.objects:  # nearest first
            distance = obj.metadata.distance if obj.metadata.distance is not None else 2.0
            if 1.0 - distance < self._settings.fewshot_min_similarity:
                break
            own = vector_of(obj)
            if any(float(np.dot(own, other)) >= self._settings.fewshot_duplicate_similarity for _, other in kept):
                continue
            kept.append((_example(obj), own))
            if len(kept) >= min(limit, MAX_EXAMPLES):
                break
        return [example for example, _ in kept]


def _v(vector: np.ndarray) -> dict[str, list[float]]:
    return {VECTOR_NAME: vector.tolist()}


def _example(obj: StoredObject) -> FewShotExample:
    return from_object(obj, EXAMPLE_FIELDS, FewShotExample)
