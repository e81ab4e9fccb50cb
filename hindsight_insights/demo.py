"""The main job for a newcomer: a real Weaviate, insights saved and searched in Chinese and English, rules printed."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from hindsight_insights.config import Settings
from hindsight_insights.models import InsightDraft
from hindsight_insights.rules import render_rules
from hindsight_insights.store import open_store
from hindsight_insights.weaviate_server import running_weaviate

DEMO_INSIGHTS: list[dict[str, Any]] = [
    {
        "topic": "称呼",
        "kind": "preference",
        "scene": "general",
        "user_id": "lao-wang",
        "observation": "助手称呼用户为“王老师”，用户纠正：“叫我老王就行，别叫王老师。”",
        "action": "称呼这位用户为“老王”，不要称呼“王老师”。",
        "evidence": {"quote": "叫我老王就行，别叫王老师。", "session_id": "demo-1", "turn": 2},
        "confidence": 0.95,
    },
    {
        "topic": "方案对比格式",
        "kind": "preference",
        "scene": "方案对比",
        "user_id": "lao-wang",
        "observation": "用户在比较两个方案时说：“下次直接给我一张表。”",
        "action": "当用户在几个选项之间做比较时，用表格列出对比，每个维度一行。",
        "evidence": {"quote": "下次直接给我一张表。", "session_id": "demo-2", "turn": 4},
        "confidence": 0.9,
    },
    {
        "topic": "退货地址",
        "kind": "fact",
        "scene": "售后服务",
        "observation": "助手给出了旧的退货地址，用户指出仓库已搬到杭州。",
        "action": "当顾客询问退货、退款寄回或包裹寄到哪里时，告知退货地址为杭州市西湖区文三路 1 号，并提醒写上订单号。",
        "evidence": {"quote": "你们的退货地址早就换成杭州文三路 1 号了", "session_id": "demo-3", "turn": 1},
        "confidence": 0.9,
    },
    {
        "topic": "nginx 502 troubleshooting",
        "kind": "lesson",
        "scene": "troubleshooting",
        "observation": (
            "The assistant suggested restarting nginx; the user said the upstream app had crashed, so the restart "
            "did nothing."
        ),
        "action": (
            "When a user reports an nginx 502, first ask them to check that the upstream service is running and "
            "look at its logs before suggesting an nginx restart."
        ),
        "evidence": {
            "quote": "restarting nginx did nothing, the upstream app was down",
            "session_id": "demo-4",
            "turn": 3,
        },
        "confidence": 0.6,
    },
]

DEMO_QUERIES: list[dict[str, Any]] = [
    {
        "query": ["我的耳机有杂音，想退掉", "好的，可以为您办理退货", "那我寄到哪里？"],
        "scene": "售后服务",
        "user_id": None,
        "language": "zh",
    },
    {"query": "Redis 还是 Memcached，你怎么看？", "scene": "方案对比", "user_id": "lao-wang", "language": "zh"},
    {
        "query": "Our site shows 502 Bad Gateway since this morning",
        "scene": "troubleshooting",
        "user_id": None,
        "language": "en",
    },
    {"query": "Where should I ship the parcel for my refund?", "scene": "售后服务", "user_id": None, "language": "en"},
]


def run(settings: Settings) -> None:
    started = time.monotonic()
    print(f"Starting Weaviate (data in {settings.data_dir}) ...")
    with running_weaviate(settings) as running, contextlib.closing(open_store(running)) as store:
        print(f"Weaviate ready in {time.monotonic() - started:.1f}s")
        for data in DEMO_INSIGHTS:
            result = store.save(InsightDraft.parse(data))
            print(f"save  {data['topic']!r:<30} -> {result.status}")
        for query in DEMO_QUERIES:
            recall = store.recall(query["query"], scene=query["scene"], user_id=query["user_id"])
            rules = render_rules(recall.insights, settings, query["language"])
            print(f"\n=== query ({query['scene']}, user {query['user_id']}): {query['query']}")
            for hit in recall.situational:
                parts = f"similarity {hit.similarity:.2f}, keyword {hit.keyword:.2f}"
                print(f"  hit {hit.insight.topic!r}: score {hit.score:.3f} ({parts})")
            print(rules or "(no rules apply)")
