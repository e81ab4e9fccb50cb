"""Retrieval quality on the labelled set (bench/data/retrieval_set.json): hybrid against vector-only and BM25-only.

Loads the insights into a fresh project on a real Weaviate (states set as labelled), runs every query through
InsightStore.search in each mode, and reports recall@5, the rate of forbidden (ineligible) insights returned, and the
false-alarm rate on conversations no insight is about (bench/data/negative_queries.json).

    make eval    (or: .venv/bin/python -m bench.eval_retrieval [--grid])
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

from hindsight_insights.config import Settings
from hindsight_insights.models import InsightDraft, InsightStatus
from hindsight_insights.store import InsightStore, SearchMode, open_store
from hindsight_insights.weaviate_server import running_weaviate

DATA = Path(__file__).parent / "data"
STATES = {
    "superseded": InsightStatus.SUPERSEDED,
    "pending_review": InsightStatus.PENDING_REVIEW,
    "rejected": InsightStatus.REJECTED,
    "expired_status": InsightStatus.EXPIRED,
}


def eligible(insight: dict[str, Any], query: dict[str, Any]) -> bool:
    return (
        insight["state"] == "active"
        and insight["scene"] in (query["scene"], "general")
        and (insight["scope"] == "project" or insight["user_id"] == query["user_id"])
    )


def load(store: InsightStore, insights: list[dict[str, Any]]) -> dict[uuid.UUID, str]:
    key_of: dict[uuid.UUID, str] = {}
    last_expiry = datetime.now(UTC)
    for item in insights:
        soon = datetime.now(UTC) + timedelta(seconds=2)  # per draft: saving takes time
        if item["state"] == "expired_time":
            last_expiry = soon
        draft = InsightDraft.parse(
            {
                "topic": item["topic"],
                "kind": item["kind"],
                "scene": item["scene"],
                "observation": item["observation"],
                "action": item["action"],
                "evidence": item["evidence_quote"],
                "tags": item["tags"],
                "confidence": item["confidence"],
                "scope": item["scope"],
                "user_id": item["user_id"],
                "expire_at": soon if item["state"] == "expired_time" else None,
            }
        )
        result = store.save(draft)
        if result.id in key_of:
            raise SystemExit(f"{item['key']} merged into {key_of[result.id]}: the set has a near-duplicate pair")
        key_of[result.id] = item["key"]
    # Saving may supersede; the labels say what each state must be, so set them all explicitly.
    for insight_id, key in key_of.items():
        state = next(i["state"] for i in insights if i["key"] == key)
        store.set_status(insight_id, STATES.get(state, InsightStatus.ACTIVE))
    time.sleep(max((last_expiry - datetime.now(UTC)).total_seconds(), 0) + 0.5)  # let expired_time pass
    return key_of


def evaluate(
    store: InsightStore,
    data: dict[str, Any],
    negatives: list[dict[str, Any]],
    key_of: dict[uuid.UUID, str],
    mode: SearchMode,
    threshold: float,
) -> dict[str, Any]:
    by_key = {i["key"]: i for i in data["insights"]}
    per_lang: dict[str, list[float]] = {}
    returned = forbidden = relevant_returned = 0
    queries_with_forbidden = 0
    for query in data["queries"]:
        hits = store.search(
            query["turns"],
            scene=query["scene"],
            user_id=query["user_id"],
            top_k=5,
            score_threshold=threshold,
            mode=mode,
        )
        keys = [key_of[hit.insight.id] for hit in hits]
        recall = len(set(keys) & set(query["relevant"])) / len(query["relevant"])
        per_lang.setdefault(query["lang"], []).append(recall)
        bad = [k for k in keys if not eligible(by_key[k], query)]
        returned += len(keys)
        relevant_returned += len(set(keys) & set(query["relevant"]))
        forbidden += len(bad)
        queries_with_forbidden += bool(bad)
    false_alarms = sum(
        bool(
            store.search(
                q["turns"], scene=q["scene"], user_id=q["user_id"], top_k=5, score_threshold=threshold, mode=mode
            )
        )
        for q in negatives
    )
    all_recalls = [r for values in per_lang.values() for r in values]
    return {
        "mode": mode,
        "threshold": threshold,
        "recall@5": sum(all_recalls) / len(all_recalls),
        **{f"recall@5 {lang}": sum(v) / len(v) for lang, v in sorted(per_lang.items())},
        "precision": relevant_returned / max(returned, 1),
        "forbidden rate": forbidden / max(returned, 1),
        "queries with forbidden": queries_with_forbidden,
        "false alarm rate": false_alarms / len(negatives),
        "mean hits": returned / len(data["queries"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--grid", action="store_true", help="also sweep alpha and threshold (for calibration)")
    args = parser.parse_args()
    data = json.loads((DATA / "retrieval_set.json").read_text())
    negatives = json.loads((DATA / "negative_queries.json").read_text())["queries"]
    settings = Settings(project=f"eval-{uuid.uuid4().hex[:8]}")
    print(
        f"{len(data['insights'])} insights, {len(data['queries'])} labelled queries, {len(negatives)} negative queries"
    )
    with (
        tempfile.TemporaryDirectory() as data_dir,
        running_weaviate(settings, Path(data_dir)) as running,
        contextlib.closing(open_store(running)) as store,
    ):
        key_of = load(store, data["insights"])
        rows = []
        for mode in ("hybrid", "vector", "bm25"):
            for threshold in (settings.score_threshold, 0.0):
                rows.append(evaluate(store, data, negatives, key_of, mode, threshold))
        if args.grid:
            for alpha in (0.5, 0.6, 0.7, 0.8, 0.9):
                tuned = open_store(running.model_copy(update={"hybrid_alpha": alpha}))
                for threshold in (0.15, 0.2, 0.25, 0.3, 0.35):
                    row = evaluate(tuned, data, negatives, key_of, "hybrid", threshold)
                    rows.append({**row, "mode": f"hybrid a={alpha}"})
                tuned.close()
    columns = list(rows[0])
    print(" | ".join(f"{c:>14}" for c in columns))
    for row in rows:
        print(" | ".join(f"{row[c]:>14.3f}" if isinstance(row[c], float) else f"{row[c]!s:>14}" for c in columns))


if __name__ == "__main__":
    main()
