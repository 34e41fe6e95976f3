"""A real Redis Cluster on loopback for the tests and benchmarks: 3 primaries + 3 replicas,
``redis-server --cluster-enabled yes`` and ``redis-cli --cluster create``; or each node on a
host of its own in a :class:`~testweb.netlab.NetLab` (``hosts``), for partitions.

    with RedisClusterServer(workdir) as cluster:
        cluster.url            # redis://127.0.0.1:<port> of one node
        cluster.kill_primary() # failover: the primary of a slot dies, its replica takes over
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["RedisClusterServer", "cluster_available"]


def cluster_available() -> bool:
    return bool(shutil.which("redis-server") and shutil.which("redis-cli"))


def _free_ports(n: int) -> list[int]:
    """``n`` loopback ports, each with its cluster bus port (+10000) free too, all below the
    kernel's ephemeral range: a port taken from that range and let go can be handed to any
    client connection before ``redis-server`` binds it."""
    low, _high = _ephemeral_range()
    ports: list[int] = []
    rng = random.Random()
    for _ in range(10_000):
        if len(ports) == n:
            return ports
        port = rng.randrange(10_000, min(low, 32_768) - 10_000)
        if port in ports or not all(_bindable(p) for p in (port, port + 10_000)):
            continue
        ports.append(port)
    raise RuntimeError("no free ports for a Redis Cluster")


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32_768, 60_999


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class RedisClusterServer:
    def __init__(self, workdir: str | Path, primaries: int = 3, replicas: int = 1,
                 node_timeout_ms: int = 1000, hosts: list[Any] | None = None) -> None:
        self.hosts = hosts  # netlab Hosts, one per node (on their "db" network), or loopback
        self.dir = Path(workdir)
        self.primaries = primaries
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.ports: list[int] = []
        self.procs: dict[int, subprocess.Popen] = {}

    @property
    def url(self) -> str:
        return f"redis://{self.address(self.alive()[0])}:{self.alive()[0]}"

    def address(self, port: int) -> str:
        return self.host(port).addresses["db"] if self.hosts else "127.0.0.1"

    def host(self, port: int) -> Any:
        """The lab host of the node on ``port``."""
        assert self.hosts is not None
        return self.hosts[self.ports.index(port)]

    def _exec(self, port: int) -> list[str]:
        return self.host(port).exec() if self.hosts else []

    def alive(self) -> list[int]:
        return [p for p, proc in self.procs.items() if proc.poll() is None]

    def _cli(self, port: int, *args: str, timeout: float = 30) -> str:
        out = subprocess.run([*self._exec(port), "redis-cli", "-h", self.address(port), "-p",
                              str(port), *args],
                             capture_output=True, text=True, timeout=timeout)
        return out.stdout

    def start(self) -> RedisClusterServer:
        # on lab hosts every node has the machine to itself: any port is free; on loopback
        # a port can still be taken between the check and the bind: then try new ports
        for attempt in range(3):
            try:
                self._start_nodes()
                break
            except RuntimeError:
                if self.hosts or attempt == 2:
                    raise
        create = subprocess.run(
            [*self._exec(self.ports[0]), "redis-cli", "--cluster", "create",
             *(f"{self.address(p)}:{p}" for p in self.ports),
             "--cluster-replicas", str(self.replicas), "--cluster-yes"],
            capture_output=True, text=True, timeout=60)
        if create.returncode != 0:
            self.stop()
            raise RuntimeError(f"redis-cli --cluster create failed: {create.stdout[-1000:]}")
        self.wait_ok()
        return self

    def _start_nodes(self) -> None:
        n = self.primaries * (1 + self.replicas)
        self.ports = list(range(7000, 7000 + n)) if self.hosts else _free_ports(n)
        self.procs = {}
        for port in self.ports:
            node = self.dir / str(port)
            node.mkdir(parents=True, exist_ok=True)
            self.procs[port] = subprocess.Popen(
                [*self._exec(port), "redis-server", "--port", str(port), "--bind",
                 self.address(port), "--protected-mode", "no",
                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-node-timeout", str(self.node_timeout_ms), "--save", "",
                 "--appendonly", "no", "--repl-diskless-sync-delay", "0",
                 "--dir", str(node)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        for port in self.ports:
            while self._cli(port, "ping").strip() != "PONG":
                if time.time() > deadline or self.procs[port].poll() is not None:
                    self.stop()
                    raise RuntimeError(f"redis-server on port {port} did not start")
                time.sleep(0.05)

    def wait_ok(self, timeout: float = 30) -> None:
        """Until every live node sees the cluster as ok with all slots served, and every
        primary that has a live replica has it in sync (``WAIT`` counts only those)."""
        deadline = time.time() + timeout
        while True:
            infos = [self._cli(p, "cluster", "info") for p in self.alive()]
            ok = all("cluster_state:ok" in i and "cluster_slots_ok:16384" in i for i in infos)
            if ok:
                replication = [self._cli(p, "info", "replication")
                               for p in self.primary_ports()]
                ok = all("state=online" in r for r in replication
                         if "connected_slaves:0" not in r)
            if ok:
                return
            if time.time() > deadline:
                raise RuntimeError("the Redis Cluster did not become ok")
            time.sleep(0.1)

    def primary_ports(self) -> list[int]:
        ports = []
        for line in self._cli(self.alive()[0], "cluster", "nodes").splitlines():
            fields = line.split()
            if len(fields) > 2 and "master" in fields[2] and "fail" not in fields[2]:
                ports.append(int(fields[1].split("@")[0].rsplit(":", 1)[1]))
        return sorted(ports)

    def replica_of(self, port: int) -> int:
        """The port of a replica of the primary on ``port``."""
        lines = [line.split() for line in
                 self._cli(self.alive()[0], "cluster", "nodes").splitlines()]
        primary = next(f[0] for f in lines if len(f) > 3 and f":{port}@" in f[1])
        return next(int(f[1].split("@")[0].rsplit(":", 1)[1]) for f in lines
                    if len(f) > 3 and "slave" in f[2] and f[3] == primary)

    def kill_primary(self, port: int | None = None) -> int:
        """kill -9 one primary (the first, or ``port``); its replica is promoted."""
        port = port if port is not None else self.primary_ports()[0]
        self.procs[port].kill()
        self.procs[port].wait()
        return port

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def __enter__(self) -> RedisClusterServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
