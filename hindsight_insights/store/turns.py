"""The turn log: what record_turn stores and what reflection reads, one collection per project.

Appending never competes for a slot: each turn gets its own id (from Dify's message id when there is one, so that a
retried record is the same turn; otherwise random) and a `sequence` from the clock in microseconds. A turn's index
in its session is its place in (sequence, id) order, counted when it is read. So concurrent appends to one session
all land, and none waits for another.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import weaviate
from weaviate.classes.query import Filter, Sort
from weaviate.collections import Collection
from weaviate.util import generate_uuid5

from hindsight_insights.connection import SAFE_TO_RERUN, weaviate_errors
from hindsight_insights.models import CorrectionRecord, Turn, TurnDraft
from hindsight_insights.store.bulk import delete_all
from hindsight_insights.store.schema import TURN_FIELDS, StoredObject, from_object, to_properties

MAX_SESSION_TURNS = 10_000


def turn_uuid(draft: TurnDraft) -> uuid.UUID:
    if draft.message_id:
        return uuid.UUID(generate_uuid5(f"{draft.session_id}\nmessage\n{draft.message_id}"))
    return uuid.uuid4()


class TurnLog:
    def __init__(self, collection: Collection) -> None:
        self._turns = collection

    def append(self, draft: TurnDraft, now: datetime | None = None) -> Turn:
        """Store a turn and return it with its index. Recording the same Dify message again returns the stored turn."""
        now = now or datetime.now(UTC)
        turn = Turn(id=turn_uuid(draft), sequence=time.time_ns() // 1000, created_at=now, **draft.model_dump())
        with weaviate_errors("recording a turn"):
            if draft.message_id and (stored := self._turns.query.fetch_object_by_id(turn.id)) is not None:
                return self._indexed(stored)
            try:
                self._turns.data.insert(to_properties(turn, TURN_FIELDS), uuid=turn.id)
            except weaviate.exceptions.UnexpectedStatusCodeError as error:
                if "already exists" not in str(error):  # a retry of this message raced us: it is stored
                    raise
            return self._indexed(self._turns.query.fetch_object_by_id(turn.id) or turn)

    def _indexed(self, turn: StoredObject | Turn) -> Turn:
        stored = turn if isinstance(turn, Turn) else from_object(turn, TURN_FIELDS, Turn)
        order = [(t.sequence, str(t.id)) for t in self._session_objects(stored.session_id)]
        index = sum(1 for key in order if key < (stored.sequence, str(stored.id)))
        return stored.model_copy(update={"turn_index": index})

    def _session_objects(self, session_id: str) -> list[Turn]:
        result = self._turns.query.fetch_objects(
            filters=Filter.by_property("session_id").equal(session_id), limit=MAX_SESSION_TURNS
        )
        return [from_object(obj, TURN_FIELDS, Turn) for obj in result.objects]

    def mark_corrected(self, turn: Turn, record: CorrectionRecord) -> Turn:
        """Behaviour memory: the answer of `turn` was corrected by a later user message."""
        corrected = turn.model_copy(update={"error_status": "corrected", "correction": record})
        names = {
            field.name for field in TURN_FIELDS if field.name == "error_status" or field.name.startswith("correction_")
        }
        with weaviate_errors("recording a correction on a turn"):
            self._turns.data.update(uuid=turn.id, properties=to_properties(corrected, TURN_FIELDS, only=names))
        return corrected

    def get(self, turn_id: uuid.UUID) -> Turn | None:
        with weaviate_errors("reading a turn"):
            stored = self._turns.query.fetch_object_by_id(turn_id)
        return None if stored is None else self._indexed(stored)

    def latest(self, session_id: str) -> Turn | None:
        """The session's newest turn, if any."""
        with weaviate_errors("reading a session's latest turn"):
            result = self._turns.query.fetch_objects(
                filters=Filter.by_property("session_id").equal(session_id),
                limit=1,
                sort=Sort.by_property("sequence", ascending=False),
            )
        return self._indexed(result.objects[0]) if result.objects else None

    def previous(self, turn: Turn) -> Turn | None:
        """The turn before this one in its session, if any."""
        turns = self.session(turn.session_id)
        index = next((i for i, t in enumerate(turns) if t.id == turn.id), None)
        return turns[index - 1] if index else None

    def of_user(self, user_id: str, *, recent: int = 20) -> list[Turn]:
        """What we told a user, and what was corrected: their latest turns, newest first, each with its sources,
        tool calls, confidence, error status and correction record."""
        with weaviate_errors("reading a user's turns"):
            result = self._turns.query.fetch_objects(
                filters=Filter.by_property("user_id").equal(user_id),
                limit=recent,
                sort=Sort.by_property("sequence", ascending=False),
            )
        return [from_object(obj, TURN_FIELDS, Turn) for obj in result.objects]

    def session(self, session_id: str) -> list[Turn]:
        """The session's turns in order, each with its index."""
        with weaviate_errors("reading a session's turns"):
            turns = sorted(self._session_objects(session_id), key=lambda t: (t.sequence, str(t.id)))
        return [turn.model_copy(update={"turn_index": index}) for index, turn in enumerate(turns)]

    def count(self, *, user_id: str | None = None) -> int:
        where = Filter.by_property("user_id").equal(user_id) if user_id is not None else None
        with weaviate_errors("counting turns"):
            return int(self._turns.aggregate.over_all(filters=where, total_count=True).total_count or 0)

    def forget_user(self, user_id: str) -> int:
        """Delete all of one user's turns; returns how many."""
        with weaviate_errors("forgetting a user's turns", SAFE_TO_RERUN):
            return delete_all(self._turns, Filter.by_property("user_id").equal(user_id))
