"""Normalised keys and the same-instruction test keep what changes a meaning (a sign, a decimal point, a percent
sign) while folding what does not (case, width, traditional characters, punctuation)."""

from __future__ import annotations

import pytest

from hindsight_insights import ranking
from hindsight_insights.keys import meaning_marks, normalize_key, slot_key
from hindsight_insights.models import InsightDraft
from hindsight_insights.store import InsightStore
from testkit.admitted import admitted_as_is


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("写入 -1", "写入 1"),
        ("写入 −1", "写入 +1"),  # U+2212, the typographic minus
        ("折扣 1.5", "折扣 15"),
        ("税率 5%", "税率 5"),
        ("C++", "C"),
        ("C#", "C"),
        ("温度 >30", "温度 <30"),
    ],
)
def test_keys_keep_what_changes_the_meaning(a: str, b: str) -> None:
    assert normalize_key(a) != normalize_key(b)
    assert slot_key(a, "general", None) != slot_key(b, "general", None)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("写入 -1", "寫入 －１"),  # traditional, full-width minus and digit
        ("写入 −1", "写入 - 1"),
        ("Discount 1.5", "ＤＩＳＣＯＵＮＴ　１．５"),
        ("税率 5%", "稅率５％"),
        ("退货地址。", "退货 地址"),
        ("return-address", "Return Address"),
    ],
)
def test_keys_still_fold_case_width_spelling_and_punctuation(a: str, b: str) -> None:
    assert normalize_key(a) == normalize_key(b)


def test_meaning_marks_are_whole_numbers_with_their_signs() -> None:
    assert meaning_marks("写入 − 1，打 8.5 折，满 100 减 20%") == ["-1", "8.5", "100", "20%"]
    assert meaning_marks("先给结论，再给步骤。") == []


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("写入 -1", "写入 1", False),
        ("Set the offset to -1.", "Set the offset to 1.", False),
        ("打 8.5 折", "打 85 折", False),
        ("税率按 5% 计算", "税率按 5 计算", False),
        ("写入 -1。", "写入 − 1", True),  # the same instruction, punctuated and typeset differently
        ("Set the offset to -1.", "set the offset to -1", True),
    ],
)
def test_same_instruction_compares_signed_numbers_whole(a: str, b: str, same: bool) -> None:
    assert ranking.same_instruction(a, b) is same


def _draft(action: str) -> InsightDraft:
    return InsightDraft.model_validate(
        {
            "topic": "寄存器写入值",
            "kind": "process",
            "scene": "设备调试",
            "observation": "用户纠正了写入的值。",
            "action": action,
            "evidence": {"quote": action},
        }
    )


def test_a_number_of_the_other_sign_is_a_new_rule_at_the_store(store: InsightStore) -> None:
    first = store.save(admitted_as_is(_draft("写入 -1")))
    second = store.save(admitted_as_is(_draft("写入 1")))
    assert first.status == "created"
    assert second.status != "unchanged" and second.id != first.id, second
    assert store.get(second.id).action == "写入 1"
    assert store.save(admitted_as_is(_draft("写入 1。"))).status in (
        "merged",
        "unchanged",
    )  # but punctuation is still no news
