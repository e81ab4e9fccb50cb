"""The worked example of blame and repair, end to end on the real Weaviate: the conversations through the plugin
(Dify's CLI with the SDK's PluginRunner: record_turn and search_insight), reflection by the worker with a real
OpenAI client against a model endpoint on loopback, and the reviewer's verdict through the command line.

1. A customer says their phone "cannot boot"; the model, reflecting on the session, writes down that it "cannot
   charge" (the faulty memory).
2. In the next conversation the memory is injected, and the assistant twice offers a new cable; the customer corrects
   it twice. Blame makes the memory suspect: it is injected no more.
3. The session is reflected on: from the transcript where the assistant pushed cables, the model derives a cable
   recommendation (the contaminated insight).
4. A reviewer confirms the memory is faulty (`insights faulty`): the derived insight becomes suspect, both sessions
   are reflected on again with the faulty memory named in the prompt, and the corrected insights replace both.

Only the model is a stand-in: an OpenAI-compatible /v1/chat/completions on 127.0.0.1 whose answers are what a model
reading each prompt would write, misreading the first session once, and reading it right when told of the error.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from hindsight_cli.app import app
from hindsight_insights.models import InsightStatus
from hindsight_insights.reflection import load_reflector
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate, free_port
from testkit.runner import RunnerPlugin
from tests.worker_support import completion_body
from worker.db import open_engine
from worker.runner import ReflectionWorker

CUSTOMER = "cust-wang"
SCENE = "售后服务"
BOOT = "我的手机从昨天开始开不了机了"
STILL = "我的手机还是不行"
FIRST_CORRECTION = "不对，我的手机是开不了机，不是充不上电"
SECOND_CORRECTION = "不对，都说了是开不了机，跟充电没关系"
FAULTY_MARK = "有误的记忆"  # how the zh reflection prompt names a repair's excluded insights


def insight(topic: str, kind: str, action: str, quote: str, observation: str) -> dict[str, Any]:
    return {
        "topic": topic,
        "kind": kind,
        "scene": SCENE,
        "observation": observation,
        "action": action,
        "evidence": {"quote": quote, "turn": None, "session": "S1"},
        "confidence": 0.85,
        "tags": ["手机", "故障"],
        "condition": None,
        "condition_detail": None,
    }


CANNOT_CHARGE = insight(
    "手机故障",
    "fact",
    "这位客户的手机充不上电，处理时先建议更换新的充电线。",
    BOOT,
    "客户反映手机有问题，登记为充电故障。",
)
CANNOT_BOOT = insight(
    "手机故障",
    "fact",
    "这位客户的手机开不了机，与充电无关，处理时先引导长按电源键强制重启，再安排检测。",
    BOOT,
    "客户说手机从昨天开始开不了机，没有进水也没有摔过。",
)
CABLE = insight(
    "维修建议",
    "lesson",
    "这位客户来问手机故障时，推荐原装充电线。",
    STILL,
    "助手建议更换充电线，客户继续询问。",
)
NO_CABLE = insight(
    "维修建议",
    "lesson",
    "这位客户的手机开不了机时，不要推荐充电线，先引导强制重启，不行就预约检测。",
    SECOND_CORRECTION,
    "助手两次推荐充电线，客户两次纠正：问题是开不了机。",
)


class SupportModel:
    """/v1/chat/completions on 127.0.0.1, answering as a reflection model would: it misreads the first session
    (charging for booting) until the prompt names that memory as wrong; from the second session it derives a cable
    recommendation from the assistant's own advice until told that advice rested on a wrong memory."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
                model.prompts.append(prompt)
                data = json.dumps(completion_body(json.dumps(model.answer(prompt), ensure_ascii=False))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @staticmethod
    def answer(prompt: str) -> dict[str, Any]:
        told = FAULTY_MARK in prompt
        if BOOT in prompt:
            return {"insights": [CANNOT_BOOT if told else CANNOT_CHARGE]}
        if STILL in prompt:
            return {"insights": [NO_CABLE if told else CABLE]}
        return {"insights": []}

    def environment(self) -> dict[str, str]:
        return {
            "HINDSIGHT_REFLECTION_LLM": "openai",
            "HINDSIGHT_REFLECTION_BASE_URL": self.url,
            "HINDSIGHT_REFLECTION_MODEL": "Qwen/Qwen3-32B",
            "HINDSIGHT_REFLECTION_API_KEY": "sk-local",
            "HINDSIGHT_REFLECTION_OUTPUT": "json_schema",
            "HINDSIGHT_LLM_MAX_RETRIES": "0",
        }

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def model() -> Iterator[SupportModel]:
    served = SupportModel()
    yield served
    served.close()


def worker_for(store: InsightStore, model: SupportModel, state: str) -> ReflectionWorker:
    settings = store.settings.model_copy(
        update={
            "reflection_llm": "openai",
            "reflection_base_url": model.url,
            "reflection_model": "Qwen/Qwen3-32B",
            "reflection_api_key": SecretStr("sk-local"),
            "reflection_output": "json_schema",
            "llm_max_retries": 0,
        }
    )
    return ReflectionWorker(store, load_reflector(settings), open_engine(state), settings=settings)


class Conversation:
    """A chatflow's calls for one customer: search_insight before each answer, record_turn after it."""

    def __init__(self, runner: RunnerPlugin, credentials: dict[str, Any]) -> None:
        self.runner = runner
        self.credentials = credentials
        self.session = f"conv-{uuid.uuid4().hex[:8]}"

    def rules(self, query: str) -> tuple[list[str], str]:
        found = self.runner.invoke_tool(
            "search_insight", {"query": query, "scene": SCENE, "score_threshold": 0.0}, self.credentials, CUSTOMER
        )
        return list(found.json["injected_ids"]), str(found.json["rules"])

    def turn(self, said: str, answered: str, injected: list[str]) -> dict[str, Any]:
        parameters = {
            "session_id": self.session,
            "user_message": said,
            "assistant_message": answered,
            "scene": SCENE,
            "injected_insight_ids": ",".join(injected),
        }
        recorded = self.runner.invoke_tool("record_turn", parameters, self.credentials, CUSTOMER)
        assert "error" not in recorded.json, recorded.json
        return dict(recorded.json) | {"text": recorded.texts[0]}


def the_only(store: InsightStore, topic: str, status: InsightStatus) -> Any:
    (found,) = [i for i in store.list_insights(user_id=CUSTOMER, limit=1000) if i.topic == topic and i.status is status]
    return found


def test_a_faulty_memory_is_blamed_made_suspect_and_repaired_with_what_it_contaminated(
    runner: RunnerPlugin,
    plugin_credentials: dict[str, Any],
    plugin_store: InsightStore,
    plugin_project: str,
    weaviate_server: LocalWeaviate,
    model: SupportModel,
    tmp_path: Path,
) -> None:
    state = f"sqlite:///{tmp_path / 'worker.sqlite3'}"
    worker = worker_for(plugin_store, model, state)

    # 1. The customer says the phone cannot boot; the model's reflection writes down that it cannot charge.
    first = Conversation(runner, plugin_credentials)
    first.turn(f"你好，{BOOT}", "您好，请问手机有没有进水或者摔过？", [])
    first.turn("没有进水，也没摔过", "好的，已为您登记，稍后工程师联系您。", [])
    report = worker.reflect_now(first.session)
    assert report.outcome == "ok" and len(report.created) == 1, report
    faulty = plugin_store.get(report.created[0])
    assert faulty.status is InsightStatus.ACTIVE and "充不上电" in faulty.action

    # 2. The next conversation is given the memory; the assistant follows it twice and is corrected twice.
    second = Conversation(runner, plugin_credentials)
    injected, rules = second.rules(STILL)
    assert str(faulty.id) in injected and "充电线" in rules
    second.turn(STILL, "可能是充电线坏了，建议您换一根新的充电线。", injected)
    injected, _ = second.rules(FIRST_CORRECTION)
    assert str(faulty.id) in injected
    once = second.turn(FIRST_CORRECTION, "那可能是充电口接触不良，您换一根原装充电线试试。", injected)
    (blamed,) = [j for j in once["blame"] if j["insight_id"] == str(faulty.id) and j["kind"] == "blame"]
    assert blamed["weight"] == 1.0 and not blamed["suspected"]
    twice = second.turn(SECOND_CORRECTION, "非常抱歉，请先长按电源键十秒强制重启。", injected)
    (blamed,) = [j for j in twice["blame"] if j["insight_id"] == str(faulty.id)]
    assert blamed["suspected"] and blamed["blame"] == 2.0
    assert f"now suspect and no longer injected: {faulty.id}" in twice["text"]
    assert plugin_store.get(faulty.id).status is InsightStatus.SUSPECT
    injected, rules = second.rules(STILL)
    assert str(faulty.id) not in injected and "充不上电" not in rules

    # 3. The worker reflects on the session: the model derives a cable recommendation from the assistant's advice.
    derived_report = worker.reflect_now(second.session)
    assert derived_report.outcome == "ok" and len(derived_report.created) == 1, derived_report
    cable = plugin_store.get(derived_report.created[0])
    assert cable.status is InsightStatus.ACTIVE and "充电线" in cable.action
    shown = plugin_store.graph.of(faulty.id)
    assert shown.learned_in == first.session and shown.used_in == [second.session]
    assert cable.id in [i.id for i in shown.derived]

    # The reviewer sees the suspect with what blamed it, and what it touched.
    cli = CliRunner()
    environment = {
        "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
        "HINDSIGHT_PROJECT": plugin_project,
        "HINDSIGHT_WORKER_STATE_URL": state,
        "COLUMNS": "200",
        **model.environment(),
    }
    shown_json = json.loads(
        cli.invoke(app, ["insights", "show", str(faulty.id), "--json"], env=environment, catch_exceptions=False).stdout
    )
    assert shown_json["insight"]["status"] == "suspect"
    assert shown_json["touched"]["used_in_sessions"] == [second.session]
    assert len(shown_json["touched"]["blame"]["blamed_by"]) == 2
    assert str(cable.id) in [d["id"] for d in shown_json["touched"]["derived"]]
    table = cli.invoke(app, ["insights", "show", str(faulty.id)], env=environment, catch_exceptions=False).output
    assert "injected into 3 turns" in table and "blamed by" in table and "维修建议" in table

    # 4. The reviewer confirms it is faulty: repair re-reflects both sessions without it, through the worker.
    result = cli.invoke(
        app,
        ["insights", "faulty", str(faulty.id), "--reviewer", "reviewer-li", "--note", "客户说的是开不了机", "--json"],
        env=environment,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    repaired = json.loads(result.stdout)
    assert repaired["plan"]["sessions"] == [first.session, second.session]
    assert repaired["plan"]["suspected"] == [str(cable.id)] and repaired["queued"] == 2
    steps = {step["session_id"]: step for step in repaired["steps"] if step["step"] == "re-reflected"}
    assert {s: step["outcome"] for s, step in steps.items()} == {first.session: "ok", second.session: "ok"}
    assert steps[second.session]["rejected"] == [str(cable.id)]
    told = [prompt for prompt in model.prompts if FAULTY_MARK in prompt]
    assert len(told) == 2 and all("充不上电" in prompt for prompt in told)

    # The memory and what was derived from it are corrected.
    assert plugin_store.get(faulty.id).status is InsightStatus.REJECTED
    assert plugin_store.get(cable.id).status is InsightStatus.REJECTED
    fixed = the_only(plugin_store, "手机故障", InsightStatus.ACTIVE)
    no_cable = the_only(plugin_store, "维修建议", InsightStatus.ACTIVE)
    assert "开不了机" in fixed.action and "充电线" not in fixed.action
    assert "不要推荐充电线" in no_cable.action
    assert [str(i) for i in steps[first.session]["learned"]] == [str(fixed.id)]
    assert [str(i) for i in steps[second.session]["learned"]] == [str(no_cable.id)]
    # Each step is in the audit trail, for the report and the console to list.
    trail = [(e.action, e.actor) for e in plugin_store.audit.of(faulty.id)]
    assert trail == [
        ("suspect", "blame"),
        ("reject", "reviewer-li"),
        ("repair", "reviewer-li"),
        ("repair", "repair"),
        ("repair", "repair"),
    ]
    assert [e.action for e in plugin_store.audit.of(cable.id)] == ["suspect", "repair"]
    assert plugin_store.audit.decisions(("repair",))  # listable by action
    # The next conversation is given the corrected rules.
    third = Conversation(runner, plugin_credentials)
    injected, rules = third.rules(STILL)
    assert str(fixed.id) in injected and str(faulty.id) not in injected and str(cable.id) not in injected
    assert "强制重启" in rules and "充不上电" not in rules
    status = worker.status()
    assert status.counters.get("repair.ok") == 2 and status.tasks.get(("repair", "done")) == 2
    worker.state.dispose()
    assert datetime.now(UTC) > faulty.created_at
