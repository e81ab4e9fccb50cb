"""search_insight on a healthy Weaviate while another Weaviate that the same plugin process uses is frozen.

Two local Weaviates; the healthy one holds 2,000 insights. The packaged plugin runs as the Dify daemon runs it. In
alternating blocks, the healthy searches run either alone ("normal") or while a second thread keeps calling the
frozen Weaviate (SIGSTOP) back to back, so that a hung call is always in flight ("frozen"). Before the fix, one hung
call blocked every other call of the process (28 s). The target: p95 with a frozen neighbour within 2x of normal.

    .venv/bin/python -m bench.bench_frozen [--searches 300]
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import argparse
import random
import signal
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from pathlib import Path

import numpy as np

from bench.bench_store import QUERIES, SCENES, synthetic_insights
from hindsight_insights.config import Settings
from hindsight_insights.governance.writing import write_many
from hindsight_insights.store import open_store
from hindsight_insights.weaviate_server import LocalWeaviate, ensure_binary, start_local
from scripts.package_plugin import ROOT, package
from testkit.plugin_runtime import PluginProcess
from testkit.runtimes import CLI


def credentials(server: LocalWeaviate, project: str) -> dict[str, str]:
    return {
        "weaviate_url": server.url,
        "weaviate_api_key": server.api_key,
        "weaviate_grpc_port": str(server.grpc_port),
        "project": project,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--insights", type=int, default=2000)
    args = parser.parse_args()
    rng = random.Random(5)
    project = f"bench-frozen-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as work:
        base = Settings(project=project, weaviate_insert_timeout_s=120)
        healthy = start_local(ensure_binary(base), Path(work) / "healthy")
        frozen = start_local(ensure_binary(base), Path(work) / "frozen")
        plugin = None
        try:
            store = open_store(healthy.settings(base))
            write_many(store, synthetic_insights(args.insights, rng))
            store.close()
            package(ROOT, Path(work) / "plugin.difypkg", CLI.find())
            with zipfile.ZipFile(Path(work) / "plugin.difypkg") as zipped:
                zipped.extractall(Path(work) / "plugin")
            plugin = PluginProcess(Path(work) / "plugin", python=sys.executable)
            good, bad = credentials(healthy, project), credentials(frozen, project)
            assert plugin.validate_credentials(good) and plugin.validate_credentials(bad)
            frozen.process.send_signal(signal.SIGSTOP)

            hung = threading.Event()
            stop = threading.Event()
            hung_calls = 0

            def keep_one_call_hanging() -> None:
                nonlocal hung_calls
                while not stop.is_set():
                    if hung.is_set():
                        plugin_output = plugin.invoke_tool("search_insight", {"query": "退货"}, bad)
                        assert "error" in plugin_output.json
                        hung_calls += 1
                    else:
                        time.sleep(0.01)

            background = threading.Thread(target=keep_one_call_hanging, daemon=True)
            background.start()
            timings: dict[str, list[float]] = {"normal": [], "frozen": []}
            block = 25
            for round_index in range(args.searches // block + 1):  # the first round is warm-up
                for phase in rng.sample(list(timings), 2):
                    if phase == "frozen":
                        hung.set()
                        time.sleep(0.5)  # a hung call is in flight before the block starts
                    for _ in range(block):
                        parameters = {"query": rng.choice(QUERIES), "scene": rng.choice(SCENES)}
                        started = time.perf_counter()
                        output = plugin.invoke_tool("search_insight", parameters, good, user_id="user-1")
                        elapsed = (time.perf_counter() - started) * 1000
                        assert "error" not in output.json, output.json
                        if round_index > 0:
                            timings[phase].append(elapsed)
                    hung.clear()
            stop.set()
        finally:
            frozen.process.send_signal(signal.SIGCONT)
            if plugin is not None:
                plugin.close()
            healthy.stop()
            frozen.stop()

    p = {name: (float(np.percentile(v, 50)), float(np.percentile(v, 95))) for name, v in timings.items()}
    print(f"search_insight on a healthy Weaviate, {len(timings['normal'])} calls per phase, {args.insights} insights")
    print(f"{'phase':>24} | {'p50 ms':>7} | {'p95 ms':>7}")
    print(f"{'normal':>24} | {p['normal'][0]:7.2f} | {p['normal'][1]:7.2f}")
    print(f"{'another Weaviate frozen':>24} | {p['frozen'][0]:7.2f} | {p['frozen'][1]:7.2f}")
    print(f"p95 ratio frozen / normal: {p['frozen'][1] / p['normal'][1]:.2f}x (target: at most 2x)")
    print(f"calls to the frozen Weaviate that hung and failed meanwhile: {hung_calls}")


if __name__ == "__main__":
    main()
