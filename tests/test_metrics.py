"""The worker's Prometheus metrics, scraped over HTTP on loopback from the real exporter, with the figures read from
the real Weaviate and the worker's state database; the Grafana dashboard names only metrics we export."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import weaviate
from prometheus_client.parser import text_string_to_metric_families

from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.embedder import Embedder
from hindsight_insights.reflection import ReflectionReport
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate, free_port
from tests.report_support import SeededDay, at, seed_day
from tests.worker_support import FakeClock, RuleExtractor, running_worker
from worker.metrics import metrics_served
from worker.runner import ReflectionWorker
from worker.service import run

DASHBOARD = Path(__file__).resolve().parent.parent / "docs" / "grafana-dashboard.json"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> Samples:
    response = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


@pytest.fixture
def seeded(store: InsightStore) -> SeededDay:
    return seed_day(store, datetime.now(UTC).date())


@pytest.fixture
def worker(store: InsightStore, seeded: SeededDay, tmp_path: Path) -> Iterator[ReflectionWorker]:
    clock = FakeClock(at(seeded.day, 16))  # the 24-hour window holds the seeded day's turns, not those of 3 days ago
    url = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    with running_worker(
        store, url, clock, RuleExtractor(), timezone="UTC", worker_token_budget=10_000, metrics_port=0
    ) as worker:
        yield worker


def test_the_metrics_endpoint_exports_the_stored_figures(worker: ReflectionWorker, seeded: SeededDay) -> None:
    worker.reflect_now("s-a")  # a real reflection, logged as a session reflection
    failed = ReflectionReport(
        session_ids=["s-b"],
        variant="anomaly",
        source="anthropic",
        outcome="failed",
        reason="overloaded",
        tokens_in=5000,
        tokens_out=600,
        cached_tokens=4000,
    )
    worker.conclude("anomaly", "s-b", 1, failed)
    with metrics_served(worker, free_port()) as port:
        assert port is not None
        samples = scrape(port)
    assert value(samples, "hindsight_window_seconds") == 24 * 3600
    assert value(samples, "hindsight_window_turns") == seeded.turns
    assert value(samples, "hindsight_error_rate") == pytest.approx(seeded.errors / seeded.turns)
    assert value(samples, "hindsight_correction_rate") == pytest.approx(seeded.corrected / seeded.turns)
    assert value(samples, "hindsight_knowledge_gap_score") == pytest.approx(seeded.corrected_uninformed / seeded.turns)
    corrections = {t: value(samples, "hindsight_window_corrections", type=t) for t in ("factual", "preference")}
    assert corrections == {"factual": 3, "preference": 2}
    assert value(samples, "hindsight_window_corrections", type="negative") == 1
    assert value(samples, "hindsight_window_corrections", type="process") == 0
    assert value(samples, "hindsight_reflections_total", trigger="session", outcome="ok") == 1
    assert value(samples, "hindsight_reflections_total", trigger="anomaly", outcome="failed") == 1
    assert value(samples, "hindsight_reflection_tokens_total", direction="in") == 5000
    assert value(samples, "hindsight_reflection_tokens_total", direction="cached") == 4000
    assert value(samples, "hindsight_tokens_spent_today") == 5600
    assert value(samples, "hindsight_token_budget") == 10_000
    assert value(samples, "hindsight_token_budget_left") == 4400
    assert value(samples, "hindsight_insights", status="suspect", kind="fact") == 1
    assert value(samples, "hindsight_insights", status="pending_review", kind="process") == 2
    assert value(samples, "hindsight_insights", status="active", kind="preference") == 0
    assert value(samples, "hindsight_suspects") == 1 and value(samples, "hindsight_review_queue") == 3
    assert value(samples, "hindsight_suspect_marks_total") == 1
    assert value(samples, "hindsight_repair_steps_total") == 1
    assert all(value(samples, "hindsight_metrics_up", part=p) == 1 for p in ("turns", "insights", "reflections"))


def test_an_unreadable_part_is_marked_down_and_the_rest_still_exported(
    worker: ReflectionWorker,
    weaviate_server: LocalWeaviate,
    settings: Settings,
    project_settings: Settings,
    embedder: Embedder,
) -> None:
    # A store whose connection is gone, as when Weaviate goes away under a running worker.
    lost: weaviate.WeaviateClient = connect_url(weaviate_server.settings(settings), weaviate_server.url)
    worker.store = InsightStore.open(lost, project_settings, embedder)
    lost.close()
    with metrics_served(worker, free_port()) as port:
        assert port is not None
        samples = scrape(port)
    assert value(samples, "hindsight_metrics_up", part="turns") == 0
    assert value(samples, "hindsight_metrics_up", part="insights") == 0
    assert value(samples, "hindsight_metrics_up", part="reflections") == 1
    assert value(samples, "hindsight_token_budget") == 10_000
    assert not any(name == "hindsight_error_rate" for name, _ in samples)


def test_no_metrics_unless_a_port_is_configured(worker: ReflectionWorker) -> None:
    assert Settings(_env_file=None).metrics_port == 0
    with metrics_served(worker, 0) as port:
        assert port is None


def test_the_running_worker_serves_its_metrics_on_loopback_until_it_stops(worker: ReflectionWorker) -> None:
    port = free_port()
    worker.settings = worker.settings.model_copy(update={"metrics_port": port, "worker_poll_interval_s": 3600})
    stop = threading.Event()
    serving = threading.Thread(target=run, args=(worker, stop))
    serving.start()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                samples = scrape(port)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the worker's metrics never answered"
                time.sleep(0.2)
        assert value(samples, "hindsight_review_queue") == 3
    finally:
        stop.set()
        serving.join(timeout=60)
    assert not serving.is_alive()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_every_dashboard_panel_queries_metrics_we_export(worker: ReflectionWorker) -> None:
    worker.reflect_now("s-a")
    with metrics_served(worker, free_port()) as port:
        assert port is not None
        exported = {name for name, _ in scrape(port)}
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dashboard["panels"]
    named: set[str] = set()
    for panel in dashboard["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = set(re.findall(r"\bhindsight_[a-z_]+", target["expr"]))
            assert names, f"panel {panel['title']!r} queries no metric of ours: {target['expr']}"
            assert names <= exported, f"panel {panel['title']!r} queries {names - exported}, which we do not export"
            named |= names
    documented = (DASHBOARD.parent / "metrics.md").read_text(encoding="utf-8")
    for name in {n.removesuffix("_total") for n in exported}:
        assert f"`{name}" in documented, f"{name} is exported but not in docs/metrics.md"
    assert {n.removesuffix("_total") for n in exported} <= {n.removesuffix("_total") for n in named} | {
        "hindsight_window_seconds"
    }
