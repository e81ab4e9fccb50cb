"""The rendered rules block: exact text in zh and en, grouping, must/consider, determinism."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from pathlib import Path

from hindsight_insights.models import Evidence, Insight
from hindsight_insights.rules import render_rules


def insight(scene: str, action: str, confidence: float, day: int, topic: str = "t") -> Insight:
    stamp = datetime(2026, 11, day, 8, 0, tzinfo=UTC)
    return Insight(
        id=uuid.uuid5(uuid.NAMESPACE_URL, action),
        topic=topic,
        kind="preference",
        scene=scene,
        observation="",
        action=action,
        evidence=Evidence(quote="q"),
        tags=[],
        confidence=confidence,
        expire_at=None,
        user_id="u",
        scope="user",
        status="active",
        source="test",
        support_count=1,
        supersedes=[],
        created_at=stamp,
        updated_at=stamp,
    )


RULES = [
    insight("故障排查", "先给结论，再给排查步骤。", 0.9, 20, "回复风格偏好"),
    insight("general", "称呼用户为老王，不要叫王老师。", 0.95, 10, "称呼"),
    insight("故障排查", "附上可以直接复制的命令。", 0.5, 25, "命令示例"),
    insight("方案对比", "Compare options as a table.", 0.8, 22, "comparison format"),
]


def test_chinese_block(prompts_dir: Path) -> None:
    assert render_rules(RULES, language="zh", must_confidence=0.7, prompts_dir=prompts_dir) == (
        "## 从以往对话中学到的行为规则\n"
        "\n"
        "### 场景：通用\n"
        "- 必须：称呼用户为老王，不要叫王老师。（主题：称呼；更新于 2026-11-10）\n"
        "\n"
        "### 场景：故障排查\n"
        "- 必须：先给结论，再给排查步骤。（主题：回复风格偏好；更新于 2026-11-20）\n"
        "- 可以考虑：附上可以直接复制的命令。（主题：命令示例；更新于 2026-11-25）\n"
        "\n"
        "### 场景：方案对比\n"
        "- 必须：Compare options as a table.（主题：comparison format；更新于 2026-11-22）\n"
        "\n"
        "如果两条规则相互冲突，以更新日期最新的一条为准。"
    )


def test_english_block(prompts_dir: Path) -> None:
    text = render_rules(RULES, language="en", must_confidence=0.7, prompts_dir=prompts_dir)
    assert text.splitlines() == [
        "## Behaviour rules learned from earlier conversations",
        "",
        "### Scene: general",
        "- You must: 称呼用户为老王，不要叫王老师。 (topic: 称呼; updated 2026-11-10)",
        "",
        "### Scene: 故障排查",
        "- You must: 先给结论，再给排查步骤。 (topic: 回复风格偏好; updated 2026-11-20)",
        "- Consider: 附上可以直接复制的命令。 (topic: 命令示例; updated 2026-11-25)",
        "",
        "### Scene: 方案对比",
        "- You must: Compare options as a table. (topic: comparison format; updated 2026-11-22)",
        "",
        "When two rules conflict, follow the one updated most recently.",
    ]


def test_order_does_not_depend_on_input_order(prompts_dir: Path) -> None:
    expected = render_rules(RULES, language="en", must_confidence=0.7, prompts_dir=prompts_dir)
    shuffled = RULES * 2  # duplicates collapse too
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        assert render_rules(shuffled, language="en", must_confidence=0.7, prompts_dir=prompts_dir) == expected


def test_must_threshold_is_configurable(prompts_dir: Path) -> None:
    text = render_rules(RULES[:1], language="zh", must_confidence=0.95, prompts_dir=prompts_dir)
    assert "- 可以考虑：先给结论" in text and "必须" not in text


def test_nothing_matched_renders_empty(prompts_dir: Path) -> None:
    assert render_rules([], language="zh", must_confidence=0.7, prompts_dir=prompts_dir) == ""
    assert render_rules([], language="en", must_confidence=0.7, prompts_dir=prompts_dir) == ""


def test_never_raw_json(prompts_dir: Path) -> None:
    text = render_rules(RULES, language="en", must_confidence=0.7, prompts_dir=prompts_dir)
    assert "{" not in text and '"action"' not in text
