"""The main job for a newcomer: the whole loop, on this machine, with no key.

1. A local Weaviate (the project "demo", started afresh).
2. The bundled conversations (demo_conversations.yaml, zh and en) recorded turn by turn through the plugin's own
   record_turn code, as a Dify chatflow calls it: the correction detector reads every user message and learns what
   is stated outright at once.
3. The reflection worker, its clock moved past the sessions' idle time, reflects on each ended session once: with the
   offline extractor, or Claude when ANTHROPIC_API_KEY is set.
4. Later conversations through the plugin's search_insight: the rules each user gets, and what nobody else gets.
5. A short report: what was learned, for whom, what waits for a reviewer and why.
6. Blame and repair: a misread memory is injected, corrected twice, made suspect by blame, confirmed faulty by a
   reviewer, and repaired (the worker reflects again on the sessions it touched, without it).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from hindsight_cli.pages import reflection_cost, today_in
from hindsight_dify import Context, StoreCache, credentials_for, run
from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.models import InsightStatus
from hindsight_insights.reflection import load_reflector
from hindsight_insights.reflection.repair import plan_repair, repair_steps
from hindsight_insights.reporting import build_report, gather_report_input, render_report
from hindsight_insights.store import InsightStore
from hindsight_insights.store.review import ReviewQueue
from hindsight_insights.store.tenancy import drop_project
from hindsight_insights.weaviate_server import running_weaviate
from worker.db import open_engine
from worker.runner import ReflectionWorker

CONVERSATIONS = Path(__file__).with_name("demo_conversations.yaml")


class _After:
    """The worker's clock, moved past the sessions' idle time, so that they count as ended now."""

    def __init__(self, offset: timedelta) -> None:
        self._offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) + self._offset


def _fresh(settings: Settings) -> None:
    """The demo project starts empty every run (only that project: others in the same data dir are untouched)."""
    assert settings.weaviate_url is not None
    with contextlib.closing(connect_url(settings, settings.weaviate_url)) as client:
        drop_project(client, settings.project)  # its tenant in every collection of the set, and its record


def run_demo(settings: Settings, console: Console) -> None:
    started = time.monotonic()
    data = yaml.safe_load(CONVERSATIONS.read_text())
    console.print(f"[bold]Hindsight Insights demo[/bold] — starting Weaviate (data in {settings.data_dir}) …")
    with running_weaviate(settings) as running, tempfile.TemporaryDirectory() as state_dir:
        _fresh(running)
        console.print(f"Weaviate ready in {time.monotonic() - started:.1f} s; project {running.project!r}\n")
        stores = StoreCache(running)
        try:
            credentials = credentials_for(running)
            _record(data, stores, credentials, console)
            store = stores.store_for(credentials)
            _reflect(store, running, Path(state_dir), console)
            _later(data, stores, credentials, console)
            _report(store, console)
            _repair(data["repair"], stores, credentials, store, running, Path(state_dir), console)
            _daily_report(store, running, Path(state_dir), console)
        finally:
            stores.close()
    console.print(f"  whole loop: {time.monotonic() - started:.1f} s")


def _record(data: dict[str, Any], stores: StoreCache, credentials: dict[str, Any], console: Console) -> None:
    console.rule("1. Conversations, recorded through the plugin's record_turn")
    turns = 0
    for session in data["sessions"]:
        for index, turn in enumerate(session["turns"]):
            context = Context(
                user_id=session["user_id"],
                conversation_id=session["session_id"],
                message_id=f"{session['session_id']}-{index}",
            )
            parameters = {
                "user_message": turn["user"],
                "assistant_message": turn["assistant"],
                "scene": session["scene"],
            }
            result = run(stores, "record_turn", credentials, parameters, context)
            if "error" in result.json:
                raise SystemExit(f"record_turn failed: {result.json['error']['message']}")
            turns += 1
            correction = result.json["correction"]
            if correction["type"] != "none":
                learned = ", ".join(f"{item['scope']} {item['status']}" for item in result.json["learned"])
                console.print(
                    f"  {session['user_id']:>9}: “{turn['user'][:48]}” → {correction['type']} correction "
                    f"({correction['confidence']:.2f}); learned at once: {learned or 'nothing'}",
                    soft_wrap=True,
                )
    console.print(f"  {turns} turns in {len(data['sessions'])} sessions recorded")


def _reflect(store: InsightStore, settings: Settings, state_dir: Path, console: Console) -> None:
    console.rule("2. The reflection worker, once the sessions have ended")
    source = load_reflector(settings)
    engine = open_engine(_state_url(state_dir))
    try:
        later = _After(timedelta(minutes=settings.worker_idle_minutes + 1))
        tick = ReflectionWorker(store, source, engine, settings=settings, clock=later).poll()
    finally:
        engine.dispose()
    console.print(f"  reflecting with: {source.name}")
    for report in tick.reflections:
        counts = {name: count for name, count in report.counts.items() if count}
        console.print(
            f"  {', '.join(report.session_ids)} ({report.variant}): {report.outcome}, {counts or 'nothing new'}"
        )


def _later(data: dict[str, Any], stores: StoreCache, credentials: dict[str, Any], console: Console) -> None:
    console.rule("3. Later conversations, through the plugin's search_insight")
    for conversation in data["later"]:
        parameters = {
            "query": json.dumps(conversation["turns"], ensure_ascii=False),
            "scene": conversation["scene"],
            "language": conversation["language"],
        }
        result = run(stores, "search_insight", credentials, parameters, Context(user_id=conversation["user_id"]))
        console.print(
            f"\n[bold]{conversation['user_id']}[/bold] in {conversation['scene']}: {conversation['turns'][-1]}"
        )
        console.print(result.json.get("rules") or "(no rules apply)", markup=False, soft_wrap=True)


def _report(store: InsightStore, console: Console) -> None:
    console.rule("4. Report")
    active = store.list_insights(status=InsightStatus.ACTIVE, limit=1000)
    by_scope = Counter(f"{insight.kind.value} for {insight.scope.value}" for insight in active)
    console.print(f"  active rules: {len(active)} ({', '.join(f'{n} {k}' for k, n in sorted(by_scope.items()))})")
    for pending in ReviewQueue(store).pending():
        action = pending.action if len(pending.action) <= 60 else pending.action[:59] + "…"
        console.print(f"  waiting for a reviewer: “{action}” — {pending.review_reason}", soft_wrap=True)


def _daily_report(store: InsightStore, settings: Settings, state_dir: Path, console: Console) -> None:
    """The top of today's report (`hindsight_cli report`): its summary and the top error patterns."""
    console.rule("6. Today's report (python -m hindsight_cli report; --format html adds the 30-day chart)")
    with_state = settings.model_copy(update={"worker_state_url": _state_url(state_dir)})
    day = today_in(settings)
    cost = reflection_cost(with_state, day)
    built = build_report(gather_report_input(store, day, cost=cost, suggestions=store.suggestions))
    text = render_report(built, "markdown", settings.prompts_dir, settings.language)
    summary = text.split("\n## ")[1:3]  # the summary and the top patterns; the rest is in the full report
    console.print("\n".join("## " + part.strip() + "\n" for part in summary), markup=False, soft_wrap=True)


