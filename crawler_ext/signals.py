"""Signals crawler_ext components send each other (connect with ``crawler.signals.connect``)."""

from __future__ import annotations

__all__ = ["content_checked", "content_duplicate", "document_processed", "frontier_commit",
           "frontier_opened", "host_released", "sitemap_lastmod", "sitemaps_found",
           "storage_failed", "warc_written"]

#: A fetched page duplicates an earlier one.  Arguments: ``url``, ``original`` (URL),
#: ``kind`` ("exact" or "near"), ``distance`` (SimHash bits).  The frontier scheduler learns
#: per-host canonicalisation rules and lowers the priority of duplicate-prone URL patterns.
content_duplicate = object()

#: A fetched HTML page was fingerprinted.  Arguments: ``url``, ``kind`` ("unique", "exact" or
#: "near"), ``basis`` ("main", "full" or "body": too little text to judge by).  Admission's
#: trap rules take empty and duplicate pages of a URL pattern as the evidence they need.
content_checked = object()

#: A fetched document went through its content-type processor.  Arguments: ``request``,
#: ``response``, ``processed`` (a :class:`~crawler_ext.processors.contract.Processed`: text,
#: links with anchor text, metadata).  The WARC pipeline writes its WET and WAT records.
document_processed = object()

#: robots.txt of an origin was read (2xx or 4xx).  Arguments: ``origin``, ``sitemaps`` (the
#: URLs its ``Sitemap:`` lines list, maybe none).  The sitemap middleware fetches them.
sitemaps_found = object()

#: The frontier is about to commit its journal (requests done, links admitted).  Components
#: that write what those requests produced (WARC records, the content index) flush it now, so
#: that after a kill -9 nothing the journal calls done is missing from their files.
#: Argument: ``durable`` (False: the frontier keeps no journal -- no JOBDIR -- so nothing
#: needs to be on disk before the commit, and writers flush without making the reactor wait).
frontier_commit = object()

#: A disk the crawl writes to is full (``where``: ``warc`` or ``jobdir``).  The frontier stops
#: committing its journal, so nothing not stored is called done; the crawl is being closed.
storage_failed = object()

#: The frontier scheduler opened.  Arguments: ``progress``, a callable returning the frontier's
#: figures now: ``queued``, ``bands`` (list, or None for a shared frontier), ``delayed``,
#: ``active_hosts``, ``in_flight`` (the crawl report samples it); ``refuse_known``, a callable
#: (request) -> bool that refuses a known link at once (the known-links spider middleware);
#: ``refuse_known_link``, a callable (url, page_url, depth, priority) -> bool that does the same
#: for a link before a request is made for it (the reference spider);
#: ``schedule_refresh``, a callable (url, due, history=None) -> bool that queues a fetch again
#: at ``due`` (``history``: the page's change history as plain data, carried in the entry)
#: (the recrawl middleware); ``lease_key``, a callable (request) -> the politeness key an
#: in-flight request holds, and ``robots_allows``, a callable (url) -> bool (the rendering
#: pool judges and paces a page's sub-requests with them); ``page_done``, a callable
#: (response) called once the spider's output for it is all in (the page importance flows to
#: its links then; the known-links spider middleware calls it); ``report_decisions``, a
#: callable (listener) after which the frontier calls ``listener(kind, subject, reason,
#: until=None)`` for each URL it refuses at admission (``"refused"``, the URL, the reason) and
#: each politeness key it parks (``"parked"``, the key, the reason, until when) (the event
#: stream); ``canonical``, a callable (url) -> the frontier's canonical form (learned
#: parameters dropped; the event stream); ``control``, the frontier's
#: :class:`~crawler_ext.frontier.contract.FrontierControl` (the control API; the event stream
#: reads whether the operator paused the crawl).
frontier_opened = object()

#: WARC records were written (sent when the WARC writer reports, at its flushes, and only when
#: the event stream is on).  Argument: ``records``, a list of (WARC record id, path of its WARC
#: file, offset of the record in it) of response and revisit records.
warc_written = object()

#: A request left the downloader and its politeness key was released.  Arguments: ``key``,
#: ``status`` (None: no response), ``started`` (when the frontier handed it out) and
#: ``delay`` (seconds the key must now rest before its next request, from its response) and
#: ``discovery`` (whether newly found URLs of the key wait in the frontier; None: not known).
#: The crawl report checks every key's gaps against it; the recrawl policy budgets by both.
host_released = object()

#: A sitemap gave a URL's ``<lastmod>``.  Arguments: ``url``, ``lastmod`` (unix time).  The
#: recrawl middleware takes it as change evidence: a page modified after its last fetch is
#: fetched again now.
sitemap_lastmod = object()
