"""How insights, turns and review items look in a terminal: rich tables, or JSON on request."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from hindsight_insights.models import Insight, Turn
from hindsight_insights.store.review import ReviewItem

if TYPE_CHECKING:  # the model SDKs behind these take seconds to import: only the worker's commands pay for them
    from hindsight_insights.reflection import ReflectionReport
    from worker.runner import WorkerStatus


def _short(text: str, width: int = 60) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


def print_json(console: Console, value: Any) -> None:
    console.print_json(json.dumps(value, ensure_ascii=False, default=str))


def insights_table(insights: Sequence[Insight], title: str) -> Table:
    table = Table(title=title, show_lines=False)
    for column in ("id", "status", "kind", "scope", "scene", "topic", "action", "conf.", "support"):
        table.add_column(column, overflow="fold")
    for insight in insights:
        status = Text(insight.status.value, style="yellow" if insight.status.value == "pending_review" else "")
        table.add_row(
            str(insight.id)[:8],
            status,
            insight.kind.value,
            insight.scope.value if insight.user_id is None else f"{insight.scope.value} {insight.user_id}",
            insight.scene,
            insight.topic,
            _short(insight.action),
            f"{insight.confidence:.2f}",
            str(insight.support_count),
        )
    return table


def turns_table(turns: Sequence[Turn], injected: Mapping[str, Insight], title: str) -> Table:
    """Recent turns, newest first; corrected answers in red with their correction, and the rules injected."""
    table = Table(title=title, show_lines=True)
    for column in ("when", "session", "user said", "assistant said", "corrected", "rules injected"):
        table.add_column(column, overflow="fold")
    for turn in turns:
        corrected = Text("")
        if turn.correction is not None:
            record = turn.correction
            corrected = Text(f"{record.type}: {_short(record.corrected or '', 50)}", style="bold red")
        rules = [f"{injected[str(i)].topic}" for i in turn.injected_insight_ids if str(i) in injected]
        missing = len(turn.injected_insight_ids) - len(rules)
        table.add_row(
            turn.created_at.strftime("%Y-%m-%d %H:%M"),
            turn.session_id,
            _short(turn.user_message),
            Text(_short(turn.assistant_message), style="red" if turn.error_status == "corrected" else ""),
            corrected,
            "\n".join(rules + ([f"({missing} since deleted)"] if missing else [])),
        )
    return table


def review_item(console: Console, item: ReviewItem) -> None:
    insight = item.insight
    console.print(f"[bold]{insight.topic}[/bold]  ({insight.id})")
    for label, value in (
        ("status", insight.status.value + (f" — {insight.review_reason}" if insight.review_reason else "")),
        ("kind / scope", f"{insight.kind.value} / {insight.scope.value} {insight.user_id or ''}".strip()),
        ("scene", insight.scene),
        ("action", insight.action),
        ("observation", insight.observation or "—"),
        (
            "evidence",
            f"“{insight.evidence.quote}” (session {insight.evidence.session_id}, turn {insight.evidence.turn})",
        ),
        ("confidence", f"{insight.confidence:.2f}, support {insight.support_count}"),
        ("applies to", insight.condition_detail or insight.condition.value),
    ):
        console.print(f"  {label:>12}: {value}")
    console.print(insights_table(item.history, "versions of this slot, oldest first"))
    touched_by(console, item.touched)
    audit = Table(title="audit trail")
    for column in ("when", "who", "action", "note"):
        audit.add_column(column)
    for entry in item.audit:
        audit.add_row(entry.at.strftime("%Y-%m-%d %H:%M"), entry.actor, entry.action, entry.note)
    console.print(audit)


def touched_by(console: Console, touched: Mapping[str, Any]) -> None:
    """What the insight touched (store/graph.py): where it was learned, the turns it was injected into, what was
    learned from those sessions, and its blame with the turns that blamed it."""
    blame = touched.get("blame", {})
    console.print(
        f"  {'learned in':>12}: session {touched.get('learned_in') or '—'}\n"
        f"  {'blame':>12}: {blame.get('blame', 0):.2f} (support {blame.get('support', 0)})"
    )
    turns = Table(title=f"injected into {len(touched.get('injected_into', []))} turns")
    for column in ("session", "turn", "when", "corrected"):
        turns.add_column(column)
    for use in touched.get("injected_into", []):
        turns.add_row(use["session_id"], str(use["turn_index"]), use["at"][:16], "yes" if use["corrected"] else "")
    console.print(turns)
    derived = Table(title="learned from the sessions that used it")
    for column in ("id", "topic", "action", "status", "source"):
        derived.add_column(column)
    for other in touched.get("derived", []):
        derived.add_row(other["id"], other["topic"], _short(other["action"]), other["status"], other["source"])
    console.print(derived)
    if blame.get("blamed_by"):
        blamed = Table(title="blamed by")
        for column in ("turn that complained", "session", "weight", "why"):
            blamed.add_column(column)
        for mark in blame["blamed_by"]:
            blamed.add_row(mark["by_turn"], mark["session_id"], f"{mark['weight']:.2f}", mark["reason"])
        console.print(blamed)


def reflection_report(console: Console, report: ReflectionReport) -> None:
    """One reflection: what it read, what it saved and dropped, and what it cost."""
    style = "green" if report.outcome == "ok" else "red"
    console.print(
        f"[bold]{report.variant}[/bold] reflection on {', '.join(report.session_ids)}"
        f" (user {report.user_id or '?'}): [{style}]{report.outcome}[/{style}]"
        + (f" — {report.reason}" if report.reason else "")
    )
    table = Table(show_header=False, box=None)
    table.add_column(style="dim")
    table.add_column()
    counts = ", ".join(f"{name} {count}" for name, count in report.counts.items() if count) or "nothing saved"
    for label, value in (
        ("candidates", str(report.candidates)),
        ("saved", counts),
        ("model", f"{report.model or '-'} ({report.source}), {report.llm_calls} call(s)"),
        ("tokens", f"{report.tokens_in} in ({report.cached_share:.0%} cached), {report.tokens_out} out"),
        ("time", f"{report.duration_s:.1f} s"),
    ):
        table.add_row(label, value)
    for saved_id in report.saved_ids:
        table.add_row("insight", str(saved_id))
    for dropped in report.dropped:
        table.add_row("dropped", f"{dropped.topic}: {dropped.reason} ({_short(dropped.detail, 80)})")
    console.print(table)


def worker_status(console: Console, status: WorkerStatus) -> None:
    budget = f"{status.budget:,}" if status.budget else "no limit"
    console.print(
        f"[bold]{status.day.isoformat()}[/bold]: {status.spend.reflections} reflections, "
        f"{status.spend.tokens:,} tokens of {budget}"
    )
    counted = Table(title="counted today")
    counted.add_column("what")
    counted.add_column("count", justify="right")
    for name, value in sorted(status.counters.items()):
        counted.add_row(name, str(value))
    console.print(counted)
    tasks = Table(title="tasks")
    for column in ("kind", "state", "count"):
        tasks.add_column(column, justify="right" if column == "count" else "left")
    for (kind, state), value in sorted(status.tasks.items()):
        tasks.add_row(kind, state, str(value))
    console.print(tasks)
    if status.batches_in_flight:
        console.print(f"batches in flight: {', '.join(status.batches_in_flight)}")
