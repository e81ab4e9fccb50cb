"""The insight draft the store tests write: a return address, changed field by field."""

from __future__ import annotations

from typing import Any

from hindsight_insights.models import InsightDraft


def draft(**changes: Any) -> InsightDraft:
    data: dict[str, Any] = {
        "topic": "return address",
        "kind": "fact",
        "scene": "after-sales",
        "action": "When a customer asks where to send a return, give the address 88 Zhangjiang Road, Shanghai.",
        "evidence": "Returns now go to 88 Zhangjiang Road, Shanghai.",
        "confidence": 0.9,
    }
    data.update(changes)
    if data.get("user_id"):  # a user's draft says its scope: the store saves what admission placed
        data.setdefault("scope", "user")
    return InsightDraft.parse(data)
