"""The turn log's scans that the reflection worker reads, against a real Weaviate: signal turns in a window, sessions
that went idle with a signal, users active in a window and their sessions, insights injected since a time."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from hindsight_insights.models import DetectedCorrection, TurnDraft, TurnSignals
from hindsight_insights.store import InsightStore
from hindsight_insights.store import turns as turns_module

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def add(
    store: InsightStore,
    session: str,
    user: str,
    minutes: float,
    signals: TurnSignals | None = None,
    injected: list[uuid.UUID] | None = None,
) -> None:
    draft = TurnDraft(
        session_id=session,
        user_id=user,
        user_message=f"message at {minutes} in {session}",
        assistant_message="ok",
        signals=signals or TurnSignals(),
        injected_insight_ids=injected or [],
    )
    store.turns.append(draft, now=at(minutes))


def test_signal_turns_are_the_flagged_ones_in_the_window_oldest_first(store: InsightStore) -> None:
    add(store, "s1", "u1", 0, TurnSignals(feedback="dislike"))
    add(store, "s1", "u1", 1, TurnSignals(feedback="like"))  # praise is not a learning signal
    add(store, "s2", "u2", 2, TurnSignals(tool_error=True))
    add(store, "s2", "u2", 3)
    add(store, "s3", "u3", 4, TurnSignals(stopped_generation=True))
    add(store, "s3", "u3", 5, TurnSignals(correction=True))
    add(store, "s4", "u4", 6, TurnSignals(detected=DetectedCorrection(type="preference", confidence=0.9)))
    add(store, "s4", "u4", 30, TurnSignals(correction=True))  # after the window

    found = store.turns.signal_turns(at(0), at(10))

    assert [(s.session_id, s.created_at) for s in found] == [
        ("s1", at(0)),
        ("s2", at(2)),
        ("s3", at(4)),
        ("s3", at(5)),
        ("s4", at(6)),
    ]
    assert [s.signals.any for s in found] == [True] * 5
    assert found[4].signals.detected.type == "preference" and found[0].signals.feedback == "dislike"
    assert [s.session_id for s in store.turns.signal_turns(at(5), at(10))] == ["s3", "s4"]  # since is inclusive
    assert [s.created_at for s in store.turns.signal_turns(at(0), limit=2)] == [at(0), at(2)]


def test_idle_sessions_went_quiet_in_the_window_and_carry_a_signal(store: InsightStore) -> None:
    add(store, "quiet-flagged", "u1", 0, TurnSignals(correction=True))
    add(store, "quiet-flagged", "u1", 10)
    add(store, "still-talking", "u2", 5, TurnSignals(feedback="dislike"))
    add(store, "still-talking", "u2", 45)  # a turn after the idle boundary: not idle
    add(store, "quiet-plain", "u3", 12)  # idle but nothing to learn from
    add(store, "old-signal", "u4", -120, TurnSignals(tool_error=True))  # the signal before the window counts
    add(store, "old-signal", "u4", 15)
    add(store, "idle-long-ago", "u5", -60, TurnSignals(correction=True))  # went quiet before the window

    idle = store.turns.idle_sessions(active_since=at(0), idle_since=at(30))

    assert [(s.session_id, s.user_id, s.last_turn_at) for s in idle] == [
        ("quiet-flagged", "u1", at(10)),
        ("old-signal", "u4", at(15)),
    ]
    assert store.turns.idle_sessions(active_since=at(50), idle_since=at(60)) == []


def test_active_users_and_a_users_recent_sessions(store: InsightStore) -> None:
    add(store, "grace-mon", "u_grace", -24 * 60 - 5)  # the day before the window
    add(store, "grace-tue", "u_grace", 1)
    add(store, "grace-tue", "u_grace", 7)
    add(store, "grace-wed", "u_grace", 3)
    add(store, "kate-1", "u_kate", 2)

    active = store.turns.active_users(at(0), at(60))

    assert {user: [(s.session_id, s.last_turn_at) for s in sessions] for user, sessions in active.items()} == {
        "u_grace": [("grace-wed", at(3)), ("grace-tue", at(7))],
        "u_kate": [("kate-1", at(2))],
    }
    week = store.turns.sessions_of("u_grace", at(-7 * 24 * 60))
    assert [s.session_id for s in week] == ["grace-mon", "grace-wed", "grace-tue"]
    assert store.turns.sessions_of("u_nobody", at(-60)) == []


def test_injected_since_names_the_insights_used_in_the_window(store: InsightStore) -> None:
    used_old, used_new, unused = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    add(store, "s1", "u1", -100, injected=[used_old])
    add(store, "s1", "u1", 5, injected=[used_new, uuid.uuid4()])

    assert store.turns.injected_since(at(0), [used_old, used_new, unused]) == {used_new}
    assert store.turns.injected_since(at(-200), [used_old, used_new, unused]) == {used_old, used_new}
    assert store.turns.injected_since(at(0), []) == set()


def test_scans_page_through_turns_that_share_an_instant(store: InsightStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turns_module, "SCAN_PAGE", 2)
    for n in range(5):
        add(store, f"tie-{n}", "u1", 1, TurnSignals(correction=True))  # five turns at the same instant
    add(store, "later", "u2", 2, TurnSignals(correction=True))

    assert sorted(s.session_id for s in store.turns.signal_turns(at(0))) == ["later", *(f"tie-{n}" for n in range(5))]
    assert sorted(store.turns.active_users(at(0))) == ["u1", "u2"]
    assert len(store.turns.idle_sessions(at(0), at(30))) == 6
