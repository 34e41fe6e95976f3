"""Faults between machines: workers, Redis and the test web each on a host of their own
(network namespaces joined by switches, :mod:`testweb.netlab`), and a nemesis that partitions,
slows and stalls them on a schedule drawn from a fixed seed.  The web's request log judges:
every page fetched, no URL fetched twice beyond what expired leases explain, no host hit
faster than its delay by all workers together, every worker ends by itself, one log line per
outage.

Needs root (``ip netns``); every Redis here is the test's own, never the machine's service.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from testweb import TestWebServer, politeness_violations, read_log
from testweb.netlab import Host, NetLab, lab_unavailable

LEASE_TTL = 3.0
DELAY = 1.0
#: what each worker's stats count that explains a URL fetched twice
EXPLAINING = ("frontier/redis/leases_expired", "frontier/redis/leases_lost",
              "dupefilter/redis/reclaimed")


@pytest.fixture
def lab():
    reason = lab_unavailable()
    if reason:
        pytest.skip(reason)
    with NetLab() as made:
        yield made


class Proxy:
    """The fault proxy on a worker's host, between the worker and Redis."""

    def __init__(self, lab: NetLab, host: Host, target: str, seed: int) -> None:
        self.proc = lab.popen(host, [sys.executable, "-m", "testweb.faultproxy", "--listen",
                                     "127.0.0.1:6379", "--to", target, "--seed", str(seed)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=ROOT)
        line = self.proc.stdout.readline()
        assert line.startswith("READY"), line

    def send(self, command: str) -> None:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def close(self) -> int:
        """Stop; the number of connections it dropped."""
        out, _ = self.proc.communicate(timeout=10)
        return int(out.split()[-1]) if out.startswith("DROPPED") else 0


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


def _redis(lab: NetLab, host: Host, workdir: Path) -> subprocess.Popen:
    """A Redis of the test's own, with the deployments' default durability (AOF, fsync every
    second)."""
    workdir.mkdir()
    proc = lab.popen(host, ["redis-server", "--bind", host.addresses["db"], "--port", "6379",
                            "--protected-mode", "no", "--dir", str(workdir), "--appendonly",
                            "yes", "--appendfsync", "everysec", "--save", ""],
                     stdout=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        if subprocess.run([*host.exec(), "redis-cli", "-h", host.addresses["db"], "ping"],
                          capture_output=True, text=True).stdout.strip() == "PONG":
            return proc
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the lab's Redis did not start")


def _worker(lab: NetLab, host: Host, web: TestWebServer, workdir: Path,
            n: int) -> subprocess.Popen:
    settings = {"CRAWLER_EXT_FRONTIER_BACKEND": "redis",
                "REDIS_URL": "redis://127.0.0.1:6379/0",  # through the host's fault proxy
                "REDIS_PARAMS": '{"socket_timeout": 2, "socket_connect_timeout": 2}',
                "CRAWLER_EXT_HOSTS": web.hosts_setting,
                "CRAWLER_EXT_ALLOWED_NETWORKS": "10.0.0.0/8",
                "CRAWLER_EXT_WARC_DIR": "",  # archiving off
                "CRAWLER_EXT_POLITENESS_MIN_DELAY": DELAY,
                "CRAWLER_EXT_POLITENESS_MAX_DELAY": DELAY,
                "CRAWLER_EXT_REDIS_LEASE_TTL": LEASE_TTL,
                # fewer slots than leased keys: a worker always holds leased entries not yet
                # fetched, which the faults find
                "CONCURRENT_REQUESTS": 2,
                "CRAWLER_EXT_STATS_FILE": str(workdir / f"stats{n}.json")}
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    log = (workdir / f"worker{n}.log").open("w")
    return lab.popen(host, cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_nemesis_against_two_workers_and_one_redis(lab: NetLab, tmp_path: Path) -> None:
    web_host = lab.add("web", ("web",))
    redis_host = lab.add("redis", ("db",))
    hosts = [lab.add(f"w{n}", ("web", "db")) for n in range(2)]
    redis_addr = redis_host.addresses["db"]
    redis = _redis(lab, redis_host, tmp_path / "redis")
    web = TestWebServer(hosts=16, pages=16, hazards=False, latency=0.2,
                        workdir=tmp_path / "web", address=web_host.addresses["web"],
                        netns=web_host.netns).start()
    proxies: list[Proxy] = []
    workers: list[subprocess.Popen] = []
    try:
        pushed = subprocess.run(
            [*hosts[0].exec(), sys.executable, "-m", "crawler_ext.distributed", "--redis-url",
             f"redis://{redis_addr}:6379/0", "push-seeds", str(web.seeds_path)],
            capture_output=True, text=True, cwd=ROOT)
        assert pushed.returncode == 0, pushed.stderr
        proxies = [Proxy(lab, host, f"{redis_addr}:6379", seed=n)
                   for n, host in enumerate(hosts)]
        workers = [_worker(lab, host, web, tmp_path, n) for n, host in enumerate(hosts)]
        deadline = time.time() + 60
        while len(read_log(web.log_path)) < 40 and time.time() < deadline:
            time.sleep(0.1)
        started = time.time()
        nemesis = Nemesis(seed=41)
        # worker 0 cut off from Redis (not from the web) past its leases
        nemesis.fault("w0 partitioned from Redis", 2 * LEASE_TTL,
                      lambda: lab.cut(hosts[0], "db"), lambda: lab.heal(hosts[0], "db"))
        # Redis cut off from every worker
        nemesis.fault("Redis partitioned", 2 * LEASE_TTL,
                      lambda: lab.cut(redis_host, "db"), lambda: lab.heal(redis_host, "db"))
        # a slow, lossy link between worker 1 and Redis
        nemesis.fault("w1's Redis link slow and lossy", 8.0,
                      lambda: (proxies[1].send("latency 0.3"), proxies[1].send("drop 0.05")),
                      lambda: proxies[1].send("clear"))
        # worker 1 stalled past its leases
        nemesis.fault("w1 stalled", 2 * LEASE_TTL,
                      lambda: workers[1].send_signal(signal.SIGSTOP),
                      lambda: workers[1].send_signal(signal.SIGCONT))
        nemesis.run()
        faults_ended = time.time()
        codes = [w.wait(timeout=180) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGCONT)
                w.kill()
                w.wait()
        dropped = [p.close() for p in proxies]
        web.stop()
        redis.terminate()
        redis.wait(10)
    logs = [(tmp_path / f"worker{n}.log").read_text() for n in range(2)]
    assert codes == [0, 0], [text[-3000:] for text in logs]
    log = read_log(web.log_path)
    stats = [json.loads((tmp_path / f"stats{n}.json").read_text()) for n in range(2)]
    fetched = Counter((e.host, e.path) for e in log)
    pages = {(url.split("//", 1)[1].split(":")[0], "/" + url.split("/", 3)[3])
             for url in web.truth()["pages"]}
    twice = {k: v for k, v in fetched.items() if v > 1}
    explained = {name: sum(s.get(name, 0) for s in stats) for name in EXPLAINING}
    fenced = sum(s.get("frontier/redis/leases_fenced", 0) for s in stats)
    violations = politeness_violations(log, DELAY)
    print(f"\nnemesis (seed 41): {', '.join(nemesis.done)}; faults from {started:.0f} to "
          f"{faults_ended:.0f}, crawl ended {max(e.end for e in log):.0f}\n"
          f"fetches {len(log)}, URLs {len(fetched)}, admitted pages {len(pages)}, "
          f"fetched twice {len(twice)} ({sorted(twice)[:5]}), explained by {explained}, "
          f"entries let go at the fence {fenced}, politeness violations {len(violations)}, "
          f"connections dropped {dropped}")
    # the fence: a worker cut off from Redis starts no fetch once its leases may have
    # expired (from a lease time after the cut until the heal); a worker stalled past its
    # leases fetches, once resumed, nothing it leased before the stall (which another worker
    # fetches too once the lease expired: a URL fetched twice)
    cut, healed = nemesis.windows["w0 partitioned from Redis"]
    late = [e for e in log if e.client == hosts[0].addresses["web"]
            and cut + LEASE_TTL < e.start < healed]
    stopped, resumed = nemesis.windows["w1 stalled"]
    stale = [e for e in log if e.client == hosts[1].addresses["web"]
             and resumed <= e.start < resumed + 1.0 and fetched[(e.host, e.path)] > 1]
    print(f"fetches by w0 cut off past its leases {len(late)}; fetched twice, first by w1 "
          f"on resuming {len(stale)}")
    assert late == [] and stale == [], (late[:3], stale[:3])
    assert any(e.start > faults_ended for e in log)  # the crawl outlived the nemesis
    assert pages <= set(fetched), sorted(pages - set(fetched))[:10]  # every admitted URL
    assert all(s["finish_reason"] == "finished" for s in stats)
    assert all(v == 2 for v in twice.values()), twice
    assert len(twice) <= sum(explained.values()), (twice, explained)
    assert violations == [], violations[:3]
    for n, text in enumerate(logs):
        outages = text.count(" is unreachable (")
        # w0: its partition and Redis's; w1: Redis's, its stall's timed-out exchanges and
        # its lossy link's dropped connections
        assert 1 <= outages <= 2 + n + dropped[n], (n, outages, dropped)
        assert text.count("answers again after") == outages
        assert "Traceback" not in text
