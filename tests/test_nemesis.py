"""Faults between machines: workers, Redis and the test web each on a host of their own
(network namespaces joined by switches, :mod:`testweb.netlab`), and a nemesis that partitions,
slows and stalls them on a schedule drawn from a fixed seed.  The web's request log judges:
every page fetched, every fetch beyond a URL's first explained by a counted cause (expired
or lost leases, reclaimed claims, pages let go after a restart), no host hit faster than its
delay by all workers together, every worker ends by itself, one log line per outage.

Needs root (``ip netns``); every Redis here is the test's own, never the machine's service.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, TWICE_EXPLAINED_BY

from testweb import TestWebServer, politeness_violations, read_log
from testweb.netlab import Host, NetLab, lab_unavailable
from testweb.rediscluster import RedisClusterServer, cluster_available

LEASE_TTL = 3.0
DELAY = 1.0


@pytest.fixture
def lab():
    reason = lab_unavailable()
    if reason:
        pytest.skip(reason)
    with NetLab() as made:
        yield made


class Link:
    """A worker's link to Redis through fault proxies on the worker's host: one per Redis
    node, each listening on the worker's loopback at the node's port."""

    def __init__(self, lab: NetLab, host: Host, targets: list[tuple[str, int]],
                 seed: int) -> None:
        self.procs = []
        for n, (address, port) in enumerate(targets):
            proc = lab.popen(host, [sys.executable, "-m", "testweb.faultproxy", "--listen",
                                    f"127.0.0.1:{port}", "--to", f"{address}:{port}", "--seed",
                                    str(seed * 100 + n)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
            self.procs.append(proc)
            line = proc.stdout.readline()
            assert line.startswith("READY"), line

    def send(self, *commands: str) -> None:
        for proc in self.procs:
            for command in commands:
                proc.stdin.write(command + "\n")
            proc.stdin.flush()

    def close(self) -> int:
        """Stop; the number of connections dropped."""
        dropped = 0
        for proc in self.procs:
            out, _ = proc.communicate(timeout=10)
            dropped += int(out.split()[-1]) if out.startswith("DROPPED") else 0
        return dropped


#: a worker's cluster client reaches every node through its link's proxies (on loopback,
#: at the node's port): the test's stand-in for a slow network between them
REMAP = """
import crawler_ext.distributed.cluster as cluster

_init = cluster.ClusterClient.__init__

def _remapped(self, *args, **kwargs):
    kwargs.setdefault("address_remap", lambda address: ("127.0.0.1", address[1]))
    _init(self, *args, **kwargs)

cluster.ClusterClient.__init__ = _remapped
"""


class Nemesis:
    """Faults, each started, held and ended; run one after another in a seeded order."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.faults: list[tuple[str, float, Callable[[], None], Callable[[], None]]] = []
        self.done: list[str] = []
        self.windows: dict[str, tuple[float, float]] = {}  # fault -> (started, ended)

    def fault(self, name: str, hold: float, start: Callable[[], None],
              end: Callable[[], None]) -> None:
        self.faults.append((name, hold, start, end))

    def run(self) -> None:
        self.random.shuffle(self.faults)
        for name, hold, start, end in self.faults:
            time.sleep(self.random.uniform(1.0, 2.0))
            started = time.time()
            start()
            try:
                time.sleep(hold)
            finally:
                end()
            self.windows[name] = (started, time.time())
            self.done.append(name)


