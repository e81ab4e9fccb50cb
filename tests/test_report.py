"""The daily report: built from the real turn log and audit trail, rendered as markdown, JSON and HTML with its chart,
and printed by `python -m hindsight_cli report`."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hindsight_cli.app import app
from hindsight_insights.config import Settings
from hindsight_insights.reflection import ReflectionReport
from hindsight_insights.reporting import (
    CorrectionFact,
    ReflectionCost,
    ReportInput,
    SuggestionSource,
    build_report,
    gather_report_input,
    render_report,
)
from hindsight_insights.store import InsightStore
from hindsight_insights.store.turns import TurnTally
from hindsight_insights.weaviate_server import LocalWeaviate, free_port
from tests.report_support import SeededDay, seed_day
from worker.db import open_engine
from worker.ledger import Ledger


@dataclass(frozen=True)
class PromptSuggestion:
    id: uuid.UUID
    title: str
    change: str
    count: int
    status: str


class Suggestions:
    def __init__(self, items: list[PromptSuggestion]) -> None:
        self.items = items

    def list_suggestions(self, status: str | None = None) -> list[PromptSuggestion]:
        return [s for s in self.items if status is None or s.status == status]


def day_of(day: date, facts: list[CorrectionFact], timezone: str, **more: Any) -> ReportInput:
    """A report input of corrections alone: no answers tallied, no suspects, trail or queue."""
    nothing = TurnTally(turns=0, errors=0, corrected=0, corrected_uninformed=0)
    return ReportInput(
        day=day, timezone=timezone, corrections=facts, tally=nothing, suspects=[], trail=[], review_queue=0, **more
    )


@pytest.fixture
def seeded(store: InsightStore) -> SeededDay:
    return seed_day(store, datetime.now(UTC).date())


def test_the_report_groups_the_days_corrections_into_patterns(
    store: InsightStore, seeded: SeededDay, prompts_dir: Path
) -> None:
    cost = ReflectionCost(reflections=3, tokens_in=12_000, tokens_out=1_500, cached_tokens=8_000, budget=20_000)
    report = build_report(gather_report_input(store, seeded.day, cost=cost))
    assert (report.turns, report.corrections) == (seeded.turns, 6)
    assert report.error_rate == pytest.approx(seeded.errors / seeded.turns)
    assert report.correction_rate == pytest.approx(seeded.corrected / seeded.turns)
    assert report.knowledge_gap == pytest.approx(seeded.corrected_uninformed / seeded.turns)
    top = [(p.topic, p.scene, p.type, p.count, p.users, p.sessions) for p in report.patterns]
    assert top == [
        ("手机故障", "售后服务", "factual", 3, 2, 3),
        ("称呼", "闲聊", "preference", 2, 1, 2),
        ("", "售后服务", "negative", 1, 1, 1),
    ]
    assert report.patterns[0].corrected == "是根本开不了机"
    assert [(s.name, s.count) for s in report.scenes] == [("售后服务", 4), ("闲聊", 2)]
    assert [(s.name, s.count) for s in report.sources] == [("kb://charging-faq", 3), ("profile", 2)]
    assert [s.id for s in report.suspects] == [seeded.rule.id]
    assert [(e.action, e.insight_id, e.topic) for e in report.trail] == [
        ("suspect", seeded.rule.id, "手机故障描述"),
        ("repair", seeded.rule.id, "手机故障描述"),
    ]
    assert report.review_queue == 3  # two pending, one suspect
    assert report.suggestions is None
    assert report.cost is not None and (report.cost.tokens, report.cost.budget_left) == (13_500, 6_500)
    # The chart: the 30 days ending today; the corrections 40 days ago are not in it.
    assert len(report.last_30_days) == 30 and report.last_30_days[-1].day == seeded.day
    assert report.last_30_days[-1].by_type == {"factual": 3, "preference": 2, "negative": 1}
    assert report.last_30_days[-4].by_type["factual"] == 2
    assert sum(d.total for d in report.last_30_days) == 8

    text = render_report(report, "markdown", prompts_dir)
    assert text.startswith(f"# Daily report {seeded.day} (UTC)")
    rows = [line for line in text.splitlines() if re.match(r"\| \d \|", line)]
    assert rows[0].startswith("| 1 | 手机故障 | 售后服务 | factual | 3 | 2 |")
    assert "corrected to “是根本开不了机”" in rows[0]
    assert "- Error rate: 41.2%" in text and "- Review queue: 3 insights wait for a reviewer" in text
    assert "## Prompt suggestions\n\nnone yet" in text
    assert "- Tokens (in + out): 13500 (of which cached 8000)" in text and "- Budget left: 6500 / 20000" in text
    assert f"suspect 手机故障描述 `{seeded.rule.id}` (blame): blamed by 2 corrected answers" in text
    assert f"repair 手机故障描述 `{seeded.rule.id}` (worker): re-reflected 2 sessions without it" in text

    chinese = render_report(report, "markdown", prompts_dir, "zh")
    assert "## 最常见的错误模式" in chinese and "| 1 | 手机故障 | 售后服务 | 事实 | 3 | 2 |" in chinese


def test_corrections_whose_topic_is_only_their_corrected_words_are_counted_as_naming_no_subject(
    prompts_dir: Path,
) -> None:
    """The detector makes the corrected words the topic when it finds no subject ("不对，都说了是开不了机"): a row
    titled with them would say them twice, so such corrections count with those that named no topic, per scene and
    type."""
    day = date(2026, 11, 20)

    def fact(topic: str, corrected: str, kind: str = "factual", scene: str = "售后服务") -> CorrectionFact:
        return CorrectionFact(
            at=datetime(2026, 11, 20, 9, tzinfo=UTC),
            type=kind,
            topic=topic,
            scene=scene,
            user_id="u",
            session_id="s",
            corrected=corrected,
        )

    facts = [
        fact("都说了是开不了机", "都说了是开不了机"),
        fact("這是新規定", "这是新规定。"),  # the same words in another script and with a full stop
        fact("", "是根本开不了机"),
        fact("手机", "开不了机"),
        fact("都说了是开不了机", "都说了是开不了机", kind="negative"),
    ]
    report = build_report(day_of(day, facts, "UTC"))
    assert [(p.topic, p.type, p.count) for p in report.patterns] == [
        ("", "factual", 3),
        ("", "negative", 1),
        ("手机", "factual", 1),
    ]
    chinese = render_report(report, "markdown", prompts_dir, "zh")
    assert "| 1 | （未指明） | 售后服务 | 事实 | 3 | 1 |" in chinese
    assert "| 3 | 手机 | 售后服务 | 事实 | 1 | 1 |" in chinese
    assert "| 1 | (none named) | 售后服务 | factual | 3 | 1 |" in render_report(report, "markdown", prompts_dir)
    assert "<td>（未指明）</td>" in render_report(report, "html", prompts_dir, "zh")


def test_the_html_page_draws_its_chart_inline_and_escapes_what_users_wrote(prompts_dir: Path) -> None:
    day = date(2026, 11, 20)
    facts = [
        CorrectionFact(
            at=datetime(2026, 11, d, 9, tzinfo=UTC),
            type=kind,
            topic="<script>alert(1)</script>",
            scene="支付",
            user_id="u",
            session_id=f"s{d}",
        )
        for d, kind in ((20, "factual"), (20, "factual"), (20, "process"), (18, "preference"), (1, "factual"))
    ]
    given = day_of(
        day,
        facts,
        "Asia/Shanghai",
        suggestions=Suggestions(
            [PromptSuggestion(uuid.uuid4(), "Ask for the order id first", "Add: ask for the order id", 4, "open")]
        ).list_suggestions(),
    )
    report = build_report(given)
    assert report.error_rate is None and report.cost is None
    page = render_report(report, "html", prompts_dir)
    assert page.startswith("<!doctype html>") and "<svg" in page
    bars = re.findall(r'<rect class="bar" data-day="([\d-]+)" data-type="(\w+)" data-count="(\d+)"', page)
    assert sorted(bars) == sorted(
        [
            ("2026-11-20", "factual", "2"),
            ("2026-11-20", "process", "1"),
            ("2026-11-18", "preference", "1"),
            ("2026-11-01", "factual", "1"),
        ]
    )
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # Nothing fetched from anywhere: no script, no stylesheet or image from the network.
    assert not re.search(r"<script|<link|src=|url\(", page)
    assert [u for u in re.findall(r"https?://[^\s\"'<]+", page) if u != "http://www.w3.org/2000/svg"] == []
    assert "[open] Ask for the order id first (4): Add: ask for the order id" in render_report(
        report, "markdown", prompts_dir
    )
    data = json.loads(render_report(report, "json", prompts_dir))
    assert data["suggestions"][0]["count"] == 4 and data["correction_types"] == ["factual", "preference", "process"]
    assert [d["total"] for d in data["last_30_days"]][-3:] == [1, 0, 3]


def test_a_suggestion_source_is_a_protocol_the_report_accepts() -> None:
    source: SuggestionSource = Suggestions([])  # checked by mypy: the lead wires the real one
    assert list(source.list_suggestions(None)) == []


@pytest.fixture
def cli(weaviate_server: LocalWeaviate, project_settings: Settings, tmp_path: Path) -> Any:
    state = f"sqlite:///{tmp_path / 'state.sqlite3'}"
    environment = {
        "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
        "HINDSIGHT_PROJECT": project_settings.project,
        "HINDSIGHT_WORKER_STATE_URL": state,
        "HINDSIGHT_WORKER_TOKEN_BUDGET": "50000",
        "HINDSIGHT_LANGUAGE": "en",
    }
    runner = CliRunner()

    def run(*arguments: str, code: int = 0) -> str:
        result = runner.invoke(app, list(arguments), env=environment, catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.output

    run.state_url = state  # type: ignore[attr-defined]
    return run


def test_the_report_command_reads_the_store_and_the_workers_ledger(
    cli: Any, seeded: SeededDay, project_settings: Settings, tmp_path: Path
) -> None:
    engine = open_engine(cli.state_url)
    try:
        reflection = ReflectionReport(
            session_ids=["s-a"], variant="anomaly", source="anthropic", tokens_in=3000, tokens_out=400
        )
        Ledger(engine, project_settings.project).record(
            reflection, kind="anomaly", subject="s-a", attempt=1, worker="w", day=seeded.day, at=datetime.now(UTC)
        )
    finally:
        engine.dispose()
    data = json.loads(cli("report", "--day", seeded.day.isoformat(), "--format", "json"))
    assert data["day"] == seeded.day.isoformat() and data["corrections"] == 6
    assert data["patterns"][0]["topic"] == "手机故障" and data["review_queue"] == 3
    assert data["cost"] == {
        "reflections": 1,
        "tokens_in": 3000,
        "tokens_out": 400,
        "cached_tokens": 0,
        "tokens": 3400,
        "budget": 50000,
        "budget_left": 46600,
    }
    markdown = cli("report", "--day", seeded.day.isoformat())
    assert "| 1 | 手机故障 | 售后服务 | factual | 3 | 2 |" in markdown and "none yet" in markdown
    page = tmp_path / "report.html"
    cli("report", "--day", seeded.day.isoformat(), "--format", "html", "--out", str(page), "--lang", "zh")
    html = page.read_text(encoding="utf-8")
    assert "每日报告" in html and html.count('<rect class="bar"') == 4  # today: 3 types; 3 days ago: 1
    assert "is not a date" in cli("report", "--day", "yesterday", code=2)


def test_the_report_says_what_it_could_not_read(
    seeded: SeededDay, weaviate_server: LocalWeaviate, project_settings: Settings
) -> None:
    # The worker's state database unreachable: the report is printed, without the cost, and says so.
    unreachable = f"postgresql+psycopg://worker:pw@127.0.0.1:{free_port()}/state"
    runner = CliRunner()
    environment = {
        "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
        "HINDSIGHT_PROJECT": project_settings.project,
        "HINDSIGHT_LANGUAGE": "en",
        "HINDSIGHT_WORKER_STATE_URL": unreachable,
    }
    result = runner.invoke(app, ["report", "--day", seeded.day.isoformat()], env=environment)
    assert result.exit_code == 0, result.output
    assert "## Reflection cost\n\nnot read (no worker state)" in result.output and "手机故障" in result.output
    # Weaviate unreachable: one line that says so, exit code 1, no traceback.
    environment["HINDSIGHT_WEAVIATE_URL"] = f"http://127.0.0.1:{free_port()}"
    environment["HINDSIGHT_WEAVIATE_GRPC_PORT"] = str(free_port())
    result = runner.invoke(app, ["report"], env=environment)
    assert result.exit_code == 1 and "error:" in result.output and "Traceback" not in result.output
