"""The turn log: what record_turn stores and what reflection reads, one collection per project.

Appending never competes for a slot: each turn gets its own id (from Dify's message id when there is one, so that a
retried record is the same turn; otherwise random) and a `sequence` from the clock in microseconds. A turn's index
in its session is its place in (sequence, id) order, counted when it is read. So concurrent appends to one session
all land, and none waits for another.

The reflection worker's scans read light stamps of turns (session, user, time, signals) by `created_at`, paging in
time order rather than by offset, so a day of turns is read whatever the server's query limit.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import weaviate
from weaviate.classes.query import Filter, FilterReturn, Sort
from weaviate.collections import Collection
from weaviate.util import generate_uuid5

from hindsight_insights.connection import SAFE_TO_RERUN, weaviate_errors
from hindsight_insights.models import CorrectionRecord, DetectedCorrection, Turn, TurnDraft, TurnSignals
from hindsight_insights.store.bulk import delete_all
from hindsight_insights.store.schema import TURN_FIELDS, StoredObject, from_object, to_properties

MAX_SESSION_TURNS = 10_000
SCAN_PAGE = 2000  # turns per read of a scan; a scan pages on in created_at order
_ID_CHUNK = 100  # ids per contains_any filter
_STAMP_PROPERTIES = [
    "session_id",
    "user_id",
    "created_at",
    "feedback",
    "tool_error",
    "stopped_generation",
    "correction",
    "detected_type",
]


@dataclass(frozen=True)
class TurnStamp:
    """What the worker's scans read of a turn: whose, which session, when, and its learning signals."""

    id: uuid.UUID
    session_id: str
    user_id: str
    created_at: datetime
    signals: TurnSignals


@dataclass(frozen=True)
class TurnTally:
    """The answers of a period: how many, flagged as errors, corrected, and corrected with no insight injected."""

    turns: int
    errors: int
    corrected: int
    corrected_uninformed: int


@dataclass(frozen=True)
class SessionActivity:
    """A session as the scans see it: whose it is and when its latest turn (within the scan) was recorded."""

    session_id: str
    user_id: str
    last_turn_at: datetime


def _signal_filter() -> FilterReturn:
    """TurnSignals.any as a Weaviate filter: a dislike, a tool error, a stopped generation, a correction the flow
    reported, or one the detector found."""
    return Filter.any_of(
        [
            Filter.by_property("feedback").equal("dislike"),
            Filter.by_property("tool_error").equal(True),
            Filter.by_property("stopped_generation").equal(True),
            Filter.by_property("correction").equal(True),
            Filter.by_property("detected_type").not_equal("none"),
        ]
    )


def _stamp(obj: StoredObject) -> TurnStamp:
    p = obj.properties
    detected = p.get("detected_type") or "none"
    feedback = p.get("feedback") or None
    created = p["created_at"]
    return TurnStamp(
        id=obj.uuid,
        session_id=str(p["session_id"]),
        user_id=str(p["user_id"]),
        created_at=created if isinstance(created, datetime) else datetime.fromisoformat(str(created)),
        signals=TurnSignals(
            feedback=feedback if feedback in ("like", "dislike") else None,
            tool_error=bool(p.get("tool_error")),
            stopped_generation=bool(p.get("stopped_generation")),
            correction=bool(p.get("correction")),
            detected=DetectedCorrection(type=detected) if detected != "none" else DetectedCorrection(),
        ),
    )


def _listed(obj: StoredObject, name: str) -> list[object]:
    value = obj.properties.get(name)
    return list(value) if isinstance(value, list) else []


