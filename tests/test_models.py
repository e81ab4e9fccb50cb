"""Every validation rule of the insight and turn models, and that each error names the field and the rule."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hindsight_insights.errors import InvalidInput
from hindsight_insights.llm_json import insight_from_llm_json
from hindsight_insights.models import InsightContent, InsightDraft, InsightStatus, Scope, TurnDraft


def valid(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "topic": "回复风格偏好",
        "kind": "preference",
        "scene": "故障排查",
        "observation": "用户说：“别绕弯子，先说结论。”",
        "action": "排查问题时，先给出结论，再列步骤。",
        "evidence": {"quote": "别绕弯子，先说结论。", "session_id": "c-1", "turn": 3},
        "tags": ["style"],
        "confidence": 0.9,
        "user_id": "u-wang",
        "scope": "user",
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not ...}


def problems(data: dict[str, Any], now: datetime | None = None) -> dict[str, str]:
    with pytest.raises(InvalidInput) as caught:
        InsightDraft.parse(data, now=now)
    return dict(caught.value.problems)


def test_a_valid_draft_parses_with_defaults() -> None:
    draft = InsightDraft.parse(valid())
    assert draft.scope is Scope.USER
    assert draft.evidence.turn == 3
    assert draft.status is InsightStatus.ACTIVE


@pytest.mark.parametrize("field", ["topic", "scene", "action"])
@pytest.mark.parametrize("empty", ["", "   "])
def test_required_text_must_not_be_empty(field: str, empty: str) -> None:
    assert "at least 1 character" in problems(valid(**{field: empty}))[field]


def test_evidence_quote_must_not_be_empty() -> None:
    assert "at least 1 character" in problems(valid(evidence={"quote": " "}))["evidence.quote"]
    assert "evidence" in problems(valid(evidence=...))


def test_evidence_may_be_a_bare_quote() -> None:
    assert InsightDraft.parse(valid(evidence="先说结论")).evidence.quote == "先说结论"


@pytest.mark.parametrize("confidence", [-0.01, 1.01, 7])
def test_confidence_is_between_0_and_1(confidence: float) -> None:
    assert "confidence" in problems(valid(confidence=confidence))


@pytest.mark.parametrize("confidence", [0, 0.5, 1])
def test_confidence_bounds_are_inclusive(confidence: float) -> None:
    assert InsightDraft.parse(valid(confidence=confidence)).confidence == confidence


def test_expire_at_must_be_timezone_aware() -> None:
    naive = (datetime.now() + timedelta(days=3)).isoformat()
    assert "timezone" in problems(valid(expire_at=naive))["expire_at"]


def test_expire_at_must_not_be_past() -> None:
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    assert problems(valid(expire_at=past))["expire_at"] == "must be in the future (or null for no expiry)"


def test_expire_at_is_judged_against_the_callers_clock_when_it_passes_one() -> None:
    """A lesson learned at a given time (a turn recorded with its own `now`) is judged at that time, not by the wall
    clock: a week's end that has passed since is still that week's end for a turn of that week."""
    learned_at = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    sunday_night = datetime(2026, 12, 6, 15, 59, 59, tzinfo=UTC)
    assert InsightDraft.parse(valid(expire_at=sunday_night), now=learned_at).expire_at == sunday_night
    late = problems(valid(expire_at=sunday_night), now=sunday_night + timedelta(seconds=1))
    assert late["expire_at"] == "must be in the future (or null for no expiry)"


def test_expire_at_accepts_iso_8601_with_offset_or_null() -> None:
    future = (datetime.now(UTC) + timedelta(days=30)).astimezone().isoformat()
    assert InsightDraft.parse(valid(expire_at=future)).expire_at is not None
    assert InsightDraft.parse(valid(expire_at=None)).expire_at is None


def test_expire_at_rejects_garbage() -> None:
    assert "expire_at" in problems(valid(expire_at="next tuesday"))


@pytest.mark.parametrize(("field", "cap"), [("topic", 120), ("scene", 60), ("observation", 2000), ("action", 500)])
def test_text_length_caps(field: str, cap: int) -> None:
    InsightDraft.parse(valid(**{field: "字" * cap}))
    assert f"at most {cap} characters" in problems(valid(**{field: "字" * (cap + 1)}))[field]


def test_evidence_quote_cap() -> None:
    assert "at most 1000" in problems(valid(evidence={"quote": "x" * 1001}))["evidence.quote"]


def test_at_most_10_tags_each_at_most_40_chars() -> None:
    InsightDraft.parse(valid(tags=[f"t{i}" for i in range(10)]))
    assert "at most 10" in problems(valid(tags=[f"t{i}" for i in range(11)]))["tags"]
    assert "at most 40" in problems(valid(tags=["x" * 41]))["tags.0"]


def test_unknown_fields_are_rejected() -> None:
    assert problems(valid(colour="blue"))["colour"] == "Extra inputs are not permitted"


def test_kind_must_be_one_of_four() -> None:
    assert "'preference', 'fact', 'process' or 'lesson'" in problems(valid(kind="rumour"))["kind"]


def test_user_scope_needs_a_user() -> None:
    assert "user_id is required" in problems(valid(user_id=None, scope="user"))["input"]


def test_a_draft_with_a_user_must_say_its_scope_and_one_without_is_project_wide() -> None:
    """The draft never decides a scope (scope.py does): a user's draft without one is refused."""
    assert "scope is required with a user_id" in problems(valid(scope=...))["input"]
    assert InsightDraft.parse(valid(user_id=None, scope=...)).scope is Scope.PROJECT


