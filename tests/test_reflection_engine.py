"""The engine's own rules, on the in-memory store: scope that cannot leak, the model-free extractor path, sessions
that cannot be reflected on, the caps, and what one reflection costs."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import anthropic._base_client
import pytest

from hindsight_insights.config import Settings
from hindsight_insights.models import InsightStatus, Scope, TurnSignals
from hindsight_insights.reflection import (
    REFLECTION_SCHEMA,
    AnthropicReflector,
    ExtractionRequest,
    OpenAICompatibleReflector,
    ReflectedEvidence,
    ReflectedInsight,
    ReflectionEngine,
    load_reflector,
)
from hindsight_insights.reflection.offline import OfflineExtractor
from testkit.memory_store import MemoryStore
from tests.reflection_support import (
    FakeAnthropicApi,
    anthropic_engine,
    insight_json,
    message,
    ok,
    record,
    record_labelled,
    text,
    usage,
)


@pytest.fixture
def store(project_settings: Settings) -> MemoryStore:
    """The store in memory (testkit/memory_store.py): reflection needs the turn log and the saving, not Weaviate."""
    return MemoryStore(project_settings)


NAME_QUOTE = "叫我老王就行，别叫王老师"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anthropic._base_client, "INITIAL_RETRY_DELAY", 0.001)


@pytest.fixture
def api() -> FakeAnthropicApi:
    return FakeAnthropicApi()


def answer(*insights: dict[str, object]) -> dict[str, object]:
    return message([text(json.dumps({"insights": list(insights)}, ensure_ascii=False))])


def name_insight(turn: int = 1) -> dict[str, object]:
    return insight_json(
        NAME_QUOTE,
        turn=turn,
        topic="称呼",
        scene="general",
        action="当你称呼这位用户时，叫他“老王”，不要叫“王老师”。",
    )


def test_a_user_lesson_is_saved_for_that_user_and_reaches_no_other(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record(
        store,
        "s-wang",
        "u_laowang",
        "数据分析",
        [("查一下订单量", "王老师您好，12,480 单。"), (NAME_QUOTE, "好的老王。")],
    )
    api.on("POST", "/v1/messages", ok(answer(name_insight())))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("s-wang")

    (insight_id,) = report.created
    saved = store.get(insight_id)
    assert (saved.user_id, saved.scope, saved.status) == ("u_laowang", Scope.USER, InsightStatus.ACTIVE)
    # Who it can reach (recall's scope filter; how recall ranks it is tests/test_search.py's).
    assert store.visible_ids([insight_id], "u_laowang") == {insight_id}
    assert store.visible_ids([insight_id], "u_zhangli") == set() and store.visible_ids([insight_id], None) == set()


def test_a_models_project_scope_is_ignored_and_the_lesson_stays_with_its_user(
    store: MemoryStore, api: FakeAnthropicApi
) -> None:
    """The reflection schema has no scope; a model that writes one anyway (or a user id, a source, a status, a session)
    decides nothing: what it teaches stays with the user whose session it read (scope.py)."""
    record_labelled(store, "rs016", "s-hr")
    quote = "我们公司是 30 天，去年 7 月改的，超过 30 天财务直接退单，没有特批"
    fact = insight_json(
        quote,
        topic="差旅报销提交时限",
        kind="fact",
        scene="人事咨询",
        action="当员工问差旅报销最晚何时提交时，你回答：费用发生后 30 天内，超过 30 天财务退单，没有特批。",
        condition="temporal",
        condition_detail="去年 7 月及以后发生的差旅费用",
    )
    sneaky = {**fact, "scope": "project", "user_id": "admin", "source": "manual", "status": "active"}
    api.on("POST", "/v1/messages", ok(answer(sneaky)))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("s-hr")

    assert len(report.created) == 1 and report.pending_review == []
    assert report.ignored_fields == ["insights.0.scope", "insights.0.source", "insights.0.status", "insights.0.user_id"]
    mine = store.get(report.created[0])
    assert (mine.scope, mine.user_id, mine.status, mine.source) == (
        Scope.USER,
        "u_hr_wu",
        InsightStatus.ACTIVE,
        "reflection:anthropic",
    )
    assert (mine.condition, mine.condition_detail) == ("temporal", "去年 7 月及以后发生的差旅费用")
    assert store.list_insights(user_id=None, status=InsightStatus.PENDING_REVIEW) == []
    # Nothing project-wide is in force, so no one else is given it.
    assert [i.id for i in store.list_insights(status=InsightStatus.ACTIVE)] == [mine.id]


def test_known_topics_are_offered_and_a_new_version_supersedes(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record(store, "s-1", "u_laowang", "general", [(NAME_QUOTE, "好的老王。")])
    record(store, "s-2", "u_laowang", "general", [("还是叫我老王吧，老王听着亲切", "好的老王。")])
    record(store, "s-other", "u_zhangli", "general", [("叫我张工就行，别叫张总", "好的张工。")])
    newer = insight_json(
        "还是叫我老王吧，老王听着亲切",
        topic="称呼",
        scene="general",
        action="当你称呼这位用户时，叫他“老王”。",
        turn=0,
    )
    other = insight_json("叫我张工就行，别叫张总", topic="张工的称呼", scene="general", turn=0)
    api.on("POST", "/v1/messages", ok(answer(name_insight(turn=0))), ok(answer(other)), ok(answer(newer)))
    engine, _ = anthropic_engine(store, api)

    first = engine.reflect_session("s-1")
    engine.reflect_session("s-other")
    second = engine.reflect_session("s-2")

    assert second.superseded and store.get(first.created[0]).status is InsightStatus.SUPERSEDED
    third_prompt = api.bodies()[2]["messages"][0]["content"]
    assert "已有主题" in third_prompt and "- 称呼（场景：general）" in third_prompt
    assert "张工的称呼" not in third_prompt  # another user's topics are not shown


class NameExtractor:
    """A model-free extractor: 叫我X → a preference. Stands in for the correction-detector-based one to come."""

    name = "rules"

    def extract(self, request: ExtractionRequest) -> Sequence[ReflectedInsight]:
        found = []
        for session in request.sessions:
            for turn in session.turns:
                match = re.search(r"叫我(\S{1,4}?)就行", turn.user_message)
                if match:
                    found.append(
                        ReflectedInsight(
                            topic="称呼",
                            kind="preference",
                            scene="general",
                            action=f"当你称呼这位用户时，叫他“{match.group(1)}”。",
                            evidence=ReflectedEvidence(quote=match.group(0), turn=turn.turn_index),
                            confidence=0.8,
                        )
                    )
        # And one it got wrong: the guard drops it exactly as it drops a model's invention.
        found.append(
            ReflectedInsight(
                topic="语言",
                kind="preference",
                action="当你回答这位用户时，用英文。",
                evidence=ReflectedEvidence(quote="please answer in English"),
                confidence=0.6,
            )
        )
        return found


def test_an_extractor_is_verified_and_saved_like_a_model(store: MemoryStore) -> None:
    record(store, "s-x", "u_laowang", "数据分析", [("查一下订单量", "王老师您好。"), (NAME_QUOTE, "好的老王。")])
    engine = ReflectionEngine(store, NameExtractor())

    report = engine.reflect_session("s-x")

    assert report.outcome == "ok" and report.llm_calls == 0 and report.tokens_in == 0 and report.model == "rules"
    assert report.source == "reflection:rules" and len(report.created) == 1
    assert [(d.topic, d.reason) for d in report.dropped] == [("语言", "quote_not_in_transcript")]
    saved = store.get(report.created[0])
    assert saved.evidence.quote == "叫我老王就行" and saved.evidence.turn == 1 and saved.scene == "general"


def test_sessions_that_cannot_be_reflected_on_cost_no_call(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record(store, "shared", "u_a", "general", [("hello there", "hi")])
    record(store, "shared", "u_b", "general", [("and me too", "hi")])
    engine, _ = anthropic_engine(store, api)

    mixed = engine.reflect_session("shared")
    empty = engine.reflect_session("never-recorded")
    two = engine.reflect(["a", "b"], "session")

    assert mixed.outcome == "failed" and mixed.reason is not None and "2 users" in mixed.reason
    assert empty.reason == "no stored turns for session never-recorded"
    assert two.reason == "the session variant reflects on one session, not 2"
    assert api.requests == []


def test_a_caller_acting_for_one_user_cannot_reflect_on_anothers_session(
    store: MemoryStore, api: FakeAnthropicApi
) -> None:
    record(store, "s-alice", "u_alice", "general", [(NAME_QUOTE, "好的老王。")])
    engine, _ = anthropic_engine(store, api)

    refused = engine.reflect_session("s-alice", user_id="u_bob")
    anomaly = engine.reflect_anomaly("s-alice", user_id="u_bob")

    for report in (refused, anomaly):
        assert report.outcome == "failed" and report.user_id is None and report.llm_calls == 0
        assert report.reason == "the session's turns belong to another user than the one this reflection acts for"
    assert "u_alice" not in str(refused.reason) and api.requests == []
    api.on("POST", "/v1/messages", ok(answer()))
    assert engine.reflect_session("s-alice", user_id="u_alice").outcome == "ok"  # the session's own user may


def test_a_ten_turn_session_costs_one_call_and_reports_its_prompt_tokens(
    store: MemoryStore, api: FakeAnthropicApi
) -> None:
    turns = [
        (f"第 {n} 个问题：华东区第 {n} 周的订单量是多少？", f"第 {n} 周华东区订单量 {12000 + n * 37} 单。")
        for n in range(10)
    ]
    record(store, "s-10", "u_ops", "数据分析", turns)
    api.on("POST", "/v1/messages", ok(message([text('{"insights": []}')], message_usage=usage(702, 2874, 0, 12))))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("s-10")

    assert len(api.requests) == 1 and report.llm_calls == 1
    assert (report.tokens_in, report.cached_tokens, report.cached_share) == (3576, 2874, round(2874 / 3576, 4))
    prompt = api.bodies()[0]["messages"][0]["content"]
    assert all(f"[S1 第 {n} 轮]" in prompt for n in range(10))


def test_the_transcript_sent_is_capped_newest_turns_first(store: MemoryStore, api: FakeAnthropicApi) -> None:
    long_turns = [(f"问题 {n}：" + "很长的背景说明。" * 120, "回答。" * 300) for n in range(12)]
    record(store, "s-long", "u_long", "general", long_turns)
    api.on("POST", "/v1/messages", ok(message([text('{"insights": []}')])))
    engine, _ = anthropic_engine(store, api, reflection_max_transcript_chars=6000)

    engine.reflect_session("s-long")

    prompt = api.bodies()[0]["messages"][0]["content"]
    assert len(prompt) < 6000 + 1500  # the cap on message text, plus the markers around it
    assert "[S1 第 11 轮]" in prompt and "[S1 第 0 轮]" not in prompt
    assert re.search(r"（为控制篇幅，前面 \d+ 轮未列出）", prompt)


def test_limits_and_field_rules_drop_candidates_with_the_reason(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record_labelled(store, "rs002", "s-many")
    quote = "以后先说结论，选哪个，然后最多给三个理由"
    too_long = insight_json(quote, topic="结" * 121)
    short = insight_json("太长了", topic="篇幅")
    many = [insight_json(quote, topic=f"主题 {n}") for n in range(9)]
    api.on("POST", "/v1/messages", ok(answer(too_long, short, *many)))
    engine, _ = anthropic_engine(store, api)

    report = engine.reflect_session("s-many")

    reasons = [(d.index, d.reason) for d in report.dropped]
    assert reasons[:2] == [(0, "invalid_fields"), (1, "quote_too_short")]
    assert reasons[2:] == [(8, "over_limit"), (9, "over_limit"), (10, "over_limit")]
    assert report.dropped[0].detail == "topic: String should have at most 120 characters"
    assert len(report.saved_ids) == 6 and report.candidates == 11


def test_anomaly_variant_points_at_the_flagged_turn(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record(
        store,
        "s-flag",
        "u_grace",
        "数据分析",
        [("What was our ad spend last month?", "$48,200."), ("In EUR!", "€44,300.")],
        signals={1: TurnSignals(feedback="dislike", correction=True)},
    )
    api.on("POST", "/v1/messages", ok(message([text('{"insights": []}')])))
    engine, _ = anthropic_engine(store, api, language="en")

    report = engine.reflect_anomaly("s-flag")

    body = api.bodies()[0]
    assert report.variant == "anomaly" and report.outcome == "ok"
    assert "[S1 turn 1 · signals: disliked, correction]" in body["messages"][0]["content"]
    assert body["messages"][0]["content"].endswith(
        "Flagged turns: S1 turn 1.\n"
        'Answer with the insights these conversations teach the assistant, or {"insights": []} when they teach '
        "nothing."
    )
    assert "The conversation below was flagged" in body["system"][0]["text"]


def test_nightly_reads_one_users_sessions_oldest_first(store: MemoryStore, api: FakeAnthropicApi) -> None:
    record(store, "mon", "u_grace", "数据分析", [("Ad spend in EUR please", "€44,300.")])
    record(store, "tue", "u_grace", "数据分析", [("CPA for October, EUR please", "€18.40.")])
    repeated = insight_json(
        "CPA for October, EUR please",
        turn=0,
        session="S2",
        topic="currency",
        scene="数据分析",
        action="When you report money to this user, give it in EUR.",
    )
    api.on("POST", "/v1/messages", ok(answer(repeated)))
    engine, _ = anthropic_engine(store, api, language="en")

    report = engine.reflect_user(["tue", "mon"])

    prompt = api.bodies()[0]["messages"][0]["content"]
    assert prompt.index('<session id="S1" scene="数据分析">\n[S1 turn 0]\nuser: Ad spend in EUR please') < prompt.index(
        '<session id="S2"'
    )
    assert report.session_ids == ["mon", "tue"] and report.variant == "nightly"
    assert store.get(report.created[0]).evidence.session_id == "tue"


def test_the_settings_choose_the_reflector(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_ANTHROPIC_EFFORT", "")
    monkeypatch.setenv("HINDSIGHT_ANTHROPIC_MODEL", "claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    from_env = Settings(_env_file=None)
    assert from_env.anthropic_effort is None and from_env.reflection_llm == "auto"  # a key: Anthropic
    claude = load_reflector(from_env)
    assert isinstance(claude, AnthropicReflector) and claude.model == "claude-haiku-4-5"
    sent = claude.request("system", "user", REFLECTION_SCHEMA)
    assert sent["output_config"] == {"format": {"type": "json_schema", "schema": REFLECTION_SCHEMA.json_schema}}
    chat = load_reflector(
        settings.model_copy(
            update={"reflection_llm": "openai", "reflection_base_url": "http://127.0.0.1:9/v1", "reflection_model": "m"}
        )
    )
    assert isinstance(chat, OpenAICompatibleReflector) and chat.mode == "json_schema"
    assert isinstance(load_reflector(settings.model_copy(update={"reflection_llm": "offline"})), OfflineExtractor)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert isinstance(load_reflector(Settings(_env_file=None)), OfflineExtractor)  # no key, no endpoint
