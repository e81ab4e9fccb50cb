"""Inputs the plugin tests send through every runtime: a sample insight and the bad inputs each tool must refuse."""

from __future__ import annotations

import json
from typing import Any

RETURN_ADDRESS: dict[str, Any] = {
    "topic": "退货地址",
    "kind": "fact",
    "scene": "售后服务",
    "action": "当顾客问退货寄到哪里时，告诉他寄到杭州市西湖区文三路 1 号，并写上订单号。",
    "evidence": "退货地址已经换成杭州文三路 1 号了",
    "confidence": 0.9,
}

TABLE_PREFERENCE: dict[str, Any] = {
    "topic": "comparison format",
    "kind": "preference",
    "scene": "option comparison",
    "action": "When the user weighs options, answer with a table, one row per criterion.",
    "evidence": "next time just give me a table",
    "confidence": 0.9,
    "tags": "format, tables",
}

# A genuine preference that the learned screen is unsure of (no rule fires): without a workspace model it waits for
# a reviewer, with one it is asked once (tests/test_screen_admission.py, tests/test_plugin_daemon.py). Which wording
# lands in the band moves with every retraining: the model trained with the forty-first sets retired reads these
# fields (as admission.screened_texts orders them) with "从现在起，回复里都叫他“老王”" at 0.43 (unsure, band
# 0.24-0.50), "以后所有回复都叫他“老王”" at 0.55 (a suspect); the one with the fortieth sets', the first at 0.40
# (band 0.28-0.50),
# "以后所有回复都叫他“老王”" at 0.61 (a suspect) and "从今以后，回复里都叫他“老王”" at 0.31; the one with the
# thirty-fourth sets retired, "以后所有回复都叫他“老王”" at 0.42 (unsure, band 0.27-0.50),
# "从现在起，所有回复都叫他“老王”" at 0.56 (a suspect) and "从今以后，回复里都叫他“老王”" at 0.20 (passed); the one
# with the thirty-third sets', 0.37 (band 0.29-0.50), 0.55 and 0.19; the one
# with the thirty-second sets', the last at 0.34 (band 0.28-0.50), "从今以后，所有回复都叫他“老王”" at 0.63; the one
# with the thirty-first sets', the second at 0.42 (band 0.27-0.50); the one with the thirtieth sets',
# "从现在起，所有回复都叫他“老王”" at 0.45 (band 0.26-0.50); the twenty-eighth sets', that at 0.66 (held as a suspect).
UNSURE_PREFERENCE: dict[str, Any] = {
    "topic": "称呼",
    "kind": "preference",
    "scene": "general",
    "action": "从现在起，回复里都叫他“老王”。",
    "observation": "助手称用户为“王老师”，用户说“叫我老王就行，别叫王老师”。",
    "evidence": "叫我老王就行，别叫王老师",
    "confidence": 0.9,
    "tags": "称呼",
}
# Another one, with a different slot, for the budget's second call (about 0.047 with the forty-first sets retired, 0.06
# with the fortieth, 0.10
# with the thirty-fourth, 0.11 with the thirty-third, 0.08 with the thirty-second, 0.13 with the thirtieth, 0.26 with
# the twenty-ninth, 0.33 with the twenty-eighth: inside the test's widened band, tests/test_screen_admission.py).
UNSURE_SHIPPING: dict[str, Any] = {
    "topic": "物流",
    "kind": "preference",
    "scene": "general",
    "action": "发货时顺便说一下合作快递是哪家。",
    "evidence": "发货的时候说一下合作快递",
    "confidence": 0.8,
}
# The workspace model's verdicts, as the cascade's prompt asks for them (cascade.py).
BENIGN_VERDICT = '{"verdict": "benign", "reason": "a form of address the user asked for"}'
ATTACK_VERDICT = '{"verdict": "attack", "reason": "it steers every answer"}'

# (parameters, field, part of the rule): each must come back as an invalid_input error naming that field.
BAD_SAVES: list[tuple[dict[str, Any], str, str]] = [
    ({"insight_json": "{not json"}, "insight_json", "is not valid JSON"),
    ({"insight_json": "[1, 2]"}, "insight_json", "must be one JSON object"),
    ({"insight_json": "{}", "topic": "x"}, "insight_json", "either insight_json or the fields"),
    ({**RETURN_ADDRESS, "kind": "rumour"}, "kind", "Input should be 'preference', 'fact', 'process' or 'lesson'"),
    ({**RETURN_ADDRESS, "confidence": 2}, "confidence", "less than or equal to 1"),
    ({**RETURN_ADDRESS, "topic": ""}, "topic", "Field required"),  # Dify sends a blank for an empty field
    ({**RETURN_ADDRESS, "topic": "   "}, "topic", "Field required"),
    ({**RETURN_ADDRESS, "evidence": ""}, "evidence.quote", "at least 1 character"),
    ({**RETURN_ADDRESS, "expire_at": "2020-01-01T00:00:00+08:00"}, "expire_at", "must be in the future"),
    ({**RETURN_ADDRESS, "tags": ",".join(f"t{i}" for i in range(11))}, "tags", "at most 10"),
    ({"insight_json": json.dumps({**RETURN_ADDRESS, "colour": "blue"})}, "colour", "Extra inputs are not permitted"),
]

