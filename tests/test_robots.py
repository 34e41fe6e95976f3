"""RobotsCache: RFC 9309 decisions per origin (pure logic; crawls are in test_crawl_robots)."""

from __future__ import annotations

from crawler_ext.hosts.robots import Decision, RobotsCache

ROBOTS = b"""User-agent: crawler_ext
Disallow: /nocrawl/
Disallow: /*.pdf$
Crawl-delay: 2

User-agent: *
Disallow: /
Sitemap: http://e.com/sitemap.xml
"""


def test_most_specific_group_longest_match_and_crawl_delay() -> None:
    cache = RobotsCache(agent="crawler_ext")
    assert cache.decide("http://e.com/a", 0)[0] is Decision.NEED_ROBOTS
    cache.fetching("http://e.com", 0)
    assert cache.decide("http://e.com/a", 0.1)[0] is Decision.WAIT
    state = cache.fetched("http://e.com", 200, ROBOTS, 1.0)
    assert state.crawl_delay == 2.0 and state.sitemaps == ("http://e.com/sitemap.xml",)
    assert cache.decide("http://e.com/a", 2)[0] is Decision.FETCH  # "*" group does not apply
    assert cache.decide("http://e.com/nocrawl/x", 2)[0] is Decision.DISALLOWED
    assert cache.decide("http://e.com/doc.pdf", 2)[0] is Decision.DISALLOWED
    assert cache.decide("http://e.com/doc.pdf?x=1", 2)[0] is Decision.FETCH  # "$" anchors
    assert cache.decide("http://e.com:8080/a", 2)[0] is Decision.NEED_ROBOTS  # another origin


def test_origins_with_the_same_robots_txt_share_its_rules() -> None:
    cache = RobotsCache(agent="crawler_ext")
    a = cache.fetched("http://a.com", 200, ROBOTS, 1.0)
    b = cache.fetched("http://b.com", 200, ROBOTS, 1.0)
    c = cache.fetched("http://c.com", 200, ROBOTS + b"Disallow: /c/\n", 1.0)
    assert a.parser is b.parser and c.parser is not a.parser  # one parsed copy of one body
    for host in ("a", "b"):  # each still answered for its own URLs
        assert cache.decide(f"http://{host}.com/nocrawl/x", 2)[0] is Decision.DISALLOWED
        assert cache.decide(f"http://{host}.com/a", 2)[0] is Decision.FETCH
    assert cache.decide("http://c.com/c/x", 2)[0] is Decision.FETCH  # ("*" group: not ours)
    assert a.crawl_delay == b.crawl_delay == 2.0


def test_4xx_allows_all_5xx_disallows_then_retries_then_gives_up() -> None:
    cache = RobotsCache(retry_base=10, max_failures=2, ttl=100)
    cache.fetched("http://a.com", 404, b"", 0)
    assert cache.decide("http://a.com/x", 1)[0] is Decision.FETCH
    assert cache.decide("http://a.com/x", 101)[0] is Decision.NEED_ROBOTS  # expired: refetch
    cache.fetched("http://b.com", 503, b"", 0)
    assert cache.decide("http://b.com/x", 5) == (Decision.RETRY, 10)
    assert cache.decide("http://b.com/x", 10)[0] is Decision.NEED_ROBOTS
    cache.fetched("http://b.com", None, b"", 10)  # unreachable
    assert cache.decide("http://b.com/x", 11)[0] is Decision.GIVE_UP


def test_cache_is_capped_at_a_day_and_a_lost_answer_times_out() -> None:
    cache = RobotsCache(ttl=10 * 86400, fetch_timeout=60)
    assert cache.ttl == 86400
    cache.fetching("http://c.com", 0)
    assert cache.decide("http://c.com/x", 30)[0] is Decision.WAIT
    assert cache.decide("http://c.com/x", 61)[0] is Decision.FETCH  # treated as unavailable


def test_large_robots_txt_is_parsed_to_512_kib() -> None:
    body = b"User-agent: *\n" + b"Disallow: /filler\n" * 40_000 + b"Disallow: /late/\n"
    assert len(body) > 600 * 1024
    cache = RobotsCache()
    cache.fetched("http://d.com", 200, body, 0)
    assert cache.decide("http://d.com/filler", 1)[0] is Decision.DISALLOWED
    assert cache.decide("http://d.com/late/x", 1)[0] is Decision.FETCH  # past 512 KiB
