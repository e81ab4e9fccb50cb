"""The commands. Each opens the configured project (HINDSIGHT_* settings; with no Weaviate URL, the local server) and
calls the core, or the worker (worker/); nothing here decides anything."""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from hindsight_cli import views
from hindsight_insights.config import Settings
from hindsight_insights.embedder import load_embedder
from hindsight_insights.errors import HindsightError, NotFound
from hindsight_insights.models import Insight, InsightKind, InsightStatus
from hindsight_insights.store import InsightStore, connect_checked, open_store
from hindsight_insights.store.migration import embed_again
from hindsight_insights.store.replication import replication_of
from hindsight_insights.store.review import ReviewQueue
from hindsight_insights.store.tenant_migration import legacy_projects, move_into_tenants
from hindsight_insights.suggestions import PromptSuggestion, list_suggestions, mine_suggestions
from hindsight_insights.weaviate_server import ensure_binary, running_weaviate

if TYPE_CHECKING:  # imported by the worker's commands only: the model SDKs take seconds to import
    from worker.runner import ReflectionWorker, TickReport

app = typer.Typer(help="Hindsight Insights: inspect, review and run.", no_args_is_help=True, add_completion=False)
insights_app = typer.Typer(help="A project's insights and its review queue.", no_args_is_help=True)
app.add_typer(insights_app, name="insights")
detector_app = typer.Typer(help="The learned correction detector.", no_args_is_help=True)
app.add_typer(detector_app, name="detector")
suggestions_app = typer.Typer(
    help="Suggested system-prompt changes: accept or dismiss; never applied.", no_args_is_help=True
)
app.add_typer(suggestions_app, name="suggestions")
examples_app = typer.Typer(help="Few-shot examples of corrected answers.", no_args_is_help=True)
app.add_typer(examples_app, name="examples")

console = Console()
errors = Console(stderr=True)

