"""A candidate setting of the learned correction detector, judged out of fold on the training corpus and on the tune
split: the confusion matrix, false corrections on `none` and each correction class's precision and recall.

The features, folds, calibration and decision are scripts/train_detector.py's own (nothing is rebuilt here). With no
option it judges the shipped model's setting (hindsight_insights/data/detector_model.npz); each option overrides one
choice, so a candidate is compared with it before `make train-detector` is changed:

    .venv/bin/python -m scripts.detector_oof [--c 10] [--block-weights 1,1,0.25] [--correction-at 0.9] [--firm self_fix]
        [--factual-at 0.96] [--corpus PATH] [--no-tune]

The tune split is the only part of bench/data/corrections.json read (its holdout and every evaluation set are not);
it is judged with the model fitted on the whole corpus under the candidate setting, as training would ship it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hindsight_insights.detection.learned_corrections import Combination
from hindsight_insights.detector_model import load_detector_model, trained_combination
from hindsight_insights.embedder import UseM3Embedder
from scripts.corpora import Row
from scripts.train_detector import (
    CLASSES,
    CORPUS,
    Prepared,
    confusion,
    decisions,
    fit,
    load_corpus,
    oof_probabilities,
    scores_of,
)

TUNE = Path(__file__).resolve().parent.parent / "bench" / "data" / "corrections.json"


def tune_rows(path: Path = TUNE) -> list[Row]:
    """The tune split only, as corpus rows (its `type` is the label)."""
    items: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["items"]
    return [
        {"label": item["type"], "message": item["message"], "previous_assistant": item["previous_assistant"] or ""}
        for item in items
        if item["split"] == "tune"
    ]


def render(title: str, labels: Sequence[str], predicted: Sequence[str]) -> str:
    figures = scores_of(labels, predicted)
    nones = sum(label == "none" for label in labels)
    wrong = sum(label == "none" != guess for label, guess in zip(labels, predicted, strict=True))
    lines = [f"== {title} ({len(labels)} messages), macro F1 {figures['macro_f1']:.3f}"]
    lines.append(f"false corrections on none: {wrong}/{nones} = {figures['false_corrections']:.1%}")
    lines.append(f"{'class':<12}{'precision':>10}{'recall':>8}")
    for kind in CLASSES[:4]:
        lines.append(f"{kind:<12}{figures[f'{kind}_precision']:>10.1%}{figures[f'{kind}_recall']:>8.1%}")
    lines.append("confusion (rows: label, columns: predicted)")
    lines.append(" " * 12 + "".join(f"{kind[:10]:>11}" for kind in CLASSES))
    for label, row in zip(CLASSES, confusion(labels, predicted), strict=True):
        lines.append(f"{label:<12}" + "".join(f"{n:>11}" for n in row))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--c", type=float, help="the regularisation C")
    parser.add_argument("--block-weights", help="embedding,ngrams,rules, e.g. 1,1,0.25")
    parser.add_argument("--correction-at", type=float, help="the least P(correction) for a correction")
    parser.add_argument("--factual-at", type=float, help="the least P(correction) for a fact put right")
    parser.add_argument("--firm", help="comma-separated rule outcomes the model does not overrule ('' for none)")
    parser.add_argument("--no-tune", action="store_true", help="out of fold only")
    args = parser.parse_args()

    shipped = load_detector_model()
    trained = trained_combination(shipped)
    c = args.c if args.c is not None else float(shipped.settings["C"])
    weights = [float(w) for w in args.block_weights.split(",")] if args.block_weights else list(shipped.scales)
    scales = (weights[0], weights[1], weights[2])
    firm = trained.firm if args.firm is None else frozenset(filter(None, args.firm.split(",")))
    at = trained.correction_at if args.correction_at is None else args.correction_at
    factual_at = trained.factual_at if args.factual_at is None else args.factual_at
    combination = Combination(firm, at, 0.0, 0.0, factual_at)
    setting = f"C={c} block weights={scales} correction_at={at} factual_at={factual_at} firm={sorted(firm)}"

    embedder = UseM3Embedder(threads=1)
    data = Prepared(load_corpus(args.corpus), embedder)
    probabilities, t, loss = oof_probabilities(data, c, scales)
    labels = [CLASSES[i] for i in data.labels]
    print(f"{setting}\nout-of-fold log loss {loss:.4f} (temperature {t})\n")
    decided = decisions(data, probabilities, combination)
    print(render(f"out of fold, {args.corpus.name}", labels, decided) + "\n")
    if data.written_apart:
        kept = ([labels[i] for i in data.written_apart], [decided[i] for i in data.written_apart])
        print(render("out of fold, the messages of the sets written apart (retired)", *kept) + "\n")
    alone = [CLASSES[i] for i in probabilities.argmax(axis=1)]
    print(render("out of fold, the model alone (argmax)", labels, alone) + "\n")
    if args.no_tune:
        return
    model = fit(data, c, scales, (t, 0.0))
    tune = Prepared(tune_rows(), embedder)
    on_tune = model.predict(tune.messages, lambda _: tune.vectors, tune.flags).astype(np.float64)
    tune_labels = [CLASSES[i] for i in tune.labels]
    print()
    print(render("tune split, rules + learned detector", tune_labels, decisions(tune, on_tune, combination)) + "\n")
    print(render("tune split, rules only", tune_labels, [found.type.value for found in tune.found]) + "\n")


if __name__ == "__main__":
    main()
