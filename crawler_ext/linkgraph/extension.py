"""``LinkGraphExtension``: every fetched page's links as edges of the crawl's link graph.

    CRAWLER_EXT_LINKGRAPH_DIR = "graph"   # (empty: off)

For each document the content processors read with status 200 (every content kind: HTML,
PDF, feeds, text), one edge per link to ``edges``, the URLs of both ends to ``nodes`` and the
links per target host to ``hosts`` (the formats: ``files``).  URLs are canonicalised as the
frontier admits them (its learned parameters included), so a fingerprint here is the one the
seen set gives the URL.  Lines are batched on the reactor and written, compressed, by a
thread once a second; files rotate past ``CRAWLER_EXT_LINKGRAPH_MAX_SIZE`` bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from crawler_ext import config
from crawler_ext.admission.urls import InvalidURL, canonicalize, fingerprint_hex, host_of
from crawler_ext.linkgraph.files import GraphWriter
from crawler_ext.recent import RecentMap
from crawler_ext.signals import document_processed, frontier_opened

__all__ = ["LinkGraphExtension"]

logger = logging.getLogger(__name__)

def _anchor(text: str) -> str:
    return " ".join(text.split())[:200]


class LinkGraphExtension:
    def __init__(self, crawler: Any, writer: GraphWriter) -> None:
        self.crawler = crawler
        self.writer = writer
        self.canonical: Callable[[str], str] = canonicalize
        self._named = RecentMap(1_000_000)  # fingerprints whose node line went out lately
        self._batch: dict[str, list[str]] = {"edges": [], "nodes": [], "hosts": []}
        self._loop: Any = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> LinkGraphExtension:
        directory = config.get(crawler.settings, "CRAWLER_EXT_LINKGRAPH_DIR")
        if not directory:
            raise NotConfigured
        ext = cls(crawler, GraphWriter(directory,
                                       config.get(crawler.settings,
                                                  "CRAWLER_EXT_LINKGRAPH_MAX_SIZE")))
        crawler.signals.connect(ext.frontier_opened, signal=frontier_opened)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.document_processed, signal=document_processed)
        return ext

    def frontier_opened(self, canonical: Callable[[str], str] | None = None,
                        **_: Any) -> None:
        """The frontier's spelling of URLs (learned parameters dropped)."""
        if canonical is not None:
            self.canonical = canonical

    def spider_opened(self, spider: Any) -> None:
        self.writer.open()
        self._loop = task.LoopingCall(self.flush)
        self._loop.start(1.0, now=False)
        logger.info("Link graph: edges of every fetched page to %s", self.writer.directory)

    def spider_closed(self, spider: Any, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.flush()
        self.writer.close()
        self.crawler.stats.set_value("linkgraph/bytes", self.writer.bytes_written)

    def document_processed(self, request: Any, response: Any, processed: Any,
                           **_: Any) -> None:
        if response.status != 200:
            return
        try:
            source = self.canonical(request.url)
        except InvalidURL:
            return
        src = fingerprint_hex(source)
        batch = self._batch
        self._name(src, source)
        hosts: dict[str, int] = {}
        for link in processed.links:
            try:
                target = self.canonical(link.url)
            except InvalidURL:
                self.crawler.stats.inc_value("linkgraph/invalid_links")
                continue
            dst = fingerprint_hex(target)
            self._name(dst, target)
            batch["edges"].append(f"{src}\t{dst}\t{_anchor(link.text)}\n")
            host = host_of(target)
            hosts[host] = hosts.get(host, 0) + 1
        source_host = host_of(source)
        batch["hosts"] += [f"{source_host}\t{host}\t{n}\n" for host, n in hosts.items()]
        stats = self.crawler.stats
        stats.inc_value("linkgraph/pages")
        stats.inc_value("linkgraph/edges", sum(hosts.values()))
        if len(batch["edges"]) > 20_000:
            self.flush()

    def _name(self, fp: str, url: str) -> None:
        if fp not in self._named:
            self._named[fp] = True
            self._batch["nodes"].append(f"{fp}\t{url}\n")

    def flush(self) -> None:
        batch = self._batch
        if any(batch.values()):
            self._batch = {"edges": [], "nodes": [], "hosts": []}
            self.writer.write(batch)
            self.crawler.stats.set_value("linkgraph/bytes", self.writer.bytes_written)
