"""The report as text: JSON (the model), markdown, or an HTML page with its chart, through jinja2 templates under
prompts/report/ and the one render function (prompts.render_prompt; .html.j2 and .svg.j2 templates autoescape)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from hindsight_insights.prompts import render_prompt
from hindsight_insights.reporting.chart import stacked_bars
from hindsight_insights.reporting.daily import DailyReport
from hindsight_insights.reporting.labels import labels_for

ReportFormat = Literal["markdown", "json", "html"]


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _context(report: DailyReport, language: str) -> dict[str, object]:
    return {
        "report": report,
        "t": labels_for(language),
        "lang": "zh" if language == "zh" else "en",
        "percent": _percent,
        "chart": stacked_bars(report.last_30_days, report.correction_types),
    }


def render_report(report: DailyReport, format: ReportFormat, prompts_dir: Path, language: str = "en") -> str:
    if format == "json":
        return report.model_dump_json(indent=2)
    if format == "markdown":
        return render_prompt(prompts_dir, "report/daily.md.j2", **_context(report, language))
    return render_prompt(prompts_dir, "report/daily.html.j2", **_context(report, language))


def render_report_body(report: DailyReport, prompts_dir: Path, language: str = "en") -> str:
    """The report's HTML without the page around it (escaped): what the review console embeds."""
    return render_prompt(prompts_dir, "report/body.html.j2", **_context(report, language))
