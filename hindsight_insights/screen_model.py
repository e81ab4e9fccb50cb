"""The learned poisoning screen's model file, loaded once: the I/O that detection/ (a pure leaf) does not do.

hindsight_insights/data/screen_model.npz is written by scripts/train_screen.py (`make train-screen`) and ships in
the plugin package. It holds plain arrays and one JSON string; numpy loads it with allow_pickle=False, so loading
it runs no code.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from hindsight_insights.detection.classifier import LinearTextModel
from hindsight_insights.detection.poisoning import Band, LearnedScreen
from hindsight_insights.embedder import Embedder

MODEL_PATH = Path(__file__).parent / "data" / "screen_model.npz"


@functools.cache
def load_screen_model(path: Path = MODEL_PATH) -> LinearTextModel:
    with np.load(path, allow_pickle=False) as arrays:
        return LinearTextModel.from_arrays({name: arrays[name] for name in arrays.files})


def learned_screen(embedder: Embedder, band: Band | None = None, path: Path = MODEL_PATH) -> LearnedScreen | None:
    """The learned screen over `embedder`, or None when it is not the embedder the model was trained with (another
    model's vectors mean nothing to its weights: the caller keeps the rules alone). `band` overrides the trained
    one (Settings can make it configurable)."""
    model = load_screen_model(path)
    if embedder.id != model.embedder_id:
        return None
    trained = model.settings["band"]
    chosen = band or Band(
        suspect_at=float(trained["suspect_at"]),
        unsure_at=float(trained["unsure_at"]),
        rule_at=float(trained.get("rule_at", trained["unsure_at"])),
    )
    return LearnedScreen(model, lambda texts: embedder.embed(texts), chosen)
