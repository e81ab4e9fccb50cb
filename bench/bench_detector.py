"""The cost of the learned correction detector per recorded turn, beside the rules alone, in one run.

Each round reads the training corpus's turns (message + previous answer; not an evaluation set: only time is
measured) one call at a time, as record_turn does:

    rules only              detect(message, previous)
    embedding               the learned detector's one embedding call: the message, each of its sentences when it
                            has several, and the previous answer
    rules + learned         detect(message, previous, learned): the rules, the embedding, the model, the combination
    beyond the embedding    the same with the embedding served from memory: what the detector adds besides it

Per call: mean, median and p95 wall time after a warm-up round; the model file's load is start-up, reported apart.
One BLAS thread, as the plugin runs (config.Settings.embedder_threads).

    make bench-detector    (or: .venv/bin/python -m bench.bench_detector [--turns N] [--rounds N])
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # every entry point calls it first

import argparse
import dataclasses
import functools
import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np

from hindsight_insights.config import Settings
from hindsight_insights.detection.correction_types import Correction
from hindsight_insights.detection.corrections import detect
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.detection.text import forget_folds
from hindsight_insights.detector_model import MODEL_PATH, learned_detector, load_detector_model
from hindsight_insights.embedder import UseM3Embedder, Vectors
from scripts.train_detector import load_corpus


def detect_a_new_turn(message: str, previous: str, learned: LearnedDetector | None = None) -> Correction:
    """detect() as on a turn never seen: the folded texts that one call shares among its readers (text.fold's cache)
    are dropped first (text.forget_folds), so a later round does not find them folded by an earlier one."""
    forget_folds()
    return detect(message, previous, learned)


def timed(calls: Sequence[Callable[[], object]], rounds: int) -> list[float]:
    for call in calls:  # warm-up
        call()
    samples = []
    for _ in range(rounds):
        for call in calls:
            start = time.perf_counter()
            call()
            samples.append((time.perf_counter() - start) * 1000)
    return samples


def line(name: str, samples: list[float], base: float | None = None) -> str:
    p95 = float(np.percentile(samples, 95))
    ratio = f"  x{statistics.mean(samples) / base:.1f} of rules only" if base else ""
    return f"{name:<24}{statistics.mean(samples):8.2f}{statistics.median(samples):8.2f}{p95:8.2f}{ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    turns = [(row["message"], row.get("previous_assistant") or "") for row in load_corpus()[: args.turns]]
    embedder = UseM3Embedder(threads=1)
    start = time.perf_counter()
    load_detector_model()
    loaded_ms = (time.perf_counter() - start) * 1000
    learned = learned_detector(embedder, Settings(detector=True))
    assert learned is not None
    # The detector's one embedding call per turn (the message, each of its sentences when it has several, the previous
    # answer), recorded once, so that it can be timed alone and served from memory.
    cached: dict[tuple[str, ...], Vectors] = {}

    def recording(texts: Sequence[str]) -> Vectors:
        cached[tuple(texts)] = embedder.embed(list(texts))
        return cached[tuple(texts)]

    for message, previous in turns:
        detect(message, previous, dataclasses.replace(learned, embed=recording))

    def from_memory(texts: Sequence[str]) -> Vectors:
        return cached[tuple(texts)]

    in_memory = dataclasses.replace(learned, embed=from_memory)
    rules = timed([functools.partial(detect_a_new_turn, m, p) for m, p in turns], args.rounds)
    embedding = timed([functools.partial(embedder.embed, list(texts)) for texts in cached], args.rounds)
    combined = timed([functools.partial(detect_a_new_turn, m, p, learned) for m, p in turns], args.rounds)
    beyond = timed([functools.partial(detect_a_new_turn, m, p, in_memory) for m, p in turns], args.rounds)
    size = MODEL_PATH.stat().st_size / 1024
    print(f"{len(turns)} turns x {args.rounds} rounds; model file {size:.0f} KiB, loaded once in {loaded_ms:.0f} ms")
    print(f"{'ms per turn':<24}{'mean':>8}{'median':>8}{'p95':>8}")
    base = statistics.mean(rules)
    print(line("rules only", rules))
    several = sum(1 for texts in cached if len(texts) > 2)
    print(line(f"embedding ({several}/{len(cached)} >2 texts)", embedding))
    print(line("rules + learned", combined, base))
    print(line("beyond the embedding", beyond, base))
    added = [b - r for b, r in zip(beyond, rules, strict=True)]
    print(line("model + combination", added))


if __name__ == "__main__":
    main()
