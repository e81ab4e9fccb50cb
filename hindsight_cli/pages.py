"""The daily report and the review console: `report` and `console` (registered on the app by app.py)."""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated
from zoneinfo import ZoneInfo

import typer
from sqlalchemy.exc import SQLAlchemyError

from hindsight_cli.app import YOU, Project, Reviewer, app, errors, opened
from hindsight_insights.config import Settings
from hindsight_insights.reporting import ReflectionCost, build_report, gather_report_input, render_report

log = logging.getLogger(__name__)


class Format(StrEnum):
    markdown = "markdown"
    json = "json"
    html = "html"


class Lang(StrEnum):
    en = "en"
    zh = "zh"


def reflection_cost(settings: Settings, day: date) -> ReflectionCost | None:
    """The day's reflections and tokens from the worker's ledger; None when there is no worker state to read (a
    SQLite file that was never made is not made here)."""
    from worker.db import STATE_FILE, open_engine, state_url
    from worker.ledger import Ledger

    url = state_url(settings)
    if not settings.worker_state_url and not (Path(settings.data_dir).expanduser() / STATE_FILE).exists():
        return None
    try:
        engine = open_engine(url)
        try:
            spend = Ledger(engine, settings.project).spend(day)
        finally:
            engine.dispose()
    except SQLAlchemyError as error:
        log.warning("the worker's state could not be read, so the report leaves out the reflection cost: %s", error)
        return None
    return ReflectionCost(
        reflections=spend.reflections,
        tokens_in=spend.tokens_in,
        tokens_out=spend.tokens_out,
        cached_tokens=spend.cached_tokens,
        budget=settings.worker_token_budget,
    )


def today_in(settings: Settings) -> date:
    return datetime.now(ZoneInfo(settings.timezone)).date()


def parse_day(text: str | None, settings: Settings) -> date:
    if text is None:
        return today_in(settings)
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        errors.print(f"[red]error:[/red] --day {text!r} is not a date as YYYY-MM-DD, such as 2026-12-01")
        raise typer.Exit(2) from None


@app.command()
def report(
    day: Annotated[str | None, typer.Option(help="YYYY-MM-DD (default: today in HINDSIGHT_TIMEZONE).")] = None,
    format: Annotated[Format, typer.Option("--format", help="markdown, json, or an HTML page with a chart.")] = (
        Format.markdown
    ),
    out: Annotated[Path | None, typer.Option(help="Write it to this file instead of printing it.")] = None,
    lang: Annotated[Lang | None, typer.Option(help="en or zh (default: HINDSIGHT_LANGUAGE).")] = None,
    project: Project = None,
) -> None:
    """The daily report: the top error patterns, the scenes and sources involved, suspects and repairs, prompt
    suggestions, the review queue's size, the reflection cost, and corrections per day over the last 30 days."""
    with opened(project) as store:
        settings = store.settings
        the_day = parse_day(day, settings)
        cost = reflection_cost(settings, the_day)
        built = build_report(gather_report_input(store, the_day, cost=cost, suggestions=store.suggestions))
    text = render_report(built, format.value, settings.prompts_dir, (lang.value if lang else settings.language))
    if out is None:
        typer.echo(text)
        return
    out.write_text(text + "\n", encoding="utf-8")
    errors.print(f"report for {the_day} written to {out}")


@app.command("console")
def console_command(
    port: Annotated[int, typer.Option(min=0, max=65535, help="On 127.0.0.1; 0: any free port.")] = 8765,
    reviewer: Reviewer = YOU,
    project: Project = None,
) -> None:
    """A review console in the browser (Chinese and English), at 127.0.0.1 behind a token printed here: the review
    queue with evidence, reasons and blamed turns; approve, reject and edit (audited as in the CLI); suspects, repairs
    and today's report. Ctrl-C stops it."""
    import uvicorn

    from hindsight_cli.review_console.web import ConsoleContext, build_console

    token = secrets.token_urlsafe(24)
    with opened(project) as store:
        settings = store.settings
        reflection_cost(settings, today_in(settings))  # the worker's modules load now, not on the first page
        web = build_console(
            ConsoleContext(
                store=store,
                reviewer=reviewer,
                token=token,
                cost=lambda day: reflection_cost(settings, day),
                today=lambda: today_in(settings),
                suggestions=store.suggestions,
            )
        )
        listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listening.bind(("127.0.0.1", port))
            listening.listen(128)  # connections wait in the backlog until uvicorn accepts them
        except OSError as error:
            errors.print(f"[red]error:[/red] cannot listen on 127.0.0.1:{port} ({error}); choose another --port")
            raise typer.Exit(1) from None
        bound = listening.getsockname()[1]
        # The token goes to the terminal only: whoever opens the console needs this exact address.
        typer.echo(f"review console of project {settings.project!r}: http://127.0.0.1:{bound}/?token={token}")
        typer.echo("Ctrl-C stops it", err=True)
        server = uvicorn.Server(uvicorn.Config(web, log_level="warning", access_log=False, lifespan="off"))
        with contextlib.closing(listening):
            server.run(sockets=[listening])
