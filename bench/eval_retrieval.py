"""Retrieval quality on the labelled set (bench/evalset.py): the no-match gate against a global threshold.

Loads every insight into a fresh project on a real Weaviate, in its labelled state, then runs each conversation
through InsightStore.recall (what search_insight injects) and through the global-threshold baseline, in the same run:

  gate         recall() with the embedder's calibrated defaults: threshold + background margin (ranking.py), and
               standing rules ranked by relevance, then recency, within the budget
  global 0.17  the previous behaviour: one global threshold (0.17) on relevance, standing rules newest first
  global @FP   the same with the global threshold raised until its tune false-positive rate is no higher than the
               gate's (chosen on the tune split): recall at an equal false-alarm rate

Figures, per split (the holdout split is the headline: nothing was calibrated or tuned on it):
  recall@5       share of the relevant insights injected (situational top 5 + standing rules), over the positive
                 conversations; also per language (zh, en, cross = query and insight in different languages)
  situational    the same over relevant facts, processes and lessons only (what the gate decides)
  no-match FP    share of the conversations no insight applies to that got a situational insight injected
                 (standing rules are injected whatever the question, by design)
  budget hits    share of the budget-user conversations whose OLD preference(s) were injected
  forbidden      ineligible insights injected (superseded, expired, pending, rejected, other users', other scenes)

    make eval    (or: .venv/bin/python -m bench.eval_retrieval [--calibrate])

--tune-only reports the tune split alone, for work in progress. --calibrate also grids the gate's constants on
the tune split only and prints the best (recall - FP).
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

from bench import evalset
from bench.evalset import EvalSet, Query, Split
from hindsight_insights.config import RETRIEVAL_DEFAULTS, Settings
from hindsight_insights.models import Recall
from hindsight_insights.store import SITUATIONAL_KINDS, GateInput, InsightStore, newest_per_topic, open_store
from hindsight_insights.weaviate_server import running_weaviate

OLD_THRESHOLD = 0.17  # the global threshold before the gate (calibrated on the first labelled set)
SITUATIONAL = {kind.value for kind in SITUATIONAL_KINDS}
Retriever = Callable[[Query], Recall]


def gate_recall(store: InsightStore) -> Retriever:
    return lambda q: store.retrieval.recall(q.turns, scene=q.scene, user_id=q.user_id, top_k=5)


def global_recall(store: InsightStore, threshold: float) -> Retriever:
    """The previous behaviour: a plain threshold, and the newest standing rules within the budget."""

    def run(q: Query) -> Recall:
        situational = store.retrieval.search(
            q.turns, scene=q.scene, user_id=q.user_id, top_k=5, score_threshold=threshold, kinds=SITUATIONAL_KINDS
        )
        standing = store.retrieval.standing_rules(scene=q.scene, user_id=q.user_id)
        kept = newest_per_topic([*standing, *(hit.insight for hit in situational)])
        return Recall(
            standing=[i for i in standing if i.id in kept], situational=[h for h in situational if h.insight.id in kept]
        )

    return run


@dataclass
class Figures:
    recall: dict[str, float]
    situational: float
    no_match_fp: float
    budget_hits: float
    forbidden: int
    counts: str


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def measure(data: EvalSet, key_of: dict[uuid.UUID, str], retrieve: Retriever, split: Split) -> Figures:
    by_key = {item["key"]: item for item in data.insights}
    per_lang: dict[str, list[float]] = {}
    situational: list[float] = []
    forbidden = 0
    positives = data.of("positive", split)
    for q in positives:
        result = retrieve(q)
        injected = {key_of[i.id] for i in result.insights}
        relevant = set(q.relevant)
        per_lang.setdefault(q.lang, []).append(len(relevant & injected) / len(relevant))
        wanted = {k for k in relevant if by_key[k]["kind"] in SITUATIONAL}
        if wanted:
            found = {key_of[hit.insight.id] for hit in result.situational}
            situational.append(len(wanted & found) / len(wanted))
        forbidden += sum(not evalset.eligible(by_key[k], q) for k in injected)
    no_match = data.of("no_match", split)
    false_positives = 0
    for q in no_match:
        result = retrieve(q)
        false_positives += bool(result.situational)
        forbidden += sum(not evalset.eligible(by_key[key_of[i.id]], q) for i in result.insights)
    budget = data.of("budget", split)
    hits = 0
    for q in budget:
        result = retrieve(q)
        hits += set(q.relevant) <= {key_of[i.id] for i in result.standing}
    every = [value for values in per_lang.values() for value in values]
    recall = {"all": _mean(every), **{lang: _mean(values) for lang, values in sorted(per_lang.items())}}
    return Figures(
        recall=recall,
        situational=_mean(situational),
        no_match_fp=false_positives / len(no_match),
        budget_hits=hits / len(budget),
        forbidden=forbidden,
        counts=f"{len(positives)} positive, {len(no_match)} no-match, {len(budget)} budget",
    )


# ---- calibration: the tune split only ----------------------------------------------------------------------------


def tune_inputs(store: InsightStore, data: EvalSet) -> list[tuple[Query, list[GateInput]]]:
    """What the gate sees for every tune conversation (positive and no-match). Never the holdout."""
    queries = data.of("positive", "tune") + data.of("no_match", "tune")
    return [(q, store.retrieval.gate_inputs(q.turns, scene=q.scene, user_id=q.user_id)) for q in queries]


def gated_rates(
    inputs: list[tuple[Query, list[GateInput]]],
    key_of: dict[uuid.UUID, str],
    kind_of: dict[str, str],
    passes: Callable[[GateInput], bool],
) -> tuple[float, float]:
    """(situational recall@5, no-match FP) of a gate, ranking what passes by relevance (close to the score)."""
    recalls, false_positives, negatives = [], 0, 0
    for q, candidates in inputs:
        kept = sorted((c for c in candidates if passes(c)), key=lambda c: -c.relevance)[:5]
        if q.kind == "no_match":
            negatives += 1
            false_positives += bool(kept)
            continue
        wanted = {k for k in q.relevant if kind_of[k] in SITUATIONAL}
        if wanted:
            recalls.append(len(wanted & {key_of[c.insight.id] for c in kept}) / len(wanted))
    return _mean(recalls), false_positives / max(negatives, 1)


def threshold_gate(threshold: float) -> Callable[[GateInput], bool]:
    return lambda c: c.relevance >= threshold


def margin_gate(threshold: float, margin: float) -> Callable[[GateInput], bool]:
    return lambda c: c.relevance >= threshold and c.similarity - c.background >= margin


def calibrate(store: InsightStore, data: EvalSet, key_of: dict[uuid.UUID, str]) -> None:
    inputs = tune_inputs(store, data)
    kind_of = {item["key"]: item["kind"] for item in data.insights}
    steps = [round(0.01 * i, 2) for i in range(0, 41)]
    print("\ncalibration on the tune split (situational recall@5, no-match FP):")
    print("global threshold:")
    for t in steps[8:36:2]:
        r, fp = gated_rates(inputs, key_of, kind_of, threshold_gate(t))
        print(f"  t={t:.2f}  recall {r:.3f}  FP {fp:.3f}")
    points = []
    for t in steps[8:31]:
        for m in steps[:31]:
            r, fp = gated_rates(inputs, key_of, kind_of, margin_gate(t, m))
            points.append((t, m, r, fp))
    # A missed rule is the product's failure (a correction not applied); a rule injected where it does not apply is
    # a conditional instruction the model can pass over. So a miss weighs twice a false alarm.
    for weight in (1.0, 1.5, 2.0):
        t, m, r, fp = max(points, key=lambda p: weight * p[2] - p[3])
        print(f"gate, best {weight:g}*recall - FP: threshold {t:.2f}, margin {m:.2f}: recall {r:.3f}, FP {fp:.3f}")

    def dominated(p: tuple[float, float, float, float]) -> bool:
        return any(q[2] >= p[2] and q[3] <= p[3] and (q[2] > p[2] or q[3] < p[3]) for q in points)

    frontier = {(r, fp): (t, m) for t, m, r, fp in points if not dominated((t, m, r, fp))}
    print("gate frontier (threshold, margin: recall, FP):")
    for (r, fp), (t, m) in sorted(frontier.items(), key=lambda item: item[0][1]):
        print(f"  {t:.2f}, {m:.2f}: recall {r:.3f}, FP {fp:.3f}")


# ---- the report -----------------------------------------------------------------------------------------------


def matching_global_threshold(store: InsightStore, data: EvalSet, key_of: dict[uuid.UUID, str]) -> float:
    """The lowest global threshold whose tune FP is no higher than the gate's tune FP (tune split only)."""
    inputs = tune_inputs(store, data)
    kind_of = {item["key"]: item["kind"] for item in data.insights}
    settings = store.settings
    _, gate_fp = gated_rates(inputs, key_of, kind_of, margin_gate(settings.relevance_threshold, settings.margin))
    for step in range(10, 60):
        threshold = step / 100
        if gated_rates(inputs, key_of, kind_of, threshold_gate(threshold))[1] <= gate_fp:
            return threshold
    return 0.6


