"""Saving insights: the save policy (docs/architecture.md, "Save policy"), over an `InsightTable`.

A draft lands in its slot (keys.slot_key: the normalised topic and scene, for its owner). Then, in order:
  1. the same content (same kind and instruction in the slot, one deterministic uuid5) is already stored: its values
     are updated where they changed (`updated`), a new supporter raises its support (`merged`), otherwise
     `unchanged`. An older version said again becomes the newest one (`superseded`). A rejected one stays rejected.
  2. the slot's current rule gives the same instruction in other words (ranking.same_instruction): merged into it;
  3. otherwise a new version is written; the slot is settled (store/chain.py) and the new version supersedes the
     old rule (`superseded`), or starts the slot (`created`).
Merging never crosses slots, so a correction of another topic is never swallowed.

Every save and import writes all or nothing: when a later write fails, the earlier writes of that call are undone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from hindsight_insights import ranking
from hindsight_insights.errors import WeaviateUnavailable
from hindsight_insights.models import Insight, InsightDraft, InsightStatus, SaveResult, SaveStatus, Scope
from hindsight_insights.store import chain
from hindsight_insights.store.settling import STATE_FIELDS, Undo, settle, write
from hindsight_insights.store.table import InsightTable, content_uuid, slot_of

_RACE_PAUSES_S = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6)


def supporter_of(draft: InsightDraft) -> str:
    """Who is saying it: the user, else the session, else the source. Support counts distinct supporters."""
    if draft.user_id:
        return draft.user_id
    return f"session:{draft.evidence.session_id}" if draft.evidence.session_id else f"source:{draft.source}"


def new_insight(draft: InsightDraft, object_id: uuid.UUID, asserted_at: datetime, now: datetime) -> Insight:
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


class InsightWriter:
    """save and import_many: the only ways a new insight enters a project."""

    def __init__(self, table: InsightTable) -> None:
        self._table = table

    def save(self, draft: InsightDraft, now: datetime | None = None) -> SaveResult:
        now = now or datetime.now(UTC)
        slot = slot_of(draft)
        content_id = content_uuid(draft)
        with self._table.failures("saving an insight"):
            versions = {version.id: version for version in self._table.in_slot(slot)}
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
            undo = Undo()
            try:
                if not self._insert(new_insight(draft, content_id, now, now), undo):
                    # A racing writer stored the same content first: this save is that one said again.
                    return self._say_again(self._stored_by_a_racing_writer(content_id), draft, now)
                if draft.status is InsightStatus.PENDING_REVIEW:
                    return SaveResult(id=content_id, status="pending_review", insight_status=draft.status)
                settled = settle(self._table, slot, now, undo)
            except BaseException:
                undo.run()
                raise
            if all(version.id != content_id for version in settled):
                # A racing writer's insert of the same id overwrote this one (a multi-tenant collection lets both
                # through) and hid it from the slot's read meanwhile: this save is that one said again.
                return self._say_again(self._stored_by_a_racing_writer(content_id), draft, now)
        return _outcome(content_id, settled, "created")

    def _insert(self, insight: Insight, undo: Undo) -> bool:
        if not self._table.insert(insight):
            return False
        undo.add(lambda: self._table.delete(insight.id))
        return True

    def _stored_by_a_racing_writer(self, insight_id: uuid.UUID) -> Insight:
        """The object another writer is inserting. Weaviate refuses a second insert of an id as soon as the object is
        written, but a read by id finds it only once its index entries are, a few milliseconds later."""
        for pause in _RACE_PAUSES_S:
            time.sleep(pause)
            with self._table.failures("reading an insight"):
                found = self._table.get(insight_id)
            if found is not None:
                return found
        raise WeaviateUnavailable(
            f"another save of the same insight ({insight_id}) was still unfinished after "
            f"{sum(_RACE_PAUSES_S):.1f} s. Nothing was changed by this call; retry it."
        )

    def _say_again(self, stored: Insight, draft: InsightDraft, now: datetime) -> SaveResult:
        """The exact content is stored already: update what changed; an older or expired version said again becomes
        the newest one. What a reviewer rejected or suspected stays so."""
        if stored.status in (InsightStatus.REJECTED, InsightStatus.SUSPECT):
            return SaveResult(id=stored.id, status="unchanged", insight_status=stored.status)
        current = chain.head(self._table.in_slot(slot_of(stored)), now)
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
        undo = Undo()
        try:
            write(self._table, updated, [*changes, "updated_at"], undo, previous=stored)
            if {"expire_at", "asserted_at"} & changes.keys() and stored.status is not InsightStatus.PENDING_REVIEW:
                settled = settle(self._table, slot_of(stored), now, undo)
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

    def import_many(self, drafts: Sequence[InsightDraft], batch_size: int = 256, now: datetime | None = None) -> int:
        """Bulk load (migrations, seeding, benchmarks). Returns how many insights were written.

        Later drafts are newer: within the batch and against the store, each slot keeps one rule, as with `save`.
        Content already stored is skipped; merging of reworded instructions is left to `save`. All or nothing: if
        any write fails, everything this call wrote is undone.
        """
        now = now or datetime.now(UTC)
        undo = Undo()
        written = 0
        try:
            for start in range(0, len(drafts), batch_size):
                batch = drafts[start : start + batch_size]
                written += self._import_batch(batch, now, start, undo)
        except BaseException:
            undo.run()
            raise
        return written

    def _import_batch(self, drafts: Sequence[InsightDraft], now: datetime, offset: int, undo: Undo) -> int:
        fresh: dict[uuid.UUID, Insight] = {}
        for index, draft in enumerate(drafts):  # a microsecond apart, so that the batch's order is the chain's
            asserted_at = now + timedelta(microseconds=offset + index)
            fresh[content_uuid(draft)] = new_insight(draft, content_uuid(draft), asserted_at, now)
        with self._table.failures("importing insights"):
            for stored_id in self._table.existing_ids(fresh.keys()):
                fresh.pop(stored_id, None)
            if not fresh:
                return 0
            slots = {i: slot_of(insight) for i, insight in fresh.items()}
            by_slot: dict[str, list[Insight]] = {}
            for insight in self._table.in_slots(set(slots.values())):
                by_slot.setdefault(slot_of(insight), []).append(insight)
            for object_id, insight in fresh.items():
                by_slot.setdefault(slots[object_id], []).append(insight)
            states: dict[uuid.UUID, chain.VersionState] = {}
            for versions in by_slot.values():
                states |= chain.plan(versions, now)
            planned = [
                insight if i not in states else insight.model_copy(update=vars(states[i]))
                for i, insight in fresh.items()
            ]
            ids = list(fresh)
            undo.add(lambda: self._table.delete_ids(ids))
            self._table.insert_many(planned)
            for versions in by_slot.values():
                for version in versions:
                    state = states.get(version.id)
                    if version.id in fresh or state is None or chain.state_of(version) == state:
                        continue
                    settled = version.model_copy(update={**vars(state), "updated_at": now})
                    write(self._table, settled, STATE_FIELDS, undo, previous=version)
        return len(planned)


def _outcome(insight_id: uuid.UUID, settled: Sequence[Insight], fresh: SaveStatus) -> SaveResult:
    mine = next(version for version in settled if version.id == insight_id)
    status: SaveStatus = "superseded" if mine.supersedes and mine.status is InsightStatus.ACTIVE else fresh
    return SaveResult(id=insight_id, status=status, insight_status=mine.status, supersedes=mine.supersedes)
