"""The console's words in English and Chinese (the report's own are in hindsight_insights/reporting/labels.py)."""

from __future__ import annotations

CONSOLE_LABELS: dict[str, dict[str, str]] = {
    "en": {
        "title": "Hindsight review console",
        "project": "Project",
        "reviewer": "Reviewer",
        "queue": "Review queue",
        "queue_empty": "Nothing waits for a reviewer.",
        "status": "Status",
        "kind": "Kind",
        "scene": "Scene",
        "scope": "Scope",
        "user": "User",
        "confidence": "Confidence",
        "action": "Action",
        "observation": "Observation",
        "evidence": "Evidence",
        "session": "session",
        "turn": "turn",
        "reason": "Reason",
        "audit": "Audit trail",
        "no_audit": "No decisions yet.",
        "blamed": "Turns that blamed it",
        "no_blamed": "None recorded.",
        "answer": "Answer",
        "user_said": "User said",
        "approve": "Approve",
        "reject": "Reject",
        "edit": "Save edit",
        "note": "Note (kept in the audit trail)",
        "done_approve": "Approved",
        "done_reject": "Rejected",
        "done_edit": "Edited",
        "error": "Not done",
        "suspects_repairs": "Suspects and repairs",
        "today": "Today's report",
        "language": "语言 / Language",
    },
    "zh": {
        "title": "Hindsight 审核控制台",
        "project": "项目",
        "reviewer": "审核人",
        "queue": "审核队列",
        "queue_empty": "没有等待审核的内容。",
        "status": "状态",
        "kind": "类型",
        "scene": "场景",
        "scope": "范围",
        "user": "用户",
        "confidence": "置信度",
        "action": "行为",
        "observation": "观察",
        "evidence": "证据",
        "session": "会话",
        "turn": "轮次",
        "reason": "原因",
        "audit": "审计记录",
        "no_audit": "尚无决定。",
        "blamed": "归咎于它的回合",
        "no_blamed": "无记录。",
        "answer": "回答",
        "user_said": "用户说",
        "approve": "通过",
        "reject": "拒绝",
        "edit": "保存修改",
        "note": "备注（记入审计记录）",
        "done_approve": "已通过",
        "done_reject": "已拒绝",
        "done_edit": "已修改",
        "error": "未完成",
        "suspects_repairs": "可疑洞察与修复",
        "today": "今日报告",
        "language": "语言 / Language",
    },
}

LANGUAGES = ("en", "zh")


def preferred_language(accept_language: str, default: str = "en") -> str:
    """The first of our languages in an Accept-Language header, by its q value (zh-CN, zh-Hans, ... read as zh)."""
    ranked: list[tuple[float, int, str]] = []
    for order, part in enumerate(accept_language.split(",")):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        ranked.append((-quality, order, tag.strip().lower()))
    for _, _, tag in sorted(ranked):
        primary = tag.split("-")[0]
        if primary in LANGUAGES:
            return primary
    return default


def console_labels(language: str) -> dict[str, str]:
    return CONSOLE_LABELS["zh" if language == "zh" else "en"]
