"""Two of Scrapy's own downloader middlewares with the same decisions for less CPU a request.

The add-on puts these in place of Scrapy's at the same order (unless the project lists Scrapy's
middleware itself: then its choice stands).  Profiled in the broad benchmark (10,000 hosts,
1,000 requests in flight), Scrapy's two took 3.4 % of the crawl process's CPU for requests
and pages they let through unchanged:

* ``OffsiteMiddleware`` runs twice a request (on ``request_scheduled`` and as a downloader
  middleware), and each time re-reads the spider's ``allowed_domains``, parses the URL and
  keeps it in a weak dictionary -- also for a spider without ``allowed_domains``, whose
  pattern matches every host.  Here a spider without them lets every request through at
  once; with them, Scrapy's own code decides.  ``allowed_domains`` is read at every request,
  as Scrapy reads it, so a spider that sets them during the crawl is filtered from then on.
* ``MetaRefreshMiddleware`` decodes every HTML page and searches its first 4,096 characters
  for ``<meta http-equiv="refresh">``, as a browser reads it (character references decoded,
  scripts skipped).  Here a page whose encoding writes ASCII letters as ASCII bytes, and
  whose first 16 KiB (4 KiB where those are ASCII) hold neither the word ``refresh`` in any
  case nor an ``&#`` (a numeric character reference can spell a letter), cannot hold one,
  and goes on undecoded (10 against 25 to 65 us a page of the broad web); any other page
  goes through Scrapy's code.
"""

from __future__ import annotations

import codecs
from functools import lru_cache
from typing import Any

from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware as ScrapyOffsiteMiddleware
from scrapy.downloadermiddlewares.redirect import (
    MetaRefreshMiddleware as ScrapyMetaRefreshMiddleware,
)
from scrapy.http import HtmlResponse

__all__ = ["REPLACED", "MetaRefreshMiddleware", "OffsiteMiddleware", "may_refresh"]

#: Scrapy's middleware -> its replacement (same order in ``DOWNLOADER_MIDDLEWARES_BASE``)
REPLACED = {
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware":
        "crawler_ext.runtime.stock.OffsiteMiddleware",
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware":
        "crawler_ext.runtime.stock.MetaRefreshMiddleware",
}


class OffsiteMiddleware(ScrapyOffsiteMiddleware):
    """Scrapy's, with every request let through at once while the spider has no
    ``allowed_domains`` (Scrapy's pattern for that case matches every host)."""

    def _allows_all(self) -> bool:
        return not getattr(self.crawler.spider, "allowed_domains", None)

    def request_scheduled(self, request: Any, spider: Any = None) -> None:
        if not self._allows_all():
            super().request_scheduled(request, spider)

    def process_request(self, request: Any, spider: Any = None) -> None:
        if not self._allows_all():
            super().process_request(request)


#: how many bytes hold the 4,096 characters Scrapy searches: 4 bytes a character at most
HEAD_BYTES = 4 * 4096
#: encodings (codecs' names) in which text's ASCII letters are exactly its ASCII bytes, and
#: no other bytes decode to them
_ASCII_LETTERS_AS_BYTES = frozenset(
    ["ascii", "utf-8"] + [f"iso8859-{n}" for n in range(1, 17)]
    + [f"cp125{n}" for n in range(9)])


@lru_cache(maxsize=256)
def _codec(encoding: str) -> str:
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return ""


def may_refresh(response: Any) -> bool:
    """False only where the page's first 4,096 characters cannot hold a meta refresh:
    no ``refresh`` in any case and no ``&#`` in the bytes that hold them (``HEAD_BYTES``, or
    4,096 where those are ASCII), in an encoding that writes ASCII letters as themselves."""
    head = response.body[:HEAD_BYTES]
    if head[:4096].isascii():  # 4,096 ASCII bytes are the 4,096 characters
        head = head[:4096]
    head = head.lower()  # (a case-blind expression is 5x slower)
    # a numeric character reference can spell a letter; of HTML's named ones only
    # "&fjlig;" spells ASCII letters, and "fj" is not in "refresh"
    if b"refresh" in head or (b"&" in head and b"&#" in head):
        return True
    return _codec(response.encoding) not in _ASCII_LETTERS_AS_BYTES


class MetaRefreshMiddleware(ScrapyMetaRefreshMiddleware):
    """Scrapy's, with pages that cannot hold a meta refresh passed on undecoded."""

    def process_response(self, request: Any, response: Any, spider: Any = None) -> Any:
        if isinstance(response, HtmlResponse) and not may_refresh(response):
            return response
        return super().process_response(request, response)
