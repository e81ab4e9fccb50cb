"""The insight store over weaviate-client 4.x: one collection set per project.

Save rules (docs/architecture.md, "Save rules"). A draft lands in its slot (keys.slot_key: the normalised topic and
scene, for its owner). Then, in order:
  1. the same content (same kind and instruction in the slot, one deterministic uuid5) is already stored: its values
     are updated where they changed (`updated`), a new supporter raises its support (`merged`), otherwise
     `unchanged`. An older version said again becomes the newest one (`superseded`). A rejected one stays rejected.
  2. the slot's current rule gives the same instruction in other words (ranking.same_instruction): merged into it;
  3. otherwise a new version is written; the slot is settled (store/chain.py) and the new version supersedes the
     old rule (`superseded`), or starts the slot (`created`).
Merging never crosses slots, so a correction of another topic is never swallowed.

Every save and import writes all or nothing: when a later write fails, the earlier writes of that call are undone.
forget_user and expire_sweep are idempotent instead: if interrupted, running them again finishes the job.
"""

from __future__ import annotations

import json
import logging
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import weaviate
from weaviate.classes.data import DataObject
from weaviate.classes.query import Sort
from weaviate.util import generate_uuid5

from hindsight_insights import keys, ranking
from hindsight_insights.config import Settings
from hindsight_insights.connection import SAFE_TO_RERUN, weaviate_errors
from hindsight_insights.embedder import Embedder, Vectors
from hindsight_insights.errors import InvalidInput, NotFound, WeaviateUnavailable
from hindsight_insights.keys import GENERAL_SCENE
from hindsight_insights.models import (
    Evidence,
    ForgetResult,
    Insight,
    InsightDraft,
    InsightKind,
    InsightStatus,
    SaveResult,
    SaveStatus,
    Scope,
)
from hindsight_insights.segment import segment
from hindsight_insights.store import chain, filters
from hindsight_insights.store.audit import AuditLog
from hindsight_insights.store.bulk import delete_all
from hindsight_insights.store.retrieval import Retrieval
from hindsight_insights.store.schema import (
    INSIGHT_FIELDS,
    VECTOR_NAME,
    VECTOR_TEXT_VERSION,
    ProjectCollections,
    ensure_collections,
    insight_from,
    record_vector_text_version,
    to_properties,
)
from hindsight_insights.store.turns import TurnLog

log = logging.getLogger(__name__)

MAX_SLOT_VERSIONS = 1000
_SETTLE_ROUNDS = 5
_RACE_PAUSES_S = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
_STATE_FIELDS = ("status", "supersedes", "superseded_by", "resume_at", "updated_at")
_SCRUBBED = "[removed: the user whose conversation this quoted asked to be forgotten]"


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


def _instruction(text: str) -> str:
    return " ".join(keys.to_simplified(unicodedata.normalize("NFKC", text)).casefold().split())


def slot_of(insight: InsightDraft | Insight) -> str:
    """The slot an insight or draft belongs to (keys.slot_key)."""
    return keys.slot_key(insight.topic, insight.scene, insight.owner, insight.condition_detail)


def content_uuid(draft: InsightDraft) -> uuid.UUID:
    """Deterministic id of an insight's content: its slot, kind and instruction. The same insight saved twice, or by
    two racing writers, is one object."""
    slot = slot_of(draft)
    canonical = [slot, draft.kind.value, _instruction(draft.action)]
    return uuid.UUID(generate_uuid5(json.dumps(canonical, ensure_ascii=False)))


def supporter_of(draft: InsightDraft) -> str:
    """Who is saying it: the user, else the session, else the source. Support counts distinct supporters."""
    if draft.user_id:
        return draft.user_id
    return f"session:{draft.evidence.session_id}" if draft.evidence.session_id else f"source:{draft.source}"


