"""A real Weaviate server for the whole test session: loopback, free ports, a temporary data dir."""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import weaviate

from hindsight_insights.config import Settings
from hindsight_insights.embedder import Embedder, load_embedder
from hindsight_insights.store import InsightStore
from hindsight_insights.weaviate_server import LocalWeaviate, connect_url, ensure_binary, start_local


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings(_env_file=None, weaviate_url=None)  # type: ignore[call-arg]


@pytest.fixture(scope="session")
def weaviate_server(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalWeaviate]:
    server = start_local(ensure_binary(settings), tmp_path_factory.mktemp("weaviate-data"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def client(settings: Settings, weaviate_server: LocalWeaviate) -> Iterator[weaviate.WeaviateClient]:
    client = connect_url(
        settings.model_copy(update={"weaviate_grpc_port": weaviate_server.grpc_port}), weaviate_server.url
    )
    yield client
    client.close()


@pytest.fixture(scope="session")
def embedder(settings: Settings) -> Embedder:
    return load_embedder(settings)


@pytest.fixture
def project_settings(settings: Settings) -> Settings:
    """A project of its own for each test, so tests never see each other's insights."""
    return settings.model_copy(update={"project": f"test-{uuid.uuid4().hex[:12]}"})


@pytest.fixture
def store(client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder) -> InsightStore:
    return InsightStore.open(client, project_settings, embedder)


@pytest.fixture
def prompts_dir(settings: Settings) -> Path:
    return settings.prompts_dir
