"""The twisted.names caching resolver against a real DNS server on loopback (the test web's)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT, run_crawl

from crawler_ext import config
from crawler_ext.hosts.dns import DnsCache, read_hosts_file
from testweb import read_log

# Runs in a subprocess: the test web's DNS server and the resolver share one reactor.
SCRIPT = textwrap.dedent("""
    import json, sys, time
    from twisted.internet import defer, reactor, task
    from crawler_ext.hosts.dns import CachingResolver, DnsCache
    from crawler_ext.hosts.guard import NetworkGuard
    from testweb.dns import listen_dns

    log = open(sys.argv[1], "a")
    port = listen_dns("web.test", 10, ttl=int(sys.argv[2]), log=log)
    resolver = CachingResolver(reactor, servers=[("127.0.0.1", port)], timeout=5,
                               cache=DnsCache(10_000, float(sys.argv[3]), float(sys.argv[4])),
                               hosts_file=None, guard=NetworkGuard(json.loads(sys.argv[5])))
    steps = json.loads(sys.argv[6])  # [name, seconds to wait before] ...
    answers = []

    @defer.inlineCallbacks
    def run():
        for name, wait in steps:
            if wait:
                yield task.deferLater(reactor, wait, lambda: None)
            if name == "*parallel*":  # ten concurrent look-ups of one new name
                got = yield defer.gatherResults(
                    [resolver.getHostByName("h0007.web.test") for _ in range(10)])
                answers.append(sorted(set(got)))
                continue
            try:
                answers.append((yield resolver.getHostByName(name)))
            except Exception as exc:
                answers.append("error: " + str(exc))
        print(json.dumps(answers))
        reactor.stop()

    reactor.callWhenRunning(run)
    reactor.run()
""")


def resolve(tmp_path: Path, steps: list, ttl: int = 1, min_ttl: float = 0,
            negative_ttl: float = 1, allowed: tuple = ("127.0.0.0/8",)) -> tuple[list, Counter]:
    log = tmp_path / "dns.jsonl"
    log.write_text("")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log), str(ttl), str(min_ttl), str(negative_ttl),
         json.dumps(list(allowed)), json.dumps(steps)],
        capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    queries = Counter((q["name"], q["type"]) for q in map(json.loads, log.read_text().splitlines()))
    return json.loads(proc.stdout), queries


def test_answers_are_cached_for_their_ttl_then_asked_again(tmp_path: Path) -> None:
    answers, queries = resolve(tmp_path, [["h0001.web.test", 0], ["h0001.web.test", 0.2],
                                          ["h0001.web.test", 1.3]], ttl=1, min_ttl=0)
    assert answers == ["127.0.0.1"] * 3
    assert queries[("h0001.web.test", "A")] == 2  # cached for 1 s, then asked again


def test_ttl_floor_keeps_short_lived_answers(tmp_path: Path) -> None:
    _, queries = resolve(tmp_path, [["h0001.web.test", 0], ["h0001.web.test", 1.3]],
                         ttl=1, min_ttl=30)
    assert queries[("h0001.web.test", "A")] == 1


def test_negative_answers_are_cached_for_a_while(tmp_path: Path) -> None:
    answers, queries = resolve(tmp_path, [["nx.web.test", 0], ["nx.web.test", 0.1],
                                          ["nx.web.test", 1.2]], negative_ttl=1)
    assert all(a.startswith("error:") and "no such host" in a for a in answers)
    # NXDOMAIN is final for the A look-up (no AAAA retry), cached 1 s, then asked again
    assert queries[("nx.web.test", "A")] == 2
    assert queries[("nx.web.test", "AAAA")] == 0


def test_cnames_are_followed_and_concurrent_lookups_coalesce(tmp_path: Path) -> None:
    answers, queries = resolve(tmp_path, [["alias.h0002.web.test", 0], ["*parallel*", 0]])
    assert answers == ["127.0.0.1", ["127.0.0.1"]]
    assert queries[("h0007.web.test", "A")] == 1  # ten callers, one query


def test_private_answers_are_refused_by_the_guard(tmp_path: Path) -> None:
    answers, _ = resolve(tmp_path, [["h0001.web.test", 0]], allowed=())
    assert answers[0].startswith("error:") and "private or reserved" in answers[0]


def test_cache_is_bounded_and_expires() -> None:
    now = [100.0]
    cache = DnsCache(2, min_ttl=10, negative_ttl=5, clock=lambda: now[0])
    assert cache.put("a", "1.1.1.1", ttl=3) == 10  # the floor
    assert cache.put("b", None) == 5
    cache.put("c", "3.3.3.3", ttl=60)
    assert len(cache) == 2 and cache.get("a") == (False, None)  # least recently used went
    assert cache.get("b") == (True, None)  # a cached negative answer
    now[0] += 6
    assert cache.get("b") == (False, None) and cache.get("c") == (True, "3.3.3.3")


def test_server_list_and_hosts_file_parsing(tmp_path: Path) -> None:
    def parse_servers(servers: list[str]) -> list[tuple[str, int]]:
        return config.get({"CRAWLER_EXT_DNS_SERVERS": servers}, "CRAWLER_EXT_DNS_SERVERS")

    assert parse_servers(["127.0.0.1:5353", "::1", "[::1]:54", "10.0.0.1"]) == [
        ("127.0.0.1", 5353), ("::1", 53), ("::1", 54), ("10.0.0.1", 53)]
    with pytest.raises(config.ConfigError, match="CRAWLER_EXT_DNS_SERVERS"):
        parse_servers(["dns.example"])
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost Box.local # me\n# comment\nbad line\n::1 localhost\n")
    assert read_hosts_file(hosts) == {"localhost": "127.0.0.1", "box.local": "127.0.0.1"}


@pytest.mark.slow
def test_crawl_resolves_through_the_dns_server_once_per_host(testweb_factory,
                                                             tmp_path: Path) -> None:
    # no hosts override: every name comes from the test web's DNS server, whose TTL (1 s) is
    # far shorter than the crawl; the 5-minute floor keeps each answer for the whole crawl
    web = testweb_factory(hosts=6, pages=4, hazards=False, dns_ttl=1)
    missing = f"http://h0099.web.test:{web.port}"
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(web.seeds_path.read_text() + f"{missing}/\n{missing}/a.html\n")
    result = run_crawl("-a", f"seeds={seeds}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_DNS_SERVERS": f"127.0.0.1:{web.dns_port}",
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 1.0,
                                 "CRAWLER_EXT_POLITENESS_MAX_DELAY": 1.0,
                                 "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 2, "RETRY_TIMES": 2})
    assert result.returncode == 0, result.output[-3000:]
    log = read_log(web.log_path)
    fetched_hosts = {e.host for e in log}
    assert fetched_hosts == {f"h{i:04d}.web.test" for i in range(6)}
    assert log[-1].start - log[0].start > 3  # the crawl outlived the TTL several times
    queries = Counter((q["name"], q["type"]) for q in web.dns_log())
    for host in fetched_hosts:
        assert queries[(host, "A")] == 1, queries
    # the missing host: one NXDOMAIN answer, remembered for its two URLs and their retries
    assert queries[("h0099.web.test", "A")] == 1
    assert result.stat("dns/nxdomain") == 1
    assert result.stat("dns/negative_hits") >= 1
    assert result.stat("dns/prefetched") == 7  # every host resolved at its first admission
    # (HTTP connections are kept alive, so a look-up is only needed per new connection)
    assert result.stat("dns/cache_hits") >= 1
