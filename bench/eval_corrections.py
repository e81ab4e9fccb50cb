"""Correction detection on the hand-labelled sets: per-class precision and recall, the rate of false corrections on
messages that correct nothing, and the confusion matrix; for the rules alone and for the rules with the learned
detector (detector_model.py), side by side.

Sets: bench/data/corrections.json (its tune split, which the rules were tuned on, and its holdout), and the set
written apart and never tuned on: bench/data/corrections_eval_42.json ("new-42"), written after the training corpus
was frozen again; it is the headline. The forty-one sets written apart before it were retired into training once
their figures were reported (training/corrections/retired, README there), so they are no measure any more and are not
reported here. The learned detector was trained on training/corrections only. `--errors` lists the tune split's
misclassified items by the rules (never the holdout's or the new set's, which must not steer anything).

    make eval-corrections    (or: .venv/bin/python -m bench.eval_corrections [--errors])
"""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # every entry point calls it first (it matters once weaviate-client is imported)

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hindsight_insights.detection.corrections import CorrectionType, detect
from hindsight_insights.detection.learned_corrections import LearnedDetector

DATA = Path(__file__).parent / "data" / "corrections.json"
NEW_42 = Path(__file__).parent / "data" / "corrections_eval_42.json"
WRITTEN_APART = {"new-42": NEW_42}  # newest first: the headline


def held_out() -> tuple[str, ...]:
    """The sets a retrained model is judged on (hindsight_cli detector retrain): the holdout and those written apart."""
    return ("holdout", *(split for split, path in WRITTEN_APART.items() if path.exists()))


CLASSES = [kind.value for kind in CorrectionType]
CORRECTIONS = [kind for kind in CLASSES if kind != CorrectionType.NONE]


def load() -> list[dict[str, Any]]:
    """Every evaluation item; those of the sets written apart with their set's name as split ("new", "new-2", ...)."""
    items: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))["items"]
    for split, path in WRITTEN_APART.items():
        if path.exists():
            items += [{**item, "split": split} for item in json.loads(path.read_text(encoding="utf-8"))["items"]]
    return items


@dataclass(frozen=True)
class Report:
    split: str
    count: int
    confusion: dict[tuple[str, str], int]  # (label, predicted) -> count
    quotes: dict[str, tuple[int, int]]  # field -> (agreeing, compared) on correctly typed items with a label

    def predicted(self, kind: str) -> int:
        return sum(n for (_, guess), n in self.confusion.items() if guess == kind)

    def labelled(self, kind: str) -> int:
        return sum(n for (label, _), n in self.confusion.items() if label == kind)

    def precision(self, kind: str) -> float | None:
        predicted = self.predicted(kind)
        return self.confusion.get((kind, kind), 0) / predicted if predicted else None

    def recall(self, kind: str) -> float | None:
        labelled = self.labelled(kind)
        return self.confusion.get((kind, kind), 0) / labelled if labelled else None

    @property
    def false_correction_rate(self) -> float:
        """Share of messages labelled none that the detector calls a correction of any kind."""
        nones = self.labelled("none")
        return (nones - self.confusion.get(("none", "none"), 0)) / nones if nones else 0.0

    def f1(self, kind: str) -> float:
        precision, recall = self.precision(kind) or 0.0, self.recall(kind) or 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    @property
    def macro_f1(self) -> float:
        """Over the five classes, none included (a false correction costs as much as a missed one)."""
        return sum(self.f1(kind) for kind in CLASSES) / len(CLASSES)

    @property
    def accuracy(self) -> float:
        return sum(self.confusion.get((kind, kind), 0) for kind in CLASSES) / self.count if self.count else 0.0


def agrees(found: str | None, label: str | None) -> bool:
    """The same quote, loosely: one contains the other, or they share most characters (Jaccard >= 0.5)."""
    if not found or not label:
        return False
    mine, theirs = found.strip().lower(), label.strip().lower()
    if mine in theirs or theirs in mine:
        return True
    return len(set(mine) & set(theirs)) / len(set(mine) | set(theirs)) >= 0.5


