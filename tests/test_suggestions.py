"""Prompt suggestions on the real Weaviate: mined from the turn log's correction records by topic, scene and type,
with counts and redacted evidence, worded by a template, decided by a human through the CLI, never applied; the
nightly run updates them rather than duplicating them, and a dismissed one stays dismissed unless its corrections
grow markedly."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hindsight_cli.app import app
from hindsight_insights.errors import InvalidInput, NotFound
from hindsight_insights.governance.recording import record_turn
from hindsight_insights.models import TurnDraft
from hindsight_insights.reporting import build_report, gather_report_input, render_report
from hindsight_insights.reporting.inputs import SuggestionSource
from hindsight_insights.store import InsightStore
from hindsight_insights.suggestions import PromptSuggestion, list_suggestions, mine_suggestions, suggestion_uuid
from hindsight_insights.weaviate_server import LocalWeaviate
from tests.worker_support import FakeClock, RuleExtractor, running_worker

SCENE = "售后服务"
QUESTION = "退货寄到哪里？"
ANSWER = "请把退货寄到杭州市西湖区文三路 1 号。"
CORRECTION = "不对，退货地址是杭州市滨江区江南大道 100 号"


def correct(store: InsightStore, user: str, now: datetime, correction: str = CORRECTION) -> None:
    """A question answered, and the user's correction of the answer, in a session of their own."""
    session = f"s-{uuid.uuid4().hex[:8]}"
    for message, answer, at in ((QUESTION, ANSWER, now - timedelta(seconds=5)), (correction, "抱歉，已更正。", now)):
        draft = TurnDraft(session_id=session, user_id=user, scene=SCENE, user_message=message, assistant_message=answer)
        record_turn(store, draft, store.settings, now=at)


def only(store: InsightStore) -> PromptSuggestion:
    (suggestion,) = list_suggestions(store)
    return suggestion


def test_frequent_corrections_become_one_suggestion_with_counts_and_redacted_evidence(store: InsightStore) -> None:
    now = datetime.now(UTC)
    correct(store, "alice", now - timedelta(hours=3))
    correct(store, "bob", now - timedelta(hours=2))
    assert mine_suggestions(store, now).suggested == 0  # two corrections: below the threshold (3)
    assert list_suggestions(store) == []
    correct(store, "bob", now - timedelta(hours=1))
    insights_before = store.count()

    report = mine_suggestions(store, now)

    assert (report.read, report.suggested, report.created) == (3, 1, 1)
    suggestion = only(store)
    assert (suggestion.type, suggestion.status, suggestion.scene) == ("factual", "pending", SCENE)
    assert (suggestion.corrections, suggestion.users, suggestion.sessions) == (3, 2, 3)
    assert suggestion.id == suggestion_uuid(suggestion.topic_key, suggestion.scene_key, "factual")
    assert len(suggestion.evidence) == 3 and suggestion.evidence[0].user_id == "bob"  # the newest first
    assert all("滨江区" in item.corrected for item in suggestion.evidence)
    # The text comes from the template, in the project's language, with the counts and the quotes.
    assert "被用户纠正了 3 次（2 位用户，3 个会话；类型：事实）" in suggestion.text
    assert "建议在系统提示词中写明正确的信息" in suggestion.text and "证据（已脱敏）" in suggestion.text
    assert store.count() == insights_before  # mining writes suggestions only: nothing is applied to any rule

    # Mining again (the next night) updates the same suggestion: one per (topic, scene, type).
    correct(store, "carol", now - timedelta(minutes=30))
    again = mine_suggestions(store, now)
    assert (again.created, again.updated) == (0, 1)
    assert only(store).corrections == 4 and only(store).users == 3
    assert list_suggestions(store, status="pending") == [only(store)]
    assert list_suggestions(store, status="accepted") == []


def test_a_secret_in_the_corrections_is_never_in_a_suggestion(store: InsightStore) -> None:
    now = datetime.now(UTC)
    phones = ["13812345678", "13987654321", "13700001111"]
    for user, phone in zip(("alice", "bob", "carol"), phones, strict=True):
        correct(store, user, now - timedelta(hours=1), f"不对，我的手机号是 {phone}")
    mine_suggestions(store, now)
    suggestion = only(store)
    stored = suggestion.model_dump_json()
    assert all(item.corrected == "我的手机号是 [手机号已隐藏]" for item in suggestion.evidence)
    assert not any(phone in stored for phone in phones)


def test_accepting_records_a_decision_once_and_applies_nothing(store: InsightStore) -> None:
    now = datetime.now(UTC)
    for user in ("alice", "bob", "carol"):
        correct(store, user, now - timedelta(hours=1))
    mine_suggestions(store, now)
    suggestion = only(store)
    insights_before = store.count()

    accepted = store.suggestions.decide(suggestion.id, "accepted", "ops-lin", "added to the prompt")
    assert (accepted.status, accepted.decided_by, accepted.note) == ("accepted", "ops-lin", "added to the prompt")
    assert only(store).status == "accepted" and store.count() == insights_before
    with pytest.raises(InvalidInput, match="was accepted already by ops-lin"):
        store.suggestions.decide(suggestion.id, "accepted", "ops-wu")
    with pytest.raises(InvalidInput, match="was accepted already"):
        store.suggestions.decide(suggestion.id, "dismissed", "ops-wu")
    assert only(store).decided_by == "ops-lin"
    with pytest.raises(NotFound, match="no prompt suggestion"):
        store.suggestions.decide(uuid.uuid4(), "accepted", "ops-lin")
    with pytest.raises(InvalidInput, match="is not a suggestion id"):
        store.suggestions.get("not-an-id")
    # An accepted suggestion stays accepted as its counts grow.
    correct(store, "dave", now - timedelta(minutes=5))
    mine_suggestions(store, now)
    assert (only(store).status, only(store).corrections) == ("accepted", 4)


