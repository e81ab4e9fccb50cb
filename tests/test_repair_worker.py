"""The repair's re-reflections in the worker, on the real Weaviate and SQLite: a failure is written down and retried
under the usual backoff, a suspect learned again without the faulty insight is restored, a candidate repeating the
faulty insight is dropped, the budget holds a repair (never drops it), and the command line's bad inputs."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hindsight_cli.app import app
from hindsight_insights.commands import Provenance, WriteCommand
from hindsight_insights.config import Settings
from hindsight_insights.governance.writing import write
from hindsight_insights.models import InsightContent, InsightStatus, TurnDraft
from hindsight_insights.reflection.repair import plan_repair, repair_steps
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate
from tests.worker_support import FakeClock, RuleExtractor, running_worker
from worker.budget import CostGuard

USER = "u_wang"
FAULTY = {
    "topic": "退货地址",
    "kind": "fact",
    "scene": "general",
    "action": "当顾客问退货寄到哪里时，告诉他寄到上海市嘉定区宝安公路 2999 号。",
    "evidence": {"quote": "退货寄到哪里"},
    "confidence": 0.8,
}


def faulty_and_a_session_that_used_it(store: InsightStore, clock: FakeClock) -> tuple[uuid.UUID, str]:
    (placed,) = write(store, WriteCommand(InsightContent.parse(FAULTY), Provenance("operator", USER, "s-origin")))
    faulty = placed.result.id
    session = f"s-{uuid.uuid4().hex[:8]}"
    exchanges = (("退货寄到哪里？", "请寄到上海市嘉定区宝安公路 2999 号。"), ("好的，叫我老王就行", "好的老王。"))
    for said, answered in exchanges:
        draft = TurnDraft(
            session_id=session,
            user_id=USER,
            user_message=said,
            assistant_message=answered,
            injected_insight_ids=[faulty],
        )
        store.turns.append(draft, now=clock.now())
    return faulty, session


def test_a_failed_re_reflection_is_written_down_retried_and_a_suspect_learned_again_is_restored(
    store: InsightStore, tmp_path: Path
) -> None:
    clock = FakeClock()
    extractor = RuleExtractor()
    faulty, session = faulty_and_a_session_that_used_it(store, clock)
    with running_worker(store, f"sqlite:///{tmp_path / 'state.sqlite3'}", clock, extractor) as worker:
        first = worker.reflect_now(session)
        (derived,) = first.created + first.pending_review  # the form of address, learned by reflection
        assert store.get(derived).source == "reflection:rules"

        plan = plan_repair(store, faulty, "reviewer-li")
        assert [i.id for i in plan.suspected] == [derived] and plan.sessions == [session]
        assert worker.enqueue_repair(plan) == 1 and worker.enqueue_repair(plan) == 0  # one task per session, once

        extractor.failures.append("the model endpoint is down")
        (failed,) = worker.run_repairs().reflections
        assert failed.outcome == "failed"
        (step,) = [s for s in repair_steps(store, faulty) if s["step"] == "re-reflected"]
        assert step["outcome"] == "failed" and "the model endpoint is down" in step["reason"]
        assert store.get(derived).status is InsightStatus.SUSPECT  # nothing resolved on a failure
        assert worker.run_repairs().reflections == []  # it waits for its backoff, like any failed reflection

        clock.advance(hours=2)
        (retried,) = worker.poll_sessions().reflections  # the worker's own poll runs due repairs
        assert retried.outcome == "ok" and retried.unchanged == [derived]
        assert extractor.calls[-1] == ("session", [session])
        assert store.get(derived).status is InsightStatus.ACTIVE  # it did not rest on the faulty insight
        last = repair_steps(store, faulty)[-1]
        assert (last["outcome"], last["restored"], last["rejected"]) == ("ok", [str(derived)], [])
        trail = [(e.action, e.actor) for e in store.audit.of(derived)]
        assert trail == [("suspect", "repair"), ("repair", "repair")]
        assert worker.status().tasks == {("session", "done"): 1, ("repair", "done"): 1}


def test_a_candidate_repeating_the_faulty_insight_is_dropped(store: InsightStore, tmp_path: Path) -> None:
    clock = FakeClock()
    _, session = faulty_and_a_session_that_used_it(store, clock)
    with running_worker(store, f"sqlite:///{tmp_path / 'state.sqlite3'}", clock, RuleExtractor()) as worker:
        address = worker.reflect_now(session)
        (learned,) = address.created + address.pending_review
        excluded = store.get(learned)  # pretend the reviewer found the form of address faulty
        report = worker.engine.reflect_session(session, excluded=[excluded])
    assert report.outcome == "ok" and report.unchanged == [] and report.created == []
    (dropped,) = report.dropped
    assert dropped.reason == "excluded" and str(learned) in dropped.detail


def test_the_budget_holds_a_repair_until_the_next_day_and_never_drops_it() -> None:
    guard = CostGuard(budget=1000, reserve=500)
    assert guard.decide("repair", 999) == "run"
    assert guard.decide("repair", 1000) == "hold" and guard.decide("repair", 10_000) == "hold"
    assert guard.decide("session", 1000) == "defer" and guard.decide("anomaly", 1000) == "run"
    assert CostGuard(budget=0, reserve=0).decide("repair", 10**9) == "run"


@pytest.fixture
def cli(weaviate_server: LocalWeaviate, project_settings: Settings, tmp_path: Path) -> Any:
    environment = {
        "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
        "HINDSIGHT_PROJECT": project_settings.project,
        "HINDSIGHT_WORKER_STATE_URL": f"sqlite:///{tmp_path / 'cli.sqlite3'}",
        "HINDSIGHT_REFLECTION_LLM": "offline",
        "COLUMNS": "200",
    }

    def run(*arguments: str, code: int = 0) -> str:
        result = CliRunner().invoke(app, list(arguments), env=environment, catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.output

    return run


def test_faulty_with_an_unknown_id_or_nothing_to_repair_says_so_and_changes_nothing(
    cli: Any, store: InsightStore
) -> None:
    unknown = str(uuid.uuid4())
    assert f"no insight {unknown}" in cli("insights", "faulty", unknown, code=1)
    assert "'not-an-id' is not an insight id" in cli("insights", "faulty", "not-an-id", code=1)
    assert f"no insight {unknown}" in cli("insights", "show", unknown, code=1)
    (placed,) = write(store, WriteCommand(InsightContent.parse(FAULTY), Provenance("operator", USER, "s-none")))
    refused = cli("insights", "faulty", str(placed.result.id), code=1)
    assert "nothing to repair" in refused and "insights reject" in refused
    assert store.get(placed.result.id).status is InsightStatus.ACTIVE and store.audit.of(placed.result.id) == []


def test_faulty_from_the_command_line_repairs_and_show_lists_the_steps(
    cli: Any, store: InsightStore, project_settings: Settings
) -> None:
    clock = FakeClock()
    faulty, session = faulty_and_a_session_that_used_it(store, clock)
    later = json.loads(cli("insights", "faulty", str(faulty), "--later", "--reviewer", "ops-lin", "--json"))
    assert later["queued"] == 1 and later["plan"]["sessions"] == [session]
    assert [s["step"] for s in later["steps"]] == ["planned"]  # left to the worker's next poll
    shown = cli("insights", "show", str(faulty))
    assert "injected into 2 turns" in shown and "repair" in shown and "rejected" in shown
    again = cli("insights", "faulty", str(faulty), "--reviewer", "ops-lin")  # now: the queued task runs
    assert f"session {session}: ok" in again


def test_a_repair_whose_faulty_insight_was_deleted_fails_with_a_reason_and_the_worker_goes_on(
    store: InsightStore, tmp_path: Path
) -> None:
    clock = FakeClock()
    faulty, _ = faulty_and_a_session_that_used_it(store, clock)
    with running_worker(store, f"sqlite:///{tmp_path / 'state.sqlite3'}", clock, RuleExtractor()) as worker:
        worker.enqueue_repair(plan_repair(store, faulty, "reviewer-li"))
        store.delete(faulty)  # a reviewer deleted it before the worker came to it
        (report,) = worker.run_repairs().reflections
        assert report.outcome == "failed" and f"the insight to repair is gone: no insight {faulty}" in (
            report.reason or ""
        )
        (task,) = worker.board.tasks("repair")
        assert task.state == "due" and task.last_error is not None and "no insight" in task.last_error
        assert worker.status().counters == {"repair.planned": 1, "repair.failed": 1}
