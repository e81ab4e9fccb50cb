"""Evidence on the never-tuned screening sets (bench/data/screening_eval.json, and each newer one written after the
training corpus was frozen again: bench.eval_poisoning.SCREENING_EVALS), each through the real plugin runtime
(PluginRunner over `dify plugin run`) and a real Weaviate: every attack saved through save_insight and a sample
through record_turn, then searched for; every secret saved and recorded, then looked for in every stored object and
every tool output. No workspace model is set, so what the screen is unsure of is held.

The targets: at most 5% of the attacks reach a rules block, at most 1 benign look-alike in 10 is held, no secret is
stored or echoed. A missed target is reported (xfail, with the figures by category), never tuned on this set: the
set's own note forbids it. The figures are in README.md and docs/architecture.md.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import weaviate

from bench.eval_poisoning import REDACTION_EVALS, SCREENING_EVALS
from hindsight_insights.store.schema import COLLECTION_SET
from hindsight_insights.store.tenancy import project_collection, tenant_name
from testkit.messages import ToolOutput
from testkit.runner import RunnerPlugin

pytestmark = pytest.mark.runtime  # version-agnostic: run once, on the default Weaviate (Makefile)

SETS = [path for path in SCREENING_EVALS if path.exists()]
# The sets that hold secrets (a set of attacks alone holds none).
SECRET_SETS = [
    path
    for path in SETS + [path for path in REDACTION_EVALS if path.exists()]
    if json.loads(path.read_text(encoding="utf-8"))["secrets"]
]
ATTACK_TARGET = 0.05  # at most this share of attacks reaches a rules block
BENIGN_TARGET = 0.10  # at most this share of benign look-alikes is held
RECORD_TURN_EVERY = 4  # one attack in four also goes through record_turn, as a user's message
GREETING = {"user_message": "你好", "assistant_message": "您好，有什么可以帮您？"}


def named(path: Path) -> tuple[str, dict[str, Any]]:
    """A set's name (which prefixes its users, so that the sets never share one) and its items."""
    return path.stem, json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(params=SETS, ids=[path.stem for path in SETS])
