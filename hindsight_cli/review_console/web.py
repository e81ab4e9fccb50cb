"""The review console's web app (Starlette, served by uvicorn from `python -m hindsight_cli console`).

Access: the token printed at start-up, given once as `?token=` (moved into an HttpOnly, SameSite=Strict cookie and out
of the address), or as `Authorization: Bearer`; anything else gets 401. Forms carry a CSRF value derived from the token
(HMAC), checked on every POST (403 without it). Decisions go through ReviewQueue, so they land in the same audit
trail as the CLI's, under the reviewer named at start-up. Pages are jinja2 templates (templates/, escaped), rendered
by the one render function.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from hindsight_cli.review_console.labels import LANGUAGES, console_labels, preferred_language
from hindsight_insights.errors import HindsightError, InvalidInput
from hindsight_insights.governance.blame import standing_blame
from hindsight_insights.models import Insight, Turn
from hindsight_insights.prompts import render_prompt
from hindsight_insights.reporting import (
    ReflectionCost,
    SuggestionSource,
    build_report,
    gather_report_input,
    render_report_body,
)
from hindsight_insights.store import InsightStore
from hindsight_insights.store.audit import AuditEntry
from hindsight_insights.store.review import ReviewQueue

TEMPLATES = Path(__file__).resolve().parent / "templates"
TOKEN_COOKIE = "hindsight_console"
LANGUAGE_COOKIE = "hindsight_console_lang"
QUEUE_SHOWN = 50
BLAMED_SHOWN = 5
DECISIONS = ("approve", "reject", "edit")
UNAUTHORISED = (
    "401 Unauthorized: open the address `python -m hindsight_cli console` printed at start-up (it carries the token)."
)


@dataclass(frozen=True)
class ConsoleContext:
    store: InsightStore
    reviewer: str
    token: str
    cost: Callable[[date], ReflectionCost | None]  # the worker's ledger, read by the CLI
    today: Callable[[], date]
    suggestions: SuggestionSource | None = None


@dataclass(frozen=True)
class QueueItem:
    insight: Insight
    audit: list[AuditEntry]
    blamed: list[Turn]


def csrf_value(token: str) -> str:
    return hmac.new(token.encode(), b"hindsight-console-csrf", hashlib.sha256).hexdigest()


def _same(given: str, expected: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), expected.encode())


class TokenGate(BaseHTTPMiddleware):
    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self._token = token

    async def dispatch(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        given = request.query_params.get("token", "")
        if request.method == "GET" and _same(given, self._token):
            rest = request.url.remove_query_params("token")
            address = rest.path + (f"?{rest.query}" if rest.query else "")
            moved = RedirectResponse(address, status_code=303)
            moved.set_cookie(TOKEN_COOKIE, self._token, httponly=True, samesite="strict", path="/")
            return moved
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if _same(request.cookies.get(TOKEN_COOKIE, ""), self._token) or _same(bearer, self._token):
            return await call_next(request)
        return PlainTextResponse(UNAUTHORISED, status_code=401, headers={"WWW-Authenticate": "Bearer"})


def _language(request: Request) -> tuple[str, bool]:
    """The page's language, and whether it was chosen now (then it is kept in a cookie)."""
    asked = request.query_params.get("lang", "")
    if asked in LANGUAGES:
        return asked, True
    kept = request.cookies.get(LANGUAGE_COOKIE, "")
    if kept in LANGUAGES:
        return kept, False
    return preferred_language(request.headers.get("accept-language", "")), False


def _changes(form: Any) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    action = str(form.get("action", "")).strip()
    if action:
        changes["action"] = action
    confidence = str(form.get("confidence", "")).strip()
    if confidence:
        try:
            changes["confidence"] = float(confidence)
        except ValueError:
            raise InvalidInput([("confidence", f"{confidence!r} is not a number between 0 and 1")]) from None
    if not changes:
        raise InvalidInput([("action", "nothing to edit: give a new action or confidence")])
    return changes


def build_console(context: ConsoleContext) -> Starlette:
    store = context.store
    queue = ReviewQueue(store)
    csrf = csrf_value(context.token)

    def read_page(language: str) -> dict[str, Any]:
        items = []
        for insight in queue.pending(QUEUE_SHOWN):
            marks = standing_blame(store, insight.id).blamed_by[-BLAMED_SHOWN:]
            turns = store.turns.by_ids(mark.turn_id for mark in marks)
            blamed = [turns[mark.turn_id] for mark in reversed(marks) if mark.turn_id in turns]
            items.append(QueueItem(insight, store.audit.of(insight.id), blamed))
        day = context.today()
        report = build_report(gather_report_input(store, day, cost=context.cost(day), suggestions=context.suggestions))
        body = Markup(render_report_body(report, store.settings.prompts_dir, language))  # escaped by its template
        return {"items": items, "report": report, "report_body": body}

    async def page(request: Request) -> Response:
        language, chosen = _language(request)
        try:
            shown = await run_in_threadpool(read_page, language)
        except HindsightError as error:  # Weaviate down, say: the reviewer sees why, and can reload later
            return PlainTextResponse(f"503 Service Unavailable: {error}. Reload the page to try again.", 503)
        html = render_prompt(
            TEMPLATES,
            "console.html.j2",
            t=console_labels(language),
            lang=language,
            project=store.settings.project,
            reviewer=context.reviewer,
            csrf=csrf,
            done=request.query_params.get("done", ""),
            done_id=request.query_params.get("id", ""),
            error=request.query_params.get("error", ""),
            **shown,
        )
        response = HTMLResponse(html)
        if chosen:
            response.set_cookie(LANGUAGE_COOKIE, language, samesite="strict", path="/")
        return response

    async def decide(request: Request) -> Response:
        form = await request.form()
        if not _same(str(form.get("csrf", "")), csrf):
            return PlainTextResponse("403 Forbidden: the form's CSRF value is missing or wrong; reload the page.", 403)
        decision = request.path_params["decision"]
        if decision not in DECISIONS:
            return PlainTextResponse(f"404: no decision {decision!r}", 404)
        insight_id = str(request.path_params["insight_id"])
        note = str(form.get("note", "")).strip()[:500]

        def apply() -> Insight:
            if decision == "approve":
                return queue.approve(insight_id, context.reviewer, note)
            if decision == "reject":
                return queue.reject(insight_id, context.reviewer, note)
            return queue.edit(insight_id, context.reviewer, _changes(form), note)

        try:
            decided = await run_in_threadpool(apply)
        except (HindsightError, ValueError) as error:
            return RedirectResponse(f"/?error={quote(str(error))}", status_code=303)
        return RedirectResponse(f"/?done={decision}&id={decided.id}#item-{decided.id}", status_code=303)

    routes = [
        Route("/", page, methods=["GET"]),
        Route("/items/{insight_id:uuid}/{decision}", decide, methods=["POST"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(TokenGate, token=context.token)])
