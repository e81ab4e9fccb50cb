"""`hindsight_cli detector retrain`: reviewers' decisions on the detector's insights become training labels.

A detector insight (source "detector") was written from one user message that the detector typed. A reviewer's last
decision on it says what that message was:

  approve            it was that class (the insight's kind: fact -> factual, preference, process, lesson -> negative);
  edit               the class of the kind after the edit (an edit that keeps the kind confirms the class);
  reject             it was not that class; the label is none, since a detector insight a reviewer throws out is
                     nearly always a message that corrected nothing (a multi-class model has no "not X" label).

The message and the answer before it are read from the turn log (the evidence's session and turn); both were stored
redacted, so the labels carry placeholders, never the secrets. The model is refitted with the installed model's
choices (C, block weights, temperature, combination: scripts/train_detector.fit) on the corpus plus these labels,
and judged on the held-out evaluation sets (bench/data/corrections.json holdout and the newest set written apart): it
replaces the installed model only when its macro F1 there is at least as good. The evaluation sets are never
trained on. Training needs scikit-learn (the dev dependency group) and the repository's scripts/ and bench/.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hindsight_insights.detection.correction_types import CorrectionType
from hindsight_insights.models import Insight, InsightKind
from hindsight_insights.store.insights import InsightStore

CLASS_OF_KIND = {
    InsightKind.FACT: CorrectionType.FACTUAL,
    InsightKind.PREFERENCE: CorrectionType.PREFERENCE,
    InsightKind.PROCESS: CorrectionType.PROCESS,
    InsightKind.LESSON: CorrectionType.NEGATIVE,
}


@dataclass(frozen=True)
class ReviewLabel:
    insight_id: str
    decision: str
    label: str
    message: str
    previous_assistant: str

    def row(self) -> dict[str, str]:
        return {
            "id": f"review-{self.insight_id}",
            "label": self.label,
            "message": self.message,
            "previous_assistant": self.previous_assistant,
        }


def review_labels(store: InsightStore) -> list[ReviewLabel]:
    """One label per detector insight a reviewer decided, from the last decision (module docstring)."""
    last: dict[str, tuple[str, Insight]] = {}
    for entry in store.audit.decisions():
        insight = Insight.model_validate_json(entry.after or entry.before)
        if insight.source == "detector":
            last[str(entry.insight_id)] = (entry.action, insight)
    labels = []
    for insight_id, (decision, insight) in last.items():
        label = CorrectionType.NONE if decision == "reject" else CLASS_OF_KIND[insight.kind]
        message, previous = _turn_of(store, insight)
        labels.append(ReviewLabel(insight_id, decision, label.value, message, previous))
    return labels


def _turn_of(store: InsightStore, insight: Insight) -> tuple[str, str]:
    """The user's message and the answer before it; the evidence quote alone when the turn is gone (forgotten)."""
    session = insight.evidence.session_id
    turns = store.turns.session(session) if session else []
    for index, turn in enumerate(turns):
        if turn.turn_index == insight.evidence.turn:
            previous = turns[index - 1].assistant_message if index else ""
            return turn.user_message, previous
    return insight.evidence.quote, ""


@dataclass(frozen=True)
class Retrained:
    labels: int
    before: dict[str, float]  # set -> macro F1 of the installed model
    after: dict[str, float]
    installed: bool

    @property
    def pooled_before(self) -> float:
        return sum(self.before.values()) / len(self.before)

    @property
    def pooled_after(self) -> float:
        return sum(self.after.values()) / len(self.after)


def retrain(labels: list[ReviewLabel], model_path: Path) -> Retrained:
    """Refit on the corpus plus `labels`; install at `model_path` only when not worse on the held-out sets."""
    # Imported here: scikit-learn and the repository's scripts/ and bench/ are not part of the plugin or the worker.
    from bench.eval_corrections import evaluate, held_out, load
    from hindsight_insights.config import Settings
    from hindsight_insights.detector_model import learned_detector, load_detector_model
    from hindsight_insights.embedder import UseM3Embedder
    from scripts.train_detector import Prepared, fit, load_corpus
    from scripts.train_screen import save_arrays

    embedder = UseM3Embedder(threads=1)
    items = load()

    def figures(path: Path) -> dict[str, float]:
        detector = learned_detector(embedder, Settings(detector=True), path)
        assert detector is not None, "the model was trained with another embedder"
        return {split: evaluate(items, split, detector).macro_f1 for split in held_out()}

    installed = load_detector_model(model_path)
    before = figures(model_path)
    data = Prepared(load_corpus() + [label.row() for label in labels], embedder)
    scales: Any = installed.scales
    model = fit(data, float(installed.settings["C"]), scales, installed.calibration)
    settings = {**installed.settings, "reviewed_labels": len(labels)}
    with tempfile.TemporaryDirectory() as scratch:
        candidate = Path(scratch) / "detector_model.npz"
        save_arrays(candidate, type(model)(**{**model.__dict__, "settings": settings}).to_arrays())
        after = figures(candidate)
        better = sum(after.values()) >= sum(before.values())
        if better:
            shutil.copyfile(candidate, model_path)
            load_detector_model.cache_clear()
    return Retrained(len(labels), before, after, better)
