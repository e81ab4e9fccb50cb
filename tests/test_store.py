"""The store's rules, against the real Weaviate server started by conftest."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import weaviate

from hindsight_insights.errors import InvalidInput, NotFound, WeaviateUnavailable
from hindsight_insights.models import InsightKind, InsightStatus, TurnDraft
from hindsight_insights.store import InsightStore
from testkit.admitted import admitted_as_is, all_admitted_as_is
from testkit.drafts import draft


def ids(hits: list[Any]) -> list[uuid.UUID]:
    return [hit.insight.id for hit in hits]


# ---- save -------------------------------------------------------------------------------------------------------


def test_save_then_get_round_trips_every_field(store: InsightStore) -> None:
    expire = datetime.now(UTC) + timedelta(days=7)
    saved = store.save(
        admitted_as_is(
            draft(tags=["address", "returns"], expire_at=expire, evidence={"quote": "q", "session_id": "s9", "turn": 2})
        )
    )
    assert saved.status == "created"
    got = store.get(saved.id)
    assert (got.topic, got.kind, got.scene, got.scope, got.status) == (
        "return address",
        InsightKind.FACT,
        "after-sales",
        "project",
        InsightStatus.ACTIVE,
    )
    assert got.tags == ["address", "returns"]
    assert got.evidence.session_id == "s9" and got.evidence.turn == 2
    assert got.expire_at is not None and abs((got.expire_at - expire).total_seconds()) < 1
    assert got.support_count == 1 and got.supersedes == []


def test_exact_duplicates_collapse(store: InsightStore) -> None:
    first = store.save(admitted_as_is(draft()))
    second = store.save(admitted_as_is(draft()))
    assert second.status == "unchanged" and second.id == first.id
    assert store.count() == (1, 0)
    assert store.get(first.id).support_count == 1


def test_same_topic_scene_scope_supersedes_and_keeps_history(store: InsightStore) -> None:
    old = store.save(admitted_as_is(draft()))
    new = store.save(
        admitted_as_is(
            draft(
                action="When a customer asks where to send a return, give 1 Wensan Road, Hangzhou.",
                evidence="We moved to Hangzhou.",
            )
        )
    )
    assert new.status == "superseded" and new.supersedes == [old.id]
    assert store.get(old.id).status is InsightStatus.SUPERSEDED
    assert store.get(new.id).supersedes == [old.id]
    assert store.count() == (2, 0)
    assert ids(store.retrieval.search("where do I send my return?", scene="after-sales")) == [new.id]


def test_resaving_a_superseded_insight_revives_it_as_newest(store: InsightStore) -> None:
    old = store.save(admitted_as_is(draft()))
    new = store.save(
        admitted_as_is(draft(action="Give 1 Wensan Road, Hangzhou, as the return address.", evidence="moved"))
    )
    revived = store.save(admitted_as_is(draft()))
    assert (revived.id, revived.status, revived.supersedes) == (old.id, "superseded", [new.id])
    assert store.get(old.id).status is InsightStatus.ACTIVE
    assert store.get(new.id).status is InsightStatus.SUPERSEDED


def test_different_scene_or_user_does_not_supersede(store: InsightStore) -> None:
    a = store.save(
        admitted_as_is(
            draft(kind="preference", topic="称呼", user_id="u1", action="称呼用户为老王。", evidence="叫我老王")
        )
    )
    b = store.save(
        admitted_as_is(
            draft(kind="preference", topic="称呼", user_id="u2", action="称呼用户为李总。", evidence="叫我李总")
        )
    )
    c = store.save(
        admitted_as_is(
            draft(kind="preference", topic="称呼", user_id="u1", scene="闲聊", action="叫他王哥。", evidence="叫我王哥")
        )
    )
    assert [r.status for r in (a, b, c)] == ["created", "created", "created"]
    assert all(store.get(r.id).status is InsightStatus.ACTIVE for r in (a, b, c))


def test_the_same_instruction_reworded_merges_and_raises_support_count(store: InsightStore) -> None:
    first = store.save(
        admitted_as_is(
            draft(topic="reply style", action="Give the conclusion first, then the steps.", evidence="answer first")
        )
    )
    second = store.save(
        admitted_as_is(
            draft(
                topic="Reply style",
                action="Give the conclusion first and then the steps.",
                evidence="conclusion first please",
                tags=["format"],
                confidence=0.95,
                user_id="u1",
                scope="project",
            )
        )
    )
    assert second.status == "merged" and second.id == first.id and second.changed == ["confidence", "tags"]
    merged = store.get(first.id)
    assert merged.support_count == 2 and merged.confidence == 0.95 and merged.tags == ["format"]
    assert store.count() == (1, 0)


def test_saving_again_without_expiry_clears_the_stored_expiry(store: InsightStore) -> None:
    first = store.save(admitted_as_is(draft(expire_at=datetime.now(UTC) + timedelta(days=1))))
    again = store.save(admitted_as_is(draft(evidence="again: returns go to 88 Zhangjiang Road")))
    assert (again.status, again.changed) == ("updated", ["expire_at"])
    assert store.get(first.id).expire_at is None


def test_pending_review_is_stored_but_supersedes_nothing(store: InsightStore) -> None:
    active = store.save(admitted_as_is(draft()))
    pending = store.save(
        admitted_as_is(draft(action="Give 1 Wensan Road, Hangzhou.", evidence="hz", status="pending_review"))
    )
    assert pending.insight_status is InsightStatus.PENDING_REVIEW and pending.supersedes == []
    assert store.get(active.id).status is InsightStatus.ACTIVE


def test_a_failed_supersede_writes_nothing(store: InsightStore, monkeypatch: pytest.MonkeyPatch) -> None:
    old = store.save(admitted_as_is(draft()))
    collection = (
        store.insight_table.collection
    )  # the real collection; one write is made to fail as a lost connection would

    def lost_connection(*args: Any, **kwargs: Any) -> None:
        raise weaviate.exceptions.WeaviateConnectionError("connection reset by peer")

    monkeypatch.setattr(collection.data, "update", lost_connection)
    with pytest.raises(WeaviateUnavailable, match="Nothing was changed"):
        store.save(admitted_as_is(draft(action="Give 1 Wensan Road, Hangzhou.", evidence="hz")))
    monkeypatch.undo()
    assert store.count() == (1, 0)
    assert store.get(old.id).status is InsightStatus.ACTIVE


# ---- status, delete, expiry --------------------------------------------------------------------------------------


def test_set_status_delete_and_not_found(store: InsightStore) -> None:
    saved = store.save(admitted_as_is(draft()))
    assert store.set_status(saved.id, InsightStatus.REJECTED).status is InsightStatus.REJECTED
    store.delete(saved.id)
    with pytest.raises(NotFound, match="no insight"):
        store.get(saved.id)
    with pytest.raises(NotFound):
        store.delete(saved.id)
    with pytest.raises(InvalidInput, match="id: 'nope' is not an insight id"):
        store.get("nope")


def test_list_filters(store: InsightStore) -> None:
    store.save(admitted_as_is(draft()))
    store.save(
        admitted_as_is(
            draft(kind="preference", topic="tone", user_id="u1", action="Be brief.", evidence="short please")
        )
    )
    assert len(store.list_insights()) == 2
    assert [i.topic for i in store.list_insights(user_id="u1")] == ["tone"]
    assert [i.topic for i in store.list_insights(kind=InsightKind.FACT)] == ["return address"]
    assert store.list_insights(status=InsightStatus.REJECTED) == []
    assert len(store.list_insights(scene="after-sales")) == 2


def test_expire_sweep_marks_only_due_insights(store: InsightStore) -> None:
    due = store.save(admitted_as_is(draft(expire_at=datetime.now(UTC) + timedelta(seconds=1))))
    later = store.save(
        admitted_as_is(
            draft(
                topic="SLA",
                action="Promise replies within 24 hours.",
                evidence="24h",
                expire_at=datetime.now(UTC) + timedelta(days=9),
            )
        )
    )
    forever = store.save(admitted_as_is(draft(topic="tone", action="Be polite.", evidence="polite")))
    assert store.expire_sweep(now=datetime.now(UTC) + timedelta(seconds=2)) == 1
    assert store.get(due.id).status is InsightStatus.EXPIRED
    assert store.get(later.id).status is InsightStatus.ACTIVE
    assert store.get(forever.id).status is InsightStatus.ACTIVE


def test_retiring_the_rule_expires_it_and_the_previous_version_is_the_rule_again(store: InsightStore) -> None:
    now = datetime.now(UTC)
    old = store.save(admitted_as_is(draft()), now=now - timedelta(days=40))
    new = store.save(
        admitted_as_is(draft(action="Send returns to 9 Harbour Street, Ningbo.", evidence="9 Harbour Street")), now=now
    )
    assert store.get(old.id).status is InsightStatus.SUPERSEDED

    retired = store.retire(new.id, now=now)

    assert retired.status is InsightStatus.EXPIRED and retired.expire_at is not None and retired.expire_at <= now
    assert store.get(old.id).status is InsightStatus.ACTIVE and store.get(old.id).superseded_by == new.id
    assert ids(store.retrieval.search("where do returns go?", scene="after-sales")) == [old.id]
    assert store.retire(new.id, now=now + timedelta(hours=1)).updated_at == retired.updated_at  # already retired
    pending = store.save(
        admitted_as_is(draft(topic="refunds", action="Refund in 3 days.", evidence="3 days", status="pending_review"))
    )
    with pytest.raises(InvalidInput, match="pending_review; only active or superseded retire"):
        store.retire(pending.id, now=now)
    assert store.get(pending.id).status is InsightStatus.PENDING_REVIEW


# ---- forget_user and turns ---------------------------------------------------------------------------------------


def turn(session: str, user: str, text: str = "hi") -> TurnDraft:
    return TurnDraft.parse({"session_id": session, "user_id": user, "user_message": text, "assistant_message": "ok"})


def test_forget_user_removes_that_user_and_nothing_else(store: InsightStore) -> None:
    for user in ("u1", "u2", "u3"):
        store.save(
            admitted_as_is(
                draft(kind="preference", topic="name", user_id=user, action=f"Call the user {user}.", evidence=user)
            )
        )
        store.turns.append(turn(f"s-{user}", user))
        store.turns.append(turn(f"s-{user}", user, "again"))
    store.save(admitted_as_is(draft()))  # project-wide, no user
    before = {user: store.count(user_id=user) for user in ("u2", "u3")}
    total_before = store.count()
    result = store.forget_user("u1")
    assert (result.insights_deleted, result.turns_deleted) == (1, 2)
    assert store.count(user_id="u1") == (0, 0)
    assert {user: store.count(user_id=user) for user in ("u2", "u3")} == before
    assert store.count() == (total_before[0] - 1, total_before[1] - 2)
    assert store.forget_user("u1").insights_deleted == 0  # idempotent
    with pytest.raises(InvalidInput, match="user_id: must not be empty"):
        store.forget_user(" ")


def test_turns_append_in_order_per_session(store: InsightStore) -> None:
    injected = uuid.uuid4()
    first = store.turns.append(turn("s1", "u1", "我的 nginx 502 了"))
    store.turns.append(turn("s2", "u1", "other session"))
    second = store.turns.append(
        TurnDraft.parse(
            {
                "session_id": "s1",
                "user_id": "u1",
                "user_message": "不对，是 504",
                "signals": {"feedback": "dislike", "correction": True},
                "injected_insight_ids": [str(injected)],
            }
        )
    )
    assert (first.turn_index, second.turn_index) == (0, 1)
    turns = store.turns.session("s1")
    assert [t.turn_index for t in turns] == [0, 1]
    assert turns[0].user_message == "我的 nginx 502 了"
    assert turns[1].signals.feedback == "dislike" and turns[1].signals.correction and turns[1].signals.any
    assert turns[1].injected_insight_ids == [injected]
    assert store.turns.session("nope") == []


# ---- bulk import -------------------------------------------------------------------------------------------------


def test_import_many_applies_duplicate_and_supersede_rules(store: InsightStore) -> None:
    stored = store.save(admitted_as_is(draft()))
    newer = draft(action="Give 1 Wensan Road, Hangzhou, as the return address.", evidence="hz")
    newest = draft(action="Give 9 Binjiang Road, Hangzhou, as the return address.", evidence="bj")
    other = draft(topic="SLA", action="Promise a reply within 24 hours.", evidence="24h")
    assert store.import_many(all_admitted_as_is([draft(), newer, other, newest, other]), batch_size=2) == 3
    assert store.count() == (4, 0)
    active = store.list_insights(status=InsightStatus.ACTIVE)
    assert sorted(i.action for i in active) == sorted([newest.action, other.action])
    assert store.get(stored.id).status is InsightStatus.SUPERSEDED
    assert store.import_many(all_admitted_as_is([draft(), other])) == 0  # idempotent


def test_a_failed_import_writes_nothing(store: InsightStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.save(admitted_as_is(draft(topic="kept", action="Keep me.", evidence="k")))
    batches = []
    real_insert_many = store.insight_table.collection.data.insert_many

    def second_batch_fails(objects: Any) -> Any:
        batches.append(len(objects))
        if len(batches) == 2:
            raise weaviate.exceptions.WeaviateConnectionError("connection reset by peer")
        return real_insert_many(objects)

    monkeypatch.setattr(store.insight_table.collection.data, "insert_many", second_batch_fails)
    drafts = [draft(topic=f"t{i}", action=f"Rule number {i}.", evidence=f"e{i}") for i in range(5)]
    with pytest.raises(WeaviateUnavailable):
        store.import_many(all_admitted_as_is(drafts), batch_size=3)
    assert batches == [3, 2]
    assert store.count() == (1, 0)


def test_an_interrupted_forget_says_to_run_it_again(store: InsightStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.save(
        admitted_as_is(draft(kind="preference", topic="name", user_id="u1", action="Call the user u1.", evidence="u1"))
    )
    store.turns.append(turn("s1", "u1"))

    def lost_connection(*args: Any, **kwargs: Any) -> None:
        raise weaviate.exceptions.WeaviateConnectionError("connection reset by peer")

    monkeypatch.setattr(store.turns._turns.data, "delete_many", lost_connection)
    with pytest.raises(WeaviateUnavailable, match="safe to run again"):
        store.forget_user("u1")
    monkeypatch.undo()
    assert store.forget_user("u1").turns_deleted == 1
    assert store.count(user_id="u1") == (0, 0)
