"""Redis outages as the log shows them, and a Redis Cluster's replicas and failovers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, TWICE_EXPLAINED_BY

from crawler_ext.distributed.bloom import RedisBloom
from crawler_ext.distributed.cli import cluster_client
from crawler_ext.distributed.frontier import RedisFrontier
from crawler_ext.distributed.shards import ShardLayout
from crawler_ext.frontier.politeness import Outcome, PolitenessPolicy
from distributed.conftest import Target, redis_lib
from distributed.support import _entry, _exchange, _kill_all, _truth_pages, _wait_all, _worker
from testweb import politeness_violations, read_log
from testweb.rediscluster import RedisClusterServer, cluster_available


def test_one_log_line_per_redis_outage_for_all_components(caplog) -> None:
    import logging

    from crawler_ext.distributed.health import RedisHealth, health_of

    client = redis_lib.Redis.from_url("redis://127.0.0.1:1/3")
    assert health_of(client) is health_of(redis_lib.Redis(host="127.0.0.1", port=1, db=3))
    assert health_of(client).name == "127.0.0.1:1/3"
    clock = iter([10.0, 42.5, 100.0, 101.0]).__next__
    health = RedisHealth("r", clock=clock, settle=0)
    with caplog.at_level(logging.INFO, logger="crawler_ext.distributed.health"):
        health.answered()  # nothing to say while Redis answers
        for component in ("frontier exchange", "shared log rules", "frontier exchange"):
            health.failed(component, "Connection refused")
        health.answered()
        health.answered()
        health.failed("shared log docs", "Timeout")  # a later outage is said again
        health.answered()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4, lines
    assert lines[0].startswith("Redis r is unreachable (frontier exchange: Connection refused)")
    assert lines[1] == "Redis r answers again after 32 s (3 failed exchanges); resuming"
    assert "shared log docs: Timeout" in lines[2] and health.outages == 2


def test_a_flapping_cluster_failover_is_one_outage(caplog) -> None:
    """Failing over, a cluster answers one component while another still fails, and a node
    refuses again: one ERROR line, and one INFO line once all answered for ``settle`` s."""
    import logging

    from crawler_ext.distributed.health import RedisHealth

    now = [0.0]
    health = RedisHealth("c", clock=lambda: now[0], settle=5.0)
    with caplog.at_level(logging.INFO, logger="crawler_ext.distributed.health"):
        health.failed("frontier exchange", "Connection refused")
        now[0] = 0.5
        health.answered("shared log docs")  # another node answers: not over
        health.answered("frontier exchange")  # calm from 0.5 s
        now[0] = 1.0
        health.failed("frontier exchange", "Connection refused")  # the same outage
        for t in (1.5, 3.0, 6.0):
            now[0] = t
            health.answered("frontier exchange")
        now[0] = 6.6
        health.answered("frontier exchange")  # 5.1 s calm since 1.5 s
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert lines[1] == "Redis c answers again after 2 s (2 failed exchanges); resuming"
    assert health.outages == 1


def test_the_cluster_waits_for_replicas_only_where_one_is_connected(
        cluster, tmp_path: Path) -> None:
    """``WAIT 1`` on a primary without a replica waits its whole time and protects nothing:
    with replicas every written primary is waited on, without them none is."""
    from crawler_ext.distributed.cluster import ClusterClient

    def waits(server: Any) -> int:
        total = 0
        for port in server.primary_ports():
            stats = redis_lib.Redis(port=port).info("commandstats")
            total += int(stats.get("cmdstat_wait", {}).get("calls", 0))
        return total

    def write_everywhere(server: Any) -> None:
        client = ClusterClient(host="127.0.0.1", port=server.primary_ports()[0])
        pipe = client.pipeline()
        for i in range(30):  # keys on every primary
            pipe.set(f"wait-test-{i}", "1")
        pipe.execute()
        client.close()

    before = waits(cluster)
    write_everywhere(cluster)
    assert waits(cluster) - before == 3  # one WAIT per primary written
    with RedisClusterServer(tmp_path / "bare", replicas=0) as bare:
        write_everywhere(bare)
        assert waits(bare) == 0


def _cluster_frontier(cluster) -> tuple[Any, RedisFrontier, dict[str, float]]:
    """A worker over the (flushed) cluster, no delays; its client and the stats it counts."""
    client = cluster_client(cluster.url)
    client.flushall()
    stats: dict[str, float] = {}
    frontier = RedisFrontier(client, ShardLayout("t", shards=4),
                             PolitenessPolicy(min_delay=0.0, max_delay=0.0),
                             [5, 2, 1], RedisBloom(client, "t", 10_000), buffer=8,
                             on_stat=lambda k, v: stats.update({k: stats.get(k, 0) + v}))
    frontier.open()
    return client, frontier, stats


def _replica_processes(cluster) -> list[subprocess.Popen]:
    return [proc for port, proc in cluster.procs.items() if port not in cluster.primary_ports()]


def test_completions_wait_until_a_replica_holds_the_pushes(cluster) -> None:
    """A primary answers, its replica has not the writes (stalled): a failover now would lose
    the pushed links, so the pages they came from are not completed, nor the links' claims
    ended, until a later WAIT finds the writes on a replica."""
    client, frontier, stats = _cluster_frontier(cluster)
    frontier.add([_entry("h1", 1)])
    page = _exchange(frontier)[0]
    assert frontier.next(time.time()) is page
    frontier.done(page, Outcome(200, 0.01), time.time())
    frontier.complete([page.id])
    frontier.add([_entry(f"h{n}", 2) for n in range(2, 12)])  # the page's links, every shard
    replicas = _replica_processes(cluster)
    for proc in replicas:
        proc.send_signal(signal.SIGSTOP)
    try:
        _exchange(frontier)
        held = stats.get("frontier/redis/held_for_replicas", 0)
        entries = sum(int(client.hlen(f"{tag}:e")) for tag in frontier.tags)
        claims_open = frontier.claims.unconfirmed()
    finally:
        for proc in replicas:
            proc.send_signal(signal.SIGCONT)
    assert held == 1 and entries == 11 and claims_open == 10  # the page is still there
    cluster.wait_ok()
    _exchange(frontier)
    assert sum(int(client.hlen(f"{tag}:e")) for tag in frontier.tags) == 10
    assert frontier.claims.unconfirmed() == 0 and stats["frontier/redis/held_for_replicas"] == 1
    client.flushall()
    client.close()


def test_a_lease_is_not_fetched_until_a_replica_holds_it(cluster) -> None:
    """Leased while its shard's replica lags: a failover now would lose the lease and the
    host's next allowed time, and another worker would take the host from the promoted
    replica at once while this one fetches from it -- so the entry waits (not let go) until a
    later exchange's WAIT finds the replica caught up."""
    client, frontier, stats = _cluster_frontier(cluster)
    replicas = _replica_processes(cluster)
    frontier.add([_entry(f"h{n}", 1) for n in range(1, 9)])  # every shard
    for proc in replicas:
        proc.send_signal(signal.SIGSTOP)
    try:
        leased = _exchange(frontier)  # pushed and leased, nothing replicated
        during = frontier.next(time.time())
    finally:
        for proc in replicas:
            proc.send_signal(signal.SIGCONT)
    assert len(leased) == 8 and during is None
    assert stats["frontier/redis/fetches_held_for_replicas"] >= 8
    cluster.wait_ok()
    _exchange(frontier)
    time.sleep(0.1)
    after = [frontier.next(time.time()) for _ in range(8)]
    assert sorted(e.key for e in after if e is not None) == sorted(e.key for e in leased)
    client.flushall()
    client.close()


