"""Expiry: insights past their `expire_at` are marked expired (InsightStore.expire_sweep; search already leaves them
out before any sweep), and the TTL retires insights that nobody uses:

    an active insight whose confidence is below `worker_retire_below_confidence`, unchanged for
    `worker_retire_after_days` (its updated_at: a merge, an edit or a re-assertion renews it), and injected into no
    turn in that time, is retired (InsightStore.retire: it expires now, and its slot settles).

The candidates come from `list_insights` (the most recently updated 10,000 active insights: the store's query
limit), so in a project with more active insights than that the oldest wait until newer ones retire or are dropped.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError
from hindsight_insights.models import InsightStatus
from hindsight_insights.store import InsightStore

log = logging.getLogger("worker.expiry")

MAX_CANDIDATES = 10_000  # Weaviate's default QUERY_MAXIMUM_RESULTS


@dataclass
class ExpiryReport:
    expired: int = 0
    candidates: int = 0  # low confidence and unchanged for the TTL
    in_use: int = 0  # of those, injected into a turn within the TTL: kept
    retired: list[uuid.UUID] = field(default_factory=list)
    examples_expired: int = 0  # few-shot examples past their TTL, deleted (search never shows them anyway)
    deactivated: int = 0  # idle projects set INACTIVE after the sweep (store/tenancy.py)


def sweep(
    store: InsightStore, settings: Settings, now: datetime, progress: Callable[[str, int, int], None] | None = None
) -> ExpiryReport:
    report = ExpiryReport(expired=store.expire_sweep(now), examples_expired=store.examples.sweep(now))
    if settings.worker_retire_after_days <= 0:
        return report
    since = now - timedelta(days=settings.worker_retire_after_days)
    active = store.list_insights(status=InsightStatus.ACTIVE, limit=MAX_CANDIDATES)
    stale = [i for i in active if i.confidence < settings.worker_retire_below_confidence and i.updated_at <= since]
    report.candidates = len(stale)
    used = store.turns.injected_since(since, [insight.id for insight in stale])
    report.in_use = len(used)
    unused = [insight for insight in stale if insight.id not in used]
    for done, insight in enumerate(unused):
        if progress is not None:
            progress("retirements", done, len(unused))
        try:
            store.retire(insight.id, now)
        except HindsightError as error:  # deleted or changed meanwhile: the next sweep looks again
            log.warning("could not retire insight %s: %s", insight.id, error)
            continue
        report.retired.append(insight.id)
        line = {
            "event": "retired",
            "project": settings.project,
            "insight_id": str(insight.id),
            "topic": insight.topic,
            "user_id": insight.user_id,
            "confidence": insight.confidence,
            "unchanged_since": insight.updated_at.isoformat(),
        }
        log.info(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    if progress is not None:
        progress("retirements", len(unused), len(unused))
    return report