def test_content_cannot_carry_who_where_or_review() -> None:
    """InsightContent is what a model or a person may write: no field says whose it is, its scope, session, source
    or review state."""
    content = {key: value for key, value in valid().items() if key not in ("user_id", "scope")}
    content["evidence"] = {"quote": "别绕弯子，先说结论。", "turn": 3}
    assert InsightContent.parse(content).evidence.turn == 3
    for key, value in [("user_id", "bob"), ("scope", "project"), ("source", "reviewer"), ("status", "active")]:
        with pytest.raises(InvalidInput, match=f"{key}: Extra inputs are not permitted"):
            InsightContent.parse({**content, key: value})
    with pytest.raises(InvalidInput, match="session_id: Extra inputs are not permitted"):
        InsightContent.parse({**content, "evidence": {"quote": "先说结论", "session_id": "someone-else"}})


def test_general_scene_aliases_collapse() -> None:
    assert InsightDraft.parse(valid(scene="通用")).scene == "general"
    assert InsightDraft.parse(valid(scene="General")).scene == "general"


def test_only_active_or_pending_can_be_submitted() -> None:
    assert "status" in problems(valid(status="superseded"))


def test_every_problem_is_reported_at_once() -> None:
    found = problems(valid(topic="", confidence=3, tags=["t"] * 11 + ["u"], extra=1))
    assert {"topic", "confidence", "extra"} <= set(found)


def test_error_message_lists_field_and_rule() -> None:
    with pytest.raises(InvalidInput, match=r"confidence: Input should be less than or equal to 1"):
        InsightDraft.parse(valid(confidence=2))


def test_turn_needs_session_user_and_some_text() -> None:
    with pytest.raises(InvalidInput) as caught:
        TurnDraft.parse({"session_id": "", "user_id": "u"})
    found = dict(caught.value.problems)
    assert "session_id" in found
    with pytest.raises(InvalidInput, match="user_message or assistant_message"):
        TurnDraft.parse({"session_id": "s", "user_id": "u"})


def test_turn_signals_and_injected_ids_are_validated() -> None:
    with pytest.raises(InvalidInput) as caught:
        TurnDraft.parse(
            {
                "session_id": "s",
                "user_id": "u",
                "user_message": "hi",
                "signals": {"feedback": "meh"},
                "injected_insight_ids": ["x"],
            }
        )
    found = dict(caught.value.problems)
    assert "signals.feedback" in found
    assert "injected_insight_ids.0" in found


# ---- odd inputs: converted as documented, or refused with a clear message -----------------------------------


def test_a_number_for_text_is_used_as_its_digits() -> None:
    assert InsightDraft.parse(valid(topic=404)).topic == "404"


@pytest.mark.parametrize("value", [{"quote": "x"}, ["x"], True])
def test_an_object_list_or_boolean_for_text_is_refused_not_stored_as_its_repr(value: object) -> None:
    assert problems(valid(topic=value))["topic"].startswith("must be text, not")
    assert "must be text" in problems(valid(action=value))["action"]


def test_control_characters_are_removed_and_one_line_fields_stay_one_line() -> None:
    draft = InsightDraft.parse(valid(topic="退货\x00地址\n第二行", action="第一行\n第二行\x00", tags=["a\tb"]))
    assert (draft.topic, draft.action, draft.tags) == ("退货地址 第二行", "第一行\n第二行", ["a b"])


def test_expire_at_may_be_a_unix_timestamp() -> None:
    in_a_year = int((datetime.now(UTC) + timedelta(days=365)).timestamp())
    for value in (in_a_year, str(in_a_year)):
        assert InsightDraft.parse(valid(expire_at=value)).expire_at == datetime.fromtimestamp(in_a_year, UTC)


@pytest.mark.parametrize("value", ["NaN", float("nan"), "inf", float("-inf")])
def test_numbers_must_be_finite(value: object) -> None:
    assert "finite" in problems(valid(confidence=value))["confidence"]


def test_llm_json_cannot_choose_identity_scope_session_source_or_review() -> None:
    written = {key: value for key, value in valid().items() if key not in ("user_id", "scope")}
    sneaky = {
        **written,
        "evidence": {"quote": "别绕弯子，先说结论。", "turn": 3, "session_id": "c-other"},
        "user_id": "bob",
        "scope": "project",
        "source": "reviewer",
        "status": "active",
        "review_reason": "approved",
    }
    parsed = insight_from_llm_json(json.dumps(sneaky, ensure_ascii=False))
    assert parsed.content is not None and parsed.content.evidence.quote == "别绕弯子，先说结论。"
    assert parsed.ignored == [
        "insight_json.evidence.session_id",
        "insight_json.review_reason",
        "insight_json.scope",
        "insight_json.source",
        "insight_json.status",
        "insight_json.user_id",
    ]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("[" * 100_000 + "]" * 100_000, "characters long; at most 20,000 are read"),
        ("[" * 5_000 + "]" * 5_000, "nested too deeply"),
        ('{"a":' * 3_000 + "1" + "}" * 3_000, "nested too deeply"),
        ("[1, 2]", "must be one JSON object"),
        ("{'single': 'quotes'}", "is not valid JSON"),
    ],
)
def test_llm_json_that_is_huge_deep_or_broken_is_refused(text: str, rule: str) -> None:
    with pytest.raises(InvalidInput, match=rule):
        insight_from_llm_json(text)