def _derived(insight: Insight) -> dict[str, str]:
    return {
        "topic_key": keys.normalize_key(insight.topic),
        "scene_key": keys.scene_key(insight.scene),
        "slot_key": slot_of(insight),
        "search_text": segment(" ".join([insight.topic, insight.scene, insight.observation, insight.action])),
    }


def embedding_text(insight: InsightDraft | Insight) -> str:
    """What an insight's vector is computed from: what a later conversation about it resembles. The topic, the rule
    (whose trigger names the situation), the user's own words, and the scene. Not the observation, a narrative that
    pulls the vector towards everything else of its scene (docs/architecture.md, Retrieval)."""
    scene = "" if keys.scene_key(insight.scene) == GENERAL_SCENE else f"\n{insight.scene}"
    quote = "" if insight.evidence.quote == _SCRUBBED else insight.evidence.quote
    return "\n".join(part for part in (insight.topic, insight.action, quote) if part) + scene


def _changed_values(stored: Insight, draft: InsightDraft, new_source: bool) -> dict[str, Any]:
    """The values a repeated save changes. The same source saying it again changes its mind; another source adds
    support: the higher confidence, the later expiry (no expiry is latest), the tags of both."""
    if new_source:
        confidence = max(stored.confidence, draft.confidence)
        expiries = (stored.expire_at, draft.expire_at)
        expire_at = None if None in expiries else max(e for e in expiries if e is not None)
    else:
        confidence, expire_at = draft.confidence, draft.expire_at
    tags = list(dict.fromkeys([*stored.tags, *draft.tags]))[:10]
    candidates = {"confidence": confidence, "expire_at": expire_at, "tags": tags}
    return {name: value for name, value in candidates.items() if value != getattr(stored, name)}


def _new_insight(draft: InsightDraft, object_id: uuid.UUID, asserted_at: datetime, now: datetime) -> Insight:
    return Insight(
        id=object_id,
        **draft.model_dump(exclude={"status", "scope", "user_id"}),
        scope=draft.resolved_scope,
        user_id=None if draft.resolved_scope is Scope.PROJECT else draft.user_id,
        status=draft.status,
        learned_from=draft.user_id,
        supporters=[supporter_of(draft)],
        support_count=1,
        asserted_at=asserted_at,
        created_at=now,
        updated_at=now,
    )


