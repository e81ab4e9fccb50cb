"""Starting, reaching and failing to reach Weaviate."""

from __future__ import annotations

import base64
import os
import stat
import urllib.error
import urllib.request
from pathlib import Path

import grpc
import pytest
from weaviate.proto.v1 import search_get_pb2, weaviate_pb2_grpc

from hindsight_insights.config import Settings
from hindsight_insights.connection import connect_url
from hindsight_insights.errors import WeaviateUnavailable
from hindsight_insights.store import open_store
from hindsight_insights.weaviate_server import LocalWeaviate, free_port, local_api_key, running_weaviate, start_local


def test_unreachable_url_gives_a_clear_error(settings: Settings) -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(
        WeaviateUnavailable, match=rf"cannot reach Weaviate at http://127\.0\.0\.1:{port}.*Check the URL"
    ):
        connect_url(settings, f"http://127.0.0.1:{port}")


def test_configured_url_wins_and_fails_loudly(settings: Settings) -> None:
    configured = settings.model_copy(update={"weaviate_url": f"http://127.0.0.1:{free_port()}"})
    with pytest.raises(WeaviateUnavailable, match="cannot reach Weaviate"), running_weaviate(configured) as running:
        open_store(running)


def test_not_a_url_is_rejected(settings: Settings) -> None:
    with pytest.raises(WeaviateUnavailable, match="is not an http"):
        connect_url(settings, "weaviate:8080")


def test_server_runs_on_loopback_with_telemetry_off(weaviate_server: LocalWeaviate, settings: Settings) -> None:
    environ = Path(f"/proc/{weaviate_server.process.pid}/environ").read_bytes().split(b"\0")
    assert b"DISABLE_TELEMETRY=true" in environ
    assert b"CLUSTER_BIND_ADDR=127.0.0.1" in environ
    listening = _listening_addresses(weaviate_server.process.pid)
    assert ("127.0.0.1", weaviate_server.http_port) in listening
    # Weaviate hard-codes ":<port>" for exactly these listeners (see LocalWeaviate); everything else is loopback.
    unavoidable = {weaviate_server.grpc_port, weaviate_server.data_bind_port}
    if tuple(int(part) for part in settings.weaviate_version.split(".")[:2]) < (1, 39):
        unavoidable.add(weaviate_server.gossip_port)
    assert {port for address, port in listening if address != "127.0.0.1"} == unavoidable, listening


def test_a_server_that_dies_at_start_says_why(tmp_path: Path) -> None:
    broken = tmp_path / "weaviate-server"
    broken.write_text("#!/bin/sh\necho 'panic: data dir is locked'\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(WeaviateUnavailable, match="exited with code 3: panic: data dir is locked"):
        start_local(broken, tmp_path / "data")


def test_local_fallback_starts_and_stops_a_server(settings: Settings, tmp_path: Path) -> None:
    with running_weaviate(settings, tmp_path) as running:
        assert running.weaviate_url is not None
        client = connect_url(running, running.weaviate_url)
        assert client.get_meta()["version"] == settings.weaviate_version
        client.close()
    assert (tmp_path / "weaviate.log").exists()


def test_no_binary_and_no_go_says_what_to_set(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no `go` to build with
    isolated = settings.model_copy(update={"cache_dir": tmp_path / "empty-cache"})
    with (
        pytest.raises(WeaviateUnavailable, match="set HINDSIGHT_WEAVIATE_URL") as caught,
        running_weaviate(isolated, tmp_path),
    ):
        pass
    assert "no `go` to build one" in str(caught.value)


def _listening_addresses(pid: int) -> set[tuple[str, int]]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:  # closed while we looked
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                host_hex, port_hex = fields[1].split(":")
                found.add((_decode_host(host_hex), int(port_hex, 16)))
    return found


def _decode_host(host_hex: str) -> str:
    if len(host_hex) == 8:
        return ".".join(str(int(host_hex[i : i + 2], 16)) for i in (6, 4, 2, 0))
    return "::" if set(host_hex) == {"0"} else host_hex


def test_the_local_server_refuses_clients_without_its_key_on_http_and_grpc(
    weaviate_server: LocalWeaviate, settings: Settings
) -> None:
    """Weaviate's gRPC and cluster-data listeners are on every interface: the key is what keeps others out."""
    request = urllib.request.Request(f"{weaviate_server.url}/v1/schema")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=5)
    assert refused.value.code == 401
    channel = grpc.insecure_channel(f"127.0.0.1:{weaviate_server.grpc_port}")
    try:
        with pytest.raises(grpc.RpcError) as caught:
            weaviate_pb2_grpc.WeaviateStub(channel).Search(  # type: ignore[no-untyped-call]
                search_get_pb2.SearchRequest(collection="Anything", limit=1), timeout=5
            )
        assert "invalid api key" in caught.value.details(), caught.value  # Weaviate answers with status UNKNOWN
    finally:
        channel.close()
    keyed = urllib.request.Request(request.full_url, headers={"Authorization": f"Bearer {weaviate_server.api_key}"})
    with urllib.request.urlopen(keyed, timeout=5) as answer:
        assert answer.status == 200


def test_the_cluster_data_api_refuses_requests_without_its_credentials(weaviate_server: LocalWeaviate) -> None:
    """The cluster data API listens on every interface and serves objects by id; the API key does not cover it."""
    environ = dict(
        entry.split("=", 1)
        for entry in Path(f"/proc/{weaviate_server.process.pid}/environ").read_text().split("\0")
        if "=" in entry
    )
    assert environ["CLUSTER_DATA_BIND_PORT"] == str(weaviate_server.data_bind_port)
    assert environ["GO_PROFILING_DISABLE"] == "true"
    base = f"http://127.0.0.1:{weaviate_server.data_bind_port}"
    for path in ("/indices/", "/replicas/indices/", "/nodes/"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}{path}", timeout=5)
        assert refused.value.code == 401, path
    password = environ["CLUSTER_BASIC_AUTH_PASSWORD"]
    assert len(password) >= 32
    token = base64.b64encode(f"{environ['CLUSTER_BASIC_AUTH_USERNAME']}:{password}".encode()).decode()
    with pytest.raises(urllib.error.HTTPError) as passed:  # past the gate, the handler finds no such index
        urllib.request.urlopen(
            urllib.request.Request(f"{base}/indices/", headers={"Authorization": f"Basic {token}"}), timeout=5
        )
    assert passed.value.code != 401


def test_the_local_key_is_made_once_and_readable_by_this_user_only(settings: Settings, tmp_path: Path) -> None:
    isolated = settings.model_copy(update={"cache_dir": tmp_path})
    key = local_api_key(isolated)
    assert len(key) >= 32 and local_api_key(isolated) == key
    assert stat.S_IMODE((tmp_path / "weaviate" / "api-key").stat().st_mode) == 0o600
