"""The learned correction detector's model file, loaded once per process: the I/O that detection/ (a pure leaf) does
not do.

hindsight_insights/data/detector_model.npz is written by scripts/train_detector.py (`make train-detector`) or by
`hindsight_cli detector retrain`, and ships in the plugin package. It holds plain arrays and one JSON string; numpy
loads it with allow_pickle=False, so loading it runs no code. The caller (the plugin's record_turn operation, the
worker's offline extractor, the CLI) builds a LearnedDetector here and passes it down to detect().
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from hindsight_insights.config import Settings
from hindsight_insights.detection.classifier import LinearTextModel
from hindsight_insights.detection.learned_corrections import Combination, LearnedDetector
from hindsight_insights.embedder import Embedder

MODEL_PATH = Path(__file__).parent / "data" / "detector_model.npz"


@functools.cache
def load_detector_model(path: Path = MODEL_PATH) -> LinearTextModel:
    with np.load(path, allow_pickle=False) as arrays:
        return LinearTextModel.from_arrays({name: arrays[name] for name in arrays.files})


def trained_combination(model: LinearTextModel) -> Combination:
    chosen = model.settings["combination"]
    return Combination(
        firm=frozenset(chosen["firm"]),
        correction_at=float(chosen["correction_at"]),
        unsure_low=float(chosen["unsure_low"]),
        unsure_high=float(chosen["unsure_high"]),
        factual_at=float(chosen.get("factual_at", 0.0)),
    )


def learned_detector(embedder: Embedder, settings: Settings, path: Path = MODEL_PATH) -> LearnedDetector | None:
    """The learned detector over `embedder`, or None when it is off (Settings.detector) or the embedder is not the
    one the model was trained with (another model's vectors mean nothing to its weights: the rules decide alone).
    Settings.detector_unsure_low/high override the trained unsure band."""
    if not settings.detector:
        return None
    model = load_detector_model(path)
    if embedder.id != model.embedder_id:
        return None
    trained = trained_combination(model)
    band = Combination(
        trained.firm,
        trained.correction_at,
        trained.unsure_low if settings.detector_unsure_low is None else settings.detector_unsure_low,
        trained.unsure_high if settings.detector_unsure_high is None else settings.detector_unsure_high,
        trained.factual_at,
    )
    return LearnedDetector(model, lambda texts: embedder.embed(texts), band)
