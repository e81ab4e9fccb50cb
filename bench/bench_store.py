"""Import and search speed at 10,000 insights, measured side by side in one run.

1. import N insights with admission and embedding (writing.write_many)   -> insights/s
2. 500 searches, interleaved query by query so that machine noise hits all three alike:
     store    store.retrieval.search (embed, segment, the nearest by cosine behind the gate, filters, re-rank)
     direct   the same embedding + one hybrid query with the same filters, sent with weaviate-client
     numpy    exact cosine over the same vectors in memory, with the same eligibility as boolean masks
   -> p50/p95 of each and the ratios.

    make bench   (or: .venv/bin/python -m bench.bench_store [--insights 10000] [--searches 500])
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import numpy as np
from weaviate.classes.query import HybridFusion, MetadataQuery
from weaviate.collections import Collection as WeaviateCollection

from hindsight_insights import ranking
from hindsight_insights.commands import Provenance, WriteCommand
from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.embedder import Vectors, load_embedder
from hindsight_insights.governance.writing import write_many
from hindsight_insights.models import InsightContent
from hindsight_insights.segment import tokens
from hindsight_insights.store import open_store
from hindsight_insights.store.filters import WeaviateFilter, eligible
from hindsight_insights.store.schema import INSIGHTS, VECTOR_NAME
from hindsight_insights.store.tenancy import project_collection
from hindsight_insights.weaviate_server import running_weaviate

SCENES = ["general", "故障排查", "售后服务", "方案对比", "billing", "onboarding", "数据分析", "code_review"]
ZH_SUBJECTS = [
    "退货地址",
    "发票",
    "物流",
    "Redis 缓存",
    "Nginx 502",
    "数据库备份",
    "报表格式",
    "称呼",
    "退款时效",
    "账号登录",
    "优惠券",
    "会员续费",
    "API 限流",
    "日志排查",
    "部署流程",
    "图表颜色",
    "百分比",
    "代码风格",
    "单元测试",
    "告警",
]
EN_SUBJECTS = [
    "return address",
    "invoice",
    "shipping",
    "Redis cache",
    "nginx 502",
    "database backup",
    "report format",
    "greeting",
    "refund time",
    "login",
    "coupon",
    "renewal",
    "rate limit",
    "log search",
    "deploy",
    "chart colours",
    "percentages",
    "code style",
    "unit tests",
    "alerts",
]
ZH_ACTIONS = [
    "当用户问到{s}时，先给结论再给步骤。",
    "涉及{s}的问题，回答前先核对系统里的最新数据。",
    "用户提到{s}时，用表格列出选项。",
    "遇到{s}相关的投诉，先道歉再给解决方案。",
    "解释{s}时不要使用专业术语。",
    "{s}出错两次以上就转人工处理。",
]
EN_ACTIONS = [
    "When the user asks about {s}, give the conclusion first, then the steps.",
    "Before answering about {s}, check the latest value in the system.",
    "When {s} comes up, list the options as a table.",
    "If a complaint concerns {s}, apologise, then offer a fix.",
    "Explain {s} without jargon.",
    "Hand {s} issues to a human after two failed attempts.",
]
QUERIES = [
    "我的包裹应该寄到哪里退货？",
    "nginx 报 502 怎么办",
    "How do I get an invoice for last month?",
    "Redis 还是 Memcached？",
    "Why is my login failing again?",
    "报表里的比例用什么格式",
    "When will my refund arrive?",
    "部署到生产环境要注意什么",
    "The chart colours are hard to read",
    "API 调用被限流了",
    "Can you review this Python function?",
    "优惠券为什么用不了",
]


def direct_hybrid_query(
    collection: WeaviateCollection, settings: Settings, query: str, vector: Vectors, filters: WeaviateFilter
) -> None:
    """One hybrid query (what the store sends for a search with a plain threshold) sent straight through
    weaviate-client: the baseline the benchmarks compare the store and the plugin with."""
    collection.query.hybrid(
        query=" ".join(tokens(query)),
        vector=vector.tolist(),
        target_vector=VECTOR_NAME,
        alpha=settings.hybrid_alpha,
        query_properties=["search_text"],
        fusion_type=HybridFusion.RELATIVE_SCORE,
        filters=filters,
        limit=20,
        include_vector=True,
        return_metadata=MetadataQuery(score=True),
    )


def direct_nearest_query(collection: WeaviateCollection, query_vector: Vectors, filters: WeaviateFilter) -> None:
    """The query the store sends behind the no-match gate (store/retrieval.py), straight through weaviate-client."""
    collection.query.near_vector(
        near_vector=query_vector.tolist(),
        target_vector=VECTOR_NAME,
        filters=filters,
        limit=20,
        return_metadata=MetadataQuery(distance=True),
    )


def synthetic_insights(count: int, rng: random.Random) -> list[WriteCommand]:
    """Insights as an operator's bulk import writes them: a preference for its user, the rest project-wide."""
    return list(iter_synthetic_insights(count, rng))