def _state_url(state_dir: Path) -> str:
    return f"sqlite:///{state_dir / 'worker-state.sqlite'}"


def _repair(
    data: dict[str, Any],
    stores: StoreCache,
    credentials: dict[str, Any],
    store: InsightStore,
    settings: Settings,
    state_dir: Path,
    console: Console,
) -> None:
    console.rule("5. Blame and repair: a misread memory")
    user, scene = data["user_id"], data["scene"]

    def call(operation: str, session: str, parameters: dict[str, Any], message: str | None = None) -> dict[str, Any]:
        context = Context(user_id=user, conversation_id=session, message_id=message)
        result = run(stores, operation, credentials, parameters, context)
        if "error" in result.json:
            raise SystemExit(f"{operation} failed: {result.json['error']['message']}")
        return dict(result.json)

    def conversation(part: dict[str, Any], reflected: dict[str, Any]) -> str:
        session = part["session_id"]
        for index, turn in enumerate(part["turns"]):
            injected = call("search_insight", session, {"query": turn["user"], "scene": scene})["injected_ids"]
            parameters = {
                "user_message": turn["user"],
                "assistant_message": turn["assistant"],
                "scene": scene,
                "injected_insight_ids": ",".join(injected),
            }
            recorded = call("record_turn", session, parameters, f"{session}-{index}")
            for judged in recorded["blame"]:
                if judged["kind"] == "blame":
                    console.print(
                        f"  “{turn['user']}” blames {judged['insight_id'][:8]} by {judged['weight']:.2f}: blame "
                        f"{judged['blame']:.2f}, support {judged['support']}"
                        + (" → suspect, injected no more" if judged["suspected"] else ""),
                        soft_wrap=True,
                    )
        saved = call("save_insight", session, {"insight_json": json.dumps(reflected, ensure_ascii=False)})
        return str(saved["id"])

    memory = conversation(data["first"], data["memory"])
    console.print(f"  the reflection node's memory {memory[:8]}: “{data['memory']['action']}”", soft_wrap=True)
    derived = conversation(data["second"], data["derived"])
    console.print(f"  derived from the second conversation {derived[:8]}: “{data['derived']['action']}”")
    graph = store.graph.of(memory)
    console.print(
        f"  what {memory[:8]} touched: injected into {len(graph.injected_into)} turns of {len(graph.used_in)} "
        f"session(s); {len(graph.derived)} insight(s) learned from them; status {graph.insight.status.value}"
    )
    plan = plan_repair(store, memory, "reviewer-demo", "the customer said it cannot boot")
    engine = open_engine(_state_url(state_dir))
    try:
        worker = ReflectionWorker(store, load_reflector(settings), engine, settings=settings)
        worker.enqueue_repair(plan)
        worker.run_repairs()
    finally:
        engine.dispose()
    console.print(
        f"  reviewer confirms {memory[:8]} faulty: {plan.faulty.status.value}; suspect now: "
        f"{', '.join(i.id.hex[:8] for i in plan.suspected) or 'none'}; sessions reflected on again: "
        f"{', '.join(plan.sessions)}"
    )
    for step in repair_steps(store, memory)[1:]:
        console.print(
            f"  repair of {step['session_id']}: {step['outcome']}, learned {len(step['learned'])}, "
            f"restored {len(step['restored'])}, rejected {len(step['rejected'])}"
        )
    console.print(f"  derived {derived[:8]} is now {store.get(derived).status.value}")
    rules = call("search_insight", "demo-zhangsan-3", {"query": "我的手机还是开不了机", "scene": scene})["rules"]
    console.print(f"  the next conversation's rules:\n{rules or '(no rules apply)'}", markup=False, soft_wrap=True)