def test_a_primary_behind_its_replica_is_reported_whatever_connection_the_pool_gives(
        cluster) -> None:
    """``WAIT`` counts the writes made before the last command of the connection it goes
    on, and other threads (the shared content index's log) take connections from the same
    pool: here the ``WAIT`` gets one idle since before the write, and with the replica
    stalled it answered 1 at once.  The lag must be reported whatever connection the pool
    hands out, and end when a replica has the writes."""
    client = cluster_client(cluster.url)
    node = client.get_node_from_key("lag-test")
    pool = client.get_redis_connection(node).connection_pool
    assert client.replicas_connected(node) == 1  # (asked now: not again for 10 s)

    def rotate() -> None:  # the connection used last goes under another one
        first, second = pool.get_connection(), pool.get_connection()
        pool.release(first)
        pool.release(second)

    rotate()  # two connections, both idle
    replica = cluster.procs[cluster.replica_of(int(node.name.rsplit(":", 1)[1]))]
    replica.send_signal(signal.SIGSTOP)
    try:
        pipe = client.pipeline()
        pipe.set("lag-test", "1")
        rotate()  # (another thread's turn with the pool)
        pipe.execute()
        lagging = pipe.lagging
        rotate()
        again = client.pipeline()
        again.execute()  # nothing written: the lagging node is asked again
        still = again.lagging
    finally:
        replica.send_signal(signal.SIGCONT)
    assert lagging == [node.name] and still == [node.name]
    cluster.wait_ok()
    caught_up = client.pipeline()
    caught_up.execute()
    assert caught_up.lagging == []
    client.delete("lag-test")
    client.close()


