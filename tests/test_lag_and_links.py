"""The reactor-lag probe (pure logic, fake clock) and the reference spider's defensive link
extraction (property-based: no href or page makes it raise)."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from crawler_ext.admission import Admission
from crawler_ext.frontier.lag import LagProbe, ServerLatency
from spiders.web import extract_links


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lag_is_the_longest_recent_gap_between_ticks_and_is_subtracted() -> None:
    clock = FakeClock()
    probe = LagProbe(clock, interval=0.005, window=0.25)
    probe._last = clock.now
    for _ in range(60):  # an idle reactor: a tick every 5 ms
        clock.now += 0.005
        probe.tick()
    assert abs(probe.lag(clock.now) - 0.005) < 1e-9
    assert abs(probe.server_latency(0.009, clock.now) - 0.004) < 1e-9
    clock.now += 0.063  # the reactor was busy for 63 ms: responses waited up to that
    probe.tick()
    assert abs(probe.lag(clock.now) - 0.063) < 1e-9
    # a response measured at 66 ms while the reactor was blocked: the server took ~3 ms
    assert abs(probe.server_latency(0.066, clock.now) - 0.003) < 1e-9
    assert probe.server_latency(0.02, clock.now) == 0.0
    clock.now += 0.3  # the busy gap leaves the window; no tick ran for 300 ms: blocked now
    assert abs(probe.lag(clock.now) - 0.3) < 1e-9
    for _ in range(60):
        clock.now += 0.005
        probe.tick()
    assert abs(probe.lag(clock.now) - 0.005) < 1e-9


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 0.2), st.floats(0.0, 0.1)), max_size=80),
       st.floats(0.0, 0.5))
def test_lag_equals_the_longest_gap_in_the_window_for_any_ticks(steps, ahead) -> None:
    """The probe keeps only the gaps that can still be the longest: its answer is the plain
    maximum over every tick of the window, at any time after the last tick."""
    probe = LagProbe(FakeClock(), window=0.25)
    now, ticks = 100.0, []
    for step, gap in steps:
        now += step
        probe.record(now, gap)
        ticks.append((now, gap))
    at = now + ahead
    assert probe.lag(at) == max([g for t, g in ticks if t >= at - 0.25] + [0.0])


def test_server_latency_is_the_least_of_recent_samples_per_key() -> None:
    clock = FakeClock()
    probe = LagProbe(clock)
    latency = ServerLatency(probe, samples=3)
    assert latency.observe("a", 0.004, clock.now) == 0.004
    assert latency.observe("a", 0.090, clock.now) == 0.004  # one slow sample: our own queueing
    assert latency.observe("b", 0.200, clock.now) == 0.200  # keys are separate
    latency.observe("a", 0.3, clock.now)
    latency.observe("a", 0.3, clock.now)
    assert latency.observe("a", 0.3, clock.now) == 0.3  # a server that really slowed down


def test_bad_links_are_counted_and_the_rest_still_follow() -> None:
    hrefs = ["a.html", "http://[::1", "java\tscript:alert(2)", "mailto:x@y", "data:,x",
             "tel:1", "ftp://h/", "file:///etc/passwd", "http://e.com:99999/", "x" * 20000,
             "b.html#frag", "a.html", "  c.html  ", "//other.org/p", "#top", ""]
    links, invalid = extract_links("http://e.com/dir/page.html", hrefs)
    assert links == ["http://e.com/dir/a.html", "http://e.com/dir/b.html",
                     "http://e.com/dir/c.html", "http://other.org/p"]
    assert sorted(invalid) == sorted(["bad_url", "scheme", "scheme", "scheme", "scheme",
                                      "scheme", "scheme", "bad_url", "too_long"])


_URLISH = st.text(alphabet=string.printable + "\x00\x7f\u00e9\u2028\ud7ff[]%:@", max_size=80)


@settings(max_examples=400, deadline=None)
@given(base=st.sampled_from(["http://e.com/", "https://[::1]:8080/a/b?q=1", "http://xn--e-ufa.com/x/"]),
       hrefs=st.lists(st.one_of(_URLISH, st.builds(lambda s, t: s + t, st.sampled_from(
           ["http://", "https://[", "//", "javascript:", "http://e.com:", "?", "../../"]),
           _URLISH)), max_size=12))
def test_no_href_makes_link_extraction_or_admission_raise(base: str, hrefs: list[str]) -> None:
    links, invalid = extract_links(base, hrefs)
    assert len(links) + len(invalid) <= len(hrefs)
    admission = Admission()
    for url in links:
        admission.check(url, base)  # refuses with a reason, never raises


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_no_page_makes_the_spider_lose_its_item(html: str) -> None:
    from scrapy.http import HtmlResponse, Request

    from spiders.web import WebSpider

    class Stats:
        def __init__(self) -> None:
            self.values: dict[str, int] = {}

        def inc_value(self, key: str, count: int = 1) -> None:
            self.values[key] = self.values.get(key, 0) + count

    class Crawler:
        stats = Stats()

    spider = WebSpider(seeds="http://e.com/")
    spider.crawler = Crawler()  # type: ignore[assignment]
    spider.settings = {"CRAWLER_EXT_NOINDEX_STORE": True}  # type: ignore[assignment]
    url = "http://e.com/p.html"
    response = HtmlResponse(url, body=f"<html><body>{html}</body></html>".encode("utf-8",
                                                                               "surrogatepass"),
                            encoding="utf-8", request=Request(url))
    out = list(spider.parse(response))
    assert isinstance(out[0], dict) and out[0]["url"] == url


_URL_CHARS = string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/%?#[]|\\ \"<>^`{}\t\u00e9"
_HOSTS = ["a.com", "x-y.org", "127.0.0.1", "127.1", "0x7f.1", "xn--bcher-kva.ch", "A.com", "a.",
          "256.1.1.1", "01.2.3.4", "a" * 64 + ".com", "-a.com", "a.b.c9", "1a.b2", "a_b.c"]


@settings(max_examples=1500, deadline=None)
@given(st.sampled_from(["http", "https", "HTTP", "ftp"]), st.sampled_from(_HOSTS),
       st.sampled_from(["", ":80", ":443", ":8080", ":0", ":65536", ":08", ":1"]),
       st.text(_URL_CHARS + "/%2e.", max_size=16), st.sampled_from(["", "?", "#"]),
       st.text(_URL_CHARS, max_size=8))
def test_a_url_taken_verbatim_is_one_scrapy_would_leave_unchanged(
        scheme: str, host: str, port: str, path: str, sep: str, rest: str) -> None:
    """``is_safe_url`` lets the spider build a ``Request`` without Scrapy's quoting: it must
    never say yes to a URL that ``safe_url_string`` would change."""
    from w3lib.url import safe_url_string

    from crawler_ext.processors.links import is_safe_url

    url = f"{scheme}://{host}{port}/{path}{sep}{rest}"
    if is_safe_url(url):
        assert safe_url_string(url) == url


def test_the_common_shapes_of_a_link_are_taken_verbatim() -> None:
    from crawler_ext.processors.links import is_safe_url

    for url in ("http://a.com/", "https://docs.example.org/en/3.12/library/os.html",
                "http://127.0.0.1:8080/p/1?x=1&y=%20", "http://h1.broad.test/p/5",
                "http://a.com/x'y/(1)", "https://a.com:443/"):
        assert is_safe_url(url), url
    for url in ("http://A.com/", "http://a.com", "http://a.com/?", "http://a.com/a/../b",
                "http://a.com/x?q=a|b", "http://a.com/%zz", "http://u@a.com/", "http://a.com/é",
                "http://127.1/", "http://a.com:99999/", "http://a.com/x#f"):
        assert not is_safe_url(url), url


def test_the_spider_builds_a_link_request_as_scrapy_would_and_keeps_its_callback() -> None:
    """A safe link's request is built verbatim, an unsafe one quoted by Scrapy: the same
    URLs either way, no ``verbatim_url`` left in the meta, and one callback object for all
    (Scrapy's check of a callback's source is cached per object)."""
    from scrapy.http import HtmlResponse, Request

    from spiders.web import WebSpider

    spider = WebSpider(seeds="http://e.com/")
    spider.crawler = type("C", (), {"stats": None})()  # type: ignore[assignment]
    spider.settings = {"CRAWLER_EXT_NOINDEX_STORE": True}  # type: ignore[assignment]
    url = "http://e.com/p.html"
    body = b'<html><body><a href="/ok?a=1">a</a><a href="/a b">b</a><a href="/\xc3\xa9">c</a>'
    response = HtmlResponse(url, body=body, encoding="utf-8", request=Request(url))
    requests = [r for r in spider.parse(response) if isinstance(r, Request)]
    assert [r.url for r in requests] == ["http://e.com/ok?a=1", "http://e.com/a%20b",
                                         "http://e.com/%C3%A9"]
    assert all("verbatim_url" not in r.meta for r in requests)
    assert len({id(r.callback) for r in requests}) == 1
