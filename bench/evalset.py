"""The labelled retrieval set, split into "tune" and "holdout", and loading it into a store.

Sources (written by hand; never edited here):
  retrieval_set.json       78 insights (some ineligible on purpose) and 124 positive queries q001-q124
  negative_queries.json    16 conversations no insight is about, n01-n16
  retrieval_additions.json 9 more insights, 70 more positive queries, 64 same-scene no-match conversations,
                           6 users with more standing preferences than the budget (with their ages) and 18 queries
                           about their OLD preferences, and a split for every query of the two files above.

Only split == "tune" may be read to calibrate or tune anything. The holdout split is evaluated in aggregate only.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from hindsight_insights.commands import Provenance, WriteCommand
from hindsight_insights.governance.writing import write
from hindsight_insights.models import InsightContent, InsightStatus, Scope
from hindsight_insights.screening import INJECTION
from hindsight_insights.store import InsightStore

DATA = Path(__file__).parent / "data"
Split = Literal["tune", "holdout"]
SPLITS: tuple[Split, ...] = ("tune", "holdout")

# Superseded insights are older versions of another insight's slot (the data's labels: "a009 is a superseded older
# version of a001"; the others are the same subject with an outdated instruction). The store derives `superseded`
# from a newer version of the same slot, so each is saved under its successor's topic, before the successor.
SUCCESSOR = {
    "i002": "i001",  # the old Shanghai return warehouse -> the new Hangzhou one
    "i014": "i013",  # 502: raise nginx timeouts -> check the upgrade first
    "i027": "i026",  # 老王's ratios: four decimals -> percent with one decimal
    "i043": "i042",  # API rate limits (2023) -> current
    "i056": "i055",  # company database standard (2022) -> current
    "i065": "i064",  # how to address 老王 (old) -> current
    "a009": "a001",  # order invoices: the old manual process -> automatic
}
EXPIRED_STATES = ("expired_time", "expired_status")
_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Query:
    id: str
    turns: list[str]
    scene: str
    user_id: str | None
    lang: str  # zh, en, cross (the query's language differs from the relevant insight's)
    relevant: list[str]
    split: Split
    kind: Literal["positive", "no_match", "budget"]


@dataclass
class EvalSet:
    insights: list[dict[str, Any]]
    queries: list[Query]
    age_days: dict[str, float] = field(default_factory=dict)

    def of(self, kind: str, split: Split) -> list[Query]:
        return [q for q in self.queries if q.kind == kind and q.split == split]


def _lang(turns: list[str]) -> str:
    return "zh" if _CJK.search(" ".join(turns)) else "en"


def read() -> EvalSet:
    base = json.loads((DATA / "retrieval_set.json").read_text())
    negatives = json.loads((DATA / "negative_queries.json").read_text())["queries"]
    additions = json.loads((DATA / "retrieval_additions.json").read_text())
    splits: dict[str, Split] = additions["existing_splits"]
    insights = list(base["insights"]) + list(additions["insights"])
    age_days: dict[str, float] = {}
    queries: list[Query] = []
    for q in base["queries"]:
        queries.append(
            Query(q["id"], q["turns"], q["scene"], q["user_id"], q["lang"], q["relevant"], splits[q["id"]], "positive")
        )
    for q in additions["queries"]:
        queries.append(
            Query(q["id"], q["turns"], q["scene"], q["user_id"], q["lang"], q["relevant"], q["split"], "positive")
        )
    for q in negatives:
        queries.append(
            Query(q["id"], q["turns"], q["scene"], q["user_id"], _lang(q["turns"]), [], splits[q["id"]], "no_match")
        )
    for q in additions["no_match"]:
        queries.append(Query(q["id"], q["turns"], q["scene"], q["user_id"], q["lang"], [], q["split"], "no_match"))
    for user in additions["budget_users"]:
        for preference in user["preferences"]:
            insights.append(preference)
            age_days[preference["key"]] = float(preference["age_days"])
        for q in user["queries"]:
            queries.append(
                Query(
                    q["id"], q["turns"], user["scene"], user["user_id"], q["lang"], q["relevant"], q["split"], "budget"
                )
            )
    return EvalSet(insights=insights, queries=queries, age_days=age_days)


def eligible(insight: dict[str, Any], query: Query) -> bool:
    return (
        insight["state"] == "active"
        and insight["scene"] in (query.scene, "general")
        and (insight["scope"] == "project" or insight["user_id"] == query.user_id)
    )


def _command(item: dict[str, Any], topic: str, expire_at: datetime | None) -> WriteCommand:
    """An item as the operator writes it: a user's for that user, the rest project-wide (no end user)."""
    content = InsightContent.parse(
        {
            "topic": topic,
            "kind": item["kind"],
            "scene": item["scene"],
            "observation": item["observation"],
            "action": item["action"],
            "evidence": item["evidence_quote"],
            "tags": item["tags"],
            "confidence": item["confidence"],
            "expire_at": expire_at,
        }
    )
    return WriteCommand(content, Provenance("evalset", item["user_id"] or None, scope=Scope(item["scope"])))