@pytest.mark.slow
def test_a_cluster_primary_killed_mid_crawl_fails_over_without_losing_a_url(
        testweb_factory, tmp_path: Path) -> None:
    """kill -9 of a Redis Cluster primary during a 3-worker crawl: its replica takes over, the
    workers log the outage once and retry; every page is fetched, politely, and a page is
    fetched twice only where a lease was in flight."""
    if not cluster_available():
        pytest.skip("redis-server/redis-cli not installed")
    web = testweb_factory(hosts=30, pages=12, hazards=False)
    with RedisClusterServer(tmp_path / "cluster") as server:
        target = Target(cluster_client(server.url), server.url, True, server)
        pushed = subprocess.run(
            [sys.executable, "-m", "crawler_ext.distributed", *target.cli(), "push-seeds",
             str(web.seeds_path)], capture_output=True, text=True, cwd=ROOT)
        assert pushed.returncode == 0, pushed.stderr
        workers = [_worker(web, tmp_path, n, target=target) for n in range(3)]
        try:
            expected = len(web.truth()["pages"])
            deadline = time.time() + 120
            while len(read_log(web.log_path)) < expected // 3 and time.time() < deadline:
                time.sleep(0.05)
            killed = server.kill_primary()
            killed_at = time.time()
            _wait_all(workers, tmp_path, timeout=240)
        finally:
            _kill_all(workers)
        assert killed not in server.alive()
        server.wait_ok()  # the replica serves the dead primary's slots
    log = read_log(web.log_path)
    fetched = Counter((e.host, e.path) for e in log)
    pages = _truth_pages(web)
    assert pages <= set(fetched), sorted(pages - set(fetched))[:10]
    assert any(e.start > killed_at + 1 for e in log)  # the crawl went on after the failover
    assert politeness_violations(log, 0.5) == []
    stats = [json.loads((tmp_path / f"stats{n}.json").read_text()) for n in range(3)]
    explained = {name: sum(s.get(name, 0) for s in stats) for name in TWICE_EXPLAINED_BY}
    twice = {k: v for k, v in fetched.items() if v > 1 and k[1] != "/robots.txt"}
    assert len(twice) <= sum(explained.values()), (twice, explained)
    for n in range(3):
        text = (tmp_path / f"worker{n}.log").read_text()
        assert text.count("is unreachable") <= 1, text[-3000:]