def evaluate(items: list[dict[str, Any]], split: str, learned: LearnedDetector | None = None) -> Report:
    chosen = [item for item in items if item["split"] == split]
    confusion: Counter[tuple[str, str]] = Counter()
    quotes = {"corrected": [0, 0], "original": [0, 0]}
    for item in chosen:
        found = detect(item["message"], item["previous_assistant"], learned)
        confusion[(item["type"], found.type.value)] += 1
        if found.type.value != item["type"]:
            continue
        for name, value in (("corrected", found.corrected), ("original", found.original)):
            if item[name]:
                quotes[name][0] += agrees(value, item[name])
                quotes[name][1] += 1
    title = f"{split}, {'rules + learned detector' if learned else 'rules only'}"
    return Report(title, len(chosen), dict(confusion), {name: (a, b) for name, (a, b) in quotes.items()})


def _percent(value: float | None) -> str:
    return "   n/a" if value is None else f"{value:6.1%}"


def render(report: Report) -> str:
    lines = [
        f"== {report.split} ({report.count} messages), accuracy {report.accuracy:.1%}, macro F1 {report.macro_f1:.3f}"
    ]
    lines.append(f"{'class':<12}{'precision':>10}{'recall':>8}{'labelled':>10}{'predicted':>11}")
    for kind in CORRECTIONS:
        lines.append(
            f"{kind:<12}{_percent(report.precision(kind)):>10}{_percent(report.recall(kind)):>8}"
            f"{report.labelled(kind):>10}{report.predicted(kind):>11}"
        )
    nones = report.labelled("none")
    wrong = nones - report.confusion.get(("none", "none"), 0)
    lines.append(f"false corrections on none: {wrong}/{nones} = {report.false_correction_rate:.1%}")
    agreeing = ", ".join(f"{name} {a}/{b}" for name, (a, b) in report.quotes.items())
    lines.append(f"quotes agreeing with the label (correctly typed items that have one): {agreeing}")
    lines.append("confusion (rows: label, columns: predicted)")
    lines.append(" " * 12 + "".join(f"{kind[:10]:>11}" for kind in CLASSES))
    for label in CLASSES:
        cells = "".join(f"{report.confusion.get((label, guess), 0):>11}" for guess in CLASSES)
        lines.append(f"{label:<12}{cells}")
    return "\n".join(lines)


def tune_errors(items: list[dict[str, Any]]) -> list[str]:
    """The tune split's misclassified items, with the signals behind each decision. Tune only, by design."""
    lines = []
    for item in items:
        if item["split"] != "tune":
            continue
        found = detect(item["message"], item["previous_assistant"])
        if found.type.value != item["type"]:
            lines.append(f"{item['id']} {item['type']} -> {found.type.value} {list(found.signals)}: {item['message']}")
    return lines


def default_detector() -> LearnedDetector | None:
    """The shipped model over the built-in embedder (imported here: the rules-only figures need neither)."""
    from hindsight_insights.config import Settings
    from hindsight_insights.detector_model import learned_detector
    from hindsight_insights.embedder import UseM3Embedder

    return learned_detector(UseM3Embedder(threads=1), Settings())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", action="store_true", help="list the tune split's misclassified items")
    parser.add_argument(
        "--split", choices=["all", *WRITTEN_APART, "holdout", "tune"], default="all", help="which set to print"
    )
    parser.add_argument("--rules-only", action="store_true", help="leave out the learned detector")
    args = parser.parse_args()
    items = load()
    present = [split for split, path in WRITTEN_APART.items() if path.exists()]
    splits = [*present, "holdout", "tune"] if args.split == "all" else [args.split]
    learned = None if args.rules_only else default_detector()
    reports = []
    for split in splits:
        reports.append(render(evaluate(items, split)))
        if learned is not None:
            reports.append(render(evaluate(items, split, learned)))
    print("\n\n".join(reports))
    if args.errors:
        print()
        print("\n".join(tune_errors(items)) or "no tune errors")


if __name__ == "__main__":
    main()
