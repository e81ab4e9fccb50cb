"""The insight draft the store tests write: a return address, changed field by field."""

from __future__ import annotations

from typing import Any

from hindsight_insights.models import InsightDraft

RETURN_ADDRESS: dict[str, Any] = {
    "topic": "return address",
    "kind": "fact",
    "scene": "after-sales",
    "action": "When a customer asks where to send a return, give the address 88 Zhangjiang Road, Shanghai.",
    "evidence": "Returns now go to 88 Zhangjiang Road, Shanghai.",
    "confidence": 0.9,
}


def draft_of(base: dict[str, Any], **changes: Any) -> InsightDraft:
    """`base` with `changes`, parsed; a user's draft says its scope: the store saves what admission placed."""
    data = {**base, **changes}
    if data.get("user_id"):
        data.setdefault("scope", "user")
    return InsightDraft.parse(data)


def draft(**changes: Any) -> InsightDraft:
    return draft_of(RETURN_ADDRESS, **changes)
