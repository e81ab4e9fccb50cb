"""The narrow port the insight rules are written over: a table of insights, keyed by id.

The save policy (writing.py), the lifecycle (lifecycle.py), forgetting (forgetting.py) and the reads (reads.py) talk
only to an `InsightTable`. Weaviate's (weaviate_table.py) wraps the project's collection and embeds what it writes;
an in-memory one (testkit/memory_store.py) keeps dicts and no vectors. The same rules run on both.

Fields are named as on the `Insight` model (`evidence`, not its stored parts). Whatever search reads (the vector, the
segmented text, the normalised keys) is the table's business: it is made again from the insight when a field it
comes from changes.
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from hindsight_insights import keys
from hindsight_insights.models import Insight, InsightDraft, InsightKind, InsightStatus

MAX_SLOT_VERSIONS = 1000
# The fields what search reads is made from: changing one of them makes the search text and vector again.
SEARCHABLE_FIELDS = frozenset({"topic", "scene", "observation", "action", "evidence"})
# What forgetting leaves where a forgotten user's words were quoted.
SCRUBBED_QUOTE = "[removed: the user whose conversation this quoted asked to be forgotten]"


class InsightTable(Protocol):
    """The insights of one project, as the rules need them. Every read returns whole insights."""

    def failures(self, action: str, *, safe_to_rerun: bool = False) -> AbstractContextManager[None]:
        """Turns the backend's failures while doing `action` into `WeaviateUnavailable` (or another HindsightError)
        saying what failed and whether running the call again is safe."""
        ...

    def slot_writes(self, slot: str) -> AbstractContextManager[None]:
        """Held while a slot's versions are brought to their plan (settling.settle), so that no two writers of this
        process change one version at once: Weaviate indexes a property-only update outside its per-object lock, and
        two such updates of one object can leave its filters disagreeing with it (docs/architecture.md, "Writers
        that race")."""
        ...

    def get(self, insight_id: uuid.UUID) -> Insight | None: ...

    def existing_ids(self, insight_ids: Collection[uuid.UUID]) -> set[uuid.UUID]: ...

    def in_slot(self, slot: str) -> list[Insight]:
        """Every version of a slot (keys.slot_key), in any status."""
        ...

    def in_slots(self, slots: Collection[str]) -> list[Insight]: ...

    def insert(self, insight: Insight) -> bool:
        """Write a new insight. False, and nothing written, when one with its id exists already."""
        ...

    def insert_many(self, insights: Sequence[Insight]) -> None:
        """Write new insights at once (bulk import); raises if any of them was refused."""
        ...

    def update(self, insight: Insight, fields: Collection[str]) -> None:
        """Store these fields of `insight` (model field names) over the stored ones."""
        ...

    def delete(self, insight_id: uuid.UUID) -> None: ...

    def delete_ids(self, insight_ids: Collection[uuid.UUID]) -> None: ...

    def delete_owned_by(self, user_id: str) -> int:
        """Delete a user's own insights (user and session scope); returns how many."""
        ...

    def supported_by(self, user_id: str, limit: int) -> list[Insight]:
        """Project-wide insights whose supporters include this user."""
        ...

    def past_expiry(self, now: datetime, limit: int) -> list[Insight]:
        """Active, superseded or pending insights whose expire_at has passed (the sweep has yet to mark them)."""
        ...

    def visible_ids(
        self, insight_ids: Collection[uuid.UUID], user_id: str | None, session_id: str | None
    ) -> set[uuid.UUID]:
        """Which of these exist and could reach this user: project-wide, theirs, or kept for this session."""
        ...

    def matching(
        self,
        *,
        status: InsightStatus | None,
        user_id: str | None,
        scene: str | None,
        kind: InsightKind | None,
        limit: int,
    ) -> list[Insight]:
        """Insights matching every given filter (`user_id`: their own), newest update first."""
        ...

    def count(self, user_id: str | None = None) -> int:
        """How many insights, or how many of one user's own."""
        ...


def slot_of(insight: InsightDraft | Insight) -> str:
    """The slot an insight or draft belongs to (keys.slot_key)."""
    return keys.slot_key(insight.topic, insight.scene, insight.owner, insight.condition_detail)


def instruction_key(text: str) -> str:
    """The instruction as content_uuid compares it."""
    return " ".join(keys.to_simplified(unicodedata.normalize("NFKC", text)).casefold().split())


def content_uuid(draft: InsightDraft) -> uuid.UUID:
    """Deterministic id of an insight's content: its slot, kind and instruction. The same insight saved twice, or by
    two racing writers, is one object."""
    canonical = [slot_of(draft), draft.kind.value, instruction_key(draft.action)]
    return uuid.uuid5(uuid.NAMESPACE_DNS, json.dumps(canonical, ensure_ascii=False))


def embedding_text(insight: InsightDraft | Insight) -> str:
    """What an insight's vector is computed from: what a later conversation about it resembles. The topic, the rule
    (whose trigger names the situation), the user's own words, and the scene. Not the observation, a narrative that
    pulls the vector towards everything else of its scene (docs/architecture.md, Retrieval)."""
    scene = "" if keys.scene_key(insight.scene) == keys.GENERAL_SCENE else f"\n{insight.scene}"
    quote = "" if insight.evidence.quote == SCRUBBED_QUOTE else insight.evidence.quote
    return "\n".join(part for part in (insight.topic, insight.action, quote) if part) + scene
