"""Feeds (RSS 0.9x, 1.0, 2.0 and Atom): entries are links, their dates change evidence.

Parsed by ``feedparser``, the maintained parser of every RSS and Atom dialect.  The XML is
first read by ``defusedxml`` with entity declarations forbidden, so a billion-laughs or an
external-entity feed is refused (``refused = "hostile_xml"``) before feedparser sees it.
``metadata["dates"]`` maps each entry's link to its updated (else published) time, in epoch
seconds: the middleware hands them to the recrawl as sitemaps' ``lastmod`` are.
"""

from __future__ import annotations

import calendar
import re
from typing import Any

from crawler_ext.processors.contract import Document, Link, Processed
from crawler_ext.processors.links import extract_links

__all__ = ["FeedProcessor"]

MAX_ENTRIES = 10_000
_TAGS = re.compile(r"<[^>]*>")


def _epoch(entry: Any) -> float | None:
    for key in ("updated_parsed", "published_parsed", "created_parsed"):
        value = entry.get(key)
        if value:
            return float(calendar.timegm(value))
    return None


class FeedProcessor:
    name = "feedparser"
    content_kind = "feed"

    def process(self, document: Document) -> Processed:
        import defusedxml.ElementTree as safe_xml
        import feedparser
        from defusedxml import DefusedXmlException

        try:
            safe_xml.fromstring(document.body, forbid_dtd=False, forbid_entities=True,
                                forbid_external=True)
        except DefusedXmlException as exc:
            return Processed("feed", self.name, refused="hostile_xml",
                             metadata={"error": type(exc).__name__})
        except Exception:  # noqa: BLE001 -- not well-formed: feedparser's lenient parser tries
            pass
        feed = feedparser.parse(document.body, response_headers={
            "content-location": document.url,
            "content-type": document.headers.get("content-type", document.mime)},
            sanitize_html=False)
        links: dict[str, Link] = {}
        dates: dict[str, float] = {}
        texts = [feed.feed.get("title", ""), feed.feed.get("subtitle", "")]
        for entry in feed.entries[:MAX_ENTRIES]:
            title = " ".join(str(entry.get("title", "")).split())
            hrefs = [entry.get("link", "")] + [
                link.get("href", "") for link in entry.get("links", [])
                if link.get("rel", "alternate") in ("alternate", "enclosure")]
            urls, _ = extract_links(document.url, [h for h in hrefs if h])
            when = _epoch(entry)
            for url in urls:
                links.setdefault(url, Link(url, title[:200]))
                if when is not None:
                    dates.setdefault(url, when)
            texts += [title, _TAGS.sub(" ", str(entry.get("summary", "")))]
        site, _ = extract_links(document.url, [feed.feed.get("link", "")] if
                                feed.feed.get("link") else [])
        for url in site:
            links.setdefault(url, Link(url, str(feed.feed.get("title", ""))[:200]))
        metadata: dict[str, Any] = {"title": feed.feed.get("title", ""),
                                    "format": feed.get("version", ""),
                                    "entries": len(feed.entries), "dates": dates}
        if feed.feed.get("language"):
            metadata["language"] = feed.feed["language"]
        if not feed.entries and feed.get("bozo"):
            return Processed("feed", self.name, refused="error", metadata={
                "error": type(feed.get("bozo_exception")).__name__})
        text = "\n".join(" ".join(t.split()) for t in texts if t)
        return Processed("feed", self.name, text, tuple(links.values()), metadata)
