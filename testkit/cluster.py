"""A 3-node Weaviate cluster on 127.0.0.1 for the replication tests: free ports, a temporary data directory per node,
telemetry and the profiling listener off, API-key authentication as the single test server has.

Each node's ports are chosen free, in the layout Weaviate's own dev scripts use: gossip, then the cluster data port
right after it (1.27 requires it), and the Raft port with its internal RPC port right after it. Nodes 1 and 2 join
node 0's gossip; every node lists all three for Raft, which elects a leader once three have joined. The nodes call
each other's data API with one basic-auth password made for this cluster.

A node can be killed with SIGKILL and started again with the same environment and data directory, as an operator's
restart would; `wait_healthy` waits for the cluster to list every node HEALTHY again.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hindsight_insights.weaviate_server import (
    LocalWeaviate,
    api_key_environment,
    consecutive_free_ports,
    free_port,
    wait_ready,
)

NODES = 3


@dataclass
class ClusterNode:
    """One node: `server` (a LocalWeaviate, whose URL, gRPC port and key the tests connect with) and the exact
    environment it was started with, to start it again."""

    name: str
    server: LocalWeaviate
    environment: dict[str, str]
    binary: Path
    raft_port: int
    starts: int = 1

    def _launch(self) -> None:
        with open(self.server.log_path, "ab") as log_file:
            self.server.process = subprocess.Popen(
                [str(self.binary), "--host", "127.0.0.1", "--port", str(self.server.http_port), "--scheme", "http"],
                env=self.environment,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def kill(self) -> None:
        """SIGKILL: no shutdown, its write-ahead logs left as they were."""
        os.kill(self.server.process.pid, signal.SIGKILL)
        self.server.process.wait(timeout=30)

    def restart(self, ready_timeout_s: float = 120) -> None:
        """The same binary, environment and data directory."""
        if self.server.process.poll() is None:
            raise RuntimeError(f"{self.name} is still running")
        self.starts += 1
        self._launch()
        wait_ready(self.server, ready_timeout_s)

    def is_running(self) -> bool:
        return self.server.process.poll() is None


@dataclass
class Cluster:
    nodes: list[ClusterNode] = field(default_factory=list)

    @property
    def api_key(self) -> str:
        return self.nodes[0].server.api_key

    def node_states(self, via: ClusterNode) -> dict[str, str]:
        """{node name: status} as `via` lists them (/v1/nodes; a node that is down is left out, not listed)."""
        request = urllib.request.Request(
            f"{via.server.url}/v1/nodes", headers={"Authorization": f"Bearer {self.api_key}"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            body = json.load(response)
        return {node["name"]: node["status"] for node in body.get("nodes", [])}

    def wait_healthy(self, timeout_s: float = 180) -> float:
        """Wait until every running node lists all nodes HEALTHY. Returns the seconds it took."""
        started = time.monotonic()
        deadline = started + timeout_s
        wanted = {node.name: "HEALTHY" for node in self.nodes}
        seen: dict[str, str] = {}
        while time.monotonic() < deadline:
            try:
                views = [self.node_states(node) for node in self.nodes]
            except (OSError, urllib.error.URLError, ValueError):
                views = []
            if views and all(view == wanted for view in views):
                return time.monotonic() - started
            seen = views[0] if views else seen
            time.sleep(0.5)
        raise TimeoutError(f"the cluster was not all HEALTHY within {timeout_s:.0f}s; last seen {seen}")

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM to every node at once, then SIGKILL to any still running after `timeout_s`."""
        for node in self.nodes:
            if node.is_running():
                node.server.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for node in self.nodes:
            try:
                node.server.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.server.process.kill()
                node.server.process.wait()


def start_cluster(binary: Path, data_dir: Path, nodes: int = NODES, ready_timeout_s: float = 180) -> Cluster:
    """Start `nodes` weaviate-server processes on 127.0.0.1 and wait until each is ready and all are HEALTHY."""
    api_key = secrets.token_urlsafe(32)
    cluster_password = secrets.token_urlsafe(32)
    ports = []
    for _ in range(nodes):
        gossip, data = consecutive_free_ports()
        raft, raft_rpc = consecutive_free_ports()
        ports.append((free_port(), free_port(), gossip, data, raft, raft_rpc))
    raft_join = ",".join(f"node{i}:{port[4]}" for i, port in enumerate(ports))
    cluster = Cluster()
    try:
        for i, (http, grpc, gossip, data, raft, raft_rpc) in enumerate(ports):
            node_dir = data_dir / f"node{i}"
            node_dir.mkdir(parents=True, exist_ok=True)
            environment = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": os.environ.get("HOME", "/tmp"),
                "DISABLE_TELEMETRY": "true",  # otherwise it probes cloud metadata addresses
                "GO_PROFILING_DISABLE": "true",  # else a debug listener binds port 6060 on every interface
                "PERSISTENCE_DATA_PATH": str(node_dir),
                **api_key_environment(api_key),
                "CLUSTER_BASIC_AUTH_USERNAME": "hindsight-cluster",
                "CLUSTER_BASIC_AUTH_PASSWORD": cluster_password,
                "DEFAULT_VECTORIZER_MODULE": "none",
                "ENABLE_MODULES": "",
                "CLUSTER_HOSTNAME": f"node{i}",
                "CLUSTER_IN_LOCALHOST": "true",
                "CLUSTER_BIND_ADDR": "127.0.0.1",
                "CLUSTER_ADVERTISE_ADDR": "127.0.0.1",
                # Else gossip advertises memberlist's default port (7946) for every node; 1.39 fills it in itself.
                "CLUSTER_ADVERTISE_PORT": str(gossip),
                "CLUSTER_GOSSIP_BIND_PORT": str(gossip),
                "CLUSTER_DATA_BIND_PORT": str(data),
                "RAFT_PORT": str(raft),
                "RAFT_INTERNAL_RPC_PORT": str(raft_rpc),
                "RAFT_JOIN": raft_join,
                "RAFT_BOOTSTRAP_EXPECT": str(nodes),
                "GRPC_PORT": str(grpc),
                "QUERY_DEFAULTS_LIMIT": "25",
                "LOG_LEVEL": "warning",
            }
            if i:
                environment["CLUSTER_JOIN"] = f"127.0.0.1:{ports[0][2]}"
            server = LocalWeaviate(
                process=None,  # type: ignore[arg-type]  # set by _launch, before anything reads it
                http_port=http,
                grpc_port=grpc,
                gossip_port=gossip,
                data_bind_port=data,
                data_dir=node_dir,
                log_path=node_dir / "weaviate.log",
                api_key=api_key,
            )
            node = ClusterNode(f"node{i}", server, environment, binary, raft)
            node._launch()
            cluster.nodes.append(node)
            if i == 0:  # 1.27 gives up at once when the gossip port it joins does not answer yet
                _wait_listening(node, gossip, ready_timeout_s)
        for node in cluster.nodes:  # started together: a node is ready only once Raft has its peers
            wait_ready(node.server, ready_timeout_s)
        cluster.wait_healthy(ready_timeout_s)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_listening(node: ClusterNode, port: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not node.is_running():
            tail = node.server.log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{node.name} exited with code {node.server.process.returncode}: {tail}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise TimeoutError(f"{node.name} did not listen on its gossip port {port} within {timeout_s:.0f}s")


@contextlib.contextmanager
def running_cluster(binary: Path, data_dir: Path, nodes: int = NODES) -> Iterator[Cluster]:
    cluster = start_cluster(binary, data_dir, nodes)
    try:
        yield cluster
    finally:
        cluster.stop()
