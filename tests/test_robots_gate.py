"""The robots.txt gate (``crawler_ext.frontier.adapter.robotsgate``), in process, without a crawl."""

from __future__ import annotations

import logging
import time
from collections import Counter
from types import SimpleNamespace

import pytest

from crawler_ext.frontier import Frontier, MemoryStore, PolitenessPolicy
from crawler_ext.frontier.adapter.robotsgate import ROBOTS_META, ROBOTS_PRIORITY, RobotsGate
from crawler_ext.frontier.core import DROP
from crawler_ext.frontier.storage import Entry
from crawler_ext.hosts.robots import RobotsCache

ROBOTS = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\nSitemap: http://h.test/s.xml\n"


def make() -> tuple[RobotsGate, Frontier, Counter, list]:
    frontier = Frontier(MemoryStore(3), PolitenessPolicy(), [5, 2, 1])
    counts: Counter = Counter()
    sitemaps: list = []
    gate = RobotsGate(RobotsCache(agent="crawler_ext", retry_base=1.0), frontier,
                      key_of=lambda host: f"key:{host}",
                      inc=lambda name, n: counts.update({name: n}),
                      on_sitemaps=lambda origin, urls: sitemaps.append((origin, urls)))
    return gate, frontier, counts, sitemaps


def test_robots_txt_first_then_its_rules_and_crawl_delay() -> None:
    gate, frontier, counts, sitemaps = make()
    now = time.time()
    page = Entry("key:h.test", 1, b"")
    first = gate.check(page, "http://h.test/a", now)
    assert isinstance(first, Entry) and first.data == b"Rhttp://h.test" and first.key == page.key
    waiting = gate.check(page, "http://h.test/b", now)  # robots.txt is on its way: wait
    assert isinstance(waiting, float) and waiting > now
    request = gate.request("http://h.test", None, None)
    assert request.url == "http://h.test/robots.txt" and request.priority == ROBOTS_PRIORITY
    assert request.meta[ROBOTS_META] == "http://h.test" and request.dont_filter
    gate.answered(request, 200, ROBOTS)
    assert gate.check(page, "http://h.test/a", now) is page
    assert gate.check(page, "http://h.test/private/x", now) == DROP
    assert counts["robots/disallowed"] == 1 and counts["robots/status/200"] == 1
    assert frontier.store.host("key:h.test").crawl_delay == 2.0
    assert sitemaps == [("http://h.test", ["http://h.test/s.xml"])]
    assert gate.check(page, "data:,x", now) is page  # no robots.txt for other schemes


def test_a_redirect_is_followed_and_an_unfollowed_one_means_unavailable() -> None:
    gate, frontier, counts, _ = make()
    request = gate.request("http://h.test", None, None)
    gate.answered(request, 301, b"")  # RedirectMiddleware follows it: nothing decided
    assert not counts
    hop = request.replace(url="http://other.test/robots.txt")
    entry = gate.redirected(hop, "other.test")
    assert entry.key == "key:other.test" and entry.priority == ROBOTS_PRIORITY
    assert gate.hop(entry) is hop and gate.take_hop(entry) is hop and gate.hop(entry) is None
    # more redirects than REDIRECT_MAX_TIMES end in the errback: robots.txt unavailable
    gate.failed(SimpleNamespace(request=request, getErrorMessage=lambda: "max redirections"), 301)
    assert counts["robots/status/301"] == 1
    page = Entry("key:h.test", 1, b"")
    assert gate.check(page, "http://h.test/private/x", time.time()) is page  # allow all


def test_only_a_fetch_without_an_answer_is_reported_as_a_failure(caplog) -> None:
    gate, _, _, _ = make()
    request = gate.request("http://h.test", None, None)
    failure = SimpleNamespace(request=request, getErrorMessage=lambda: "Ignoring non-200 response")
    with caplog.at_level(logging.WARNING, logger="crawler_ext.frontier.adapter.robotsgate"):
        gate.failed(failure, 404)  # HttpErrorMiddleware's errback: the 404 is an answer
        assert caplog.text == ""
        refused = SimpleNamespace(request=request, getErrorMessage=lambda: "Connection refused")
        gate.failed(refused, None)
        gate.failed(refused, None)
    assert caplog.text.count("could not be fetched: Connection refused") == 1


def test_politeness_keys_by_host_and_by_address(monkeypatch: pytest.MonkeyPatch) -> None:
    from crawler_ext.frontier.adapter import keys
    from crawler_ext.frontier.adapter.keys import PolitenessKeys
    from crawler_ext.frontier.keys import politeness_key

    # no reactor here, whichever test of this process installed one before
    monkeypatch.setattr(keys, "is_reactor_installed", lambda: False)

    assert politeness_key("http://Example.COM:8080/a") == "example.com"
    assert politeness_key("http://[::1/") == ""  # an invalid URL has no key of its own
    resolved: list = []
    by_host = PolitenessKeys(by_ip=False, prefetch=False)
    assert by_host.key("a.test", "item", resolved.extend) == "a.test" and not by_host.waiting()
    by_ip = PolitenessKeys(by_ip=True, prefetch=False)
    # an address literal is its own address at once; the URL is admitted right away
    assert by_ip.key("127.0.0.1", "first", resolved.extend) is None and resolved == ["first"]
    assert by_ip.key("127.0.0.1", "second", resolved.extend) == "ip:127.0.0.1"
    assert by_ip.key("[::1]", "v6", resolved.extend) is None and by_ip.known("[::1]") == "ip:::1"
    # a name waits for its address (here: no reactor, so the name stays its own key)
    resolved.clear()
    assert by_ip.key("b.test", "third", resolved.extend) is None
    assert resolved == ["third"] and by_ip.known("b.test") == "b.test"
    assert by_ip.known("never.test") == "never.test" and not by_ip.waiting()