def _chunks[T](items: list[T], size: int = _ID_CHUNK) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


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

    def holds_other_users(self, session_id: str, user_id: str) -> bool:
        """Whether the session has a turn of anyone but `user_id` (a session belongs to the user who began it)."""
        where = Filter.by_property("session_id").equal(session_id) & Filter.by_property("user_id").not_equal(user_id)
        with weaviate_errors("reading who a session belongs to"):
            result = self._turns.query.fetch_objects(filters=where, limit=1, return_properties=["user_id"])
        return bool(result.objects)

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

    # ---- what the reflection worker scans -------------------------------------------------------------------------

    def _stamps(
        self,
        since: datetime,
        until: datetime | None = None,
        where: FilterReturn | None = None,
        *,
        limit: int | None = None,
    ) -> Iterator[TurnStamp]:
        """Turns recorded in [since, until), oldest first, at most `limit`.

        Pages by created_at, not by offset (which the server's query limit caps): the next page starts at the last
        instant seen and skips the ids already given. When one instant fills a whole page, that instant is read by
        offset and the scan goes on strictly after it."""
        seen: set[uuid.UUID] = set()
        cursor, strict = since, False
        given = 0
        while True:
            start = Filter.by_property("created_at")
            bounds: list[FilterReturn] = [start.greater_than(cursor) if strict else start.greater_or_equal(cursor)]
            if until is not None:
                bounds.append(Filter.by_property("created_at").less_than(until))
            page = self._stamp_page(Filter.all_of([*bounds, *([] if where is None else [where])]))
            fresh = [stamp for stamp in page if stamp.id not in seen]
            if len(page) == SCAN_PAGE and page[0].created_at == page[-1].created_at:
                instant = page[0].created_at
                fresh = [s for s in self._instant(instant, where) if s.id not in seen]
                cursor, strict = instant, True
            elif page:
                cursor, strict = page[-1].created_at, False
            for stamp in fresh:
                seen.add(stamp.id)
                yield stamp
                given += 1
                if limit is not None and given >= limit:
                    return
            if len(page) < SCAN_PAGE:
                return

    def _stamp_page(self, where: FilterReturn, offset: int | None = None) -> list[TurnStamp]:
        with weaviate_errors("scanning turns"):
            result = self._turns.query.fetch_objects(
                filters=where,
                limit=SCAN_PAGE,
                offset=offset,
                sort=Sort.by_property("created_at", ascending=True),
                return_properties=_STAMP_PROPERTIES,
            )
        return [_stamp(obj) for obj in result.objects]

    def _instant(self, instant: datetime, where: FilterReturn | None) -> Iterator[TurnStamp]:
        """Every turn recorded at one instant (rare: a bulk import), by offset."""
        at_instant = Filter.by_property("created_at").equal(instant)
        condition = at_instant if where is None else Filter.all_of([at_instant, where])
        offset = 0
        while True:
            page = self._stamp_page(condition, offset)
            yield from page
            if len(page) < SCAN_PAGE:
                return
            offset += SCAN_PAGE

    def signal_turns(self, since: datetime, until: datetime | None = None, *, limit: int = 10_000) -> list[TurnStamp]:
        """Turns recorded in [since, until) that carry a learning signal (TurnSignals.any), oldest first: what the
        worker's anomaly trigger reads. At most `limit`; a full list means the caller scans on from the last one."""
        return list(self._stamps(since, until, _signal_filter(), limit=limit))

    def idle_sessions(self, active_since: datetime, idle_since: datetime) -> list[SessionActivity]:
        """Sessions whose latest turn was recorded in [active_since, idle_since) and that have a turn with a learning
        signal (at any time): the sessions that went idle in that window and may teach something. Oldest first."""
        latest: dict[str, SessionActivity] = {}
        for stamp in self._stamps(active_since, idle_since):
            latest[stamp.session_id] = SessionActivity(stamp.session_id, stamp.user_id, stamp.created_at)
        if not latest:
            return []
        ids = sorted(latest)
        still_active = self._sessions_matching(ids, Filter.by_property("created_at").greater_or_equal(idle_since))
        quiet = [session_id for session_id in ids if session_id not in still_active]
        flagged = self._sessions_matching(quiet, _signal_filter())
        found = [latest[session_id] for session_id in quiet if session_id in flagged]
        return sorted(found, key=lambda s: (s.last_turn_at, s.session_id))

    def _sessions_matching(self, session_ids: list[str], where: FilterReturn) -> set[str]:
        """Which of these sessions have at least one turn matching `where`."""
        found: set[str] = set()
        for chunk in _chunks(session_ids):
            pending = set(chunk)
            while pending:  # each round settles at least one session: those with a match drop out
                with weaviate_errors("scanning sessions"):
                    result = self._turns.query.fetch_objects(
                        filters=Filter.all_of([Filter.by_property("session_id").contains_any(sorted(pending)), where]),
                        limit=SCAN_PAGE,
                        return_properties=["session_id"],
                    )
                matched = {str(obj.properties["session_id"]) for obj in result.objects} & pending
                found |= matched
                pending -= matched
                if len(result.objects) < SCAN_PAGE or not matched:
                    break
        return found

    def active_users(self, since: datetime, until: datetime | None = None) -> dict[str, list[SessionActivity]]:
        """Users with a turn recorded in [since, until), each with the sessions they were active in then (by their
        latest turn in the window, oldest first): what the nightly run reflects on."""
        sessions: dict[str, SessionActivity] = {}
        for stamp in self._stamps(since, until):
            sessions[stamp.session_id] = SessionActivity(stamp.session_id, stamp.user_id, stamp.created_at)
        users: dict[str, list[SessionActivity]] = {}
        for activity in sorted(sessions.values(), key=lambda s: (s.last_turn_at, s.session_id)):
            users.setdefault(activity.user_id, []).append(activity)
        return users

    def sessions_of(self, user_id: str, since: datetime) -> list[SessionActivity]:
        """One user's sessions with a turn recorded since `since`, by their latest turn, oldest first."""
        sessions: dict[str, SessionActivity] = {}
        for stamp in self._stamps(since, where=Filter.by_property("user_id").equal(user_id)):
            sessions[stamp.session_id] = SessionActivity(stamp.session_id, stamp.user_id, stamp.created_at)
        return sorted(sessions.values(), key=lambda s: (s.last_turn_at, s.session_id))

    def injected_into(self, insight_id: uuid.UUID, limit: int = MAX_SESSION_TURNS) -> list[Turn]:
        """The turns an insight was injected into, oldest first (the dependency graph, store/graph.py)."""
        with weaviate_errors("reading which turns an insight was injected into"):
            result = self._turns.query.fetch_objects(
                filters=Filter.by_property("injected_insight_ids").contains_any([insight_id]),
                limit=limit,
                sort=Sort.by_property("sequence", ascending=True),
            )
        return [from_object(obj, TURN_FIELDS, Turn) for obj in result.objects]

    def injected_since(self, since: datetime, among: Iterable[uuid.UUID]) -> set[uuid.UUID]:
        """Which of `among` were injected into a turn recorded since `since` (the worker's TTL keeps used ones)."""
        found: set[uuid.UUID] = set()
        for chunk in _chunks(sorted(set(among), key=str)):
            pending = set(chunk)
            while pending:
                where = Filter.by_property("created_at").greater_or_equal(since) & Filter.by_property(
                    "injected_insight_ids"
                ).contains_any(sorted(pending, key=str))
                with weaviate_errors("reading which insights were injected"):
                    result = self._turns.query.fetch_objects(
                        filters=where, limit=SCAN_PAGE, return_properties=["injected_insight_ids"]
                    )
                used = {uuid.UUID(str(i)) for obj in result.objects for i in _listed(obj, "injected_insight_ids")}
                matched = used & pending
                found |= matched
                pending -= matched
                if len(result.objects) < SCAN_PAGE or not matched:
                    break
        return found

    # ---- what the daily report, the metrics and the review console read ---------------------------------------------

    def corrected_between(self, since: datetime, until: datetime, *, limit: int = 10_000) -> list[Turn]:
        """Answers whose correction came in [since, until) (CorrectionRecord.at), oldest first, at most `limit`."""
        where = Filter.all_of(
            [
                Filter.by_property("error_status").equal("corrected"),
                Filter.by_property("correction_at").greater_or_equal(since),
                Filter.by_property("correction_at").less_than(until),
            ]
        )
        with weaviate_errors("reading corrected answers"):
            result = self._turns.query.fetch_objects(
                filters=where, limit=limit, sort=Sort.by_property("correction_at", ascending=True)
            )
        return [from_object(obj, TURN_FIELDS, Turn) for obj in result.objects]

    def by_ids(self, turn_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Turn]:
        """These turns, by id (missing ones left out)."""
        found: dict[uuid.UUID, Turn] = {}
        for chunk in _chunks(sorted(set(turn_ids), key=str)):
            with weaviate_errors("reading turns"):
                result = self._turns.query.fetch_objects(filters=Filter.by_id().contains_any(chunk), limit=len(chunk))
            found.update({obj.uuid: from_object(obj, TURN_FIELDS, Turn) for obj in result.objects})
        return found

    def tally_between(self, since: datetime, until: datetime) -> TurnTally:
        """How the answers recorded in [since, until) went: how many, how many were flagged as errors (corrected,
        disliked or a tool error) or corrected, and how many were corrected with no insight injected."""
        window = Filter.by_property("created_at").greater_or_equal(since) & Filter.by_property("created_at").less_than(
            until
        )
        corrected = Filter.by_property("error_status").equal("corrected")
        errors = Filter.any_of(
            [corrected, Filter.by_property("feedback").equal("dislike"), Filter.by_property("tool_error").equal(True)]
        )
        with weaviate_errors("counting turns"):
            total = self._turns.aggregate.over_all(filters=window, total_count=True).total_count or 0
            flagged = self._turns.aggregate.over_all(filters=window & errors, total_count=True).total_count or 0
            fixed = self._turns.aggregate.over_all(filters=window & corrected, total_count=True).total_count or 0
            # Which corrected answers had nothing injected: read, since an empty list is not filterable everywhere
            # (1.27 without indexNullState). The server's query limit caps it; past that the score is a lower bound.
            result = self._turns.query.fetch_objects(
                filters=window & corrected,
                limit=min(int(fixed), 10_000) or 1,
                return_properties=["injected_insight_ids"],
            )
        uninformed = sum(1 for obj in result.objects if not _listed(obj, "injected_insight_ids"))
        return TurnTally(turns=int(total), errors=int(flagged), corrected=int(fixed), corrected_uninformed=uninformed)