def load(store: InsightStore, data: EvalSet) -> tuple[dict[uuid.UUID, str], list[str]]:
    """Save every insight so that the store gives it its labelled state. Returns stored id -> key, and the keys of
    the insights the poisoning screen held: each is approved at once, as a reviewer would, so that retrieval is
    measured on the whole set, and the caller reports them (they are the screen's false holds on ordinary rules)."""
    by_key = {item["key"]: item for item in data.insights}
    superseded = [item for item in data.insights if item["state"] == "superseded"]
    rest = [item for item in data.insights if item["state"] != "superseded"]
    key_of: dict[uuid.UUID, str] = {}
    held: list[str] = []
    last_expiry = datetime.now(UTC)
    for item in superseded + rest:  # older versions first, so that their successors supersede them
        topic = by_key[SUCCESSOR[item["key"]]]["topic"] if item["key"] in SUCCESSOR else item["topic"]
        expire_at = None
        if item["state"] in EXPIRED_STATES:
            expire_at = last_expiry = datetime.now(UTC) + timedelta(seconds=2)  # per draft: saving takes time
        now = datetime.now(UTC) - timedelta(days=data.age_days.get(item["key"], 0.0))
        (placed,) = write(store, _command(item, topic, expire_at), now=now)
        result = placed.result
        if result.id in key_of:
            raise SystemExit(f"{item['key']} merged into {key_of[result.id]}: the set has a near-duplicate pair")
        key_of[result.id] = item["key"]
        if placed.review_reason and placed.review_reason.startswith(INJECTION):
            held.append(item["key"])
            store.approve(result.id, reviewer="eval", now=now)
        if item["state"] in ("rejected", "pending_review"):  # a reviewer's decision, or an insight sent back to review
            store.set_status(result.id, InsightStatus(item["state"]))
    time.sleep(max((last_expiry - datetime.now(UTC)).total_seconds(), 0) + 0.5)  # let the expiries pass
    store.expire_sweep()
    expected = {
        "active": InsightStatus.ACTIVE,
        "superseded": InsightStatus.SUPERSEDED,
        "pending_review": InsightStatus.PENDING_REVIEW,
        "rejected": InsightStatus.REJECTED,
        "expired_time": InsightStatus.EXPIRED,
        "expired_status": InsightStatus.EXPIRED,
    }
    wrong = [
        f"{key}: {stored.value}, labelled {by_key[key]['state']}"
        for insight_id, key in key_of.items()
        if (stored := store.get(insight_id).status) is not expected[by_key[key]["state"]]
    ]
    if wrong:
        raise SystemExit("states differ from the labels: " + "; ".join(wrong))
    return key_of, held