class AofTail:
    """The size of a Redis's append-only file, sampled every 0.1 s: a crash of its machine
    loses what was written after the last fsync (up to a second with ``appendfsync
    everysec``), which a kill -9 of the process alone never loses (the kernel keeps it)."""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / "appendonlydir"
        self.sizes: list[tuple[float, Path, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            files = sorted(self.dir.glob("*.incr.aof"), key=lambda f: f.stat().st_mtime)
            if files:
                self.sizes.append((time.time(), files[-1], files[-1].stat().st_size))

    def lose_last(self, seconds: float) -> int:
        """Cut the file back to its size ``seconds`` ago (after the process was killed);
        the bytes lost."""
        self._stop.set()
        self._thread.join()
        now = time.time()
        at, path, size = max((item for item in self.sizes if item[0] <= now - seconds),
                             key=lambda item: item[0])
        lost = path.stat().st_size - size
        with path.open("r+b") as fh:
            fh.truncate(size)
        return lost


class LabRedis:
    """The test's own single Redis on a lab host, with the deployments' default durability
    (AOF, fsync every second); crashed and started again by the nemesis."""

    def __init__(self, lab: NetLab, host: Host, workdir: Path) -> None:
        self.lab, self.host, self.dir = lab, host, workdir
        workdir.mkdir()
        self.address = host.addresses["db"]
        self.proc = self._start()
        self.tail = AofTail(workdir)
        self.lost = 0

    def _start(self) -> subprocess.Popen:
        proc = self.lab.popen(self.host, [
            "redis-server", "--bind", self.address, "--port", "6379", "--protected-mode",
            "no", "--dir", str(self.dir), "--appendonly", "yes", "--appendfsync", "everysec",
            "--save", ""], stdout=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            if subprocess.run([*self.host.exec(), "redis-cli", "-h", self.address, "ping"],
                              capture_output=True, text=True).stdout.strip() == "PONG":
                return proc
            time.sleep(0.1)
        proc.kill()
        raise RuntimeError("the lab's Redis did not start")

    def crash(self) -> None:
        """Its machine crashes: kill -9, and the AOF loses its last second."""
        self.proc.kill()
        self.proc.wait()
        self.lost = self.tail.lose_last(1.0)

    def restart(self) -> None:
        self.proc = self._start()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _worker(lab: NetLab, host: Host, web: TestWebServer, workdir: Path, n: int,
            redis: dict[str, Any], pythonpath: str) -> subprocess.Popen:
    settings = {"CRAWLER_EXT_FRONTIER_BACKEND": "redis", **redis,
                "REDIS_PARAMS": '{"socket_timeout": 2, "socket_connect_timeout": 2}',
                "CRAWLER_EXT_HOSTS": web.hosts_setting,
                "CRAWLER_EXT_ALLOWED_NETWORKS": "10.0.0.0/8",
                "CRAWLER_EXT_WARC_DIR": "",  # archiving off
                "CRAWLER_EXT_POLITENESS_MIN_DELAY": DELAY,
                "CRAWLER_EXT_POLITENESS_MAX_DELAY": DELAY,
                "CRAWLER_EXT_REDIS_LEASE_TTL": LEASE_TTL,
                # two slots on a slow web (0.2 s a page): a worker always holds leases of
                # entries waiting or in flight when a fault strikes
                "CONCURRENT_REQUESTS": 2,
                "CRAWLER_EXT_STATS_FILE": str(workdir / f"stats{n}.json")}
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    log = (workdir / f"worker{n}.log").open("w")
    return lab.popen(host, cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                     env=dict(os.environ, PYTHONPATH=pythonpath))


class Campaign:
    """Two workers and the test web on lab hosts; the Redis side is the test's."""

    def __init__(self, lab: NetLab, tmp_path: Path) -> None:
        self.lab, self.dir = lab, tmp_path
        self.web_host = lab.add("web", ("web",))
        self.hosts = [lab.add(f"w{n}", ("web", "db")) for n in range(2)]
        self.web = TestWebServer(hosts=16, pages=24, hazards=False, latency=0.2,
                                 workdir=tmp_path / "web", address=self.web_host.addresses["web"],
                                 netns=self.web_host.netns)
        self.workers: list[subprocess.Popen] = []
        self.nemesis = Nemesis(seed=41)

    def run(self, redis_cli: list[str], redis: list[dict[str, Any]], link: Link,
            remap: bool = False) -> None:
        """Push the seeds, start the workers (``redis``: each one's settings; ``link``: worker
        1's proxies; ``remap``: its cluster client goes through them), let the nemesis loose
        once the crawl is under way, and wait for the workers to end by themselves."""
        self.web.start()
        pushed = subprocess.run([*self.hosts[0].exec(), sys.executable, "-m",
                                 "crawler_ext.distributed", *redis_cli, "push-seeds",
                                 str(self.web.seeds_path)], capture_output=True, text=True,
                                cwd=ROOT)
        assert pushed.returncode == 0, pushed.stderr
        shim = self.dir / "remap"
        shim.mkdir()
        (shim / "sitecustomize.py").write_text(REMAP)
        self.workers = [_worker(self.lab, host, self.web, self.dir, n, redis[n],
                                f"{shim}{os.pathsep}{ROOT}" if remap and n == 1 else str(ROOT))
                        for n, host in enumerate(self.hosts)]
        deadline = time.time() + 60
        while len(read_log(self.web.log_path)) < 40 and time.time() < deadline:
            time.sleep(0.1)
        # faults every campaign has: a worker cut off from Redis (not from the web) past its
        # leases, a worker stalled past its leases, and a slow, lossy link between a worker
        # and Redis
        self.nemesis.fault("w1's Redis link slow and lossy", 8.0,
                           lambda: link.send("latency 0.3", "drop 0.05"),
                           lambda: link.send("clear"))
        self.nemesis.fault("w0 partitioned from Redis", 2 * LEASE_TTL,
                           lambda: self.lab.cut(self.hosts[0], "db"),
                           lambda: self.lab.heal(self.hosts[0], "db"))
        self.nemesis.fault("w1 stalled", 2 * LEASE_TTL,
                           lambda: self.workers[1].send_signal(signal.SIGSTOP),
                           lambda: self.workers[1].send_signal(signal.SIGCONT))
        self.started = time.time()
        self.nemesis.run()
        self.ended = time.time()
        self.codes = [w.wait(timeout=180) for w in self.workers]

    def stop(self) -> None:
        for w in self.workers:
            if w.poll() is None:
                w.send_signal(signal.SIGCONT)
                w.kill()
                w.wait()
        self.web.stop()

    def check(self, outages_allowed: list[int],
              least_outages: tuple[int, int] = (1, 1)) -> None:
        """The invariants, from the web's request log and the workers' stats and logs.
        ``least_outages``: the outages each worker must have logged."""
        logs = [(self.dir / f"worker{n}.log").read_text() for n in range(2)]
        assert self.codes == [0, 0], [text[-3000:] for text in logs]
        log = read_log(self.web.log_path)
        stats = [json.loads((self.dir / f"stats{n}.json").read_text()) for n in range(2)]
        fetched = Counter((e.host, e.path) for e in log)
        pages = {(url.split("//", 1)[1].split(":")[0], "/" + url.split("/", 3)[3])
                 for url in self.web.truth()["pages"]}
        twice = {k: v for k, v in fetched.items() if v > 1}
        explained = {name: sum(s.get(name, 0) for s in stats) for name in TWICE_EXPLAINED_BY}
        counted = {name: sum(s.get(f"frontier/redis/{name}", 0) for s in stats)
                   for name in ("leases_fenced", "held_for_replicas")}
        violations = politeness_violations(log, DELAY)
        # the fence: a worker cut off from Redis starts no fetch once its leases may have
        # expired (from a lease time after the cut until the heal); a worker stalled past
        # its leases fetches, once resumed, nothing it leased before the stall, which another
        # worker took once the lease could have expired (a fetch by another worker while the
        # lease still held was of another entry of the URL: a reclaimed admission's; so is
        # one of a URL whose claim w1 ended late, after the stall, which it counts)
        cut, healed = self.nemesis.windows["w0 partitioned from Redis"]
        late = [e for e in log if e.client == self.hosts[0].addresses["web"]
                and cut + LEASE_TTL < e.start < healed]
        stopped, resumed = self.nemesis.windows["w1 stalled"]
        w1 = self.hosts[1].addresses["web"]
        taken_over = {(e.host, e.path) for e in log if e.client != w1
                      and stopped + LEASE_TTL / 2 <= e.start < resumed}
        stale = [e for e in log if e.client == w1 and resumed <= e.start < resumed + 1.0
                 and (e.host, e.path) in taken_over]
        lost = sorted(pages - set(fetched))  # every admitted URL is fetched (below)
        print(f"\nnemesis (seed 41): {', '.join(self.nemesis.done)}; faults for "
              f"{self.ended - self.started:.0f} s, crawl ended "
              f"{max(e.end for e in log) - self.ended:.0f} s later\n"
              f"fetches {len(log)}, URLs {len(fetched)}, admitted pages {len(pages)} "
              f"({len(lost)} of them not fetched), "
              f"fetched more than once {len(twice)} ({sum(v - 1 for v in twice.values())} "
              f"extra fetches), explained by {explained}; {counted}; "
              f"politeness violations {len(violations)}; fetches by w0 cut off past its "
              f"leases {len(late)}; fetched twice, first by w1 on resuming {len(stale)} "
              f"(claims w1 ended late {stats[1].get('dupefilter/redis/late_claims', 0)})")
        late_claims = stats[1].get("dupefilter/redis/late_claims", 0)
        assert late == [] and len(stale) <= late_claims, (late[:3], stale[:3], late_claims)
        assert any(e.start > self.ended for e in log)  # the crawl outlived the nemesis
        assert all(s["finish_reason"] == "finished" for s in stats)
        # every fetch beyond a URL's first has a counted cause (faults compound: a page
        # fetched again after a crash may lose its lease again in the next partition)
        extra = sum(v - 1 for v in twice.values())
        assert extra <= sum(explained.values()), (twice, explained)
        assert violations == [], violations[:3]
        for n, text in enumerate(logs):
            outages = text.count(" is unreachable (")
            assert least_outages[n] <= outages <= outages_allowed[n], (n, outages,
                                                                       outages_allowed)
            assert text.count("answers again after") == outages
            assert "Traceback" not in text
        assert lost == [], lost[:10]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_nemesis_against_two_workers_and_one_redis(lab: NetLab, tmp_path: Path) -> None:
    campaign = Campaign(lab, tmp_path)
    redis_host = lab.add("redis", ("db",))
    redis = LabRedis(lab, redis_host, tmp_path / "redis")
    links: list[Link] = []
    try:
        links = [Link(lab, host, [(redis.address, 6379)], seed=n)
                 for n, host in enumerate(campaign.hosts)]
        nemesis = campaign.nemesis
        # Redis cut off from every worker
        nemesis.fault("Redis partitioned", 2 * LEASE_TTL,
                      lambda: lab.cut(redis_host, "db"), lambda: lab.heal(redis_host, "db"))
        # Redis's machine crashes: the AOF loses its last second (appendfsync everysec)
        nemesis.fault("Redis crashed", 3.0, redis.crash, redis.restart)
        campaign.run(["--redis-url", f"redis://{redis.address}:6379/0"],
                     [{"REDIS_URL": "redis://127.0.0.1:6379/0"}] * 2,  # through the proxies
                     links[1])
    finally:
        campaign.stop()
        dropped = [link.close() for link in links]
        redis.stop()
    print(f"AOF bytes lost in the crash {redis.lost}; connections dropped {dropped}")
    assert redis.lost > 0
    # w0: its partition, Redis's and the crash; w1: those two, its stall's timed-out
    # exchanges and its lossy link's dropped connections
    campaign.check([3, 3 + 1 + dropped[1]])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_nemesis_against_two_workers_and_a_redis_cluster(lab: NetLab,
                                                           tmp_path: Path) -> None:
    """3 primaries + 3 replicas, each node on a host of its own.  Beside the worker faults,
    a primary is first cut off from its replica (it still answers the workers: its writes
    are acknowledged but not replicated, WAIT says so), then from everyone while the replica
    comes back: the replica is promoted without those writes, and the old primary, healed,
    becomes its replica and drops them."""
    if not cluster_available():
        pytest.skip("redis-server/redis-cli not installed")
    campaign = Campaign(lab, tmp_path)
    nodes = [lab.add(f"r{n}", ("db",)) for n in range(6)]
    cluster = RedisClusterServer(tmp_path / "cluster", hosts=nodes)
    link = None
    try:
        cluster.start()
        link = Link(lab, campaign.hosts[1], [(cluster.address(p), p) for p in cluster.ports],
                    seed=1)
        primary = cluster.primary_ports()[0]
        replica = cluster.replica_of(primary)

        def partition_primary() -> None:
            lab.cut(cluster.host(replica), "db")
            time.sleep(2.0)  # the workers write to the primary alone
            lab.cut(cluster.host(primary), "db")
            lab.heal(cluster.host(replica), "db")

        campaign.nemesis.fault("a primary partitioned, its replica promoted", 8.0,
                               partition_primary,
                               lambda: lab.heal(cluster.host(primary), "db"))
        url = cluster.url
        campaign.run(["--redis-url", url, "--cluster"],
                     [{"REDIS_URL": url, "CRAWLER_EXT_REDIS_CLUSTER": True},
                      {"REDIS_URL": f"redis://127.0.0.1:{cluster.ports[0]}",
                       "CRAWLER_EXT_REDIS_CLUSTER": True}], link, remap=True)
        promoted = replica in cluster.primary_ports()
    finally:
        campaign.stop()
        dropped = link.close() if link is not None else 0
        cluster.stop()
    print(f"replica promoted: {promoted}; connections dropped on w1's link {dropped}")
    assert promoted
    # w0: its partition and the failover; w1: the failover, its stall and its lossy link's
    # dropped connections (a cluster's outage ends after 5 s of calm: a failover is one)
    # worker 1 reaches the cut-off primary only if it has work on its shard then: an outage
    # is not certain for it
    campaign.check([3, 3 + dropped], least_outages=(1, 0))
