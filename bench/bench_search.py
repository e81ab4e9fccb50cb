"""search_insight at 100,000 insights, four paths side by side in one run, interleaved call by call.

  plugin runtime  search_insight through the packaged plugin, over the Dify daemon's stdio protocol
                  (testkit/plugin_runtime.py): both channels, the gate, the rules block
  in-process      hindsight_dify.operations.search_insight on an InsightStore in this process
  direct hybrid   one hybrid query sent with weaviate-client: the query embedded, the same eligibility filter
                  (situational kinds), limit 20, vectors returned; no ranking, no standing rules, no block.
                  The baseline: the ratios are to this one
  direct nearest  the situational query the store sends behind the gate, sent the same way: the nearest 20 by
                  cosine with their distances (store/retrieval.py)

The order of the four is shuffled for every call, so that machine noise (other engineers' tests run on this
machine) hits all of them alike. Prints p50/p95 of each and the ratios to the direct hybrid query.

    .venv/bin/python -m bench.bench_search [--insights 100000] [--searches 300]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
import zipfile
from datetime import UTC, datetime
from pathlib import Path

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import numpy as np
from weaviate.classes.query import Filter

import hindsight_dify
import hindsight_dify.operations
from bench.bench_store import QUERIES, SCENES, direct_hybrid_query, direct_nearest_query, synthetic_insights
from hindsight_dify.params import Parameters
from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.embedder import load_embedder
from hindsight_insights.governance.writing import write_many
from hindsight_insights.ranking import query_vector
from hindsight_insights.store import SITUATIONAL_KINDS, open_store
from hindsight_insights.store.filters import eligible
from hindsight_insights.store.schema import INSIGHTS
from hindsight_insights.store.tenancy import project_collection
from hindsight_insights.weaviate_server import ensure_binary, start_local
from scripts.package_plugin import ROOT, package
from testkit.plugin_runtime import PluginProcess
from testkit.runtimes import CLI


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--insights", type=int, default=100_000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, help="keep Weaviate's data here and reuse an earlier import")
    args = parser.parse_args()
    rng = random.Random(13)
    with tempfile.TemporaryDirectory() as work:
        project = f"bench-search-{args.insights}" if args.data_dir else f"bench-search-{uuid.uuid4().hex[:8]}"
        base = Settings(project=project, weaviate_insert_timeout_s=300.0)
        server = start_local(ensure_binary(base), args.data_dir or Path(work) / "weaviate")
        plugin = None
        try:
            settings = server.settings(base)
            embedder = load_embedder(settings)
            store = open_store(settings, embedder)
            drafts = synthetic_insights(args.insights, rng)  # also when reused: the rng then draws the same queries
            written = store.count()[0]
            if written < args.insights:
                started = time.perf_counter()
                written = write_many(store, drafts, batch_size=1000)
                print(f"{written} insights imported in {time.perf_counter() - started:.0f}s")
            del drafts  # 100,000 drafts left alive would slow every full garbage collection during the timings
            client = connect_url(settings, server.url)
            collection = project_collection(client, settings.project, INSIGHTS)

            archive = Path(work) / "hindsight_insights.difypkg"
            package(ROOT, archive, CLI.find())
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(Path(work) / "plugin")
            plugin = PluginProcess(Path(work) / "plugin", python=sys.executable)
            credentials = {
                "weaviate_url": server.url,
                "weaviate_grpc_port": str(server.grpc_port),
                "weaviate_api_key": server.api_key,
                "project": settings.project,
                "embedder": "use-m3",
            }
            situational = Filter.by_property("kind").contains_any([kind.value for kind in SITUATIONAL_KINDS])
            paths = ("plugin runtime", "in-process", "direct hybrid", "direct nearest")
            timings: dict[str, list[float]] = {name: [] for name in paths}
            standing: list[int] = []
            for index in range(args.searches + 20):  # the first 20 rounds are warm-up
                query, scene, user = rng.choice(QUERIES), rng.choice(SCENES), f"user-{rng.randrange(200)}"
                order = list(timings)
                rng.shuffle(order)
                for name in order:
                    started = time.perf_counter()
                    if name == "plugin runtime":
                        output = plugin.invoke_tool(
                            "search_insight", {"query": query, "scene": scene}, credentials, user_id=user
                        )
                        assert "error" not in output.json, output.json
                    elif name == "in-process":
                        result = hindsight_dify.operations.search_insight(
                            store, Parameters({"query": query, "scene": scene}), hindsight_dify.Context(user)
                        )
                        standing.append(sum(item["channel"] == "standing" for item in result.json["insights"]))
                    else:
                        vector = query_vector(embedder.embed([query], query=True))
                        where = eligible(scene, user, datetime.now(UTC)) & situational
                        if name == "direct hybrid":
                            direct_hybrid_query(collection, settings, query, vector, where)
                        else:
                            direct_nearest_query(collection, vector, where)
                    if index >= 20:
                        timings[name].append((time.perf_counter() - started) * 1000)
            client.close()
            store.close()
        finally:
            if plugin is not None:
                plugin.close()
            server.stop()

    print(
        f"search_insight at {written} insights, {args.searches} calls per path, interleaved "
        f"(standing rules per call: mean {np.mean(standing):.1f})"
    )
    p = {name: (float(np.percentile(v, 50)), float(np.percentile(v, 95))) for name, v in timings.items()}
    direct50, direct95 = p["direct hybrid"]
    print(f"{'path':>15} | {'p50 ms':>7} | {'p95 ms':>7} | {'p50 / direct':>12} | {'p95 / direct':>12}")
    for name, (p50, p95) in p.items():
        print(f"{name:>15} | {p50:7.2f} | {p95:7.2f} | {p50 / direct50:12.2f} | {p95 / direct95:12.2f}")


if __name__ == "__main__":
    main()