def iter_synthetic_insights(count: int, rng: random.Random, start: int = 0) -> Iterator[WriteCommand]:
    """`synthetic_insights` one at a time, numbered from `start` (a large import need not hold them all)."""
    for index in range(start, start + count):
        chinese = index % 2 == 0
        subject = rng.choice(ZH_SUBJECTS if chinese else EN_SUBJECTS)
        action = rng.choice(ZH_ACTIONS if chinese else EN_ACTIONS).format(s=subject)
        kind = rng.choice(["preference", "fact", "process", "lesson"])
        user = f"user-{rng.randrange(200)}" if kind == "preference" else None
        content = InsightContent.parse(
            {
                "topic": f"{subject} #{index}",
                "kind": kind,
                "scene": rng.choice(SCENES),
                "action": action,
                "observation": f"{'会话' if chinese else 'session'} {index}: {subject}",
                "evidence": f"quote {index} about {subject}",
                "confidence": round(rng.uniform(0.3, 1.0), 2),
                "tags": [subject[:40]],
            }
        )
        yield WriteCommand(content, Provenance("bench", user))


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--insights", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(7)
    settings = Settings(project=f"bench-{uuid.uuid4().hex[:8]}")
    embedder = load_embedder(settings)
    drafts = synthetic_insights(args.insights, rng)

    with (
        tempfile.TemporaryDirectory() as data_dir,
        running_weaviate(settings, Path(data_dir)) as running,
        contextlib.closing(open_store(running, embedder)) as store,
        contextlib.closing(connect_url(running, running.weaviate_url or "")) as client,
    ):
        started = time.perf_counter()
        written = write_many(store, drafts)
        import_s = time.perf_counter() - started
        print(f"import: {written} insights in {import_s:.1f}s = {written / import_s:.0f} insights/s (with embedding)")

        # The same vectors and eligibility, in memory, for the exact numpy baseline.
        collection = project_collection(client, settings.project, INSIGHTS)
        ids, matrix, scene_of, scope_of, user_of = [], [], [], [], []
        for obj in collection.iterator(include_vector=True, return_properties=["scene", "scope", "user_id"]):
            ids.append(obj.uuid)
            matrix.append(obj.vector["default"])
            scene_of.append(obj.properties["scene"])
            scope_of.append(obj.properties["scope"])
            user_of.append(obj.properties.get("user_id") or "")
        vectors = np.asarray(matrix, dtype=np.float32)
        scenes, scopes, users = np.asarray(scene_of), np.asarray(scope_of), np.asarray(user_of)

        timings: dict[str, list[float]] = {"store": [], "direct": [], "numpy": []}
        for index in range(args.searches + 20):
            query = rng.choice(QUERIES)
            scene = rng.choice(SCENES)
            user = f"user-{rng.randrange(200)}"
            now = datetime.now(UTC)
            order = ["store", "direct", "numpy"]
            rng.shuffle(order)  # no position in the loop is favoured
            for name in order:
                started = time.perf_counter()
                if name == "store":
                    store.retrieval.search(query, scene=scene, user_id=user)
                elif name == "direct":
                    vector = embedder.embed([query], query=True)[0]
                    direct_hybrid_query(collection, settings, query, vector, eligible(scene, user, now))
                else:
                    vector = ranking.query_vector(embedder.embed([query], query=True))
                    mask = np.isin(scenes, [scene, "general"]) & ((scopes == "project") | (users == user))
                    scores = np.where(mask, vectors @ vector, -np.inf)
                    top = np.argpartition(-scores, 20)[:20]
                    _ = [ids[i] for i in top[np.argsort(-scores[top])]]
                elapsed_ms = (time.perf_counter() - started) * 1000
                if index >= 20:  # warm-up excluded
                    timings[name].append(elapsed_ms)

    embed_ms = []
    for _ in range(200):
        started = time.perf_counter()
        embedder.embed([rng.choice(QUERIES)], query=True)
        embed_ms.append((time.perf_counter() - started) * 1000)
    print(
        f"searches: {args.searches} per method at {written} insights (each includes embedding the query; "
        f"embedding alone p50 {statistics.median(embed_ms):.2f} ms)"
    )
    print(f"{'method':>8} | {'p50 ms':>8} | {'p95 ms':>8} | {'p95 / direct':>12} | {'p95 / numpy':>11}")
    direct95, numpy95 = percentile(timings["direct"], 95), percentile(timings["numpy"], 95)
    for name, values in timings.items():
        p95 = percentile(values, 95)
        print(
            f"{name:>8} | {percentile(values, 50):8.2f} | {p95:8.2f} | {p95 / direct95:12.2f} | {p95 / numpy95:11.2f}"
        )
    overhead = percentile(timings["store"], 50) / percentile(timings["direct"], 50)
    print(f"store overhead over the direct query at p50: {overhead:.2f}x")


if __name__ == "__main__":
    main()
