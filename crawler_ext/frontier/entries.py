"""What an entry of the frontier holds (``Entry.data``): its kinds and their one format.

The first byte of an entry's data names its kind:

* ``LINK`` (``b"U"``): a link as a spider yields it, ``U depth[.chain] NUL referer NUL url``;
* ``REQUEST`` (``b"D"``): any other request, a pickle of Scrapy's ``Request.to_dict``;
* ``LIVE`` (``b"M<token>"``): a request kept as the object itself (memory frontiers only);
* ``ROBOTS`` (``b"R<origin>"``): the frontier's own robots.txt fetch for an origin;
* ``ROBOTS_HOP`` (``b"H<token>"``): a robots.txt redirect waiting on its target's key.

These formats are persisted (disk, sqlite and Redis frontiers): they are read here, and the
requests they stand for are built by the adapter (``crawler_ext.frontier.adapter.codec``).
"""

from __future__ import annotations

import pickle
from typing import Final

__all__ = ["CHAIN", "LINK", "LIVE", "REFRESH_META", "REQUEST", "ROBOTS", "ROBOTS_HOP",
           "entry_url", "is_robots"]

LINK: Final = b"U"
REQUEST: Final = b"D"
LIVE: Final = b"M"
ROBOTS: Final = b"R"
ROBOTS_HOP: Final = b"H"

#: request meta of a URL's pattern-chain length (admission), kept with it in the frontier so
#: that the worker that fetches it -- after a restart, or another worker -- continues the chain
CHAIN: Final = "crawler_ext_chain"
#: request meta of a recrawl's refresh (the revisit lane): True, or the page's history
REFRESH_META: Final = "crawler_ext_refresh"


def is_robots(kind: bytes) -> bool:
    """Whether an entry of this kind is the frontier's own robots.txt work."""
    return kind == ROBOTS or kind == ROBOTS_HOP


def entry_url(data: bytes) -> str:
    """The URL of a stored request (``LINK`` or ``REQUEST``), without building the request."""
    if data[:1] == LINK:
        return data.split(b"\x00", 2)[2].decode("utf-8")
    return pickle.loads(data[1:])["url"]
