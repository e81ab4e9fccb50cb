"""The store's contract: the same behaviour on the Weaviate store (the real server conftest starts) and on the
in-memory store of testkit/memory_store.py that reflection and governance tests run on.

Each test is written once, in `StoreContract`, and runs once per store: `TestWeaviateStore` and `TestMemoryStore`
give it `contract_store`. (Two subclasses rather than a parametrised fixture, so that the Weaviate run's fixtures
are declared: the server and its per-test project cleanup apply to it alone.)
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hindsight_insights.config import Settings
from hindsight_insights.errors import InvalidInput, NotFound
from hindsight_insights.models import CorrectionRecord, InsightDraft, InsightStatus, TurnDraft
from hindsight_insights.store import InsightStore
from hindsight_insights.store.insights import ProjectStore
from hindsight_insights.store.table import SCRUBBED_QUOTE
from testkit.admitted import admitted_as_is, all_admitted_as_is
from testkit.drafts import draft_of
from testkit.memory_store import MemoryStore

# In the future: a draft's expiry must be, when it is parsed.
T0 = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
AnyStore = ProjectStore[Any]


RETURN_ADDRESS_S1: dict[str, Any] = {
    "topic": "return address",
    "kind": "fact",
    "scene": "after-sales",
    "action": "When a customer asks where to send a return, give 88 Zhangjiang Road, Shanghai.",
    "evidence": {"quote": "Returns now go to 88 Zhangjiang Road.", "session_id": "s1"},
    "confidence": 0.8,
}


def draft(**changes: Any) -> InsightDraft:
    return draft_of(RETURN_ADDRESS_S1, **changes)


HANGZHOU = "When a customer asks where to send a return, give 1 Wensan Road, Hangzhou."


def turn(session: str, user: str, said: str = "hello", message_id: str | None = None) -> TurnDraft:
    return TurnDraft(
        session_id=session, user_id=user, scene="after-sales", user_message=said, assistant_message="ok",
        message_id=message_id,
    )  # fmt: skip


class StoreContract:
    # ---- save statuses --------------------------------------------------------------------------------------

    def test_save_statuses(self, contract_store: AnyStore) -> None:
        store = contract_store
        created = store.save(admitted_as_is(draft(scope="project", user_id="u1")), T0)
        assert (created.status, created.insight_status) == ("created", InsightStatus.ACTIVE)
        assert store.save(admitted_as_is(draft(scope="project", user_id="u1")), T0).status == "unchanged"
        merged = store.save(admitted_as_is(draft(scope="project", user_id="u2")), T0)
        assert (merged.status, merged.id) == ("merged", created.id)
        updated = store.save(admitted_as_is(draft(scope="project", user_id="u2", confidence=0.95)), T0)
        assert (updated.status, updated.changed) == ("updated", ["confidence"])
        stored = store.get(created.id)
        assert stored.supporters == ["u1", "u2"] and stored.support_count == 2 and stored.confidence == 0.95
        newer = store.save(admitted_as_is(draft(action=HANGZHOU)), T0 + timedelta(minutes=1))
        assert (newer.status, newer.supersedes) == ("superseded", [created.id])
        assert store.get(created.id).status is InsightStatus.SUPERSEDED
        pending = store.save(
            admitted_as_is(draft(action="Send returns to the Suzhou depot.", status="pending_review")), T0
        )
        assert (pending.status, pending.insight_status) == ("pending_review", InsightStatus.PENDING_REVIEW)
        assert store.get(newer.id).status is InsightStatus.ACTIVE  # pending supersedes nothing

    def test_an_older_version_said_again_becomes_the_rule(self, contract_store: AnyStore) -> None:
        store = contract_store
        old = store.save(admitted_as_is(draft()), T0)
        new = store.save(admitted_as_is(draft(action=HANGZHOU)), T0 + timedelta(minutes=1))
        again = store.save(admitted_as_is(draft()), T0 + timedelta(minutes=2))
        assert (again.id, again.status, again.supersedes) == (old.id, "superseded", [new.id])
        assert [v.id for v in store.history(old.id)] == [new.id, old.id]

    # ---- chains and expiry ----------------------------------------------------------------------------------

    def test_a_supersede_chain_resumes_the_older_rule_when_the_newer_expires(self, contract_store: AnyStore) -> None:
        store = contract_store
        normal = store.save(admitted_as_is(draft()), T0)
        holiday_ends = T0 + timedelta(days=3)
        holiday = store.save(admitted_as_is(draft(action=HANGZHOU, expire_at=holiday_ends)), T0 + timedelta(hours=1))
        assert holiday.status == "superseded"
        waiting = store.get(normal.id)
        assert (waiting.status, waiting.superseded_by, waiting.resume_at) == (
            InsightStatus.SUPERSEDED,
            holiday.id,
            holiday_ends,
        )
        assert store.expire_sweep(T0 + timedelta(days=1)) == 0
        assert store.expire_sweep(T0 + timedelta(days=4)) == 1
        assert store.get(holiday.id).status is InsightStatus.EXPIRED
        assert store.get(normal.id).status is InsightStatus.ACTIVE
        assert store.expire_sweep(T0 + timedelta(days=5)) == 0  # idempotent

    def test_an_expired_pending_insight_is_marked_expired(self, contract_store: AnyStore) -> None:
        store = contract_store
        pending = store.save(admitted_as_is(draft(status="pending_review", expire_at=T0 + timedelta(days=1))), T0)
        assert store.expire_sweep(T0 + timedelta(days=2)) == 1
        assert store.get(pending.id).status is InsightStatus.EXPIRED

    # ---- review lifecycle -----------------------------------------------------------------------------------

    def test_approve_makes_a_pending_insight_the_rule_with_the_reviewer_as_supporter(
        self, contract_store: AnyStore
    ) -> None:
        store = contract_store
        rule = store.save(admitted_as_is(draft()), T0)
        pending = store.save(admitted_as_is(draft(action=HANGZHOU, status="pending_review", review_reason="check")), T0)
        approved = store.approve(pending.id, reviewer="ops-lin", now=T0 + timedelta(minutes=5))
        assert approved.status is InsightStatus.ACTIVE and approved.review_reason is None
        assert "reviewer:ops-lin" in approved.supporters and approved.supersedes == [rule.id]
        assert store.get(rule.id).status is InsightStatus.SUPERSEDED
        with pytest.raises(InvalidInput, match="not pending_review"):
            store.approve(pending.id)

    def test_reject_stays_rejected_and_the_previous_rule_comes_back(self, contract_store: AnyStore) -> None:
        store = contract_store
        old = store.save(admitted_as_is(draft()), T0)
        new = store.save(admitted_as_is(draft(action=HANGZHOU)), T0 + timedelta(minutes=1))
        rejected = store.set_status(new.id, InsightStatus.REJECTED, T0 + timedelta(minutes=2))
        assert rejected.status is InsightStatus.REJECTED
        assert store.get(old.id).status is InsightStatus.ACTIVE
        again = store.save(admitted_as_is(draft(action=HANGZHOU)), T0 + timedelta(minutes=3))
        assert (again.status, again.insight_status) == ("unchanged", InsightStatus.REJECTED)
        with pytest.raises(InvalidInput, match="is not set"):
            store.set_status(old.id, InsightStatus.EXPIRED)

    def test_retire_expires_the_rule_and_the_older_version_takes_over(self, contract_store: AnyStore) -> None:
        store = contract_store
        old = store.save(admitted_as_is(draft()), T0)
        new = store.save(admitted_as_is(draft(action=HANGZHOU)), T0 + timedelta(minutes=1))
        retired = store.retire(new.id, T0 + timedelta(minutes=2))
        assert retired.status is InsightStatus.EXPIRED and retired.expire_at == T0 + timedelta(minutes=2)
        assert store.get(old.id).status is InsightStatus.ACTIVE
        assert store.retire(new.id, T0 + timedelta(minutes=3)).status is InsightStatus.EXPIRED  # as it is
        pending = store.save(admitted_as_is(draft(action="Ask the depot.", status="pending_review")), T0)
        with pytest.raises(InvalidInput, match="only active or superseded retire"):
            store.retire(pending.id)

    def test_revise_and_delete(self, contract_store: AnyStore) -> None:
        store = contract_store
        old = store.save(admitted_as_is(draft()), T0)
        new = store.save(admitted_as_is(draft(action=HANGZHOU)), T0 + timedelta(minutes=1))
        revised = store.revise(new.id, {"action": HANGZHOU + " Weekdays only.", "tags": ["depot"]})
        assert revised.action.endswith("Weekdays only.") and revised.tags == ["depot"]
        with pytest.raises(InvalidInput, match="cannot be edited"):
            store.revise(new.id, {"topic": "other"})
        store.delete(new.id, T0 + timedelta(minutes=2))
        with pytest.raises(NotFound):
            store.get(new.id)
        assert store.get(old.id).status is InsightStatus.ACTIVE

    # ---- forgetting -----------------------------------------------------------------------------------------

    def test_forget_user_deletes_theirs_and_scrubs_shared_project_insights(self, contract_store: AnyStore) -> None:
        store = contract_store
        own = store.save(
            admitted_as_is(draft(kind="preference", topic="name", action="Call them Lao Wang.", user_id="u1")), T0
        )
        alone = store.save(
            admitted_as_is(draft(topic="sla", action="Reply within a day.", scope="project", user_id="u1")), T0
        )
        shared = store.save(admitted_as_is(draft(scope="project", user_id="u1")), T0)
        store.save(admitted_as_is(draft(scope="project", user_id="u2")), T0)
        store.turns.append(turn("s1", "u1"), T0)
        store.turns.append(turn("s2", "u2"), T0)

        result = store.forget_user("u1", T0 + timedelta(minutes=1))
        assert (result.insights_deleted, result.insights_scrubbed, result.turns_deleted) == (2, 1, 1)
        for gone in (own.id, alone.id):
            with pytest.raises(NotFound):
                store.get(gone)
        kept = store.get(shared.id)
        assert kept.supporters == ["u2"] and kept.learned_from is None and kept.evidence.quote == SCRUBBED_QUOTE
        assert store.count() == (1, 1) and store.count(user_id="u1") == (0, 0)
        again = store.forget_user("u1")
        assert (again.insights_deleted, again.insights_scrubbed, again.turns_deleted) == (0, 0, 0)
        with pytest.raises(InvalidInput, match="must not be empty"):
            store.forget_user("  ")

    # ---- reads ----------------------------------------------------------------------------------------------

    def test_visible_ids_are_the_projects_the_users_and_this_sessions(self, contract_store: AnyStore) -> None:
        store = contract_store
        project = store.save(admitted_as_is(draft()), T0).id
        mine = store.save(admitted_as_is(draft(topic="tone", action="Be brief.", user_id="u1")), T0).id
        in_s9 = {"quote": "15", "session_id": "s9"}
        session = store.save(
            admitted_as_is(draft(topic="fee", action="Say 15.", user_id="u1", scope="session", evidence=in_s9)), T0
        ).id
        theirs = store.save(admitted_as_is(draft(topic="tone", action="Be warm.", user_id="u2")), T0).id
        unknown = uuid.uuid4()
        every = [project, mine, session, theirs, unknown]
        assert store.visible_ids(every, "u1", "s9") == {project, mine, session}
        assert store.visible_ids(every, "u1", "other") == {project, mine}
        assert store.visible_ids(every, None) == {project}
        assert store.visible_ids([], "u1") == set()

    def test_list_insights_filters_newest_first(self, contract_store: AnyStore) -> None:
        store = contract_store
        first = store.save(admitted_as_is(draft()), T0)
        second = store.save(
            admitted_as_is(draft(kind="preference", topic="tone", action="Be brief.", user_id="u1")), T0 + timedelta(1)
        )
        assert [i.id for i in store.list_insights()] == [second.id, first.id]
        assert [i.id for i in store.list_insights(user_id="u1")] == [second.id]
        assert [i.id for i in store.list_insights(scene="After-Sales", status=InsightStatus.ACTIVE)] == [
            second.id,
            first.id,
        ]
        assert store.list_insights(status=InsightStatus.REJECTED) == []
        assert [v.id for v in store.slot_versions_of(draft(action=HANGZHOU))] == [first.id]

    def test_import_many_keeps_one_rule_per_slot_and_is_idempotent(self, contract_store: AnyStore) -> None:
        store = contract_store
        drafts = [draft(), draft(action=HANGZHOU), draft(topic="sla", action="Reply within a day.")]
        assert store.import_many(all_admitted_as_is(drafts), batch_size=2, now=T0) == 3
        active = {i.action for i in store.list_insights(status=InsightStatus.ACTIVE)}
        assert active == {HANGZHOU, "Reply within a day."}
        assert store.import_many(all_admitted_as_is(drafts), now=T0) == 0

    # ---- turns ----------------------------------------------------------------------------------------------

    def test_turns_append_latest_session_and_mark_corrected(self, contract_store: AnyStore) -> None:
        turns = contract_store.turns
        first = turns.append(turn("s1", "u1", "where do returns go?"), T0)
        second = turns.append(turn("s1", "u1", "no, Hangzhou", message_id="m-2"), T0 + timedelta(seconds=1))
        turns.append(turn("s2", "u2"), T0)
        assert (first.turn_index, second.turn_index) == (0, 1)
        assert turns.append(turn("s1", "u1", "no, Hangzhou", message_id="m-2")).id == second.id  # a retry
        assert [t.id for t in turns.session("s1")] == [first.id, second.id]
        latest = turns.latest("s1")
        assert latest is not None and latest.id == second.id and turns.latest("nobody") is None
        record = CorrectionRecord(type="factual", corrected="Hangzhou", by="u1", at=T0, in_turn=second.id)
        assert turns.mark_corrected(first, record).error_status == "corrected"
        stored = turns.get(first.id)
        assert stored is not None and stored.error_status == "corrected" and stored.correction == record
        assert turns.count() == 3 and turns.count(user_id="u1") == 2
        # A session belongs to the user who began it (record_turn refuses another user's turn into it).
        assert not turns.holds_other_users("s1", "u1") and turns.holds_other_users("s1", "u2")
        assert not turns.holds_other_users("a new session", "u2")


class TestWeaviateStore(StoreContract):
    @pytest.fixture
    def contract_store(self, store: InsightStore) -> AnyStore:
        return store


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def contract_store(self, project_settings: Settings) -> AnyStore:
        return MemoryStore(project_settings)