Project = Annotated[str | None, typer.Option(help="The project (default: HINDSIGHT_PROJECT, else 'default').")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
Reviewer = Annotated[str, typer.Option(help="Who decides; kept in the audit trail (default: your login).")]
YOU = getpass.getuser()
Note = Annotated[str, typer.Option(help="Why; kept in the audit trail.")]


class SuggestionStatusOption(StrEnum):
    pending = "pending"
    accepted = "accepted"
    dismissed = "dismissed"


def settings_for(project: str | None) -> Settings:
    settings = Settings()
    return settings if project is None else settings.model_copy(update={"project": project})


@contextlib.contextmanager
def opened(project: str | None) -> Iterator[InsightStore]:
    """The project's store, for the duration of one command; errors become one line and exit code 1."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        with running_weaviate(settings_for(project)) as running, contextlib.closing(open_store(running)) as store:
            yield store
    except HindsightError as error:
        errors.print(f"[red]error:[/red] {error}")
        raise typer.Exit(1) from None


@app.command()
def inspect(
    user: Annotated[str, typer.Option(help="The end user (Dify's user id, or the id the app maps).")],
    recent: Annotated[int, typer.Option(min=1, max=200, help="How many of their latest turns.")] = 5,
    project: Project = None,
    as_json: AsJson = False,
) -> None:
    """What we told a user, what was corrected, and the rules injected into each answer."""
    with opened(project) as store:
        turns = store.turns.of_user(user, recent=recent)
        injected: dict[str, Insight] = {}
        for insight_id in {str(i) for turn in turns for i in turn.injected_insight_ids}:
            with contextlib.suppress(NotFound):
                injected[insight_id] = store.get(insight_id)
    if as_json:
        views.print_json(
            console,
            {
                "turns": [turn.model_dump(mode="json") for turn in turns],
                "injected": {key: value.model_dump(mode="json") for key, value in injected.items()},
            },
        )
        return
    corrected = sum(turn.error_status == "corrected" for turn in turns)
    console.print(views.turns_table(turns, injected, f"user {user}: {len(turns)} latest turns, {corrected} corrected"))


@app.command()
def migrate(
    project: Project = None,
    all_projects: Annotated[
        bool, typer.Option("--all", help="Every project that still has collections of its own.")
    ] = False,
) -> None:
    """Bring a project's stored data up to this version: its own collections (versions before tenants) are moved into
    its tenant of the shared ones, verified, then dropped; vectors made an older way are made again. Safe to run
    again, and to run again after it was interrupted: it finishes what is left."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    settings = settings_for(project)
    try:
        with running_weaviate(settings) as running, contextlib.closing(connect_checked(running)) as client:
            embedder = load_embedder(running)
            projects = legacy_projects(client) if all_projects else [running.project]
            if all_projects and not projects:
                console.print("no project has collections of its own: nothing to move")
            for name in projects:
                moved = move_into_tenants(client, name, embedder, replication=replication_of(settings))
                for move in moved.moves:
                    console.print(
                        f"project {name!r}: {move.old} -> tenant {moved.tenant!r}: {sum(move.old_counts.values())} "
                        f"objects ({move.copied} copied now, {move.already} already there), per status "
                        f"{move.old_counts}, verified"
                    )
                if moved.dropped:
                    console.print(f"project {name!r}: dropped {', '.join(moved.dropped)}")
                store = InsightStore.open(client, running.model_copy(update={"project": name}), embedder)
                done = embed_again(store.insight_table, embedder, store.tenancy) if store.vectors_outdated else 0
                nothing = "nothing to migrate; " if not moved.moves and not done else ""
                console.print(f"project {name!r}: {nothing}re-embedded {done} insights")
    except HindsightError as error:
        errors.print(f"[red]error:[/red] {error}")
        raise typer.Exit(1) from None


@insights_app.command("list")
def list_insights(
    status: Annotated[InsightStatus | None, typer.Option(help="e.g. pending_review for the review queue.")] = None,
    user: Annotated[str | None, typer.Option(help="Only this user's own insights.")] = None,
    scene: str | None = None,
    kind: InsightKind | None = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 50,
    project: Project = None,
    as_json: AsJson = False,
) -> None:
    """Insights, newest first; `--status pending_review` is the review queue."""
    with opened(project) as store:
        if status is InsightStatus.PENDING_REVIEW and user is None and scene is None and kind is None:
            found = ReviewQueue(store).pending(limit)
        else:
            found = store.list_insights(status=status, user_id=user, scene=scene, kind=kind, limit=limit)
    if as_json:
        views.print_json(console, [insight.model_dump(mode="json") for insight in found])
    else:
        console.print(views.insights_table(found, f"{len(found)} insights"))


@insights_app.command()
def show(insight_id: str, project: Project = None, as_json: AsJson = False) -> None:
    """One insight with its slot's versions, its audit trail, and what it touched: the turns it was injected into,
    what was learned from their sessions, its blame and the turns that blamed it."""
    with opened(project) as store:
        item = ReviewQueue(store).show(insight_id)
    if as_json:
        views.print_json(console, item.model_dump(mode="json"))
    else:
        views.review_item(console, item)


@insights_app.command()
def approve(
    insight_id: str, reviewer: Reviewer = YOU, note: Note = "", project: Project = None, as_json: AsJson = False
) -> None:
    """Approve a pending insight: it becomes the rule of its slot."""
    with opened(project) as store:
        insight = ReviewQueue(store).approve(insight_id, reviewer, note)
    decided(insight, f"approved: {insight.topic} ({insight.id}) is {insight.status.value}", as_json)


@insights_app.command()
def reject(
    insight_id: str, reviewer: Reviewer = YOU, note: Note = "", project: Project = None, as_json: AsJson = False
) -> None:
    """Reject an insight: it is kept, never injected, and saving it again does not revive it."""
    with opened(project) as store:
        insight = ReviewQueue(store).reject(insight_id, reviewer, note)
    decided(insight, f"rejected: {insight.topic} ({insight.id})", as_json)


@insights_app.command()
def faulty(
    insight_id: str,
    reviewer: Reviewer = YOU,
    note: Note = "",
    now: Annotated[
        bool, typer.Option("--now/--later", help="Re-reflect the sessions now (default), or leave it to the worker.")
    ] = True,
    project: Project = None,
    as_json: AsJson = False,
) -> None:
    """Confirm an insight is faulty and repair what it touched: it is rejected, what was learned from the sessions
    that used it becomes suspect, and the worker reflects on those sessions again without it (under its budget).
    Every step is in the audit trail (action repair)."""
    from hindsight_insights.reflection.repair import plan_repair, repair_steps

    with opened_worker(project) as worker:
        plan = plan_repair(worker.store, insight_id, reviewer, note)
        queued = worker.enqueue_repair(plan)
        tick = worker.run_repairs() if now else None
        steps = repair_steps(worker.store, plan.faulty.id)
    if as_json:
        views.print_json(console, {"plan": plan.as_json(), "queued": queued, "steps": steps})
        return
    console.print(
        f"faulty: {plan.faulty.topic} ({plan.faulty.id}) is {plan.faulty.status.value}; "
        f"{len(plan.sessions)} session(s) to reflect on again: {', '.join(plan.sessions)}"
    )
    for suspect in plan.suspected:
        console.print(f"  suspect now: {suspect.topic} ({suspect.id}): {suspect.action}", soft_wrap=True)
    if tick is None:
        console.print(f"{queued} repair task(s) queued for the worker")
    for step in steps:
        if step["step"] != "re-reflected":
            continue
        console.print(
            f"  session {step.get('session_id')}: {step.get('outcome')}; learned {len(step.get('learned', []))}, "
            f"restored {len(step.get('restored', []))}, rejected {len(step.get('rejected', []))}"
            + (f" ({step['reason']})" if step.get("reason") else "")
        )


@insights_app.command()
def edit(
    insight_id: str,
    reviewer: Reviewer = YOU,
    action: str | None = None,
    observation: str | None = None,
    confidence: float | None = None,
    tags: Annotated[str | None, typer.Option(help="Comma-separated; replaces the tags.")] = None,
    expire_at: Annotated[datetime | None, typer.Option(help="ISO-8601 with a time zone.")] = None,
    note: Note = "",
    project: Project = None,
    as_json: AsJson = False,
) -> None:
    """Edit what an insight says (its topic and scene stay; changing those is a new insight)."""
    changes: dict[str, Any] = {
        name: value
        for name, value in (
            ("action", action),
            ("observation", observation),
            ("confidence", confidence),
            ("tags", None if tags is None else [tag.strip() for tag in tags.split(",") if tag.strip()]),
            ("expire_at", expire_at),
        )
        if value is not None
    }
    if not changes:
        errors.print(
            "[red]error:[/red] nothing to edit: give --action, --observation, --confidence, --tags or --expire-at"
        )
        raise typer.Exit(2)
    with opened(project) as store:
        insight = ReviewQueue(store).edit(insight_id, reviewer, changes, note)
    decided(insight, f"edited: {insight.topic} ({insight.id}): {', '.join(changes)}", as_json)


@insights_app.command()
def delete(
    insight_id: str, reviewer: Reviewer = YOU, note: Note = "", project: Project = None, as_json: AsJson = False
) -> None:
    """Delete an insight; if it was its slot's rule, the previous version is the rule again."""
    with opened(project) as store:
        ReviewQueue(store).delete(insight_id, reviewer, note)
    if as_json:
        views.print_json(console, {"deleted": insight_id})
    else:
        console.print(f"deleted: {insight_id}")


def decided(insight: Insight, line: str, as_json: bool) -> None:
    """A reviewer's decision: the insight as it now is (--json), or one line."""
    if as_json:
        views.print_json(console, insight.model_dump(mode="json"))
    else:
        console.print(line)


@detector_app.command("retrain")
def detector_retrain(
    project: Project = None,
    model: Annotated[Path | None, typer.Option(help="The model file (default: the one the plugin ships).")] = None,
) -> None:
    """Fold reviewers' decisions on detector insights into the training data, retrain, and install the model only if
    its macro F1 on the held-out evaluation sets is not worse (hindsight_cli/detector.py)."""
    from hindsight_cli.detector import retrain, review_labels
    from hindsight_insights.detector_model import MODEL_PATH

    with opened(project) as store:
        labels = review_labels(store)
    counts = ", ".join(
        f"{k} {sum(1 for label in labels if label.label == k)}" for k in sorted({x.label for x in labels})
    )
    console.print(f"{len(labels)} reviewed detector insight(s) as labels" + (f": {counts}" if counts else ""))
    result = retrain(labels, model or MODEL_PATH)
    for split in result.before:
        console.print(f"macro F1 on {split}: before {result.before[split]:.3f}, after {result.after[split]:.3f}")
    verdict = "installed" if result.installed else "NOT installed (worse on the held-out sets); the old model stays"
    console.print(f"mean macro F1 {result.pooled_before:.3f} -> {result.pooled_after:.3f}: {verdict}")


# ---- prompt suggestions and few-shot examples (hindsight_insights/suggestions.py, store/examples.py) ---------------


@suggestions_app.command("list")
def suggestions_list(
    status: Annotated[SuggestionStatusOption | None, typer.Option(help="pending, accepted or dismissed.")] = None,
    project: Project = None,
    as_json: AsJson = False,
) -> None:
    """The project's suggestions, most corrected first."""
    with opened(project) as store:
        found = list_suggestions(store, status=None if status is None else status.value)
    if as_json:
        views.print_json(console, [s.model_dump(mode="json") for s in found])
        return
    console.print(f"{len(found)} suggestions")
    for s in found:
        topic = s.topic or "-"
        console.print(
            f"{s.id}  {s.status:<9} {s.type:<10} {s.corrections:>3} corrections, {s.users} users  "
            f"topic {topic!r}, scene {s.scene!r}",
            markup=False,
        )


@suggestions_app.command("show")
def suggestions_show(suggestion_id: str, project: Project = None, as_json: AsJson = False) -> None:
    """One suggestion: its counts, text and evidence."""
    with opened(project) as store:
        suggestion = store.suggestions.get(suggestion_id)
    print_suggestion(suggestion, as_json)


@suggestions_app.command("accept")
def suggestions_accept(
    suggestion_id: str, reviewer: Reviewer = YOU, note: Note = "", project: Project = None, as_json: AsJson = False
) -> None:
    """Accept a suggestion: the decision is recorded; change your system prompt yourself (nothing is applied)."""
    _decide_suggestion(suggestion_id, "accepted", reviewer, note, project, as_json)


@suggestions_app.command("dismiss")
def suggestions_dismiss(
    suggestion_id: str, reviewer: Reviewer = YOU, note: Note = "", project: Project = None, as_json: AsJson = False
) -> None:
    """Dismiss a suggestion: it stays dismissed unless its corrections grow markedly."""
    _decide_suggestion(suggestion_id, "dismissed", reviewer, note, project, as_json)


def _decide_suggestion(
    suggestion_id: str,
    decision: Literal["accepted", "dismissed"],
    reviewer: str,
    note: str,
    project: str | None,
    as_json: bool,
) -> None:
    with opened(project) as store:
        suggestion = store.suggestions.decide(suggestion_id, decision, reviewer, note)
    if as_json:
        views.print_json(console, suggestion.model_dump(mode="json"))
    elif decision == "accepted":
        console.print(f"accepted: {suggestion.id}. Nothing was applied: edit the app's system prompt yourself.")
    else:
        console.print(f"dismissed: {suggestion.id}")


@suggestions_app.command("mine")
def suggestions_mine(project: Project = None, as_json: AsJson = False) -> None:
    """Mine the correction records now, as the nightly run does (creates or updates suggestions, applies nothing)."""
    with opened(project) as store:
        report = mine_suggestions(store)
    if as_json:
        views.print_json(console, vars(report))
    else:
        console.print(
            f"{report.read} corrections read; {report.suggested} groups suggested: {report.created} new, "
            f"{report.updated} updated, {report.reopened} reopened"
        )


def print_suggestion(suggestion: PromptSuggestion, as_json: bool) -> None:
    if as_json:
        views.print_json(console, suggestion.model_dump(mode="json"))
        return
    decided = f" by {suggestion.decided_by}" if suggestion.decided_by else ""
    console.print(f"{suggestion.id}: {suggestion.status}{decided}", markup=False)
    console.print(
        f"{suggestion.corrections} corrections, {suggestion.users} users, {suggestion.sessions} sessions, "
        f"{suggestion.first_at:%Y-%m-%d} to {suggestion.last_at:%Y-%m-%d}",
        markup=False,
    )
    console.print(suggestion.text, markup=False)
    if suggestion.note:
        console.print(f"note: {suggestion.note}", markup=False)


@examples_app.command("list")
def examples_list(
    user: Annotated[str | None, typer.Option(help="Only examples from this user's conversations.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 50,
    project: Project = None,
    as_json: AsJson = False,
) -> None:
    """Few-shot examples, newest first."""
    with opened(project) as store:
        found = store.examples.recent(user_id=user, limit=limit)
    if as_json:
        views.print_json(console, [e.model_dump(mode="json") for e in found])
        return
    console.print(f"{len(found)} examples")
    for e in found:
        console.print(
            f"{e.id}  {e.scope:<7} user {e.user_id!r}, until {e.expire_at:%Y-%m-%d}: {e.said[:40]!r} -> "
            f"{e.corrected[:40]!r}",
            markup=False,
        )


@examples_app.command("promote")
def examples_promote(example_id: str, reviewer: Reviewer = YOU, project: Project = None) -> None:
    """Make an example the project's: every user of its scene may be shown it."""
    with opened(project) as store:
        example = store.examples.promote(example_id, reviewer)
    console.print(f"promoted: {example.id} is shown project-wide")


@examples_app.command("delete")
def examples_delete(example_id: str, project: Project = None) -> None:
    """Delete an example."""
    with opened(project) as store:
        store.examples.delete(example_id)
    console.print(f"deleted: {example_id}")


@app.command()
def demo(project: Project = None) -> None:
    """The main job: conversations recorded through the plugin, the worker reflecting on them, the rules that later
    conversations get. A local Weaviate, no key (Claude when ANTHROPIC_API_KEY is set)."""
    from hindsight_cli.demo import run_demo  # the worker and the model clients load only for this command

    settings = settings_for(project or ("demo" if "HINDSIGHT_PROJECT" not in os.environ else None))
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        run_demo(settings, console)
    except HindsightError as error:
        errors.print(f"[red]error:[/red] {error}")
        raise typer.Exit(1) from None


@app.command("ensure-weaviate")
def ensure_weaviate() -> None:
    """Build or find the local weaviate-server binary and print its path."""
    print(ensure_binary(Settings()))  # a plain path, for scripts


# ---- the reflection worker ------------------------------------------------------------------------------------------

StructuredLoggers = ("worker.reflection", "worker.expiry")  # one JSON object per line, printed as it is


def worker_logging() -> None:
    """Plain lines for what happens, and the worker's structured lines (one JSON object each) with nothing around
    them, so that a log shipper can read them; all on stderr, where `docker logs` picks them up."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("worker").setLevel(logging.INFO)
    plain = logging.StreamHandler()
    plain.setFormatter(logging.Formatter("%(message)s"))
    for name in StructuredLoggers:
        structured = logging.getLogger(name)
        structured.setLevel(logging.INFO)
        structured.handlers[:] = [plain]
        structured.propagate = False


@contextlib.contextmanager
def opened_worker(project: str | None, *, reflects: bool = True) -> Iterator[ReflectionWorker]:
    """The project's worker for the duration of one command; errors become one line and exit code 1."""
    from worker.service import open_worker

    worker_logging()
    try:
        with open_worker(settings_for(project), reflects=reflects) as worker:
            yield worker
    except HindsightError as error:
        errors.print(f"[red]error:[/red] {error}")
        raise typer.Exit(1) from None


@contextlib.contextmanager
def progress_bars() -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar per kind of work, on stderr (stdout stays clean for --json)."""
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=errors, transient=True) as bars:
        shown: dict[str, TaskID] = {}

        def update(what: str, done: int, total: int) -> None:
            if what not in shown:
                shown[what] = bars.add_task(what, total=total)
            bars.update(shown[what], completed=done, total=total)

        yield update


def print_tick(report: TickReport, as_json: bool) -> None:
    if as_json:
        views.print_json(
            console, {**vars(report), "reflections": [r.model_dump(mode="json") for r in report.reflections]}
        )
        return
    for reflection in report.reflections:
        views.reflection_report(console, reflection)
    console.print(
        f"{len(report.reflections)} reflections ({report.failed} failed), {report.anomalies_noted} sessions with "
        f"anomalies, {report.sessions_ended} ended sessions found, {report.deferred} deferred, {report.held} held, "
        f"{report.skipped} skipped; batches: {report.batches_submitted} submitted, {report.batches_collected} collected"
    )


@app.command("worker")
def worker_command(
    project: Project = None,
    once: Annotated[bool, typer.Option("--once", help="One poll (with ended batches collected), then exit.")] = False,
    as_json: AsJson = False,
) -> None:
    """Run the reflection worker until Ctrl-C or SIGTERM: anomalies and ended sessions at every poll, the nightly run,
    the expiry sweep. Several replicas may share one state database (HINDSIGHT_WORKER_STATE_URL)."""
    from worker.service import run, shown_url

    with opened_worker(project) as worker:
        if once:
            with progress_bars() as progress:
                report = worker.poll(progress)
            print_tick(report, as_json)
            return
        settings = worker.settings
        stop = threading.Event()
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, lambda *_: stop.set())
        errors.print(
            f"worker {worker.owner}: project {settings.project!r}, state {shown_url(settings)}; polls every "
            f"{settings.worker_poll_interval_s:g} s, nightly at {settings.worker_nightly_time} {settings.timezone}; "
            "Ctrl-C stops it"
        )
        run(worker, stop)
        errors.print(f"worker {worker.owner} stopped")


@app.command()
def reflect(
    session: Annotated[str, typer.Option(help="The session (Dify conversation) id.")],
    anomaly: Annotated[
        bool, typer.Option("--anomaly", help="The anomaly variant: what went wrong at its signals.")
    ] = False,
    project: Project = None,
    as_json: AsJson = False,
) -> None:
    """Reflect on one session now and print the report. It is claimed like the worker's own work (never at the same
    time as a worker) and recorded in the reflection log."""
    from worker.runner import Busy

    with opened_worker(project) as worker:
        try:
            report = worker.reflect_now(session, "anomaly" if anomaly else "session")
        except Busy as busy:
            errors.print(f"[red]error:[/red] {busy}")
            raise typer.Exit(1) from None
    if as_json:
        views.print_json(console, report.model_dump(mode="json"))
    else:
        views.reflection_report(console, report)
    if report.outcome == "failed":
        raise typer.Exit(1)


@app.command()
def nightly(project: Project = None, as_json: AsJson = False) -> None:
    """Run the nightly pass now: plan tonight (if no worker has) and reflect across each active user's sessions."""
    with opened_worker(project) as worker, progress_bars() as progress:
        report = worker.nightly(progress)
    print_tick(report, as_json)


@app.command()
def expire(project: Project = None, as_json: AsJson = False) -> None:
    """Mark insights past their expire_at as expired, and retire unused low-confidence ones (the TTL)."""
    with opened_worker(project, reflects=False) as worker, progress_bars() as progress:
        report = worker.expire(progress)
    if as_json:
        views.print_json(console, vars(report))
        return
    console.print(
        f"{report.expired} expired; {len(report.retired)} retired of {report.candidates} low-confidence insights "
        f"unchanged for {worker.settings.worker_retire_after_days:g} days ({report.in_use} still in use, kept)"
    )
    if report.deactivated:
        console.print(
            f"{report.deactivated} idle projects set inactive (at most {worker.settings.max_active_tenants} active)"
        )
    for insight_id in report.retired:
        console.print(f"  retired {insight_id}")


@app.command("worker-status")
def worker_status(project: Project = None, as_json: AsJson = False) -> None:
    """Today's reflections, tokens against the budget, what was counted, and where the tasks stand."""
    with opened_worker(project, reflects=False) as worker:
        status = worker.status()
    if as_json:
        views.print_json(
            console,
            {
                "day": status.day.isoformat(),
                "reflections": status.spend.reflections,
                "tokens": status.spend.tokens,
                "tokens_in": status.spend.tokens_in,
                "tokens_out": status.spend.tokens_out,
                "cached_tokens": status.spend.cached_tokens,
                "budget": status.budget,
                "counters": status.counters,
                "tasks": {f"{kind}.{state}": count for (kind, state), count in status.tasks.items()},
                "batches_in_flight": status.batches_in_flight,
            },
        )
    else:
        views.worker_status(console, status)


# ---- the daily report and the review console (pages.py registers them on `app`) ------------------------------------

from hindsight_cli import pages  # noqa: E402, F401
