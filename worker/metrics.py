"""The worker's Prometheus metrics, read from what is stored at each scrape (docs/metrics.md lists them): the turn log
and the insights in Weaviate, the reflection log in the state database. Nothing is counted in memory, so replicas
and restarts agree, and a scrape of any replica gives the project's figures.

Served by prometheus-client's exporter at http://127.0.0.1:<metrics_port>/metrics while the worker runs
(`metrics_served`); off when HINDSIGHT_METRICS_PORT is unset or 0. A part that cannot be read (Weaviate down, the
state database unreachable) is left out of that scrape and `hindsight_metrics_up{part=...}` says 0: a scrape never
fails as a whole.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from hindsight_insights.config import Settings
from hindsight_insights.models import InsightKind, InsightStatus
from hindsight_insights.reporting import rates_of
from hindsight_insights.store import InsightStore
from hindsight_insights.store.review import ReviewQueue
from worker.clock import Clock, local_day
from worker.ledger import Ledger

log = logging.getLogger(__name__)


class MeteredWorker(Protocol):
    """What the metrics read of a ReflectionWorker."""

    store: InsightStore
    ledger: Ledger
    settings: Settings
    clock: Clock


def _ratio(value: float | None) -> float:
    return math.nan if value is None else value


class WorkerMetrics(Collector):
    def __init__(self, worker: MeteredWorker) -> None:
        self._worker = worker

    def describe(self) -> Iterable[Metric]:
        return []  # the families are made at each scrape; registering reads nothing

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily(
            "hindsight_metrics_up", "1 when this part was read for the scrape, else 0.", labels=["part"]
        )
        for part, read in (("turns", self._turns), ("insights", self._insights), ("reflections", self._reflections)):
            try:
                families = list(read())
            except Exception as error:  # a scrape must answer: the part is left out and marked down
                log.warning("metrics: %s could not be read: %s", part, error)
                up.add_metric([part], 0)
                continue
            up.add_metric([part], 1)
            yield from families
        yield up

    def _turns(self) -> Iterator[Metric]:
        settings, store = self._worker.settings, self._worker.store
        window = timedelta(hours=settings.metrics_window_hours)
        now = self._worker.clock.now()
        tally = store.turns.tally_between(now - window, now)
        rates = rates_of(tally)
        yield GaugeMetricFamily("hindsight_window_seconds", "The window the turn figures read.", window.total_seconds())
        yield GaugeMetricFamily("hindsight_window_turns", "Answers recorded in the window.", tally.turns)
        yield GaugeMetricFamily(
            "hindsight_error_rate",
            "Share of the window's answers flagged as errors: corrected, disliked or a tool error.",
            _ratio(rates.error_rate),
        )
        yield GaugeMetricFamily(
            "hindsight_correction_rate",
            "Share of the window's answers the user corrected.",
            _ratio(rates.correction_rate),
        )
        yield GaugeMetricFamily(
            "hindsight_knowledge_gap_score",
            "Share of the window's answers corrected while no insight had been injected into them.",
            _ratio(rates.knowledge_gap),
        )
        by_type = Counter(
            turn.correction.type for turn in store.turns.corrected_between(now - window, now) if turn.correction
        )
        corrections = GaugeMetricFamily(
            "hindsight_window_corrections", "Corrections that came in the window, by type.", labels=["type"]
        )
        for kind in sorted(set(by_type) | {"factual", "preference", "process", "negative"}):
            corrections.add_metric([kind], by_type.get(kind, 0))
        yield corrections

    def _insights(self) -> Iterator[Metric]:
        store = self._worker.store
        tally = store.insight_table.tally()
        insights = GaugeMetricFamily(
            "hindsight_insights", "Stored insights by status and kind.", labels=["status", "kind"]
        )
        for status in InsightStatus:
            for kind in InsightKind:
                insights.add_metric([status.value, kind.value], tally.get((status, kind), 0))
        yield insights
        suspects = sum(n for (status, _), n in tally.items() if status is InsightStatus.SUSPECT)
        yield GaugeMetricFamily("hindsight_suspects", "Insights marked suspect now (never injected).", suspects)
        yield GaugeMetricFamily("hindsight_review_queue", "Insights waiting for a reviewer.", ReviewQueue(store).size())
        marks, repairs = store.audit.trail_counts()
        yield CounterMetricFamily("hindsight_suspect_marks", "Suspect marks recorded in the audit trail.", marks)
        yield CounterMetricFamily("hindsight_repair_steps", "Repair steps recorded in the audit trail.", repairs)

    def _reflections(self) -> Iterator[Metric]:
        worker = self._worker
        reflections = CounterMetricFamily(
            "hindsight_reflections", "Reflections logged, by trigger and outcome.", labels=["trigger", "outcome"]
        )
        for (trigger, outcome), count in sorted(worker.ledger.outcomes().items()):
            reflections.add_metric([trigger, outcome], count)
        yield reflections
        ever = worker.ledger.spend_ever()
        tokens = CounterMetricFamily(
            "hindsight_reflection_tokens", "Reflection tokens, by direction (cached: part of in).", labels=["direction"]
        )
        for direction, count in (("in", ever.tokens_in), ("out", ever.tokens_out), ("cached", ever.cached_tokens)):
            tokens.add_metric([direction], count)
        yield tokens
        day = local_day(worker.clock.now(), ZoneInfo(worker.settings.timezone))
        spent = worker.ledger.spend(day).tokens
        budget = worker.settings.worker_token_budget
        yield GaugeMetricFamily("hindsight_tokens_spent_today", "Tokens (in + out) of today's reflections.", spent)
        yield GaugeMetricFamily("hindsight_token_budget", "The daily token budget; 0: no limit.", budget)
        left = GaugeMetricFamily("hindsight_token_budget_left", "Tokens left of today's budget (none without a limit).")
        if budget > 0:
            left.add_metric([], max(0, budget - spent))
        yield left


@contextlib.contextmanager
def metrics_served(worker: MeteredWorker, port: int) -> Iterator[int | None]:
    """Serve the worker's metrics on 127.0.0.1:port for the duration; port 0 serves nothing (yields None)."""
    if not port:
        yield None
        return
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WorkerMetrics(worker))
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        bound = int(server.server_port)
        yield bound
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