class InsightStore:
    """Insights and turns of one project. Create with `open_store(settings)` or `InsightStore.open(client, ...)`."""

    def __init__(
        self,
        collections: ProjectCollections,
        embedder: Embedder,
        settings: Settings,
        client: weaviate.WeaviateClient | None = None,
    ) -> None:
        self._insights = collections.insights
        self.turns = TurnLog(collections.turns)
        self.audit = AuditLog(collections.audit)
        self.retrieval = Retrieval(collections.insights, embedder, settings)
        # Reading is the store's too: callers ask the store, retrieval.py holds the rules.
        self.search = self.retrieval.search
        self.recall = self.retrieval.recall
        self.standing_rules = self.retrieval.standing_rules
        self.gate_inputs = self.retrieval.gate_inputs
        self._embedder = embedder
        self._settings = settings
        self._client = client  # set when this store owns the connection (open_store)

    @classmethod
    def open(
        cls, client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder, *, owns_client: bool = False
    ) -> InsightStore:
        with weaviate_errors("creating the project's collections"):
            collections = ensure_collections(client, settings.project, embedder)
        store = cls(collections, embedder, settings, client if owns_client else None)
        if collections.vector_text_version < VECTOR_TEXT_VERSION:
            with weaviate_errors("making the insights' vectors again", SAFE_TO_RERUN):
                store.embed_again()
        return store

    def embed_again(self, batch_size: int = 256) -> int:
        """Make every insight's vector and search text again from what it says now, then note the vector recipe's
        version on the collection. Done once when a store opens a collection whose vectors were made another way
        (which also clears the words of users forgotten before forgetting remade them); idempotent, so an
        interrupted run is finished by the next open. Returns how many insights it embedded."""
        pending: list[Insight] = []
        done = 0
        for obj in self._insights.iterator():
            pending.append(insight_from(obj))
            if len(pending) == batch_size:
                done += self._replace_vectors(pending)
                pending = []
        done += self._replace_vectors(pending)
        record_vector_text_version(self._insights)
        log.info("made the vectors of %d insights again (vector text version %d)", done, VECTOR_TEXT_VERSION)
        return done

    def _replace_vectors(self, insights: Sequence[Insight]) -> int:
        vectors = self._embedder.embed([embedding_text(insight) for insight in insights])
        # A PATCH of the search text and vector only: a writer changing the insight meanwhile loses nothing. One
        # request per insight (there is no batch PATCH); a few at a time keep Weaviate busy.
        with ThreadPoolExecutor(max_workers=4, thread_name_prefix="hindsight-embed-again") as pool:
            list(pool.map(lambda insight, vector: self._update_searchable(insight, {}, vector), insights, vectors))
        return len(insights)

    def _update_searchable(self, insight: Insight, properties: dict[str, Any], vector: Vectors | None = None) -> None:
        """PATCH `properties` together with what search reads, made again from what `insight` says now: the
        segmented search text and the vector (embedded here unless given)."""
        if vector is None:
            vector = self._embedder.embed([embedding_text(insight)])[0]
        self._insights.data.update(
            uuid=insight.id,
            properties={**properties, "search_text": _derived(insight)["search_text"]},
            vector={VECTOR_NAME: vector.tolist()},
        )

    @property
    def settings(self) -> Settings:
        return self._settings

    def is_connected(self) -> bool:
        return self._client is None or self._client.is_connected()

    def close(self) -> None:
        self.retrieval.close()
        if self._client is not None:
            self._client.close()

    # ---- saving ---------------------------------------------------------------------------------------------

    def save(self, draft: InsightDraft, now: datetime | None = None) -> SaveResult:
        now = now or datetime.now(UTC)
        slot = slot_of(draft)
        content_id = content_uuid(draft)
        with weaviate_errors("saving an insight"):
            versions = {version.id: version for version in self._slot_versions(slot)}
            same = versions.get(content_id)
            if same is not None:
                return self._say_again(same, draft, now)
            current = chain.head(versions.values(), now)
            if (
                draft.status is InsightStatus.ACTIVE
                and current is not None
                and current.kind is draft.kind
                and ranking.same_instruction(current.action, draft.action)
            ):
                return self._add_support(current, draft, now)
            undo = _Undo()
            try:
                if not self._insert(_new_insight(draft, content_id, now, now), undo):
                    # A racing writer stored the same content first: this save is that one said again.
                    return self._say_again(self._stored_by_a_racing_writer(content_id), draft, now)
                if draft.status is InsightStatus.PENDING_REVIEW:
                    return SaveResult(id=content_id, status="pending_review", insight_status=draft.status)
                settled = self._settle(slot, now, undo)
            except BaseException:
                undo.run()
                raise
        return self._outcome(content_id, settled, "created")

    def _stored_by_a_racing_writer(self, insight_id: uuid.UUID) -> Insight:
        """The object another writer is inserting. Weaviate refuses a second insert of an id as soon as the object is
        written, but a read by id finds it only once its index entries are, a few milliseconds later."""
        for pause in _RACE_PAUSES_S:
            time.sleep(pause)
            with weaviate_errors("reading an insight"):
                obj = self._insights.query.fetch_object_by_id(insight_id)
            if obj is not None:
                return insight_from(obj)
        raise WeaviateUnavailable(
            f"another save of the same insight ({insight_id}) was still unfinished after "
            f"{sum(_RACE_PAUSES_S):.1f} s. Nothing was changed by this call; retry it."
        )

    def _outcome(self, insight_id: uuid.UUID, settled: Sequence[Insight], fresh: SaveStatus) -> SaveResult:
        mine = next(version for version in settled if version.id == insight_id)
        status: SaveStatus = "superseded" if mine.supersedes and mine.status is InsightStatus.ACTIVE else fresh
        return SaveResult(id=insight_id, status=status, insight_status=mine.status, supersedes=mine.supersedes)

    def _say_again(self, stored: Insight, draft: InsightDraft, now: datetime) -> SaveResult:
        """The exact content is stored already: update what changed; an older or expired version said again becomes
        the newest one. What a reviewer rejected or suspected stays so."""
        if stored.status in (InsightStatus.REJECTED, InsightStatus.SUSPECT):
            return SaveResult(id=stored.id, status="unchanged", insight_status=stored.status)
        slot = slot_of(stored)
        current = chain.head(self._slot_versions(slot), now)
        revive = stored.status is not InsightStatus.PENDING_REVIEW and (current is None or current.id != stored.id)
        result = self._add_support(stored, draft, now, reassert=revive)
        if revive and result.supersedes:
            return result.model_copy(update={"status": "superseded"})
        return result

    def _add_support(
        self, stored: Insight, draft: InsightDraft, now: datetime, *, reassert: bool = False
    ) -> SaveResult:
        """The same instruction again: take changed values, count a new supporter, and settle the slot when the
        change can move its rule (a new expiry, or an older version said again)."""
        supporter = supporter_of(draft)
        new_source = supporter not in stored.supporters
        changes = _changed_values(stored, draft, new_source)
        if new_source:
            changes["supporters"] = [*stored.supporters, supporter]
            changes["support_count"] = len(changes["supporters"])
        if reassert:
            changes["asserted_at"] = now
        if not changes:
            return SaveResult(id=stored.id, status="unchanged", insight_status=stored.status)
        updated = stored.model_copy(update={**changes, "updated_at": now})
        undo = _Undo()
        try:
            self._write(updated, [*changes, "updated_at"], undo, previous=stored)
            if {"expire_at", "asserted_at"} & changes.keys() and stored.status is not InsightStatus.PENDING_REVIEW:
                settled = self._settle(slot_of(stored), now, undo)
                updated = next((v for v in settled if v.id == stored.id), updated)
        except BaseException:
            undo.run()
            raise
        status: SaveStatus = "merged" if new_source else "updated"
        return SaveResult(
            id=stored.id,
            status=status,
            insight_status=updated.status,
            supersedes=updated.supersedes if reassert else [],
            changed=[name for name in changes if name in ("confidence", "expire_at", "tags")],
        )

    def _insert(self, insight: Insight, undo: _Undo, vector: Vectors | None = None) -> bool:
        """Write a new object. False when one with its id exists already (a racing writer stored the same content)."""
        if vector is None:
            vector = self._embedder.embed([embedding_text(insight)])[0]
        try:
            self._insights.data.insert(
                to_properties(insight, INSIGHT_FIELDS, **_derived(insight)),
                uuid=insight.id,
                vector={VECTOR_NAME: vector.tolist()},
            )
        except weaviate.exceptions.UnexpectedStatusCodeError as error:
            if "already exists" in str(error):
                return False
            raise
        undo.add(lambda: self._insights.data.delete_by_id(insight.id))
        return True

    def _write(self, insight: Insight, fields: Iterable[str], undo: _Undo, previous: Insight) -> None:
        names = set(fields)
        self._insights.data.update(uuid=insight.id, properties=to_properties(insight, INSIGHT_FIELDS, only=names))
        undo.add(
            lambda: self._insights.data.update(
                uuid=previous.id, properties=to_properties(previous, INSIGHT_FIELDS, only=names)
            )
        )

    def _slot_versions(self, slot: str) -> list[Insight]:
        result = self._insights.query.fetch_objects(filters=filters.in_slot(slot), limit=MAX_SLOT_VERSIONS)
        return [insight_from(obj) for obj in result.objects]

    def _settle(self, slot: str, now: datetime, undo: _Undo | None = None) -> list[Insight]:
        """Bring the slot's chain to its plan (store/chain.py) and return its versions as stored.

        Re-reads after writing: a writer that raced this one may have written from an older view; planning again
        from what is stored converges, because every writer plans the same states from the same versions.
        """
        versions = self._slot_versions(slot)
        for _round in range(_SETTLE_ROUNDS):
            planned = chain.plan(versions, now)
            stale = [v for v in versions if v.id in planned and chain.state_of(v) != planned[v.id]]
            if not stale:
                return versions
            for version in stale:
                state = planned[version.id]
                settled = version.model_copy(
                    update={
                        "status": state.status,
                        "supersedes": state.supersedes,
                        "superseded_by": state.superseded_by,
                        "resume_at": state.resume_at,
                        "updated_at": now,
                    }
                )
                self._write(settled, _STATE_FIELDS, undo or _Undo(), previous=version)
            versions = self._slot_versions(slot)
        log.warning("slot %s still changing after %d rounds; the next write settles it", slot, _SETTLE_ROUNDS)
        return versions

    def import_many(self, drafts: Sequence[InsightDraft], batch_size: int = 256, now: datetime | None = None) -> int:
        """Bulk load (migrations, seeding, benchmarks). Returns how many insights were written.

        Later drafts are newer: within the batch and against the store, each slot keeps one rule, as with `save`.
        Content already stored is skipped; merging of reworded instructions is left to `save`. All or nothing: if
        any write fails, everything this call wrote is undone.
        """
        now = now or datetime.now(UTC)
        undo = _Undo()
        written = 0
        try:
            for start in range(0, len(drafts), batch_size):
                batch = drafts[start : start + batch_size]
                written += self._import_batch(batch, now, start, undo)
        except BaseException:
            undo.run()
            raise
        return written

    def _import_batch(self, drafts: Sequence[InsightDraft], now: datetime, offset: int, undo: _Undo) -> int:
        fresh: dict[uuid.UUID, Insight] = {}
        for index, draft in enumerate(drafts):  # a microsecond apart, so that the batch's order is the chain's
            asserted_at = now + timedelta(microseconds=offset + index)
            fresh[content_uuid(draft)] = _new_insight(draft, content_uuid(draft), asserted_at, now)
        with weaviate_errors("importing insights"):
            stored = self._insights.query.fetch_objects(filters=filters.with_ids(fresh), limit=len(fresh))
            for obj in stored.objects:
                fresh.pop(uuid.UUID(str(obj.uuid)), None)
            if not fresh:
                return 0
            slot_of = {i: _derived(insight)["slot_key"] for i, insight in fresh.items()}
            existing = self._insights.query.fetch_objects(
                filters=filters.in_slots(slot_of.values()),
                limit=MAX_SLOT_VERSIONS * 10,
            )
            by_slot: dict[str, list[Insight]] = {}
            for insight in map(insight_from, existing.objects):
                by_slot.setdefault(_derived(insight)["slot_key"], []).append(insight)
            for object_id, insight in fresh.items():
                by_slot.setdefault(slot_of[object_id], []).append(insight)
            states: dict[uuid.UUID, chain.VersionState] = {}
            for versions in by_slot.values():
                states |= chain.plan(versions, now)
            planned = {
                i: (insight if i not in states else insight.model_copy(update=vars(states[i])))
                for i, insight in fresh.items()
            }
            vectors = self._embedder.embed([embedding_text(insight) for insight in planned.values()])
            objects = [
                DataObject(
                    uuid=object_id,
                    properties=to_properties(insight, INSIGHT_FIELDS, **_derived(insight)),
                    vector={VECTOR_NAME: vector.tolist()},
                )
                for (object_id, insight), vector in zip(planned.items(), vectors, strict=True)
            ]
            ids = list(planned)
            undo.add(lambda: self._insights.data.delete_many(where=filters.with_ids(ids)))
            result = self._insights.data.insert_many(objects)
            if result.has_errors:
                first = next(iter(result.errors.values()))
                raise WeaviateUnavailable(
                    f"Weaviate rejected {len(result.errors)} of {len(objects)} insights: {first.message}"
                )
            for versions in by_slot.values():
                for version in versions:
                    state = states.get(version.id)
                    if version.id in fresh or state is None or chain.state_of(version) == state:
                        continue
                    settled = version.model_copy(update={**vars(state), "updated_at": now})
                    self._write(settled, _STATE_FIELDS, undo, previous=version)
        return len(objects)

    # ---- reading and governing ------------------------------------------------------------------------------

    def get(self, insight_id: uuid.UUID | str) -> Insight:
        with weaviate_errors("reading an insight"):
            obj = self._insights.query.fetch_object_by_id(_as_uuid(insight_id))
        if obj is None:
            raise NotFound(f"no insight {insight_id} in project {self._settings.project!r}")
        return insight_from(obj)

    def visible_ids(
        self, insight_ids: Sequence[uuid.UUID], user_id: str | None, session_id: str | None = None
    ) -> set[uuid.UUID]:
        """Which of these insights exist and could reach this user (project-wide, theirs, or this session's)."""
        if not insight_ids:
            return set()
        where = filters.with_ids(insight_ids) & filters.visible_to(user_id, session_id)
        with weaviate_errors("reading insights"):
            result = self._insights.query.fetch_objects(filters=where, limit=len(insight_ids), return_properties=[])
        return {uuid.UUID(str(obj.uuid)) for obj in result.objects}

    def slot_versions_of(self, insight: InsightDraft | Insight) -> list[Insight]:
        """Every stored version of the slot this insight or draft belongs to, in any status."""
        with weaviate_errors("reading a slot's versions"):
            return self._slot_versions(slot_of(insight))

    def history(self, insight_id: uuid.UUID | str) -> list[Insight]:
        """Every version of the insight's slot, oldest first (pending, rejected and suspect ones at the end)."""
        insight = self.get(insight_id)
        with weaviate_errors("reading an insight's history"):
            versions = self._slot_versions(slot_of(insight))
        members = chain.order(versions)
        return members + [v for v in versions if v not in members]

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
        with weaviate_errors("listing insights"):
            result = self._insights.query.fetch_objects(
                filters=filters.matching(status=status, user_id=user_id, scene=scene, kind=kind),
                limit=limit,
                sort=Sort.by_property("updated_at", ascending=False),
            )
        return [insight_from(obj) for obj in result.objects]

    def approve(self, insight_id: uuid.UUID | str, reviewer: str = "reviewer", now: datetime | None = None) -> Insight:
        """A reviewer approves a pending insight: it becomes the newest version of its slot, as if saved now, and the
        reviewer counts as a supporter (so reviewed knowledge outlives the forgetting of the user it came from)."""
        insight = self.get(insight_id)
        if insight.status is not InsightStatus.PENDING_REVIEW:
            raise InvalidInput([("id", f"insight {insight.id} is {insight.status.value}, not pending_review")])
        supporters = list(dict.fromkeys([*insight.supporters, f"reviewer:{reviewer}"]))
        extra = {"supporters": supporters, "support_count": len(supporters), "review_reason": None}
        return self._change_status(insight, InsightStatus.ACTIVE, now or datetime.now(UTC), reassert=True, extra=extra)

    def revise(self, insight_id: uuid.UUID | str, changes: dict[str, Any], now: datetime | None = None) -> Insight:
        """A reviewer's edit of what an insight says: action, observation, tags, confidence, expire_at. Validated as a
        draft would be; a new action is embedded again. Topic and scene stay: changing them is a new insight."""
        editable = {"action", "observation", "tags", "confidence", "expire_at"}
        unknown = sorted(set(changes) - editable)
        if unknown:
            raise InvalidInput(
                [(name, f"cannot be edited; editable: {', '.join(sorted(editable))}") for name in unknown]
            )
        insight = self.get(insight_id)
        now = now or datetime.now(UTC)
        draft_fields = {
            "topic",
            "kind",
            "scene",
            "observation",
            "action",
            "evidence",
            "tags",
            "confidence",
            "expire_at",
        }
        checked = InsightDraft.parse({**insight.model_dump(include=draft_fields), **changes})
        revised = insight.model_copy(update={**{name: getattr(checked, name) for name in changes}, "updated_at": now})
        names = {*changes, "updated_at"}
        properties = to_properties(revised, INSIGHT_FIELDS, only=names)
        with weaviate_errors("editing an insight"):
            if "action" in changes or "observation" in changes:
                self._update_searchable(revised, properties)
            else:
                self._insights.data.update(uuid=insight.id, properties=properties)
            if "expire_at" in changes and insight.status is not InsightStatus.PENDING_REVIEW:
                self._settle(slot_of(insight), now)
        return self.get(insight.id)

    def set_status(self, insight_id: uuid.UUID | str, status: InsightStatus, now: datetime | None = None) -> Insight:
        """Reject, suspect, return to review or approve; the slot is settled after it. `superseded` and `expired`
        follow from the versions and their expiry, so they cannot be set."""
        if status in (InsightStatus.SUPERSEDED, InsightStatus.EXPIRED):
            raise InvalidInput([("status", f"{status.value} follows from newer versions and expiry; it is not set")])
        insight = self.get(insight_id)
        if status is InsightStatus.ACTIVE:
            return self.approve(insight.id, now=now) if insight.status is InsightStatus.PENDING_REVIEW else insight
        return self._change_status(insight, status, now or datetime.now(UTC), reassert=False)

    def _change_status(
        self,
        insight: Insight,
        status: InsightStatus,
        now: datetime,
        *,
        reassert: bool,
        extra: dict[str, Any] | None = None,
    ) -> Insight:
        update: dict[str, Any] = {"status": status, "updated_at": now, **(extra or {})}
        if reassert:
            update["asserted_at"] = now
        undo = _Undo()
        with weaviate_errors("changing an insight's status"):
            try:
                self._write(insight.model_copy(update=update), update, undo, previous=insight)
                self._settle(slot_of(insight), now, undo)
            except BaseException:
                undo.run()
                raise
        return self.get(insight.id)

    def delete(self, insight_id: uuid.UUID | str, now: datetime | None = None) -> None:
        """Delete one insight; if it was its slot's rule, the newest remaining living version takes over."""
        insight = self.get(insight_id)
        with weaviate_errors("deleting an insight", SAFE_TO_RERUN):
            self._insights.data.delete_by_id(insight.id)
            self._settle(slot_of(insight), now or datetime.now(UTC))

    def expire_sweep(self, now: datetime | None = None) -> int:
        """Mark insights whose expire_at has passed as expired, and settle their slots. Returns how many expired."""
        now = now or datetime.now(UTC)
        due = filters.past_expiry(now)
        expired: set[uuid.UUID] = set()
        with weaviate_errors("expiring insights", SAFE_TO_RERUN):
            while True:
                result = self._insights.query.fetch_objects(filters=due, limit=1000)
                batch = [insight for insight in map(insight_from, result.objects) if insight.id not in expired]
                if not batch:  # done, or only versions a racing writer keeps changing (the next sweep finishes them)
                    return len(expired)
                for insight in batch:
                    if insight.status is InsightStatus.PENDING_REVIEW:
                        self._insights.data.update(
                            uuid=insight.id, properties={"status": InsightStatus.EXPIRED.value, "updated_at": now}
                        )
                    else:
                        self._settle(slot_of(insight), now)
                    expired.add(insight.id)

    def retire(self, insight_id: uuid.UUID | str, now: datetime | None = None) -> Insight:
        """Retire an insight now (the worker's TTL for unused low-confidence insights). `expired` is never set
        directly: retiring sets `expire_at` to now and settles the slot, so the insight is expired and, if it was
        the rule, the newest living older version is the rule again, as when any expiry passes. Only versions of a
        chain (active, superseded) retire; one that has expired already is returned as it is."""
        now = now or datetime.now(UTC)
        insight = self.get(insight_id)
        if insight.status not in chain.CHAIN_STATUSES:
            raise InvalidInput(
                [("id", f"insight {insight.id} is {insight.status.value}; only active or superseded retire")]
            )
        if not chain.alive(insight, now):
            return insight
        retired = insight.model_copy(update={"expire_at": now, "updated_at": now})
        undo = _Undo()
        with weaviate_errors("retiring an insight"):
            try:
                self._write(retired, ("expire_at", "updated_at"), undo, previous=insight)
                self._settle(slot_of(insight), now, undo)
            except BaseException:
                undo.run()
                raise
        return self.get(insight.id)

    def count(self, *, user_id: str | None = None) -> tuple[int, int]:
        """(insights, turns), optionally of one user (their own insights, and their turns)."""
        where = filters.owned_by(user_id) if user_id is not None else None
        with weaviate_errors("counting"):
            insights = self._insights.aggregate.over_all(filters=where, total_count=True).total_count
        return int(insights or 0), self.turns.count(user_id=user_id)

    def forget_user(self, user_id: str, now: datetime | None = None) -> ForgetResult:
        """Delete one user's insights and turns, and their words in project-wide insights. Idempotent: if
        interrupted, run it again.

        A project-wide insight that only this user's conversations support is derived from their data alone and is
        deleted (its slot settles to the previous rule). One that others support too stays, without this user in
        its support, and without their quote and observation if it was learned from them.
        """
        if not user_id.strip():
            raise InvalidInput([("user_id", "must not be empty")])
        now = now or datetime.now(UTC)
        deleted = scrubbed = 0
        with weaviate_errors("forgetting a user", SAFE_TO_RERUN):
            deleted += delete_all(self._insights, filters.owned_by(user_id))
            while True:
                result = self._insights.query.fetch_objects(filters=filters.supported_by(user_id), limit=1000)
                if not result.objects:
                    break
                for insight in map(insight_from, result.objects):
                    if set(insight.supporters) <= {user_id}:
                        self._insights.data.delete_by_id(insight.id)
                        self._settle(slot_of(insight), now)
                        deleted += 1
                    else:
                        self._scrub(insight, user_id, now)
                        scrubbed += 1
        turns = self.turns.forget_user(user_id)
        return ForgetResult(insights_deleted=deleted, insights_scrubbed=scrubbed, turns_deleted=turns)

    def _scrub(self, insight: Insight, user_id: str, now: datetime) -> None:
        supporters = [s for s in insight.supporters if s != user_id]
        update: dict[str, Any] = {"supporters": supporters, "support_count": len(supporters), "updated_at": now}
        if insight.learned_from == user_id:
            update |= {"evidence": Evidence(quote=_SCRUBBED), "observation": "", "learned_from": None}
        scrubbed = insight.model_copy(update=update)
        names = {"supporters", "support_count", "updated_at"}
        if "evidence" not in update:
            self._insights.data.update(uuid=insight.id, properties=to_properties(scrubbed, INSIGHT_FIELDS, only=names))
            return
        names |= {"evidence_quote", "evidence_session_id", "evidence_turn", "observation", "learned_from"}
        # Their words are also in what search reads: the segmented text and the vector are made again without them.
        self._update_searchable(scrubbed, to_properties(scrubbed, INSIGHT_FIELDS, only=names))


def _as_uuid(value: uuid.UUID | str) -> uuid.UUID:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value).strip())
    except ValueError:
        raise InvalidInput([("id", f"{value!r} is not an insight id (a UUID)")]) from None
