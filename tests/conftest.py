"""Shared fixtures: the test web in a subprocess and real `scrapy crawl` runs against it.

The suite runs on two pytest-xdist workers, each taking whole test files (pyproject.toml:
``--dist loadfile``), so a module's fixtures are built once and its tests run one after
another.  What files share is kept apart: each file that uses the machine's Redis has a
database of its own (9: distributed, 11: control, 12: events, 13 and 14: the frontier
contract, one a worker, 15: the hostile web's Redis crawl), servers bind free ports, crawls
work in temporary directories, and the real-site corpus is built under a file lock."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testweb import TestWebServer

ROOT = Path(__file__).resolve().parents[1]
# warcio's command line (warcio check / warcio index), run with this interpreter
#: what a Redis worker's stats count that explains a URL fetched twice (a lease that expired
#: or was refused, an admission reclaimed from a dead worker, a lease let go on a failover)
TWICE_EXPLAINED_BY = ("frontier/redis/leases_expired", "frontier/redis/leases_lost",
                      "dupefilter/redis/reclaimed", "frontier/redis/refetched_after_restart")
WARCIO = [sys.executable, "-c", "import sys; from warcio.cli import main; sys.exit(main())"]


@dataclass
class CrawlResult:
    returncode: int
    output: str
    items: list[dict]
    stats: dict

    def stat(self, key: str, default: int = 0) -> int:
        return self.stats.get(key, default)


def archived_uris(warc_dir: Path) -> set[str]:
    """Run ``warcio check`` on every WARC file of ``warc_dir`` (each must pass); return the
    target URIs of their response and revisit records."""
    from warcio.archiveiterator import ArchiveIterator

    uris: set[str] = set()
    for path in sorted(warc_dir.glob("*.warc.gz")):
        check = subprocess.run([*WARCIO, "check", "-v", str(path)], capture_output=True,
                               text=True, check=False)
        assert check.returncode == 0, check.stdout + check.stderr
        with open(path, "rb") as fh:
            uris |= {r.rec_headers.get_header("WARC-Target-URI")
                     for r in ArchiveIterator(fh) if r.rec_type in ("response", "revisit")}
    return uris


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def local_redis(url: str) -> Iterator[Any]:
    """The body of a fixture: the machine's Redis database at ``url``, flushed before and
    after (it must answer: ``.ci/run`` starts one)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.fail("Redis does not answer on 127.0.0.1:6379 (.ci/run starts one)")
    client.flushdb()
    yield client
    client.flushdb()


def run_crawl(*args: str, settings: dict | None = None, items_path: Path | None = None,
              timeout: float = 240, cwd: Path = ROOT, env: dict | None = None) -> CrawlResult:
    """Run ``scrapy crawl web`` in a subprocess; collect its items and final stats."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web", *args]
    stats_path = None
    if items_path is not None:
        cmd += ["-O", f"{items_path}:jsonlines"]
        stats_path = items_path.with_suffix(".stats.json")
        cmd += ["-s", f"CRAWLER_EXT_STATS_FILE={stats_path}"]
    settings = dict(settings or {})
    if "CRAWLER_EXT_WARC_DIR" not in settings:  # never archive into the checkout
        base = items_path.parent if items_path is not None else Path(tempfile.mkdtemp())
        settings["CRAWLER_EXT_WARC_DIR"] = str(base / "warcs")
    # the test web's 503 robots.txt hosts: retry in seconds, not the production minute
    settings.setdefault("CRAWLER_EXT_ROBOTS_RETRY_BASE", 0.5)
    settings.setdefault("CRAWLER_EXT_ALLOWED_NETWORKS", "127.0.0.0/8")  # the test web
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    run_env = dict(os.environ, **(env or {}))
    run_env.setdefault("PYTHONPATH", str(ROOT))
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=run_env)
    items: list[dict] = []
    if items_path is not None and items_path.exists():
        items = [json.loads(line) for line in items_path.read_text().splitlines() if line]
    stats = json.loads(stats_path.read_text()) if stats_path and stats_path.exists() else {}
    return CrawlResult(proc.returncode, proc.stdout + proc.stderr, items, stats)


@pytest.fixture
def testweb_factory(tmp_path: Path) -> Iterator:
    servers: list[TestWebServer] = []

    def make(**kwargs) -> TestWebServer:
        server = TestWebServer(workdir=tmp_path / f"web{len(servers)}", **kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()
