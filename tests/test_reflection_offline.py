"""Reflection without a model, on the in-memory store (held to the Weaviate store's rules by the contract tests):
the offline extractor finds what users say outright, quotes them verbatim, and saves through the same rules as a
model's candidates."""

from __future__ import annotations

import pytest

from hindsight_insights.config import Settings
from hindsight_insights.models import InsightStatus, Scope, TurnDraft
from hindsight_insights.reflection import ReflectionEngine
from hindsight_insights.reflection.offline import OfflineExtractor
from testkit.memory_store import MemoryStore


@pytest.fixture
def store(project_settings: Settings) -> MemoryStore:
    """The store in memory (testkit/memory_store.py): reflection needs the turn log and the saving, not Weaviate."""
    return MemoryStore(project_settings)


def record(store: MemoryStore, session: str, user: str, scene: str, exchanges: list[tuple[str, str]]) -> None:
    for said, answered in exchanges:
        store.turns.append(
            TurnDraft.parse(
                {
                    "session_id": session,
                    "user_id": user,
                    "scene": scene,
                    "user_message": said,
                    "assistant_message": answered,
                }
            )
        )


def test_stated_preferences_and_corrections_become_rules_quoted_verbatim(store: MemoryStore) -> None:
    record(
        store,
        "s1",
        "lao-wang",
        "方案对比",
        [
            ("帮我比较一下 Redis 和 Memcached", "王老师您好，Redis 支持持久化……"),
            ("别叫我王老师，叫我老王就行。", "好的老王。"),
            ("谢谢！", "不客气。"),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s1")
    assert report.outcome == "ok" and report.llm_calls == 0 and report.dropped == []
    (created,) = report.created
    rule = store.get(created)
    assert (rule.kind, rule.scope, rule.user_id, rule.source) == (
        "preference",
        Scope.USER,
        "lao-wang",
        "reflection:offline",
    )
    assert rule.evidence.quote == "别叫我王老师，叫我老王就行。" and rule.evidence.turn == 1 and "老王" in rule.action
    again = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s1")
    assert again.created == [] and again.unchanged == [created]  # reflecting twice never duplicates


def test_a_session_with_nothing_to_learn_leaves_nothing(store: MemoryStore) -> None:
    record(store, "s2", "carol", "general", [("Thanks, that was exactly what I needed!", "Glad it helped!")])
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s2")
    assert report.outcome == "ok" and report.saved_ids == [] and store.count() == (0, 1)


def test_a_fact_is_the_users_at_once_and_waits_for_verification_and_a_bare_no_teaches_nothing(
    store: MemoryStore,
) -> None:
    record(
        store,
        "s3",
        "u1",
        "售后服务",
        [
            ("退货寄到哪里？", "请寄到上海市嘉定区宝安公路 2999 号。"),
            ("不对，退货地址已经改成杭州市余杭区良睦路 1399 号了，官网上周发的通知。", "抱歉，已更正。"),
            ("不对。", "抱歉。"),
        ],
    )
    report = ReflectionEngine(store, OfflineExtractor(store.settings)).reflect_session("s3")
    (created,) = report.created
    (pending,) = report.pending_review
    mine, project = store.get(created), store.get(pending)
    assert (mine.kind, mine.scope, mine.status) == ("fact", Scope.USER, InsightStatus.ACTIVE)
    assert (project.scope, project.status) == (Scope.PROJECT, InsightStatus.PENDING_REVIEW)
    assert "良睦路 1399 号" in mine.action and project.review_reason is not None