def report(rows: list[tuple[str, Split, Figures]]) -> None:
    langs = ["zh", "en", "cross"]
    header = f"{'system':>16} | {'split':>7} | {'recall@5':>8} | " + " | ".join(f"{lang:>6}" for lang in langs)
    header += f" | {'situ.':>6} | {'no-match FP':>11} | {'budget hits':>11} | {'forbidden':>9}"
    print(header)
    for name, split, f in rows:
        print(
            f"{name:>16} | {split:>7} | {f.recall['all']:8.3f} | "
            + " | ".join(f"{f.recall.get(lang, float('nan')):6.3f}" for lang in langs)
            + f" | {f.situational:6.3f} | {f.no_match_fp:11.3f} | {f.budget_hits:11.3f} | {f.forbidden:9d}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calibrate", action="store_true", help="grid the gate's constants on the tune split")
    parser.add_argument("--tune-only", action="store_true", help="report the tune split alone (while developing)")
    args = parser.parse_args()
    data = evalset.read()
    settings = Settings(project=f"eval-{uuid.uuid4().hex[:8]}")
    defaults = RETRIEVAL_DEFAULTS[settings.embedder]
    print(
        f"{len(data.insights)} insights; conversations per split: "
        + "; ".join(f"{split}: {measure_counts(data, split)}" for split in evalset.SPLITS)
    )
    print(
        f"gate ({settings.embedder}): threshold {settings.relevance_threshold}, margin {settings.margin} "
        f"(calibrated: {defaults.calibrated}); standing budget {settings.standing_rule_budget}"
    )
    with (
        tempfile.TemporaryDirectory() as data_dir,
        running_weaviate(settings, Path(data_dir)) as running,
        contextlib.closing(open_store(running)) as store,
    ):
        key_of, held = evalset.load(store, data)
        print(
            f"the poisoning screen held {len(held)} of {len(data.insights)} of the set's ordinary rules "
            f"(approved for this measurement, as a reviewer would): {', '.join(held) or 'none'}"
        )
        if args.calibrate:
            calibrate(store, data, key_of)
        matched = matching_global_threshold(store, data, key_of)
        splits: tuple[Split, ...] = ("tune",) if args.tune_only else ("holdout", "tune")
        systems = {
            "gate": gate_recall(store),
            f"global {OLD_THRESHOLD:.2f}": global_recall(store, OLD_THRESHOLD),
            f"global @FP {matched:.2f}": global_recall(store, matched),
        }
        rows = [
            (name, split, measure(data, key_of, retrieve, split))
            for split in splits
            for name, retrieve in systems.items()
        ]
    print("\nholdout is the headline (never tuned on); tune is what the constants were chosen on")
    report(rows)


def measure_counts(data: EvalSet, split: Split) -> str:
    return ", ".join(f"{len(data.of(kind, split))} {kind}" for kind in ("positive", "no_match", "budget"))


if __name__ == "__main__":
    main()
