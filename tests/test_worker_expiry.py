"""The worker's expiry pass against a real Weaviate: insights past expire_at become expired, and the TTL retires
active insights of low confidence that nobody used, and only those."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hindsight_insights.models import InsightDraft, InsightStatus, TurnDraft
from hindsight_insights.store import InsightStore
from testkit.admitted import admitted_as_is
from tests.worker_support import FakeClock, RuleExtractor, running_worker


def draft(topic: str, confidence: float, **changes: Any) -> InsightDraft:
    data: dict[str, Any] = {
        "topic": topic,
        "kind": "preference",
        "scene": "general",
        "action": f"When you talk about {topic}, keep it short.",
        "evidence": f"keep {topic} short",
        "confidence": confidence,
        "user_id": "u_ttl",
    }
    return InsightDraft.parse({"scope": "user", **data, **changes})


def test_expiry_and_the_ttl_retire_only_unused_low_confidence_insights(
    store: InsightStore, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    now = datetime.now(UTC)
    old = now - timedelta(days=40)
    unused = store.save(admitted_as_is(draft("weather", 0.3)), now=old)
    used = store.save(admitted_as_is(draft("billing", 0.3)), now=old)
    confident = store.save(admitted_as_is(draft("greetings", 0.9)), now=old)
    recent = store.save(admitted_as_is(draft("sports", 0.3)), now=now - timedelta(days=5))
    due = store.save(admitted_as_is(draft("holiday", 0.9, expire_at=now + timedelta(seconds=1))), now=now)
    injected = TurnDraft(session_id="s1", user_id="u_ttl", user_message="bill?", injected_insight_ids=[used.id])
    store.turns.append(injected, now=now - timedelta(days=5))
    caplog.set_level(logging.INFO, logger="worker.expiry")
    clock = FakeClock(now + timedelta(seconds=2))
    url = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    ttl: dict[str, Any] = {"worker_retire_after_days": 30, "worker_retire_below_confidence": 0.5}

    with running_worker(store, url, clock, RuleExtractor(), **ttl) as worker:
        report = worker.expire()

    assert (report.expired, report.candidates, report.in_use, report.retired) == (1, 2, 1, [unused.id])
    assert store.get(unused.id).status is InsightStatus.EXPIRED
    assert store.get(due.id).status is InsightStatus.EXPIRED
    for kept in (used, confident, recent):
        assert store.get(kept.id).status is InsightStatus.ACTIVE
    (line,) = [json.loads(r.getMessage()) for r in caplog.records if r.name == "worker.expiry"]
    assert (line["event"], line["insight_id"], line["topic"]) == ("retired", str(unused.id), "weather")
    counted = worker.ledger.counters(clock.now().astimezone(worker.zone).date())
    assert (counted["expiry.expired"], counted["expiry.retired"]) == (1, 1)

    with running_worker(store, url, clock, RuleExtractor(), worker_retire_after_days=0) as never:
        assert never.expire().retired == []