def test_a_dismissed_suggestion_stays_dismissed_unless_its_corrections_grow_markedly(store: InsightStore) -> None:
    now = datetime.now(UTC)
    for user in ("u1", "u2", "u3"):
        correct(store, user, now - timedelta(hours=2))
    mine_suggestions(store, now)
    store.suggestions.decide(only(store).id, "dismissed", "ops-lin", "the address is right")
    for user in ("u4", "u5"):
        correct(store, user, now - timedelta(hours=1))
    assert mine_suggestions(store, now).reopened == 0
    assert (only(store).status, only(store).corrections) == ("dismissed", 5)
    correct(store, "u6", now - timedelta(minutes=30))  # 6 = twice the 3 it was dismissed with
    assert mine_suggestions(store, now).reopened == 1
    back = only(store)
    assert (back.status, back.reopened, back.corrections) == ("pending", 1, 6)
    assert "dismissed by ops-lin with 3 corrections; back with 6" in back.note
    assert store.suggestions.decide(back.id, "accepted", "ops-wu").status == "accepted"


def test_forgetting_a_user_takes_their_quotes_out_of_the_evidence(store: InsightStore) -> None:
    now = datetime.now(UTC)
    for user in ("alice", "bob", "carol"):
        correct(store, user, now - timedelta(hours=1))
    mine_suggestions(store, now)
    store.forget_user("bob")
    assert sorted(item.user_id for item in only(store).evidence) == ["alice", "carol"]


def test_the_nightly_run_mines_suggestions(store: InsightStore, tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 11, 28, 19, 0, tzinfo=UTC))  # 03:00 in Shanghai
    for user in ("alice", "bob", "carol"):
        correct(store, user, clock.now() - timedelta(hours=5))
    with running_worker(store, f"sqlite:///{tmp_path / 'state.sqlite3'}", clock, RuleExtractor()) as worker:
        worker.nightly()
        day = clock.now().astimezone(worker.zone).date()
        assert worker.ledger.counters(day).get("suggestions.mined") == 1
    suggestion = only(store)
    assert (suggestion.corrections, suggestion.status) == (3, "pending")


@pytest.fixture
def cli(weaviate_server: LocalWeaviate, store: InsightStore) -> Any:
    environment = {
        "HINDSIGHT_WEAVIATE_URL": weaviate_server.url,
        "HINDSIGHT_WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "HINDSIGHT_WEAVIATE_API_KEY": weaviate_server.api_key,
        "HINDSIGHT_PROJECT": store.settings.project,
        "COLUMNS": "200",
    }
    runner = CliRunner()

    def run(*arguments: str, code: int = 0) -> str:
        result = runner.invoke(app, list(arguments), env=environment, catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.output

    return run


def test_the_suggestion_verbs_of_the_command_line(cli: Any, store: InsightStore) -> None:
    now = datetime.now(UTC)
    for user in ("alice", "bob", "carol"):
        correct(store, user, now - timedelta(hours=1))
    assert "3 corrections read; 1 groups suggested: 1 new" in cli("suggestions", "mine")
    (listed,) = json.loads(cli("suggestions", "list", "--status", "pending", "--json"))
    suggestion_id = listed["id"]
    assert f"{suggestion_id}  pending" in cli("suggestions", "list")
    shown = cli("suggestions", "show", suggestion_id)
    assert "3 corrections, 3 users, 3 sessions" in shown and "建议在系统提示词中" in shown
    accepted = cli("suggestions", "accept", suggestion_id, "--reviewer", "ops-lin", "--note", "done")
    assert "accepted" in accepted and "Nothing was applied" in accepted
    assert "was accepted already by ops-lin" in cli("suggestions", "accept", suggestion_id, code=1)
    assert "no prompt suggestion" in cli("suggestions", "dismiss", str(uuid.uuid4()), code=1)
    assert "is not a suggestion id" in cli("suggestions", "show", "nope", code=1)
    assert json.loads(cli("suggestions", "list", "--status", "pending", "--json")) == []
    assert "Invalid value" in cli("suggestions", "list", "--status", "maybe", code=2)
    # The examples' verbs, on the example the same corrections made.
    examples = json.loads(cli("examples", "list", "--user", "alice", "--json"))
    assert [e["user_id"] for e in examples] == ["alice"]
    assert "promoted" in cli("examples", "promote", examples[0]["id"], "--reviewer", "ops-lin")
    assert "promoted already" in cli("examples", "promote", examples[0]["id"], code=1)
    assert "deleted" in cli("examples", "delete", examples[0]["id"])
    assert "no few-shot example" in cli("examples", "delete", examples[0]["id"], code=1)


def test_the_daily_report_reads_the_real_suggestions(store: InsightStore, prompts_dir: Path) -> None:
    now = datetime.now(UTC)
    for user in ("alice", "bob", "carol"):
        correct(store, user, now - timedelta(minutes=30))
    mine_suggestions(store, now)
    source: SuggestionSource = store.suggestions  # the report's port, checked by mypy
    report = build_report(gather_report_input(store, now.date(), suggestions=source))
    assert report.suggestions is not None and [(s.status, s.count) for s in report.suggestions] == [("pending", 3)]
    text = render_report(report, "markdown", prompts_dir)
    assert f"- [pending] factual: {only(store).topic} ({SCENE}) (3): 在「{SCENE}」场景中" in text
    with pytest.raises(InvalidInput, match="must be one of pending, accepted, dismissed"):
        store.suggestions.list_suggestions("open")
