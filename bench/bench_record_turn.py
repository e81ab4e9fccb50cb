"""record_turn at 100,000 insights through the plugin runtime, with the learned correction detector and with the rules
alone, side by side in one run, interleaved call by call.

Both paths are the packaged plugin over the daemon's stdio protocol (testkit/plugin_runtime.py), in two plugin
processes that differ in one setting: `HINDSIGHT_DETECTOR=false` (the rule-based detector decides alone) or unset
(rules + the learned detector, as shipped). They write into the same project of 100,000 insights (bench_store's
synthetic import), each for its own users and sessions, so neither reads the other's turns or slots. No workspace
model: what the detector is unsure of is not asked about.

The turns are the correction detector's training corpus (not an evaluation set: only time is measured), shuffled,
in sessions of SESSION_TURNS: each turn's answer is the next message's previous answer, so the detector reads every
message against the answer it replies to, and every correction it finds is learned at once (a write through
admission into the 100,000). For each turn the two paths run in a random order. The first WARM_UP turns are not
timed. Prints p50/p95 of each path, the ratio learned / rules, and how many turns each path called a correction.
The learned detector finds more corrections, and each is a write (admission, the screen's embedding, the insert), so
the figures are given twice: over every turn (what a chatflow sees), and over the turns where neither path learned
anything (the same work but the detection: the detector's own cost at 100,000 insights).

The 100,000 insights take a while to import on a small machine, so Weaviate's data is kept under the cache directory
(Settings.cache_dir, ~/.cache/hindsight-insights/bench/) and reused; the import's time is printed when it runs and
kept beside the data. `--fresh` imports again into a temporary directory.

    make bench-record-turn   (or: .venv/bin/python -m bench.bench_record_turn [--insights N] [--turns N] [--fresh])
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import argparse
import contextlib
import json
import random
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_store import synthetic_insights
from hindsight_insights.config import Settings
from hindsight_insights.embedder import load_embedder
from hindsight_insights.governance.writing import write_many
from hindsight_insights.store import open_store
from hindsight_insights.weaviate_server import ensure_binary, start_local
from scripts.package_plugin import ROOT, package
from scripts.train_detector import load_corpus
from testkit.messages import credentials_for
from testkit.plugin_runtime import PluginProcess
from testkit.runtimes import CLI

SESSION_TURNS = 8
WARM_UP = 20
PATHS: dict[str, dict[str, str]] = {
    "rules only": {"HINDSIGHT_DETECTOR": "false"},
    "rules + learned": {},  # as shipped: Settings.detector is on
}
BUILD_RECORD = "hindsight-bench-import.json"


@contextlib.contextmanager
def data_dir(fresh: bool, insights: int) -> Iterator[Path]:
    if fresh:
        with tempfile.TemporaryDirectory() as work:
            yield Path(work)
        return
    # Named by the store's layout: data of one collection set per project is not what this version reads.
    cached = Settings(_env_file=None).cache_dir / "bench" / f"record-turn-{insights}-tenants"
    cached.mkdir(parents=True, exist_ok=True)
    yield cached


def turns(count: int, rng: random.Random) -> list[dict[str, str]]:
    """`count` record_turn inputs from the corpus, in sessions where each answer is the next message's previous one."""
    rows = load_corpus()
    rng.shuffle(rows)
    rows = rows[:count]
    inputs = []
    for index, row in enumerate(rows):
        last_of_session = (index + 1) % SESSION_TURNS == 0 or index + 1 == len(rows)
        answer = "好的，已记下。" if last_of_session else (rows[index + 1].get("previous_assistant") or "好的。")
        inputs.append(
            {"user_message": row["message"], "assistant_message": answer, "session": str(index // SESSION_TURNS)}
        )
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--insights", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=400, help="timed turns per path (the corpus has ~1,700)")
    parser.add_argument("--fresh", action="store_true", help="import into a temporary directory, not the cache")
    args = parser.parse_args()
    rng = random.Random(17)
    run_id = uuid.uuid4().hex[:8]
    with data_dir(args.fresh, args.insights) as data, tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        base = Settings(_env_file=None, project=f"bench-record-turn-{args.insights}", weaviate_insert_timeout_s=300.0)
        server = start_local(ensure_binary(base), data / "weaviate")
        plugins: dict[str, PluginProcess] = {}
        try:
            settings = server.settings(base)
            store = open_store(settings, load_embedder(settings))
            record = data / BUILD_RECORD
            if store.count()[0] < args.insights:
                started = time.perf_counter()
                written = write_many(store, synthetic_insights(args.insights, random.Random(13)), batch_size=1000)
                seconds = time.perf_counter() - started
                record.write_text(json.dumps({"insights": written, "seconds": round(seconds)}))
                print(f"{written} insights imported in {seconds:.0f}s ({written / seconds:.0f}/s)", flush=True)
            elif record.exists():
                built = json.loads(record.read_text())
                print(f"reusing {data}: {built['insights']} insights, imported once in {built['seconds']}s", flush=True)
            insights_now = store.count()[0]
            store.close()

            archive = work / "hindsight_insights.difypkg"
            package(ROOT, archive, CLI.find())
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(work / "plugin")
            for name, env in PATHS.items():
                plugins[name] = PluginProcess(work / "plugin", python=sys.executable, env=env)
            credentials = credentials_for(server.url, server.grpc_port, settings.project, server.api_key)

            timings: dict[str, list[float]] = {name: [] for name in PATHS}
            corrections: dict[str, int] = dict.fromkeys(PATHS, 0)
            learned: dict[str, list[int]] = {name: [] for name in PATHS}
            for index, turn in enumerate(turns(args.turns + WARM_UP, rng)):
                order = list(PATHS)
                rng.shuffle(order)
                for name in order:
                    tag = "L" if "learned" in name else "R"
                    parameters: dict[str, Any] = {
                        "user_message": turn["user_message"],
                        "assistant_message": turn["assistant_message"],
                    }
                    started = time.perf_counter()
                    output = plugins[name].invoke_tool(
                        "record_turn",
                        parameters,
                        credentials,
                        user_id=f"bench-{run_id}-{tag}-u{int(turn['session']) % 25}",
                        conversation_id=f"bench-{run_id}-{tag}-s{turn['session']}",
                        message_id=f"bench-{run_id}-{tag}-m{index}",
                    )
                    elapsed = (time.perf_counter() - started) * 1000
                    assert "error" not in output.json, output.json  # a fast error would flatter the figures
                    if index >= WARM_UP:
                        timings[name].append(elapsed)
                        corrections[name] += output.json["correction"]["type"] != "none"
                        learned[name].append(len(output.json["learned"]))
        finally:
            for plugin in plugins.values():
                plugin.close()
            server.stop()

    report(timings, corrections, learned, insights_now)


def report(
    timings: dict[str, list[float]], corrections: dict[str, int], learned: dict[str, list[int]], insights: int
) -> None:
    calls = len(timings["rules only"])
    print(f"\nrecord_turn at {insights} insights, plugin runtime (stdio), {calls} turns per path, interleaved:")
    quiet = [not any(learned[name][i] for name in PATHS) for i in range(calls)]  # neither path wrote a lesson
    subsets = {"every turn": [True] * calls, "turns neither learned from": quiet}
    print(f"{'turns':>26} | {'path':>16} | {'n':>4} | {'p50 ms':>7} | {'p95 ms':>7} | corrections | insights learned")
    for subset, keep in subsets.items():
        chosen = {
            name: np.array([t for t, k in zip(values, keep, strict=True) if k]) for name, values in timings.items()
        }
        for name, times in chosen.items():
            print(
                f"{subset:>26} | {name:>16} | {len(times):>4} | {np.percentile(times, 50):7.2f} | "
                f"{np.percentile(times, 95):7.2f} | {corrections[name] if subset == 'every turn' else '':>11} | "
                f"{sum(learned[name]) if subset == 'every turn' else '':>16}"
            )
        rules, with_learned = chosen["rules only"], chosen["rules + learned"]
        p50 = np.percentile(with_learned, 50) / np.percentile(rules, 50)
        p95 = np.percentile(with_learned, 95) / np.percentile(rules, 95)
        print(f"{subset:>26}: rules + learned / rules only: p50 {p50:.2f}x, p95 {p95:.2f}x")


if __name__ == "__main__":
    main()
