"""search_insight through the plugin runtime against the same operation called in-process, at 10,000 insights.

The plugin is packaged, unpacked and run as the Dify daemon runs it; requests go over its stdio protocol. The direct
call is tool_api.search_insight on an InsightStore in this process: the same code the tool runs, without the
runtime. The two paths alternate in blocks of 25 calls, so machine noise hits both alike while each runs warm
(alternating single calls makes two processes on 2 cores disturb each other's warm state, which measures that
interference rather than the runtime). Also prints the bare protocol round trip (a call rejected before any work)
and the plugin process's peak memory.

    make bench-plugin   (or: .venv/bin/python -m bench.bench_plugin [--insights 10000] [--searches 500])
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import numpy as np

from bench.bench_store import QUERIES, SCENES, synthetic_insights
from hindsight_insights import tool_api
from hindsight_insights.config import Settings
from hindsight_insights.embedder import load_embedder
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import connect_url, ensure_binary, start_local
from scripts.package_plugin import ROOT, package
from testkit.plugin_runtime import PluginProcess


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--insights", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as work:
        base = Settings(project=f"bench-plugin-{uuid.uuid4().hex[:8]}")  # type: ignore[call-arg]
        server = start_local(ensure_binary(base), Path(work) / "weaviate")
        plugin = None
        try:
            settings = base.model_copy(update={"weaviate_url": server.url, "weaviate_grpc_port": server.grpc_port})
            client = connect_url(settings, server.url)
            store = InsightStore.open(client, settings, load_embedder(settings))
            written = store.import_many(synthetic_insights(args.insights, rng))
            print(f"{written} insights imported")

            archive = Path(work) / "hindsight_insights.difypkg"
            package(ROOT, archive)
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(Path(work) / "plugin")
            plugin = PluginProcess(Path(work) / "plugin", python=sys.executable)
            credentials = {
                "weaviate_url": server.url,
                "weaviate_grpc_port": str(server.grpc_port),
                "project": settings.project,
                "embedder": "use-m3",
            }
            timings: dict[str, list[float]] = {"plugin runtime": [], "direct core call": [], "protocol only": []}
            block = 25
            for round_index in range(args.searches // block + 1):  # the first round is warm-up
                calls = [
                    ({"query": rng.choice(QUERIES), "scene": rng.choice(SCENES)}, f"user-{rng.randrange(200)}")
                    for _ in range(block)
                ]
                order = list(timings)
                rng.shuffle(order)
                for name in order:
                    for params, user in calls:
                        started = time.perf_counter()
                        if name == "plugin runtime":
                            output = plugin.invoke_tool("search_insight", params, credentials, user_id=user)
                            assert "error" not in output.json, output.json
                        elif name == "protocol only":
                            rejected = plugin.invoke_tool("search_insight", {**params, "top_k": 0}, credentials)
                            assert rejected.json["error"]["type"] == "invalid_input"
                        else:
                            tool_api.search_insight(store, settings, params, tool_api.Context(user, None))
                        if round_index > 0:
                            timings[name].append((time.perf_counter() - started) * 1000)
            rss = peak_rss_mib(plugin.process.pid)
            client.close()
        finally:
            if plugin is not None:
                plugin.close()
            server.stop()

    print(f"search_insight, {len(timings['direct core call'])} calls each at {written} insights:")
    print(f"{'path':>17} | {'p50 ms':>7} | {'p95 ms':>7}")
    p = {name: (float(np.percentile(v, 50)), float(np.percentile(v, 95))) for name, v in timings.items()}
    for name, (p50, p95) in p.items():
        print(f"{name:>17} | {p50:7.2f} | {p95:7.2f}")
    runtime, direct = p["plugin runtime"], p["direct core call"]
    print(
        f"runtime adds {runtime[0] - direct[0]:.2f} ms at p50, {runtime[1] - direct[1]:.2f} ms at p95 "
        f"(ratio {runtime[1] / direct[1]:.2f}x at p95)"
    )
    print(f"plugin process peak RSS: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
