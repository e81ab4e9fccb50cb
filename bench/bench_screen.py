"""The cost of the poisoning screen on every write: rules alone beside rules + the learned screen, in one run.

Each round screens the insights of bench/data/poisoning.json (topic, action, observation) one call at a time, as
admission does, and redacts their fields (by the rules alone, and with the learned address finder beside them).
Reported per call: mean, median and p95 wall time, after one warm-up round (the embedder's first call and the model
files' load are start-up, not per-write costs; the load times are reported on their own). One BLAS thread: the
machine is shared.

    make bench-screen    (or: .venv/bin/python -m bench.bench_screen [--rounds N])
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # every entry point calls it first

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.eval_poisoning import load
from hindsight_insights.address_model import load_address_model
from hindsight_insights.detection.poisoning import screen
from hindsight_insights.detection.redaction import redact
from hindsight_insights.embedder import UseM3Embedder
from hindsight_insights.screen_model import MODEL_PATH, learned_screen, load_screen_model


def timed(call: Callable[[], object], rounds: int) -> list[float]:
    call()  # warm-up
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def redact_all(texts: tuple[str, ...], learned: bool = True) -> list[str]:
    return [redact(text, learned=learned).text for text in texts]


def line(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"{name:<28} mean {statistics.fmean(samples):7.2f} ms  median {statistics.median(samples):7.2f} ms  "
        f"p95 {p95:7.2f} ms  ({len(samples)} calls)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    insights: list[dict[str, Any]] = [item["insight"] for item in load()["items"]]
    fields = [(i["topic"], i["action"], i["observation"]) for i in insights]

    start = time.perf_counter()
    embedder = UseM3Embedder(threads=1)
    embedder.embed(["the first call loads the weights"])
    embedder_load = time.perf_counter() - start
    start = time.perf_counter()
    load_screen_model()
    model_load = time.perf_counter() - start
    learned = learned_screen(embedder)
    if learned is None:
        raise SystemExit("the shipped model was trained with another embedder")

    start = time.perf_counter()
    load_address_model()
    address_load = time.perf_counter() - start
    samples: dict[str, list[float]] = {
        "rules only": [],
        "rules + learned": [],
        "redaction, rules (3 fields)": [],
        "redaction + addresses": [],
    }
    for texts in fields:
        samples["rules only"] += timed(functools.partial(screen, *texts), args.rounds)
        samples["rules + learned"] += timed(functools.partial(screen, *texts, learned=learned), args.rounds)
        samples["redaction, rules (3 fields)"] += timed(functools.partial(redact_all, texts, False), args.rounds)
        samples["redaction + addresses"] += timed(functools.partial(redact_all, texts), args.rounds)
    print(
        f"{len(fields)} insights x {args.rounds} rounds; start-up: embedder {embedder_load:.2f} s, "
        f"model {model_load * 1000:.0f} ms ({MODEL_PATH.stat().st_size / 1024:.0f} KiB), address finder "
        f"{address_load * 1000:.0f} ms"
    )
    for name, values in samples.items():
        print(line(name, values))
    extra = statistics.fmean(samples["rules + learned"]) - statistics.fmean(samples["rules only"])
    print(f"the learned screen adds {extra:.2f} ms a write")
    rules, both = (statistics.fmean(samples[name]) for name in ("redaction, rules (3 fields)", "redaction + addresses"))
    print(f"the learned address finder adds {both - rules:.2f} ms a write ({both / rules:.2f}x redaction by rules)")


if __name__ == "__main__":
    main()
