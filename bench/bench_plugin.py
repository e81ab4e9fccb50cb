"""search_insight at 10,000 insights through every way the plugin runs, side by side in one run.

    direct core call   hindsight_dify.operations.search_insight in this process: the code the tool runs
    stdio runtime      our client of the daemon's stdio protocol (testkit/plugin_runtime.py), plugin in this venv
    PluginRunner       the Dify SDK's test driver over the real CLI (`dify plugin run`), plugin in the CLI's venv
    daemon dispatch    Dify's plugin daemon, called as Dify's API server calls it (HTTP, server-sent events)

All four search the same Weaviate with the same queries. The paths take turns in blocks of 25 calls, in a new
random order each round, so machine noise hits all alike while each runs warm (alternating single calls makes the
processes on 2 cores disturb each other's warm state, which measures that interference instead). The first round
is warm-up. Besides each path's p50/p95 and their ratio to the direct call, it prints what each path adds call by
call (the same query's time minus the direct call's), and each plugin process's peak memory.

    make bench-plugin   (or: .venv/bin/python -m bench.bench_plugin [--insights 10000] [--searches 500])
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import argparse
import random
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_store import QUERIES, SCENES, synthetic_insights
from hindsight_dify import Context, ToolResult
from hindsight_dify.operations import search_insight
from hindsight_dify.params import Parameters
from hindsight_insights.config import Settings
from hindsight_insights.governance.writing import write_many
from hindsight_insights.store import open_store
from hindsight_insights.weaviate_server import ensure_binary, start_local
from scripts.package_plugin import ROOT, package
from testkit.daemon import DaemonStack, descendants
from testkit.messages import ToolOutput, credentials_for
from testkit.plugin_runtime import PluginProcess
from testkit.runner import RunnerPlugin
from testkit.runtimes import CLI, DAEMON, toolchain

BLOCK = 25
Call = Callable[[dict[str, Any], str], None]


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def python_children(pid: int) -> list[int]:
    """The plugin process(es) a runtime started: its descendants running Python."""
    found = []
    for child, _ in descendants(pid):
        try:
            if "python" in Path(f"/proc/{child}/cmdline").read_text(errors="replace").split("\0")[0]:
                found.append(child)
        except OSError:
            continue
    return found


def through(invoke: Callable[..., ToolOutput], credentials: dict[str, Any]) -> Call:
    """One search through a runtime's client, checked: a fast error would flatter the figures."""

    def call(parameters: dict[str, Any], user: str) -> None:
        output = invoke("search_insight", parameters, credentials, user_id=user)
        assert "error" not in output.json, output.json

    return call


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--insights", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=500)
    args = parser.parse_args()
    rng = random.Random(11)
    tools, cli, daemon_binary = toolchain(), CLI.find(), DAEMON.find()
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        base = Settings(_env_file=None, project=f"bench-plugin-{uuid.uuid4().hex[:8]}", weaviate_insert_timeout_s=120)
        server = start_local(ensure_binary(base), work / "weaviate")
        stdio = runner = stack = None
        try:
            settings = server.settings(base)
            store = open_store(settings)
            written = write_many(store, synthetic_insights(args.insights, rng))
            print(f"{written} insights imported", flush=True)

            archive = package(ROOT, work / "hindsight_insights.difypkg", cli, tools).path
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(work / "plugin")
            stdio = PluginProcess(work / "plugin", python=sys.executable)
            runner = RunnerPlugin(archive, cli, tools, work)
            (work / "daemon-stack").mkdir()
            stack = DaemonStack.start(daemon_binary, cli, tools, work / "daemon-stack")
            daemon = stack.client()
            daemon.install(daemon.upload(archive))
            credentials = credentials_for(server.url, server.grpc_port, settings.project, server.api_key)
            print("all runtimes up", flush=True)

            paths: dict[str, Call] = {
                "direct core call": lambda p, u: checked_result(search_insight(store, Parameters(p), Context(u))),
                "stdio runtime": through(stdio.invoke_tool, credentials),
                "PluginRunner": through(runner.invoke_tool, credentials),
                "daemon dispatch": through(daemon.invoke_tool, credentials),
            }
            timings: dict[str, list[float]] = {name: [] for name in paths}
            for round_index in range(args.searches // BLOCK + 1):
                calls = [
                    ({"query": rng.choice(QUERIES), "scene": rng.choice(SCENES)}, f"user-{rng.randrange(200)}")
                    for _ in range(BLOCK)
                ]
                order = list(paths)
                rng.shuffle(order)
                for name in order:
                    for parameters, user in calls:
                        started = time.perf_counter()
                        paths[name](parameters, user)
                        if round_index > 0:
                            timings[name].append((time.perf_counter() - started) * 1000)
            assert stack.daemon.process is not None
            memory = {
                "stdio runtime": peak_rss_mib(stdio.process.pid),
                "PluginRunner": max(map(peak_rss_mib, python_children(runner.runner.process.pid)), default=0.0),
                "daemon dispatch": max(map(peak_rss_mib, python_children(stack.daemon.process.pid)), default=0.0),
            }
            daemon.close()
            store.close()
        finally:
            for closing in (stdio, runner):
                if closing is not None:
                    closing.close()
            if stack is not None:
                stack.stop()
            server.stop()

    report(timings, written, memory)


def checked_result(result: ToolResult) -> None:
    assert "error" not in result.json, result.json


def report(timings: dict[str, list[float]], insights: int, memory: dict[str, float]) -> None:
    """Each path's own percentiles, and its overhead call by call: every path made the same calls in the same
    order, so the difference to the direct call on the same query cancels out which queries are slow."""
    direct_times = np.array(timings["direct core call"])
    direct = (float(np.percentile(direct_times, 50)), float(np.percentile(direct_times, 95)))
    print(f"\nsearch_insight at {insights} insights, {len(direct_times)} calls per path, blocks of {BLOCK}, shuffled:")
    header = f"{'path':>17} | {'p50 ms':>7} | {'p95 ms':>7} | {'p50 ratio':>9} | {'p95 ratio':>9}"
    print(f"{header} | {'added p50':>9} | {'added p95':>9} | peak RSS")
    for name, values in timings.items():
        times = np.array(values)
        p50, p95 = float(np.percentile(times, 50)), float(np.percentile(times, 95))
        added = times - direct_times
        rss = f"{memory[name]:.0f} MiB" if name in memory else "(bench process)"
        print(
            f"{name:>17} | {p50:7.2f} | {p95:7.2f} | {p50 / direct[0]:8.2f}x | {p95 / direct[1]:8.2f}x | "
            f"{float(np.percentile(added, 50)):6.2f} ms | {float(np.percentile(added, 95)):6.2f} ms | {rss}"
        )


if __name__ == "__main__":
    main()
