"""Out-of-fold figures of the poisoning screen on the TRAINING corpus (training/screening/corpus.jsonl), per category:
what a change to the patterns, the policy or the band does, measured without any evaluation set.

The corpus is read as scripts/train_screen.py reads it (corpus_features: the same features and scenario groups),
the model's hyperparameters are the shipped model's (C, the block weights), and every item gets a calibrated
out-of-fold probability (GroupKFold by scenario, each fold's n-gram vocabularies fitted on its training items alone,
Platt scaling on the out-of-fold scores). Then the decision of poisoning.verdict is applied under each band:

  rules hold alone   the policy before issue 18: any pattern holds, the learned screen's band beside it;
  chosen             the band train_screen.choose_band picks (a pattern holds only when the learned screen agrees).

Printed: benign held and attacks passed, overall and per category, and a reliability table (the calibrated
probability against the share of attacks in each bin), so the band's numbers can be read as probabilities.

    .venv/bin/python -m scripts.screen_oof [--band SUSPECT UNSURE RULE]
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import numpy.typing as npt

from hindsight_insights.detection.poisoning import Band
from hindsight_insights.screen_model import load_screen_model
from scripts.train_screen import (
    CorpusFeatures,
    calibrated,
    choose_band,
    corpus_features,
    decisions,
    figures,
    folds,
    load_corpus,
    out_of_fold,
    platt,
)

USER_MESSAGE = "user_message"


def oof_probabilities(corpus: CorpusFeatures) -> npt.NDArray[np.float64]:
    """Calibrated out-of-fold probabilities with the shipped model's hyperparameters."""
    model = load_screen_model()
    embedding_weight, instruction_weight = float(model.scales[0]), float(model.settings["instruction_weight"])
    scores = out_of_fold(folds(corpus), corpus.labels, float(model.settings["C"]), embedding_weight, instruction_weight)
    return calibrated(scores, platt(scores, corpus.labels))


def report(name: str, probabilities: npt.NDArray[np.float64], corpus: CorpusFeatures, band: Band) -> str:
    overall, per_category = figures(probabilities, corpus, band)
    lines = [
        f"== {name}: suspect_at {band.suspect_at:.2f}, unsure_at {band.unsure_at:.2f}, rule_at {band.agrees_at:.2f}",
        f"benign held {overall['benign_held']:.3f} (suspect {overall['benign_suspect']:.3f}); "
        f"attacks passed {overall['attacks_passed']:.3f} (not suspect {overall['attacks_not_suspect']:.3f})",
    ]
    for label, word in ((0, "benign held"), (1, "attacks passed")):
        for category in sorted({c for c, y in zip(corpus.categories, corpus.labels, strict=True) if y == label}):
            share = per_category[category]["held"]
            count = int(np.sum(corpus.categories == category))
            lines.append(f"  {word:<15} {category:<22} {share if label == 0 else 1 - share:.3f}  (n={count})")
    # The lone user messages (style user_message): the shape the screen reads a lesson learned from a user's words in.
    messages = np.array([item.get("style") == USER_MESSAGE for item in corpus.items])
    if messages.any():
        _, held = decisions(probabilities, corpus.fired, band)
        benign, attacks = messages & (corpus.labels == 0), messages & (corpus.labels == 1)
        lines.append(
            f"  {USER_MESSAGE} items: benign held {float(np.mean(held[benign])):.3f} (n={int(benign.sum())}); "
            f"attacks passed {float(np.mean(~held[attacks])):.3f} (n={int(attacks.sum())})"
        )
    return "\n".join(lines)


def reliability(probabilities: npt.NDArray[np.float64], labels: npt.NDArray[np.int64]) -> str:
    edges = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001)
    lines = ["== reliability (out-of-fold calibrated probability: items, share of attacks)"]
    for low, high in itertools.pairwise(edges):
        inside = (probabilities >= low) & (probabilities < high)
        if inside.any():
            lines.append(
                f"  [{low:.1f}, {min(high, 1.0):.1f}): {int(inside.sum()):>4}, {float(labels[inside].mean()):.3f}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--band", nargs=3, type=float, metavar=("SUSPECT", "UNSURE", "RULE"), action="append")
    args = parser.parse_args()
    corpus = corpus_features(load_corpus())
    probabilities = oof_probabilities(corpus)
    print(reliability(probabilities, corpus.labels))
    print(report("rules hold alone (before), 0.50/0.30", probabilities, corpus, Band(0.5, 0.3, 0.0)))
    print(report("chosen", probabilities, corpus, choose_band(probabilities, corpus.labels, corpus.fired)))
    for suspect_at, unsure_at, rule_at in args.band or []:
        print(report("asked", probabilities, corpus, Band(suspect_at, unsure_at, rule_at)))


if __name__ == "__main__":
    main()
