"""What few-shot examples cost in a prompt: the rules block search_insight injects, measured side by side without
examples and with 1 to 3 (Qwen's tokenizer, bench/tokens.py; for Claude an estimate).

The block holds five rules, as a scene with a full standing budget gets. The examples are made the way record_turn
makes them (governance.examples.example_for over stored turns: redacted, capped at fewshot's CONTEXT_CHARS,
SAID_CHARS and CORRECTED_CHARS), from typical support conversations, and, as the upper bound, from messages long
enough to reach every cap.

    make bench-fewshot            (or: .venv/bin/python -m bench.bench_fewshot [--language en])
"""

from __future__ import annotations

import argparse
import uuid
from datetime import UTC, datetime, timedelta

from bench.tokens import qwen_tokens
from hindsight_insights.config import Language, Settings
from hindsight_insights.detection.correction_types import Correction, CorrectionType
from hindsight_insights.fewshot import FewShotExample
from hindsight_insights.governance.examples import example_for
from hindsight_insights.models import Insight, InsightDraft, Turn
from hindsight_insights.quiet import quiet_dependency_warnings
from hindsight_insights.rules import render_rules

quiet_dependency_warnings()  # every entry point calls it first

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

RULES = [
    ("退货地址", "fact", "当顾客问退货寄到哪里时，告诉他寄到杭州市滨江区江南大道 100 号，并写上订单号。", 0.9),
    ("称呼", "preference", "称呼这位用户为王先生，不要叫他的全名。", 0.9),
    ("退款时限", "process", "当顾客问退款多久到账时，告诉他 3 个工作日内原路退回。", 0.8),
    ("发票", "fact", "当顾客要发票时，告诉他在订单详情页申请电子发票，开具后发到他的邮箱。", 0.75),
    ("回答格式", "preference", "回答比较类问题时用表格列出各项差异。", 0.6),
]

TYPICAL = [  # (question, what the agent said, the user's correction)
    ("退货寄到哪里？", "请把退货寄到杭州市西湖区文三路 1 号。", "不对，退货地址是杭州市滨江区江南大道 100 号"),
    (
        "退款多久到账？",
        "退款一般在 7 个工作日内到账，请耐心等待。",
        "不对，你们客服昨天说是 3 个工作日内原路退回",
    ),
    (
        "What are your opening hours on Saturday?",
        "We are open from 9 am to 5 pm on Saturdays.",
        "No, on Saturdays you open at 10 am, not 9.",
    ),
]
LONG = [
    (
        "我上周买的扫地机器人一直提示主刷缠绕，我已经清理过三次了，" * 6,
        "您好，这个问题通常是主刷上缠了头发，请您拆下主刷清理干净后重新安装，如果还不行请联系售后。" * 6,
        "不对，我已经说了清理过三次了，问题是主刷电机坏了，你们之前的工程师也确认过，请直接安排换新。" * 6,
    )
] * 3


def rules() -> list[Insight]:
    return [
        Insight.model_validate(
            InsightDraft.parse(
                {
                    "topic": topic,
                    "kind": kind,
                    "scene": "售后服务",
                    "action": action,
                    "evidence": {"quote": action[:20]},
                    "confidence": confidence,
                }
            ).model_dump()
            | {"id": uuid.uuid4(), "user_id": "u", "asserted_at": NOW, "created_at": NOW, "updated_at": NOW}
        )
        for topic, kind, action, confidence in RULES
    ]


def examples(conversations: list[tuple[str, str, str]]) -> list[FewShotExample]:
    made = []
    for index, (question, said, corrected) in enumerate(conversations):
        answered = Turn(
            id=uuid.uuid4(),
            session_id=f"s{index}",
            user_id="u",
            scene="售后服务",
            sequence=1,
            user_message=question,
            assistant_message=said,
            created_at=NOW,
        )
        correcting = answered.model_copy(update={"id": uuid.uuid4(), "user_message": corrected, "sequence": 2})
        draft = example_for(Correction(CorrectionType.FACTUAL, 0.9), answered, correcting)
        assert draft is not None
        made.append(
            FewShotExample(**draft.model_dump(), id=uuid.uuid4(), learned_at=NOW, expire_at=NOW + timedelta(days=30))
        )
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--language", choices=["zh", "en"], default="zh")
    language: Language = parser.parse_args().language
    settings = Settings(_env_file=None)
    insights = rules()
    base = render_rules(insights, settings, language)
    base_tokens = qwen_tokens(base)
    print(f"rules block ({language}), 5 rules, no examples: {base_tokens} tokens")
    print(f"{'examples':<24}{'tokens':>8}{'added':>8}{'per example':>13}{'ratio':>8}")
    for label, conversations in (("typical", TYPICAL), ("at the caps", LONG)):
        for count in (1, 2, 3):
            block = render_rules(insights, settings, language, examples(conversations[:count]))
            tokens = qwen_tokens(block)
            added = tokens - base_tokens
            print(f"{f'{count} {label}':<24}{tokens:>8}{added:>8}{added / count:>13.0f}{tokens / base_tokens:>8.2f}")
    alone = render_rules([], settings, language, examples(TYPICAL))
    print(f"3 typical examples, no rules: {qwen_tokens(alone)} tokens")


if __name__ == "__main__":
    main()
