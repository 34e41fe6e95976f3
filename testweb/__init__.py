"""The test web: a deterministic multi-host web served on loopback, with its ground truth.

``TestWebServer`` runs ``python -m testweb`` in a subprocess for tests, benchmarks
and the demo; crawls resolve its host names through ``CRAWLER_EXT_HOSTS``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from testweb.model import TestWeb
from testweb.process import ServerProcess
from testweb.requestlog import LogEntry, politeness_violations, read_log

__all__ = ["TestWeb", "TestWebServer", "LogEntry", "read_log", "politeness_violations"]


class TestWebServer(ServerProcess):
    """Start the test web in a subprocess; use as a context manager."""

    def __init__(self, hosts: int = 50, pages: int = 10, seed: int = 1, hazards: bool = True,
                 latency: float | None = None, workdir: str | Path | None = None,
                 dns_ttl: int | None = None, robots_change: bool = False,
                 change_period: float | None = None, change_classes: str | None = None,
                 address: str = "127.0.0.1", netns: str | None = None) -> None:
        self.address = address  # another than loopback only inside a test's own namespace
        self.netns = netns  # run in this network namespace (a NetLab host's)
        self.hosts, self.pages, self.seed, self.hazards, self.latency = hosts, pages, seed, hazards, latency
        self.robots_change = robots_change
        self.change_period = change_period
        self.change_classes = change_classes  # "never,1,4,16" (the default)
        self.dns_ttl = dns_ttl  # set: also serve the names over DNS (dns_port, dns_log())
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="testweb-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.dir / "requests.jsonl"
        self.truth_path = self.dir / "truth.json"
        self.seeds_path = self.dir / "seeds.txt"
        self.dns_log_path = self.dir / "dns.jsonl"
        self.dns_port = 0
        self.port = 0

    def start(self) -> TestWebServer:
        cmd = [*(["ip", "netns", "exec", self.netns] if self.netns else []),
               sys.executable, "-m", "testweb", "--address", self.address, "--seed", str(self.seed),
               "--hosts", str(self.hosts), "--pages", str(self.pages), "--log", str(self.log_path),
               "--truth", str(self.truth_path), "--seeds-file", str(self.seeds_path)]
        if not self.hazards:
            cmd.append("--no-hazards")
        if self.latency is not None:
            cmd += ["--latency", str(self.latency)]
        if self.robots_change:
            cmd.append("--robots-change")
        if self.change_period is not None:
            cmd += ["--change-period", str(self.change_period)]
        if self.change_classes is not None:
            cmd += ["--change-classes", self.change_classes]
        if self.dns_ttl is not None:
            cmd += ["--dns-port", "0", "--dns-ttl", str(self.dns_ttl),
                    "--dns-log", str(self.dns_log_path)]
        ready = self._launch(cmd)
        self.port = int(ready["port"])
        if "dns" in ready:
            self.dns_port = int(ready["dns"])
        return self

    def url(self, host: int = 0, path: str = "/") -> str:
        return f"http://h{host:04d}.web.test:{self.port}{path}"

    @property
    def hosts_setting(self) -> str:
        return f"*.web.test={self.address}"

    def truth(self) -> dict[str, Any]:
        return json.loads(self.truth_path.read_text())

    def log(self) -> list[LogEntry]:
        return read_log(self.log_path) if self.log_path.exists() else []

    def dns_log(self) -> list[dict[str, Any]]:
        """The DNS server's queries: ``{"name", "type", "time"}``."""
        if not self.dns_log_path.exists():
            return []
        return [json.loads(line) for line in self.dns_log_path.read_text().splitlines() if line]

    def clear_log(self) -> None:
        self.log_path.write_text("")
