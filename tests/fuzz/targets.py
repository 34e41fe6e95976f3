"""Fuzz targets: each takes bytes and checks a property of the pack's code on them; anything
it raises is a finding.  ``python -m tests.fuzz.run <target>`` runs one under atheris
(coverage-guided) from its seed corpus in ``tests/fuzz/corpus/<target>/``; every file there and
in ``tests/fuzz/regressions/<target>/`` (the inputs that once crashed) is replayed by
``tests/test_fuzz.py`` on every run.

* ``urls``: canonicalisation refuses with InvalidURL or gives a URL that canonicalises to
  itself, with one 64-bit fingerprint.
* ``links``: the reference spider's ``parse`` on a hostile HTML body never raises, and every
  link it follows is an absolute http(s) URL.
* ``robots``: any robots.txt body is parsed, and every URL of the origin gets a decision.
* ``sitemaps``: any sitemap body (gzip too) is read without raising.
* ``warc``: a WARC file torn at any point, with any bytes after the tear, is recovered: the
  complete records before the tear are kept and the file reads back whole.
* ``codec``: the frontier's records (a disk entry, a link's compact form) decode to what was
  encoded.
"""

from __future__ import annotations

import gzip
import io
import struct
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["TARGETS"]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def fuzz_urls(data: bytes) -> None:
    from crawler_ext.admission.urls import InvalidURL, canonicalize, fingerprint

    url = _text(data)
    for options in ({}, {"strip_session": True, "sort_query": True}):
        try:
            canonical = canonicalize(url, **options)
        except InvalidURL:
            continue
        again = canonicalize(canonical, **options)
        assert again == canonical, (url, canonical, again)
        fp = fingerprint(canonical)
        assert 0 <= fp < 2 ** 64 and fp == fingerprint(again)


_SPIDER: list[Any] = []


def _spider() -> Any:
    if not _SPIDER:
        from scrapy.utils.test import get_crawler

        from spiders.web import WebSpider

        crawler = get_crawler(WebSpider, {"CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8"})
        crawler.stats.open_spider()
        _SPIDER.append(WebSpider.from_crawler(crawler, seeds="http://fuzz.test/"))
    return _SPIDER[0]


def fuzz_links(data: bytes) -> None:
    from scrapy import Request
    from scrapy.http import HtmlResponse

    request = Request("http://fuzz.test/a/b.html")
    response = HtmlResponse(request.url, body=data, request=request,
                            headers={"Content-Type": "text/html"})
    for out in _spider().parse(response):
        if isinstance(out, Request):
            assert out.url.startswith(("http://", "https://")), out.url


def fuzz_robots(data: bytes) -> None:
    from crawler_ext.hosts.robots import Decision, RobotsCache

    cache = RobotsCache(agent="crawler_ext")
    state = cache.fetched("http://fuzz.test", 200, data, 0.0)
    assert state.crawl_delay is None or state.crawl_delay == state.crawl_delay  # (not NaN)
    for path in ("/", "/a/b?c=d", "/%E2%82%AC", "/" + _text(data[:40]).replace("\n", "")):
        decision, _ = cache.decide("http://fuzz.test" + path, 1.0)
        assert decision in (Decision.FETCH, Decision.DISALLOWED), decision


class _Signals:
    def send_catch_log(self, *args: Any, **kwargs: Any) -> None:
        pass


def fuzz_sitemaps(data: bytes) -> None:
    from scrapy.utils.test import get_crawler

    from crawler_ext.recrawl.sitemaps import SitemapMiddleware

    crawler = get_crawler(settings_dict={"CRAWLER_EXT_SITEMAPS_ENABLED": True})
    crawler.stats.open_spider()
    queued: list[Any] = []
    crawler.engine = type("Engine", (), {"crawl": staticmethod(queued.append)})()
    middleware = SitemapMiddleware.from_crawler(crawler)
    middleware._request = lambda url, depth: queued.append(url)  # (no engine to send it to)
    for body in (data, gzip.compress(data)):
        middleware._read("http://fuzz.test/sitemap.xml", body, 0)


def _warc_bytes(records: int) -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True)
    for i in range(records):
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(
            f"http://fuzz.test/{i}", "response", payload=io.BytesIO(b"<p>%d</p>" % i),
            http_headers=headers))
    return out.getvalue()


_WARC: list[bytes] = []


def fuzz_warc(data: bytes) -> None:
    from warcio.archiveiterator import ArchiveIterator

    from crawler_ext.warc.writer import recover

    if not _WARC:
        _WARC.append(_warc_bytes(4))
    whole = _WARC[0]
    cut = struct.unpack(">H", data[:2].ljust(2, b"\0"))[0] * len(whole) // 65536
    torn = whole[:cut] + data[2:]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.warc.gz.open"
        path.write_bytes(torn)
        closed = recover(Path(tmp))
        assert len(closed) == 1
        with open(closed[0], "rb") as fh:
            uris = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh)]
    kept = whole[:cut]
    with io.BytesIO(kept) as fh:
        try:
            before = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh)]
        except Exception:  # noqa: BLE001 - the torn record itself
            before = None
    if before is not None:
        assert uris[:len(before) - 1] == before[:len(before) - 1], (uris, before)


def fuzz_codec(data: bytes) -> None:
    from crawler_ext.frontier.diskformat import entry_of as _entry, entry_value as _value
    from crawler_ext.frontier.storage import Entry

    if len(data) < 20:
        return
    fp, priority = struct.unpack_from(">Qi", data)
    band, refresh = data[12] % 64, bool(data[13] & 1)
    n = data[14] % 40
    key = _text(data[15:15 + n])
    payload = data[15 + n:]
    entry = Entry(key, band, payload, fp, 7, priority, refresh)
    back = _entry(7, _value(entry))
    assert (back.key, back.band, back.data, back.fp, back.priority, back.refresh) == \
        (entry.key, entry.band, entry.data, entry.fp, entry.priority, entry.refresh)
    from scrapy import Request

    from crawler_ext.frontier.adapter.codec import decode_request, encode_plain

    url = "http://fuzz.test/" + payload.hex()[:60]
    request = Request(url, meta={"depth": band})
    decoded = decode_request(encode_plain(request, referer=key.encode("utf-8", "replace")[:0]),
                             None)
    assert decoded.url == request.url and decoded.meta.get("depth", 0) == band


TARGETS = {"urls": fuzz_urls, "links": fuzz_links, "robots": fuzz_robots,
           "sitemaps": fuzz_sitemaps, "warc": fuzz_warc, "codec": fuzz_codec}
