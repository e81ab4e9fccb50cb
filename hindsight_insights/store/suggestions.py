"""Prompt suggestions (suggestions.py has the model and the mining), one collection per project
(`Hindsight_<project>_Suggestion`, no vectors), reached by the worker's nightly run and by the CLI alike.

Each suggestion's id is deterministic per (topic, scene, type), so a night updates the one it made before. The
nightly update writes the counts, the evidence and the text only; the status changes by a reviewer's decision
(accept, dismiss: each once) or when a dismissed suggestion's corrections grow markedly (it is pending again).
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any, Literal, cast, get_args

import weaviate
from weaviate.classes.config import Configure, DataType, StopwordsPreset
from weaviate.classes.query import Filter
from weaviate.collections import Collection as WeaviateCollection

from hindsight_insights.config import Settings
from hindsight_insights.connection import weaviate_errors
from hindsight_insights.errors import InvalidInput, NotFound
from hindsight_insights.store.schema import (
    Index,
    StoredField,
    StoredObject,
    collection_names,
    from_object,
    to_properties,
)
from hindsight_insights.suggestions import Mined, PromptSuggestion, SuggestionEvidence, SuggestionStatus

MAX_SUGGESTIONS = 1000
STATUSES: tuple[str, ...] = get_args(SuggestionStatus)

Upserted = Literal["created", "updated", "reopened"]

SUGGESTION_FIELDS = (
    StoredField("topic", DataType.TEXT, Index.STORED),
    StoredField("topic_key", DataType.TEXT, Index.KEYWORD),
    StoredField("scene", DataType.TEXT, Index.STORED),
    StoredField("scene_key", DataType.TEXT, Index.KEYWORD),
    StoredField("type", DataType.TEXT, Index.KEYWORD),
    StoredField("corrections", DataType.INT),
    StoredField("users", DataType.INT),
    StoredField("sessions", DataType.INT),
    StoredField("first_at", DataType.DATE),
    StoredField("last_at", DataType.DATE),
    StoredField("evidence_json", DataType.TEXT, Index.STORED, path=None),  # the evidence list, as JSON
    StoredField("text", DataType.TEXT, Index.STORED),
    StoredField("status", DataType.TEXT, Index.KEYWORD),
    StoredField("decided_by", DataType.TEXT, Index.STORED, none_as=""),
    StoredField("decided_at", DataType.DATE),
    StoredField("decided_corrections", DataType.INT),
    StoredField("note", DataType.TEXT, Index.STORED),
    StoredField("reopened", DataType.INT),
    StoredField("created_at", DataType.DATE),
    StoredField("updated_at", DataType.DATE),
)
_MINED = {"topic", "scene", "corrections", "users", "sessions", "first_at", "last_at", "evidence_json", "text"}
_DECISION = {"status", "decided_by", "decided_at", "decided_corrections", "note", "updated_at"}


def suggestion_collection_name(project: str) -> str:
    return collection_names(project).insights.removesuffix("_Insight") + "_Suggestion"


def _evidence_json(evidence: list[SuggestionEvidence]) -> str:
    return json.dumps([item.model_dump(mode="json") for item in evidence], ensure_ascii=False)


def _when(moment: datetime | None) -> str:
    return "" if moment is None else f" at {moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _suggestion(obj: StoredObject) -> PromptSuggestion:
    loaded = json.loads(str(obj.properties.get("evidence_json") or "[]"))
    base = from_object(obj, SUGGESTION_FIELDS, PromptSuggestion)
    return base.model_copy(update={"evidence": [SuggestionEvidence.model_validate(item) for item in loaded]})


class SuggestionBox:
    def __init__(self, collection: WeaviateCollection, settings: Settings) -> None:
        self.collection = collection
        self._settings = settings

    @classmethod
    def ensure(cls, client: weaviate.WeaviateClient, settings: Settings) -> SuggestionBox:
        name = suggestion_collection_name(settings.project)
        with weaviate_errors("creating the project's prompt suggestions"):
            if not client.collections.exists(name):
                try:
                    client.collections.create(
                        name,
                        description=json.dumps({"project": settings.project, "suggestions": 1}, ensure_ascii=False),
                        properties=[field.weaviate_property() for field in SUGGESTION_FIELDS],
                        vector_config=Configure.Vectors.self_provided(),
                        inverted_index_config=Configure.inverted_index(stopwords_preset=StopwordsPreset.NONE),
                    )
                except weaviate.exceptions.UnexpectedStatusCodeError as error:
                    if "already exists" not in str(error):  # another process created it first
                        raise
        return cls(client.collections.use(name), settings)

    def _properties(self, suggestion: PromptSuggestion, only: set[str] | None = None) -> dict[str, Any]:
        return to_properties(
            suggestion, SUGGESTION_FIELDS, only=only, evidence_json=_evidence_json(suggestion.evidence)
        )

    def upsert(self, mined: Mined, now: datetime | None = None) -> Upserted:
        """Create the group's suggestion, or update its counts, evidence and text; a dismissed one is pending again
        only when its corrections reached `suggestion_reopen_growth` times those it was dismissed with."""
        now = now or datetime.now(UTC)
        fields = {
            "topic": mined.topic,
            "scene": mined.scene,
            "corrections": mined.corrections,
            "users": mined.users,
            "sessions": mined.sessions,
            "first_at": mined.first_at,
            "last_at": mined.last_at,
            "evidence": mined.evidence,
            "text": mined.text,
            "updated_at": now,
        }
        with weaviate_errors("saving a prompt suggestion"):
            obj = self.collection.query.fetch_object_by_id(mined.id)
            if obj is None:
                suggestion = PromptSuggestion(
                    id=mined.id,
                    topic_key=mined.topic_key,
                    scene_key=mined.scene_key,
                    type=mined.type,
                    created_at=now,
                    **fields,
                )
                try:
                    self.collection.data.insert(self._properties(suggestion), uuid=suggestion.id)
                    return "created"
                except weaviate.exceptions.UnexpectedStatusCodeError as error:
                    if "already exists" not in str(error):
                        raise
                    obj = self.collection.query.fetch_object_by_id(mined.id)  # another night's run made it first
                    assert obj is not None
            stored = _suggestion(obj)
            updated = stored.model_copy(update=fields)
            names = _MINED | {"updated_at"}
            growth = self._settings.suggestion_reopen_growth
            reopen = stored.status == "dismissed" and mined.corrections >= growth * max(stored.decided_corrections, 1)
            if reopen:
                updated = updated.model_copy(
                    update={
                        "status": "pending",
                        "reopened": stored.reopened + 1,
                        "note": f"dismissed by {stored.decided_by} with {stored.decided_corrections} corrections; "
                        f"back with {mined.corrections}",
                    }
                )
                names |= {"status", "reopened", "note"}
            self.collection.data.update(uuid=updated.id, properties=self._properties(updated, names))
        return "reopened" if reopen else "updated"

    def get(self, suggestion_id: uuid.UUID | str) -> PromptSuggestion:
        try:
            key = uuid.UUID(str(suggestion_id))
        except ValueError:
            raise InvalidInput([("id", f"{suggestion_id!r} is not a suggestion id")]) from None
        with weaviate_errors("reading a prompt suggestion"):
            obj = self.collection.query.fetch_object_by_id(key)
        if obj is None:
            raise NotFound(
                f"no prompt suggestion {key} in project {self._settings.project!r}: "
                "`python -m hindsight_cli suggestions list` shows them"
            )
        return _suggestion(obj)

    def all(self, *, status: SuggestionStatus | None = None) -> list[PromptSuggestion]:
        """Suggestions of one status, or all; most corrected first."""
        where = Filter.by_property("status").equal(status) if status is not None else None
        with weaviate_errors("listing prompt suggestions"):
            result = self.collection.query.fetch_objects(filters=where, limit=MAX_SUGGESTIONS)
        found = [_suggestion(obj) for obj in result.objects]
        return sorted(found, key=lambda s: (-s.corrections, s.topic_key, s.scene_key, s.type))

    def list_suggestions(self, status: str | None = None) -> list[PromptSuggestion]:
        """The report's port (reporting.inputs.SuggestionSource): `all`, with the status as text."""
        if status is not None and status not in STATUSES:
            raise InvalidInput([("status", f"must be one of {', '.join(STATUSES)}, not {status!r}")])
        return self.all(status=cast(SuggestionStatus | None, status))

    def decide(
        self,
        suggestion_id: uuid.UUID | str,
        status: Literal["accepted", "dismissed"],
        reviewer: str,
        note: str = "",
        now: datetime | None = None,
    ) -> PromptSuggestion:
        """A reviewer's decision, once: a decided suggestion is refused (a dismissed one comes back by itself when
        its corrections grow). Only the decision is recorded: no prompt is changed."""
        if not reviewer.strip():
            raise InvalidInput([("reviewer", "must not be empty: the decision records who made it")])
        now = now or datetime.now(UTC)
        suggestion = self.get(suggestion_id)
        if suggestion.status != "pending":
            raise InvalidInput(
                [
                    (
                        "id",
                        f"suggestion {suggestion.id} was {suggestion.status} already by {suggestion.decided_by}"
                        f"{_when(suggestion.decided_at)}; nothing changed",
                    )
                ]
            )
        decided = suggestion.model_copy(
            update={
                "status": status,
                "decided_by": reviewer,
                "decided_at": now,
                "decided_corrections": suggestion.corrections,
                "note": note,
                "updated_at": now,
            }
        )
        with weaviate_errors("recording a decision on a prompt suggestion"):
            self.collection.data.update(uuid=decided.id, properties=self._properties(decided, _DECISION))
        return decided

    def forget_user(self, user_id: str) -> int:
        """Take a forgotten user's quotes out of every suggestion's evidence (the counts stay: they name no one)."""
        changed = 0
        for suggestion in self.all():
            kept = [item for item in suggestion.evidence if item.user_id != user_id]
            if len(kept) != len(suggestion.evidence):
                with weaviate_errors("forgetting a user's quotes in prompt suggestions"):
                    self.collection.data.update(uuid=suggestion.id, properties={"evidence_json": _evidence_json(kept)})
                changed += 1
        return changed
