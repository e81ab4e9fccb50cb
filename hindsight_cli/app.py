"""The commands. Each opens the configured project (HINDSIGHT_* settings; with no Weaviate URL, the local server) and
calls the core; nothing here decides anything."""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any

import typer
from rich.console import Console

from hindsight_cli import views
from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError, NotFound
from hindsight_insights.models import Insight, InsightKind, InsightStatus
from hindsight_insights.store import InsightStore, open_store
from hindsight_insights.store.review import ReviewQueue
from hindsight_insights.weaviate_server import ensure_binary, running_weaviate

app = typer.Typer(help="Hindsight Insights: inspect, review and run.", no_args_is_help=True, add_completion=False)
insights_app = typer.Typer(help="A project's insights and its review queue.", no_args_is_help=True)
app.add_typer(insights_app, name="insights")

console = Console()
errors = Console(stderr=True)

Project = Annotated[str | None, typer.Option(help="The project (default: HINDSIGHT_PROJECT, else 'default').")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
Reviewer = Annotated[str, typer.Option(help="Who decides; kept in the audit trail (default: your login).")]
YOU = getpass.getuser()
Note = Annotated[str, typer.Option(help="Why; kept in the audit trail.")]


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
    """One insight with its slot's versions and its audit trail."""
    with opened(project) as store:
        item = ReviewQueue(store).show(insight_id)
    if as_json:
        views.print_json(console, item.model_dump(mode="json"))
    else:
        views.review_item(console, item)


@insights_app.command()
def approve(insight_id: str, reviewer: Reviewer = YOU, note: Note = "", project: Project = None) -> None:
    """Approve a pending insight: it becomes the rule of its slot."""
    with opened(project) as store:
        insight = ReviewQueue(store).approve(insight_id, reviewer, note)
    console.print(f"approved: {insight.topic} ({insight.id}) is {insight.status.value}")


@insights_app.command()
def reject(insight_id: str, reviewer: Reviewer = YOU, note: Note = "", project: Project = None) -> None:
    """Reject an insight: it is kept, never injected, and saving it again does not revive it."""
    with opened(project) as store:
        insight = ReviewQueue(store).reject(insight_id, reviewer, note)
    console.print(f"rejected: {insight.topic} ({insight.id})")


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
    console.print(f"edited: {insight.topic} ({insight.id}): {', '.join(changes)}")


@insights_app.command()
def delete(insight_id: str, reviewer: Reviewer = YOU, note: Note = "", project: Project = None) -> None:
    """Delete an insight; if it was its slot's rule, the previous version is the rule again."""
    with opened(project) as store:
        ReviewQueue(store).delete(insight_id, reviewer, note)
    console.print(f"deleted: {insight_id}")


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
