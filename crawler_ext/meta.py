"""Request-meta keys that several subpackages read or write, in one leaf module beside
``signals.py`` (a key used inside one subpackage stays there)."""

from __future__ import annotations

from typing import Final

__all__ = ["FINGERPRINT_META", "IMPORTANCE_META", "REFRESH_META", "ROBOTS_META", "WARC_META"]

#: the frontier's own robots.txt fetches (and their redirects): the origin.  The content
#: processors leave such responses alone.
ROBOTS_META: Final = "crawler_ext_robots"

#: a refresh of a URL fetched before (the recrawl middleware): its history, plain data
REFRESH_META: Final = "crawler_ext_refresh"

#: a dispatched request's cash as a multiple of the mean (0.25 to 4), which weighs the page
#: in its host's revisit allocation (recrawl)
IMPORTANCE_META: Final = "crawler_ext_importance"

#: with the event stream on: (the id of the fetch's response or revisit record, its payload
#: digest); the records' places are reported (``warc_written``)
WARC_META: Final = "crawler_ext_warc"

#: a content fingerprint computed elsewhere (the content processors), or None for a document
#: no processor read: the dedup middleware judges by it instead
FINGERPRINT_META: Final = "crawler_ext_fingerprint"
