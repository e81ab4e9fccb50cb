"""The answer contract: the JSON schema sent to models and the pydantic shape that checks answers stay one
contract; parsing is all or nothing; what a model may not decide is ignored and reported."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hindsight_insights.llm_json import TRUSTED_FIELDS
from hindsight_insights.models import InsightKind
from hindsight_insights.reflection import REFLECTION_SCHEMA, MalformedOutput, parse_output
from hindsight_insights.reflection.output import ReflectedEvidence, ReflectedInsight

GOOD: dict[str, Any] = {
    "topic": "称呼",
    "kind": "preference",
    "scene": "general",
    "observation": "用户说“叫我老王就行，别叫王老师”。",
    "action": "当你称呼这位用户时，叫他“老王”，不要叫“王老师”。",
    "evidence": {"quote": "叫我老王就行，别叫王老师", "turn": 1, "session": None},
    "confidence": 0.9,
    "tags": ["称呼"],
    "condition": None,
    "condition_detail": None,
}


def test_schema_and_model_describe_the_same_fields() -> None:
    items = REFLECTION_SCHEMA.json_schema["properties"]["insights"]["items"]
    assert set(items["properties"]) == set(ReflectedInsight.model_fields) == set(items["required"])
    evidence = items["properties"]["evidence"]
    assert set(evidence["properties"]) == set(ReflectedEvidence.model_fields) == set(evidence["required"])
    assert items["properties"]["kind"]["enum"] == [kind.value for kind in InsightKind]
    assert not set(TRUSTED_FIELDS) & set(items["properties"])  # whose, for whom, from where, reviewed: not the model's
    assert items["additionalProperties"] is False and REFLECTION_SCHEMA.json_schema["additionalProperties"] is False


def test_a_good_answer_parses_in_every_form_a_model_sends() -> None:
    body = {"insights": [GOOD]}
    as_text = json.dumps(body, ensure_ascii=False)
    for content in (as_text, f"```json\n{as_text}\n```", body):
        (insight,) = parse_output(content).insights
        assert insight.kind is InsightKind.PREFERENCE and insight.evidence.turn == 1


@pytest.mark.parametrize("content", ['{"insights": []}', "{}", {"insights": []}])
def test_nothing_learned(content: str | dict[str, Any]) -> None:
    assert parse_output(content).insights == []


@pytest.mark.parametrize(
    ("content", "problems"),
    [
        (
            "I found one insight: the user wants to be called Lao Wang.",
            "answer: is not valid JSON (Expecting value at line 1)",
        ),
        ('[{"topic": "称呼"}]', 'answer: must be one JSON object, e.g. {"topic": ..., "action": ...}'),
        ({"insight": [GOOD]}, "insights: Field required; insight: Extra inputs are not permitted"),
        (
            {"insights": [{**GOOD, "kind": "rule"}]},
            "insights.0.kind: Input should be 'preference', 'fact', 'process' or 'lesson'",
        ),
        ({"insights": [{**GOOD, "confidence": 1.5}]}, "insights.0.confidence: Input should be less than or equal to 1"),
        ({"insights": [{**GOOD, "evidence": {"turn": 1}}]}, "insights.0.evidence.quote: Field required"),
    ],
)
def test_malformed_answers_name_every_problem(content: str | dict[str, Any], problems: str) -> None:
    with pytest.raises(MalformedOutput) as caught:
        parse_output(content)
    assert str(caught.value) == problems


def test_trusted_fields_are_ignored_and_reported() -> None:
    sneaky = {
        **GOOD,
        "user_id": "admin",
        "status": "active",
        "scope": "project",
        "source": "manual",
        "evidence": {**GOOD["evidence"], "session_id": "someone-elses"},
    }
    parsed = parse_output({"insights": [GOOD, sneaky]})
    assert len(parsed.insights) == 2 and parsed.insights[1] == parsed.insights[0]
    assert parsed.ignored == [
        "insights.1.evidence.session_id",
        "insights.1.scope",
        "insights.1.source",
        "insights.1.status",
        "insights.1.user_id",
    ]
