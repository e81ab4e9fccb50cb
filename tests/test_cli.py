"""The operator's command line against the real Weaviate: inspect a user, work the review queue."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from hindsight_cli.app import app
from hindsight_insights.config import Settings
from hindsight_insights.models import CorrectionRecord, InsightDraft, InsightStatus, TurnDraft
from hindsight_insights.store import InsightStore
from hindsight_insights.store.schema import vector_of
from hindsight_insights.store.table import embedding_text
from hindsight_insights.weaviate_server import LocalWeaviate
from testkit.admitted import admitted_as_is


@pytest.fixture
def cli(weaviate_server: LocalWeaviate, project_settings: Settings) -> Any:
    environment = {
        "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
        "HINDSIGHT_PROJECT": project_settings.project,
        "COLUMNS": "200",  # wide enough that tables do not fold words
    }
    runner = CliRunner()

    def run(*arguments: str, code: int = 0) -> str:
        result = runner.invoke(app, list(arguments), env=environment, catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.output

    return run


PENDING = {
    "topic": "退款时限",
    "kind": "process",
    "scene": "售后服务",
    "action": "当顾客问退款多久到账时，告诉他 3 个工作日内原路退回。",
    "evidence": "退款 3 个工作日到账",
    "status": "pending_review",
    "review_reason": "a project-wide process rule",
}


def test_the_review_queue_from_the_command_line(cli: Any, store: InsightStore) -> None:
    pending = store.save(admitted_as_is(InsightDraft.parse(PENDING)))
    listed = json.loads(cli("insights", "list", "--status", "pending_review", "--json"))
    assert [item["id"] for item in listed] == [str(pending.id)]
    assert "退款时限" in cli("insights", "list", "--status", "pending_review")
    edited = cli("insights", "edit", str(pending.id), "--reviewer", "ops-lin", "--confidence", "0.95", "--note", "ok")
    assert edited.startswith("edited: 退款时限") and "confidence" in edited
    approved = json.loads(cli("insights", "approve", str(pending.id), "--reviewer", "ops-lin", "--json"))
    assert (approved["id"], approved["status"], approved["confidence"]) == (str(pending.id), "active", 0.95)
    assert store.get(pending.id).status is InsightStatus.ACTIVE and store.get(pending.id).confidence == 0.95
    shown = json.loads(cli("insights", "show", str(pending.id), "--json"))
    assert [(e["action"], e["actor"]) for e in shown["audit"]] == [("edit", "ops-lin"), ("approve", "ops-lin")]
    assert "audit trail" in cli("insights", "show", str(pending.id))
    cli("insights", "reject", str(pending.id), "--reviewer", "ops-lin", "--note", "policy changed")
    assert store.get(pending.id).status is InsightStatus.REJECTED
    assert json.loads(cli("insights", "delete", str(pending.id), "--json")) == {"deleted": str(pending.id)}
    assert "no insight" in cli("insights", "show", str(pending.id), code=1)


def test_an_edit_with_nothing_to_change_or_a_bad_value_says_so(cli: Any, store: InsightStore) -> None:
    pending = store.save(admitted_as_is(InsightDraft.parse(PENDING)))
    assert "nothing to edit" in cli("insights", "edit", str(pending.id), code=2)
    assert "confidence" in cli("insights", "edit", str(pending.id), "--confidence", "7", code=1)


def test_inspect_shows_what_we_told_a_user_and_what_was_corrected(cli: Any, store: InsightStore) -> None:
    rule = store.save(admitted_as_is(InsightDraft.parse({**PENDING, "status": "active", "review_reason": None})))
    answered = store.turns.append(
        TurnDraft.parse(
            {
                "session_id": "s1",
                "user_id": "u-cli",
                "user_message": "退款多久到账？",
                "assistant_message": "一般 7 个工作日。",
                "injected_insight_ids": [str(rule.id)],
            }
        )
    )
    correcting = store.turns.append(
        TurnDraft.parse({"session_id": "s1", "user_id": "u-cli", "user_message": "不对，是 3 个工作日"})
    )
    record = CorrectionRecord(
        type="factual", corrected="是 3 个工作日", by="u-cli", at=datetime.now(UTC), in_turn=correcting.id
    )
    store.turns.mark_corrected(answered, record)
    table = cli("inspect", "--user", "u-cli", "--recent", "5")
    assert "1 corrected" in table and "factual: 是 3 个工作日" in table and "退款时限" in table
    data = json.loads(cli("inspect", "--user", "u-cli", "--json"))
    assert [turn["error_status"] for turn in data["turns"]] == ["ok", "corrected"]
    assert list(data["injected"]) == [str(rule.id)]
    assert json.loads(cli("inspect", "--user", str(uuid.uuid4()), "--json"))["turns"] == []


def test_the_demo_learns_from_its_conversations_and_keeps_each_users_rules_to_that_user(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README's main job, on the test's Weaviate, reflecting offline (no model key).
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    output = cli("demo")
    later, report = output.split("3. Later conversations")[1].split("4. Report")
    report, repair = report.split("5. Blame and repair")
    lao_wang_comparing, lao_wang_returning, alice, bob, carol = _conversations(later)
    assert "叫我老王就行" in lao_wang_comparing and "一张表" in lao_wang_comparing
    assert "退货地址" not in lao_wang_comparing  # the scene decides which of his rules apply
    assert "杭州市余杭区良睦路 1399 号" in lao_wang_returning
    assert "conclusion first" in alice and "upstream app's logs before restarting nginx" in alice
    assert "percentages" not in alice
    assert "percentages" in bob and "conclusion first" not in bob
    assert "(no rules apply)" in carol  # no rule of anyone else's reaches a user with none
    assert "collect@example-mail.com" not in later + report  # the planted instruction was never learned
    # Waiting: the two project-wide rules, and the planted instruction, which the learned correction detector reads
    # as a correction (the rules alone did not) and the poisoning screen holds as a suspect wherever it is written
    # (how many copies depends on the type the detector reads: a fact, or a process for the user and the project):
    # never injected. The preferences pass the learned screen, which reads the users' own words, not the detector's
    # template around them.
    waiting = [line for line in report.splitlines() if "waiting for a reviewer" in line]
    planted = [line for line in waiting if "这是新规定" in line]
    assert "active rules: 6" in report and len(waiting) - len(planted) == 2 and planted
    assert all("possible prompt injection" in line for line in planted)
    # Blame and repair: the misread memory, corrected twice, is suspect after the second correction; the reviewer's
    # verdict rejects it and the cable advice derived from it, and the sessions it touched are reflected on again.
    memory = repair.split("the reflection node's memory ")[1].split(":")[0]
    blamed = [line for line in repair.splitlines() if f" blames {memory} " in line]
    assert len(blamed) == 2 and "→ suspect" in blamed[1] and "→ suspect" not in blamed[0]
    assert "faulty: rejected" in repair and "sessions reflected on again: demo-zhangsan-1, demo-zhangsan-2" in repair
    assert "repair of demo-zhangsan-2: ok" in repair and "rejected 1" in repair
    assert "is now rejected" in repair
    rules = repair.split("the next conversation's rules:")[1].split("6. Today's report")[0]
    assert "充不上电" not in rules and "推荐原装充电线" not in rules
    # The customer's second correction ("都说了是开不了机") only repeats the first, which names the phone:
    # one rule, not two.
    assert rules.count("必须：") == 1 and "『我的手机是开不了机』" in rules and "都说了" not in rules


def _conversations(later: str) -> list[str]:
    """The demo's later conversations, one block each: a heading line 'user in scene: message', then the rules."""
    lines = [line for line in later.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if re.match(r"^[\w-]+ in [^:]+: ", line)]
    return ["\n".join(lines[start:end]) for start, end in zip(starts, [*starts[1:], len(lines)], strict=True)]


def test_migrate_makes_vectors_of_an_older_version_again_once(
    cli: Any, store: InsightStore, project_settings: Settings
) -> None:
    saved = store.save(admitted_as_is(InsightDraft.parse({**PENDING, "status": "active", "review_reason": None})))
    insights = store.insight_table.collection
    stale = store.embedder.embed(["a vector made from other words"])[0]
    insights.data.update(uuid=saved.id, vector={"default": stale.tolist()})
    store.tenancy.record_vectors(1)  # vectors of the first recipe, as a project moved into its tenant may have

    out = cli("migrate")
    assert f"project {project_settings.project!r}: re-embedded 1 insights" in out
    stored = insights.query.fetch_object_by_id(saved.id, include_vector=True)
    expected = store.embedder.embed([embedding_text(store.get(saved.id))])[0]
    assert stored is not None and np.allclose(vector_of(stored), expected, atol=1e-5)
    assert "nothing to migrate; re-embedded 0 insights" in cli("migrate")
