"""Session-wide test services: a real Weaviate (loopback, free ports, temporary data), the Dify CLI and the plugin
package it builds. The runtime-specific fixtures (PluginRunner, the daemon) live in their test modules."""

from __future__ import annotations

from hindsight_insights.quiet import quiet_dependency_warnings

quiet_dependency_warnings()  # before anything imports weaviate-client

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
import weaviate

from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.detection.learned_corrections import LearnedDetector
from hindsight_insights.detector_model import learned_detector
from hindsight_insights.embedder import Embedder, load_embedder
from hindsight_insights.store import InsightStore
from hindsight_insights.store.tenancy import drop_project
from hindsight_insights.weaviate_server import LocalWeaviate, ensure_binary, start_local
from scripts.package_plugin import ROOT, package
from testkit.messages import credentials_for
from testkit.runner import RunnerPlugin
from testkit.runtimes import CLI, DAEMON, Runtime, RuntimeNotFound, Toolchain, toolchain
from testkit.services import Postgres, ServiceError


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings(_env_file=None, weaviate_url=None)


@pytest.fixture(scope="session")
def weaviate_server(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalWeaviate]:
    server = start_local(ensure_binary(settings), tmp_path_factory.mktemp("weaviate-data"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def client(settings: Settings, weaviate_server: LocalWeaviate) -> Iterator[weaviate.WeaviateClient]:
    client = connect_url(weaviate_server.settings(settings), weaviate_server.url)
    yield client
    client.close()


@pytest.fixture(scope="session")
def embedder(settings: Settings) -> Embedder:
    return load_embedder(settings)


@pytest.fixture(scope="session")
def learned(embedder: Embedder) -> LearnedDetector:
    """The shipped learned correction detector (test_screen_learned.py names its screen `learned` instead)."""
    detector = learned_detector(embedder, Settings(detector=True))
    assert detector is not None, "the shipped model was trained with another embedder"
    return detector


@pytest.fixture
def project_settings(settings: Settings) -> Settings:
    """A project of its own for each test, so tests never see each other's insights."""
    return settings.model_copy(update={"project": f"test-{uuid.uuid4().hex[:12]}"})


@pytest.fixture
def store(client: weaviate.WeaviateClient, project_settings: Settings, embedder: Embedder) -> InsightStore:
    return InsightStore.open(client, project_settings, embedder)


@pytest.fixture(autouse=True)
def drop_the_tests_projects(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test, its project goes (its tenant in every collection, and its record): the session's one server
    would otherwise hold a thousand of them."""
    if "weaviate_server" not in request.fixturenames:
        yield
        return
    client: weaviate.WeaviateClient = request.getfixturevalue("client")
    projects = (
        [request.getfixturevalue("project_settings").project] if "project_settings" in request.fixturenames else []
    )
    if "plugin_project" in request.fixturenames:
        projects.append(request.getfixturevalue("plugin_project"))
    yield
    for project in projects:
        drop_project(client, project)  # a missing tenant is no error


@pytest.fixture
def prompts_dir(settings: Settings) -> Path:
    return settings.prompts_dir


# ---- the Dify runtimes and the plugin package ----------------------------------------------------------------------


def find_runtime(runtime: Runtime) -> Path:
    """A missing runtime fails the tests that need it, with how to get it: never a skip."""
    try:
        return runtime.find()
    except RuntimeNotFound as missing:
        pytest.fail(str(missing), pytrace=False)


@pytest.fixture(scope="session")
def runtime_toolchain() -> Toolchain:
    try:
        return toolchain()
    except RuntimeNotFound as missing:
        pytest.fail(str(missing), pytrace=False)


@pytest.fixture(scope="session")
def dify_cli() -> Path:
    return find_runtime(CLI)


@pytest.fixture(scope="session")
def dify_plugin_daemon() -> Path:
    return find_runtime(DAEMON)


@pytest.fixture(scope="session")
def plugin_package(dify_cli: Path, runtime_toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package `make package` builds, with the real CLI."""
    output = tmp_path_factory.mktemp("package") / "hindsight_insights.difypkg"
    return package(ROOT, output, dify_cli, runtime_toolchain).path


@pytest.fixture(scope="session")
def runner(
    plugin_package: Path, dify_cli: Path, runtime_toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunnerPlugin]:
    """The package under the SDK's PluginRunner and the real CLI, for the whole session (started once: ~5 s)."""
    plugin = RunnerPlugin(plugin_package, dify_cli, runtime_toolchain, tmp_path_factory.mktemp("runner"))
    yield plugin
    plugin.close()


# ---- what every plugin test needs -----------------------------------------------------------------------------------


@pytest.fixture
def plugin_project() -> str:
    """A project per test, named in Chinese as builders do (its collections get a hashed name)."""
    return f"插件测试-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def plugin_credentials(weaviate_server: LocalWeaviate, plugin_project: str) -> dict[str, Any]:
    return credentials_for(weaviate_server.url, weaviate_server.grpc_port, plugin_project, weaviate_server.api_key)


@pytest.fixture
def plugin_store(
    client: weaviate.WeaviateClient, settings: Settings, embedder: Embedder, plugin_project: str
) -> InsightStore:
    """The plugin test's project, opened directly, to check what the plugin wrote."""
    return InsightStore.open(client, settings.model_copy(update={"project": plugin_project}), embedder)


@pytest.fixture(scope="session")
def keyed_server(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalWeaviate]:
    """A Weaviate with API-key authentication, as Dify's docker-compose runs it: one key, `right-key`."""
    server = start_local(ensure_binary(settings), tmp_path_factory.mktemp("keyed-weaviate"), api_key="right-key")
    yield server
    server.stop()


# ---- the reflection worker's state databases ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Postgres]:
    """PostgreSQL from Debian's packages on a free loopback port, with a temporary data directory (~2 s to start)."""
    try:
        server = Postgres.start()
    except ServiceError as missing:
        pytest.fail(str(missing), pytrace=False)
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: Postgres) -> Iterator[str]:
    """A database of its own for each test."""
    name = f"worker_{uuid.uuid4().hex[:12]}"
    admin = f"postgresql+psycopg://{postgres_server.user}:{postgres_server.password}@127.0.0.1:{postgres_server.port}"
    engine = sqlalchemy.create_engine(f"{admin}/postgres", isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.exec_driver_sql(f"CREATE DATABASE {name}")
    yield f"{admin}/{name}"
    with engine.connect() as connection:
        connection.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The worker's state database: a SQLite file, and PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'worker-state.sqlite3'}"
    url: str = request.getfixturevalue("postgres_url")
    return url
