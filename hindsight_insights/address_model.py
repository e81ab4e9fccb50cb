"""The learned address finder's model file, loaded once: the I/O that detection/ (a pure leaf) does not do.

hindsight_insights/data/address_spans.npz is written by scripts/train_address_spans.py (`make train-address-spans`)
and ships in the plugin package. It holds plain arrays and one JSON string; numpy loads it with allow_pickle=False, so
loading it runs no code.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from hindsight_insights.detection.address_spans import AddressSpans

MODEL_PATH = Path(__file__).parent / "data" / "address_spans.npz"


@functools.cache
def load_address_model(path: Path = MODEL_PATH) -> AddressSpans:
    with np.load(path, allow_pickle=False) as arrays:
        return AddressSpans.from_arrays({name: arrays[name] for name in arrays.files})
