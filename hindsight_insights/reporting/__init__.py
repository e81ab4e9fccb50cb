"""The daily report: what went wrong in conversations on one day, and what is being done about it (a pure build over
a small typed input, rendered as markdown, JSON or an HTML page with a chart), and the rates the metrics export."""

from hindsight_insights.reporting.daily import DailyReport, build_report
from hindsight_insights.reporting.gather import day_bounds, gather_report_input
from hindsight_insights.reporting.inputs import (
    CorrectionFact,
    ReflectionCost,
    ReportInput,
    Suggestion,
    SuggestionSource,
)
from hindsight_insights.reporting.rates import Rates, rates_of
from hindsight_insights.reporting.render import ReportFormat, render_report, render_report_body

__all__ = [
    "CorrectionFact",
    "DailyReport",
    "Rates",
    "ReflectionCost",
    "ReportFormat",
    "ReportInput",
    "Suggestion",
    "SuggestionSource",
    "build_report",
    "day_bounds",
    "gather_report_input",
    "rates_of",
    "render_report",
    "render_report_body",
]