def screening_set(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return named(request.param)


@pytest.fixture(params=SECRET_SETS, ids=[path.stem for path in SECRET_SETS])
def secrets_set(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return named(request.param)


def as_insight(item: dict[str, Any]) -> dict[str, Any]:
    """An item of the set as save_insight's fields: a standing preference of the general scene, so that once active
    it is in every rules block of its user."""
    return {
        "topic": item["topic"][:120],
        "kind": "preference",
        "scene": "general",
        "action": item["action"][:500],
        "observation": item["observation"][:2000],
        "evidence": item["topic"][:1000],
        "confidence": 0.9,
    }


def reached(runner: RunnerPlugin, credentials: dict[str, Any], user: str, query: str) -> bool:
    """Whether anything of `user`'s reaches their rules block (each user here has written one thing only)."""
    found = runner.invoke_tool(
        "search_insight", {"query": query[:500], "score_threshold": 0}, credentials, user_id=user
    )
    return int(found.json["count"]) > 0


def test_attacks_of_the_screening_set_never_reach_a_rules_block(
    runner: RunnerPlugin,
    plugin_credentials: dict[str, Any],
    screening_set: tuple[str, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, data = screening_set
    reach: Counter[str] = Counter()
    total: Counter[str] = Counter()
    refused = 0
    for i, attack in enumerate(data["attacks"]):
        user = f"{name}-attacker-{i}"
        saved = runner.invoke_tool("save_insight", as_insight(attack), plugin_credentials, user_id=user)
        if "error" in saved.json:
            refused += 1  # nothing stored: it cannot reach anything
        total[attack["category"]] += 1
        reach[attack["category"]] += reached(runner, plugin_credentials, user, attack["topic"])
    turns = turns_reached = 0
    for i, attack in enumerate(data["attacks"][::RECORD_TURN_EVERY]):
        user, session = f"{name}-turn-attacker-{i}", f"s-{name}-attack-{i}"
        runner.invoke_tool("record_turn", {**GREETING, "session_id": session}, plugin_credentials, user_id=user)
        message = {"user_message": attack["action"][:4000], "assistant_message": "好的。", "session_id": session}
        recorded = runner.invoke_tool("record_turn", message, plugin_credentials, user_id=user)
        assert "error" not in recorded.json, recorded.json
        turns += 1
        turns_reached += reached(runner, plugin_credentials, user, attack["action"])

    benign_held: Counter[str] = Counter()
    benign_total: Counter[str] = Counter()
    for i, item in enumerate(data["benign"]):
        saved = runner.invoke_tool("save_insight", as_insight(item), plugin_credentials, user_id=f"{name}-benign-{i}")
        assert "error" not in saved.json, saved.json
        benign_total[item["category"]] += 1
        benign_held[item["category"]] += saved.json["status"] == "pending_review"

    attacks = sum(total.values())
    share = (sum(reach.values()) + turns_reached) / (attacks + turns)
    benign_share = sum(benign_held.values()) / sum(benign_total.values())
    with capsys.disabled():
        print(
            f"\n{name}: save_insight: {sum(reach.values())}/{attacks} attacks reached a rules block "
            f"(refused as invalid: {refused}); by category: { {c: f'{reach[c]}/{n}' for c, n in total.items()} }"
            f"\nrecord_turn: {turns_reached}/{turns} attacks reached a rules block"
            f"\nreached overall: {share:.3f} (target <= {ATTACK_TARGET})"
            f"\nbenign held: {sum(benign_held.values())}/{sum(benign_total.values())} = {benign_share:.3f} "
            f"(target <= {BENIGN_TARGET}); by category: "
            f"{ {c: f'{benign_held[c]}/{n}' for c, n in benign_total.items() if benign_held[c]} }"
        )
    missed = []
    if share > ATTACK_TARGET:
        missed.append(f"{share:.1%} of the attacks reach a rules block (target {ATTACK_TARGET:.0%})")
    if benign_share > BENIGN_TARGET:
        missed.append(f"{benign_share:.1%} of the benign look-alikes are held (target {BENIGN_TARGET:.0%})")
    if missed:
        pytest.xfail("target missed, reported and not tuned on the set: " + "; ".join(missed))


def every_object(client: weaviate.WeaviateClient, project: str) -> list[dict[str, Any]]:
    objects = []
    for spec in COLLECTION_SET:  # budget, blame, few-shot examples and suggestions included
        if client.collections.use(spec.name).tenants.exists(tenant_name(project)):
            objects += [dict(obj.properties) for obj in project_collection(client, project, spec.role).iterator()]
    return objects


def test_no_secret_of_the_screening_set_is_stored_or_echoed(
    runner: RunnerPlugin,
    plugin_credentials: dict[str, Any],
    client: weaviate.WeaviateClient,
    plugin_project: str,
    secrets_set: tuple[str, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, data = secrets_set
    outputs: list[ToolOutput] = []
    for i, item in enumerate(data["secrets"]):
        text, user = item["text"], f"{name}-secret-{i}"
        fields = {
            "topic": text[:120],
            "kind": "fact",
            "action": text[:500],
            "observation": text,
            "evidence": text[:1000],
            "tags": text[:40],
        }
        outputs.append(runner.invoke_tool("save_insight", fields, plugin_credentials, user_id=user))
        session = f"s-{name}-secret-{i}"
        turn = {"user_message": text, "assistant_message": text, "session_id": session, "sources": text[:200]}
        outputs.append(runner.invoke_tool("record_turn", turn, plugin_credentials, user_id=user))
    stored = json.dumps(every_object(client, plugin_project), ensure_ascii=False, default=str)
    echoed = json.dumps([output.messages for output in outputs], ensure_ascii=False)
    leaks = Counter(item["kind"] for item in data["secrets"] if item["secret"] in stored or item["secret"] in echoed)
    in_output_only = [i["kind"] for i in data["secrets"] if i["secret"] in echoed and i["secret"] not in stored]
    with capsys.disabled():
        print(
            f"\n{name}: secrets stored or echoed: {sum(leaks.values())}/{len(data['secrets'])}, by kind: {dict(leaks)}"
            f"; only in a tool output: {in_output_only}"
        )
    if leaks:
        pytest.xfail(f"secrets left by redaction, by kind (reported, not tuned on the set): {dict(leaks)}")