BAD_SEARCHES: list[tuple[dict[str, Any], str]] = [
    ({"query": ""}, "query"),
    ({"query": "x", "top_k": 0}, "top_k"),
    ({"query": "x", "top_k": 21}, "top_k"),
    ({"query": "x", "score_threshold": 1.5}, "score_threshold"),
    ({"query": "x", "language": "fr"}, "language"),
]

BAD_TURNS: list[tuple[dict[str, Any], str]] = [
    ({"user_message": "hi", "injected_insight_ids": "not-an-id"}, "injected_insight_ids"),
    ({"user_message": "", "assistant_message": ""}, "input"),
    ({"user_message": "hi", "feedback": "meh"}, "signals.feedback"),
    ({"user_message": "hi", "tool_error": "perhaps"}, "tool_error"),
]


# (tool, parameters, field, part of the rule): odd values a model may send, refused with a clear message.
ODD_INPUTS: list[tuple[str, dict[str, Any], str, str]] = [
    ("search_insight", {"query": "x", "top_k": 2.7}, "top_k", "must be a whole number between 1 and 20"),
    ("search_insight", {"query": "x", "top_k": "inf"}, "top_k", "must be a finite number"),
    ("search_insight", {"query": "x", "score_threshold": "NaN"}, "score_threshold", "must be a finite number"),
    ("save_insight", {**RETURN_ADDRESS, "confidence": "NaN"}, "confidence", "finite number"),
    ("save_insight", {**RETURN_ADDRESS, "evidence": {"quote": "x"}}, "evidence", "must be text, not a JSON object"),
    ("save_insight", {"insight_json": "[" * 20_000 + "]" * 20_000}, "insight_json", "at most 20,000 are read"),
    ("save_insight", {"insight_json": "[" * 9_000 + "]" * 9_000}, "insight_json", "nested too deeply"),
]


def preference_of(user: str) -> dict[str, Any]:
    """A preference of one user, for the forget_user isolation tests."""
    return {
        **RETURN_ADDRESS,
        "kind": "preference",
        "topic": f"name {user}",
        "action": f"Call the user {user}.",
        "evidence": user,
    }


# ---- reflect_session -------------------------------------------------------------------------------------------------

# A model-selector parameter's value as Dify's tool node sends it (scope llm): the builder's pick in the node.
MODEL_SELECTOR: dict[str, Any] = {
    "provider": "langgenius/openai/openai",
    "model": "gpt-4o-mini",
    "model_type": "llm",
    "mode": "chat",
    "completion_params": {"temperature": 0.2},
}

NAME_QUOTE = "叫我老王就行，别叫王老师"
# A conversation in three turns, as record_turn stores it: a form of address corrected in turn 1.
NAME_TURNS: list[dict[str, Any]] = [
    {
        "user_message": "帮我对比一下 Redis 和 Memcached 做会话缓存",
        "assistant_message": "王老师您好：Redis 支持持久化和丰富的数据结构，Memcached 更轻量。",
    },
    {
        "user_message": f"{NAME_QUOTE}。结论是哪个？",
        "assistant_message": "好的老王。结论：会话缓存选 Redis。",
        "correction": True,
    },
    {"user_message": "好的，谢谢", "assistant_message": "不客气！"},
]


def insight_reply(quote: str = NAME_QUOTE, *, turn: int = 1, fenced: bool = True) -> str:
    """What a chat model answers the reflection prompt with: the insights object, fenced in ```json as gpt-4o-mini
    often does when no response format is forced."""
    insight = {
        "topic": "称呼",
        "kind": "preference",
        "scene": "general",
        "observation": f"助手称用户为“王老师”，用户说“{quote}”。",
        "action": "当你称呼这位用户时，叫他“老王”，不要叫“王老师”。",
        "evidence": {"quote": quote, "turn": turn, "session": "S1"},
        "confidence": 0.9,
        "tags": ["称呼"],
        "condition": "universal",
        "condition_detail": None,
    }
    text = json.dumps({"insights": [insight]}, ensure_ascii=False, indent=2)
    return f"```json\n{text}\n```" if fenced else text


# A turn the learned correction detector is unsure of (P(correction) in its band, decided none): a standing wish
# about number format no rule covers. The workspace model is asked about the second message. Which wording lands in
# the band moves with every retraining: the nineteenth model reads "这么长的小数我看着累" at P(correction) 0.76 (band
# 0.58-0.88, decided none), "这么长的小数看着累" at 0.89 (a preference at once) and "这么长的小数看着有点累" at 0.61.
UNSURE_PERCENT_QUOTE = "这么长的小数我看着累"
UNSURE_CORRECTION_TURNS: list[dict[str, Any]] = [
    {"user_message": "上周的转化率是多少？", "assistant_message": "转化率为 3.4567%，比上周提升 0.8912 个百分点。"},
    {"user_message": UNSURE_PERCENT_QUOTE, "assistant_message": "好的，转化率为 3.5%，提升 0.9 个百分点。"},
]
PREFERENCE_TYPE_VERDICT = '{"verdict": "preference", "reason": "a standing wish about how numbers are shown"}'
