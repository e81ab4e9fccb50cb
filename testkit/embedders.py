"""Embedders other than the configured one, for tests of what a store refuses."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hindsight_insights.embedder import Vectors


class OtherEmbedder:
    """Another model as the store sees one: an id and a dimension (its vectors are zeros, never searched)."""

    @property
    def id(self) -> str:
        return "other-model@1"

    @property
    def dimension(self) -> int:
        return 384

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        return np.zeros((len(texts), self.dimension), dtype=np.float32)
