"""Distributed crawling: N workers on one Redis (distributed), Redis's cost per page and memory at
scale (distributed_scale)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.harness import REDIS, ROOT, table
from testweb import TestWebServer, politeness_violations, read_log

BENCH_REDIS = "redis://127.0.0.1:6379/14"


def _redis_calls(client) -> int:
    return sum(v["calls"] for v in client.info("commandstats").values())


def _workers(web: TestWebServer, n: int, settings: dict, workdir: Path, seeds: bool) -> list:
    procs = []
    for i in range(n):
        stats_file = workdir / f"stats{i}.json"
        cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-s", "LOG_LEVEL=WARNING",
               "-s", f"CRAWLER_EXT_HOSTS={web.hosts_setting}",
               "-s", "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.0/8",
               "-s", f"CRAWLER_EXT_WARC_DIR={workdir / f'warcs{i}'}",
               "-s", f"CRAWLER_EXT_STATS_FILE={stats_file}"]
        if seeds:
            cmd += ["-a", f"seeds={web.seeds_path}"]
        for name, value in settings.items():
            cmd += ["-s", f"{name}={value}"]
        procs.append((subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True,
                                       env=dict(os.environ, PYTHONPATH=str(ROOT))), stats_file))
    stats = []
    for proc, stats_file in procs:
        _, err = proc.communicate(timeout=900)
        if proc.returncode != 0 or not stats_file.exists():
            raise RuntimeError(f"worker failed ({proc.returncode}): {err[-2000:]}")
        stats.append(json.loads(stats_file.read_text()))
    return stats


def bench_distributed(quick: bool) -> None:
    import redis as redis_lib

    client = redis_lib.Redis.from_url(BENCH_REDIS)
    hosts, pages, delay = (60, 8, 0.25) if quick else (120, 12, 0.25)
    rows = []
    base: dict[str, float] = {}
    for name, settings, seeds in [
        ("crawler_ext redis frontier", {"CRAWLER_EXT_FRONTIER_BACKEND": "redis",
                                        "REDIS_URL": BENCH_REDIS,
                                        "CRAWLER_EXT_POLITENESS_MIN_DELAY": delay,
                                        "CRAWLER_EXT_POLITENESS_LATENCY_FACTOR": 0}, False),
        ("scrapy-redis scheduler + dupefilter",
         {**REDIS, "REDIS_URL": BENCH_REDIS, "SCHEDULER_FLUSH_ON_START": False,
          "SCHEDULER_PERSIST": True,  # else the first worker to finish deletes the seen set
          "DOWNLOAD_DELAY": delay, "CONCURRENT_REQUESTS_PER_DOMAIN": 1}, True),
    ]:
        for n in (1, 2, 4):
            client.flushdb()
            with tempfile.TemporaryDirectory() as tmp, TestWebServer(
                    hosts=hosts, pages=pages, hazards=False, latency=0.01,
                    workdir=Path(tmp) / "web") as web:
                if not seeds:
                    client.rpush("web:start_urls", *web.seeds_path.read_text().split())
                calls = _redis_calls(client)
                started = time.time()
                try:
                    stats = _workers(web, n, {"ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 64,
                                              **settings}, Path(tmp), seeds)
                except RuntimeError as exc:
                    rows.append([name, n, "failed", str(exc)[:80]])
                    continue
                wall = time.time() - started
                calls = _redis_calls(client) - calls
                log = read_log(web.log_path)
            span = max(e.end for e in log) - min(e.start for e in log)
            fetched = Counter((e.host, e.path) for e in log)
            dispatched = max(1, sum(s.get("downloader/request_count", 0) for s in stats))
            sent = sum(v for s in stats for k, v in s.items()
                       if k == "frontier/redis/commands" or
                       (k.startswith("shared/") and k.endswith("/commands")))
            rate = len(log) / span
            base.setdefault(name, rate)
            rows.append([name, n, len(fetched), sum(v - 1 for v in fetched.values()),
                         len(politeness_violations(log, delay)), round(wall, 1), rate,
                         rate / base[name], (sent or calls) / dispatched, calls / dispatched])
    table(f"Distributed crawl: {hosts} hosts x {pages} pages, delay {delay} s, N workers on "
          "this 2-core machine, one Redis", ["scheduler", "workers", "pages", "fetched twice",
                                             "politeness violations", "wall s", "pages/s",
                                             "speed-up vs 1 worker",
                                             "Redis commands sent / request",
                                             "Redis operations / request (in scripts too)"],
          rows)
    _redis_memory(client, quick)
    client.flushdb()


def _redis_totals(clients: list) -> tuple[float, int, int]:
    """CPU seconds, bytes in and out, and commands of one or more Redis servers so far."""
    cpu = net = calls = 0
    for c in clients:
        info = c.info()
        cpu += info["used_cpu_sys"] + info["used_cpu_user"]
        net += info["total_net_input_bytes"] + info["total_net_output_bytes"]
        calls += _redis_calls(c)
    return cpu, net, calls


def bench_distributed_scale(quick: bool) -> None:
    """1, 2, 4 and 8 workers on one Redis, 16 and 128 shards, and a Redis Cluster of 3 primaries
    with and without replicas (writes wait for a replica only where one is connected): pages/s,
    and Redis commands, bytes and CPU per fetched page (the capacity model's inputs)."""
    import redis as redis_lib

    from crawler_ext.distributed.cli import cluster_client
    from testweb.rediscluster import RedisClusterServer

    hosts, pages, delay = (60, 8, 0.25) if quick else (160, 12, 0.25)
    single = redis_lib.Redis.from_url(BENCH_REDIS)
    runs = [(n, 16, "one Redis") for n in (1, 2, 4, 8)] + [(4, 128, "one Redis"),
                                                           (4, 16, "cluster 3+3"),
                                                           (4, 16, "cluster 3+0")]
    rows = []
    base = None
    for n, shards, where in runs:
        with tempfile.TemporaryDirectory() as tmp:
            cluster = None
            if where.startswith("cluster"):
                cluster = RedisClusterServer(Path(tmp) / "cluster",
                                             replicas=int(where[-1])).start()
                client = cluster_client(cluster.url)
                nodes = [redis_lib.Redis(port=p) for p in cluster.ports]
                url, extra = cluster.url, {"CRAWLER_EXT_REDIS_CLUSTER": True}
            else:
                single.flushdb()
                client, nodes, url, extra = single, [single], BENCH_REDIS, {}
            try:
                with TestWebServer(hosts=hosts, pages=pages, hazards=False, latency=0.01,
                                   workdir=Path(tmp) / "web") as web:
                    client.rpush("web:start_urls", *web.seeds_path.read_text().split())
                    cpu0, net0, calls0 = _redis_totals(nodes)
                    started = time.time()
                    stats = _workers(web, n, {
                        "ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 64,
                        "CRAWLER_EXT_FRONTIER_BACKEND": "redis", "REDIS_URL": url,
                        "CRAWLER_EXT_REDIS_SHARDS": shards,
                        "CRAWLER_EXT_POLITENESS_MIN_DELAY": delay,
                        "CRAWLER_EXT_POLITENESS_LATENCY_FACTOR": 0, **extra}, Path(tmp), False)
                    wall = time.time() - started
                    cpu1, net1, calls1 = _redis_totals(nodes)
                    log = read_log(web.log_path)
            finally:
                if cluster is not None:
                    cluster.stop()
        fetched = Counter((e.host, e.path) for e in log)
        span = max(e.end for e in log) - min(e.start for e in log)
        rate = len(log) / span
        base = base or rate
        done = max(1, len(log))
        rows.append([n, shards, where, len(fetched), sum(v - 1 for v in fetched.values()),
                     len(politeness_violations(log, delay)), round(wall, 1), rate, rate / base,
                     (calls1 - calls0) / done, (net1 - net0) / done,
                     (cpu1 - cpu0) / done * 1e6,
                     sum(1 for s in stats if s.get("frontier/dispatched", 0) > 0)])
    table(f"Distributed scale: {hosts} hosts x {pages} pages, delay {delay} s, N workers on "
          f"this 2-core machine (workers, Redis and the test web share its 2 cores)",
          ["workers", "shards", "Redis", "pages", "fetched twice", "politeness violations",
           "wall s", "pages/s", "vs 1 worker", "Redis commands / page", "Redis bytes / page",
           "Redis CPU us / page", "workers that fetched"], rows)
    single.flushdb()


def _redis_memory(client, quick: bool) -> None:
    """Redis memory per queued URL and per host of the shared frontier and seen set."""
    from crawler_ext.admission.urls import fingerprint
    from crawler_ext.distributed.bloom import RedisBloom
    from crawler_ext.distributed.frontier import RedisFrontier
    from crawler_ext.distributed.shards import ShardLayout
    from crawler_ext.frontier.politeness import Outcome, PolitenessPolicy
    from crawler_ext.frontier.storage import Entry

    n, hosts = (200_000, 2_000) if quick else (1_000_000, 10_000)
    rows = []
    for shards in (1, 16):
        client.flushdb()
        before = client.info("memory")["used_memory"]
        frontier = RedisFrontier(client, ShardLayout("mem", shards=shards), PolitenessPolicy(),
                                 [5, 2, 1], None, buffer=0)
        started = time.perf_counter()
        for start in range(0, n, 20_000):
            for i in range(start, start + 20_000):
                host = f"h{i % hosts}.example.com"
                url = f"http://{host}/section/{i // hosts}/page-{i}.html"
                frontier.add([Entry(host, i % 3, b"U0\x00\x00" + url.encode(), fingerprint(url))])
            frontier.exchange_now()
        elapsed = time.perf_counter() - started
        used = client.info("memory")["used_memory"] - before
        rows.append([f"frontier, {shards} shard(s)", n, hosts, used / n, n / elapsed])
    # per host: a host with one queued URL, and what stays of a host once fetched (its next
    # allowed time and learned state)
    client.flushdb()
    h = n // 10
    before = client.info("memory")["used_memory"]
    frontier = RedisFrontier(client, ShardLayout("mem", shards=16), PolitenessPolicy(),
                             [5, 2, 1], None, buffer=0)  # push only; then take
    for i in range(h):
        url = f"http://h{i}.example.com/"
        frontier.add([Entry(f"h{i}.example.com", 0, b"U0\x00\x00" + url.encode(),
                            fingerprint(url))])
    frontier.exchange_now()
    queued = client.info("memory")["used_memory"] - before
    rows.append(["frontier, one queued URL per host", h, h, queued / h, ""])
    frontier.sync.buffer = h
    for _ in range(10):
        frontier.exchange_now()
    now = time.time()
    while (entry := frontier.next(now)) is not None:
        frontier.done(entry, Outcome(200, 0.05), now)
        frontier.complete([entry.id])
    frontier.exchange_now()
    # (the allocator keeps freed memory: count what the keys hold)
    kept = sum(client.memory_usage(k, samples=0) for k in client.scan_iter(count=1000))
    rows.append(["host state after its fetches (per host)", 0, h, kept / h, ""])
    client.flushdb()
    bloom = RedisBloom(client, "mem", capacity=n, error_rate=0.01)
    bloom.open()
    before = client.info("memory")["used_memory"]
    started = time.perf_counter()
    for start in range(0, n, 20_000):
        bloom.add_many([fingerprint(f"http://h{i % hosts}.example.com/p{i}")
                        for i in range(start, start + 20_000)])
    elapsed = time.perf_counter() - started
    rows.append(["seen set (Bloom, 1 %)", n, hosts,
                 (client.info("memory")["used_memory"] - before) / n, n / elapsed])
    table("Redis memory of the shared frontier (all URLs queued, U-form requests of ~75 "
          "bytes) and seen set", ["structure", "URLs", "hosts", "bytes / URL", "URLs / s"], rows)
