"""The reference spider: follow links from seeds, one item per fetched page.

    scrapy crawl web -a seeds=URL[,URL...]|PATH [-a allowed_domains=HOST[,HOST...]] [-a max_pages=N]
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.utils.response import get_base_url

from crawler_ext import config
from crawler_ext.frontier.knownlinks import KnownLinkFilter
from crawler_ext.hosts.directives import page_directives
from crawler_ext.processors.links import extract_links, is_safe_url
from crawler_ext.processors.middleware import PROCESSED_META

__all__ = ["WebSpider", "extract_links", "parse_arguments"]


#: Scrapy's documented ``verbatim_url``: the request keeps its URL as given (3x faster to build)
_VERBATIM = {"verbatim_url": True}


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def parse_arguments(
    seeds: str | None = None, allowed_domains: str | None = None,
    max_pages: str | int | None = None, require_seeds: bool = True, **_other: Any,
) -> tuple[list[str], list[str], int]:
    """Validate the spider's arguments; raise ValueError with a one-line message.  Seeds may
    be left out in a distributed crawl (``require_seeds`` False): they come from Redis."""
    if not seeds and require_seeds:
        raise ValueError("missing seeds: pass -a seeds=URL[,URL...] or -a seeds=PATH "
                         "(or push them to Redis for a distributed crawl)")
    if not seeds:
        urls: list[str] = []
    elif "://" not in seeds:  # a path (URLs always carry a scheme)
        path = Path(seeds)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ValueError(f"cannot read seeds file {seeds!r}: {exc.strerror}") from None
        urls = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
        if not urls:
            raise ValueError(f"seeds file {seeds!r} holds no URL")
    else:
        urls = _split(seeds)
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ValueError(f"seed {url!r} is not an http(s) URL")
    domains = _split(allowed_domains)
    for domain in domains:
        if "/" in domain or " " in domain:
            raise ValueError(f"allowed domain {domain!r} must be a host name or IP address")
    limit = 0
    if max_pages not in (None, ""):
        try:
            limit = int(max_pages)  # type: ignore[arg-type]
        except ValueError:
            raise ValueError(f"max_pages must be a whole number, got {max_pages!r}") from None
        if limit < 0:
            raise ValueError(f"max_pages must be >= 0, got {limit}")
    return urls, domains, limit


def _hrefs(anchors: Any, unreadable: list[str]) -> Iterator[str]:
    """The href of each anchor not marked nofollow; an anchor whose attributes lxml cannot
    read (control characters in a broken tag: found by fuzzing) is noted in ``unreadable``."""
    for anchor in anchors:
        try:
            attrib = anchor.attrib
            href, rel = attrib["href"], attrib.get("rel") or ""
        except ValueError:
            unreadable.append("unreadable")
            continue
        if "nofollow" not in rel.lower().split():
            yield href


def distributed(settings: Any) -> bool:
    """A distributed crawl (the Redis frontier): seeds may come from Redis instead."""
    return config.get(settings, "CRAWLER_EXT_FRONTIER_BACKEND") == "redis"


class WebSpider(scrapy.Spider):
    name = "web"

    def __init__(self, seeds: str | None = None, allowed_domains: str | None = None,
                 max_pages: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # one bound method for every request: Scrapy checks a callback's source for a
        # generator's return value, cached per callback object (weakly), and a new bound
        # method per request had it read and parse the source again (1.1 ms) whenever the
        # one it had cached was freed
        self._callback = self.parse
        self.known_links: KnownLinkFilter | None = None  # (from_crawler sets it)
        # seeds are checked in from_crawler, where the settings say whether Redis feeds them
        self.seeds, domains, self.max_pages = parse_arguments(seeds, allowed_domains, max_pages,
                                                              require_seeds=False)
        if domains:
            self.allowed_domains = domains

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> WebSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if not spider.seeds and not distributed(crawler.settings):
            parse_arguments(None)  # raises: missing seeds
        if spider.max_pages:
            crawler.settings.set("CLOSESPIDER_PAGECOUNT", spider.max_pages, priority="spider")
        # links the frontier knows (most of a page's: its site's navigation) are refused
        # before a request is made for them: each cost a request and the spider middlewares'
        # chain (on the broad web, 11 % of the crawl process's CPU a page: docs/broad.md)
        spider.known_links = KnownLinkFilter(crawler)
        return spider

    async def start(self) -> AsyncIterator[scrapy.Request]:
        # each seed let go once its request is out: a broad crawl's seed list (a URL a host)
        # is not held for the whole crawl
        seeds, self.seeds = self.seeds[::-1], []
        while seeds:
            yield scrapy.Request(seeds.pop(), callback=self._callback, dont_filter=False)

    def parse(self, response: Response) -> Iterator[Any]:
        processed = response.meta.get(PROCESSED_META)  # the content processors' answer
        found = processed.metadata.get("directives") if processed is not None else None
        directives = page_directives(response, found=found)
        links: list[str] = []
        if processed is not None and not processed.refused:
            if not directives.nofollow:
                links = [link.url for link in processed.links]
            for reason, count in (processed.metadata.get("links_invalid") or {}).items():
                self.crawler.stats.inc_value(f"spider/links_invalid/{reason}", count)
        elif isinstance(response, TextResponse) and not directives.nofollow:
            try:
                base = get_base_url(response)
                anchors = response.xpath("//a[@href]")
            except ValueError:  # an unparseable page: no links, the item still goes out
                base, anchors = response.url, []
            unreadable: list[str] = []
            links, invalid = extract_links(base, _hrefs(anchors, unreadable))
            invalid += unreadable
            for reason in invalid:
                self.crawler.stats.inc_value(f"spider/links_invalid/{reason}")
        request = response.request
        if directives.noindex and not config.get(self.settings, "CRAWLER_EXT_NOINDEX_STORE"):
            self.crawler.stats.inc_value("directives/noindex_not_stored")
        else:
            yield self._item(response, request, directives, links)
        callback = self._callback
        known = self.known_links.for_page(response) if links and self.known_links else None
        for url in links:
            if is_safe_url(url):  # already as Scrapy would make it: not parsed again
                if known is not None and known(url):
                    continue  # (refused, counted and credited to this page)
                request = scrapy.Request(url, callback=callback, meta=_VERBATIM)
                del request.meta["verbatim_url"]  # (a redirect's Location is still made safe)
                yield request
                continue
            try:
                yield scrapy.Request(url, callback=callback)
            except ValueError:
                self.crawler.stats.inc_value("spider/links_invalid/bad_url")

    def _item(self, response: Response, request: Any, directives: Any,
              links: list[str]) -> dict[str, Any]:
        processed = response.meta.get(PROCESSED_META)
        return {
            "url": request.meta.get("redirect_urls", [request.url])[0] if request else response.url,
            "final_url": response.url,
            "status": response.status,
            "fetched_at": time.time(),
            "fetch_time": response.meta.get("download_latency"),
            "ip_address": str(response.ip_address) if response.ip_address else None,
            "headers": {k.decode("latin-1"): [v.decode("latin-1") for v in vs]
                        for k, vs in response.headers.items()},
            "content_type": response.headers.get("Content-Type", b"").decode("latin-1"),
            "depth": response.meta.get("depth", 0),
            "outlinks": len(links),
            "links": links,
            "noindex": directives.noindex,
            "nofollow": directives.nofollow,
            "canonical": directives.canonical,
            "dedup": response.meta.get("dedup"),
            "content_kind": processed.content_kind if processed is not None else None,
            "processor": processed.processor if processed is not None else None,
            "text_length": processed.text_length if processed is not None else None,
            "relevance": response.meta.get("relevance"),  # a focused crawl's page relevance
            "render": response.meta.get("render"),  # the app-shell verdict, when judged
        }
