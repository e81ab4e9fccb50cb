"""What the screen on every write costs the write tools: save_insight and record_turn with rules + the learned screen
beside the rules alone, in one run, interleaved call by call (the plugin's operations in process, over one local
Weaviate; two projects, one per screen, so neither sees the other's slots).

Every save_insight creates a new insight (its topic is new), so the write path is the whole of it: screening,
redaction, the slot's read, the insert with its embedding. Every second record_turn states a preference, so the
correction detector writes a lesson through the screen too. No workspace model: unsure items are held, not asked.
One BLAS thread (the default): the machine is shared.

    make bench-screen-writes    (or: .venv/bin/python -m bench.bench_screen_writes [--calls N])
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # every entry point calls it first

import argparse
import contextlib
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

from hindsight_dify.operations import Context, record_turn, save_insight
from hindsight_dify.params import Parameters
from hindsight_insights.config import Settings
from hindsight_insights.embedder import load_embedder
from hindsight_insights.screening import RULES_ONLY, screen_for
from hindsight_insights.store import InsightStore, open_store
from hindsight_insights.weaviate_server import running_weaviate

SUBJECTS = ["报价单", "退货", "发票", "会议纪要", "周报", "comparison tables", "release notes", "invoices"]
WISHES = ["以后{}用表格", "{}请写简短一点", "please keep {} under five lines", "{}先给结论"]


def save_call(store: InsightStore, i: int) -> Callable[[], object]:
    subject = SUBJECTS[i % len(SUBJECTS)]
    fields = {
        "topic": f"{subject} {i}",
        "kind": "preference",
        "scene": "general",
        "action": f"When the user asks about {subject} ({i}), answer in a short list.",
        "evidence": WISHES[i % len(WISHES)].format(subject),
        "confidence": 0.8,
    }
    return lambda: save_insight(store, Parameters(fields), Context(user_id=f"u{i % 20}"))


def turn_call(store: InsightStore, i: int) -> Callable[[], object]:
    subject = SUBJECTS[i % len(SUBJECTS)]
    message = WISHES[i % len(WISHES)].format(subject) if i % 2 else f"{subject} 的进度怎么样？"
    user = f"u{i % 20}"  # a session holds one user's turns (recording refuses another's): sessions per user
    session = f"{user}-s{i % 3}"
    fields = {"user_message": message, "assistant_message": f"关于{subject}：已处理。", "session_id": session}
    return lambda: record_turn(store, Parameters(fields), Context(user_id=user, message_id=f"m{i}"))


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200, help="calls per tool and screen")
    args = parser.parse_args()
    settings = Settings(project=f"bench-screen-{uuid.uuid4().hex[:8]}")
    embedder = load_embedder(settings)
    learned = screen_for(settings, embedder)
    timings: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as data_dir, running_weaviate(settings, Path(data_dir)) as running:
        rules_settings = running.model_copy(update={"project": running.project + "-rules"})
        with (
            contextlib.closing(open_store(running, embedder, learned)) as with_learned,
            contextlib.closing(open_store(rules_settings, embedder, RULES_ONLY)) as rules_only,
        ):
            stores = {"rules+learned": with_learned, "rules": rules_only}
            for store in stores.values():  # warm-up: the first embedding and write of each store
                save_call(store, 10_000)()
                turn_call(store, 10_000)()
            for i in range(args.calls):
                order = list(stores.items()) if i % 2 else list(reversed(stores.items()))
                for name, store in order:
                    timings.setdefault(f"save_insight {name}", []).append(timed(save_call(store, i)))
                    timings.setdefault(f"record_turn {name}", []).append(timed(turn_call(store, i)))
    print(f"{args.calls} calls per path, interleaved; ratio = rules+learned / rules")
    print(f"{'path':<28} | {'p50 ms':>8} | {'p95 ms':>8}")
    for name, values in timings.items():
        print(f"{name:<28} | {np.percentile(values, 50):8.2f} | {np.percentile(values, 95):8.2f}")
    for tool in ("save_insight", "record_turn"):
        learned_t, rules_t = timings[f"{tool} rules+learned"], timings[f"{tool} rules"]
        p50 = np.percentile(learned_t, 50) / np.percentile(rules_t, 50)
        p95 = np.percentile(learned_t, 95) / np.percentile(rules_t, 95)
        print(f"{tool}: p50 ratio {p50:.2f}, p95 ratio {p95:.2f}")


if __name__ == "__main__":
    main()
