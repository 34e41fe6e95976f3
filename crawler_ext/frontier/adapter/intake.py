"""The way into the frontier: a request the engine schedules becomes an entry, or is refused.

In order: robots.txt redirects (paced on their target's key, behind the same guards); the
blocklist; schemes other than http(s) (no canonicalisation, robots.txt or trap rules); a
link whose exact spelling was recently admitted or found seen (refused at once: the seen
set's answer all the same, without canonicalisation and trap analysis); admission
(canonical form, trap filters); the seen set (in exact mode a "maybe" waits for the batched
confirmation at the next flush); then the politeness key (by address: once resolved), the
pattern chain, the score and band, and the stored form.  Every link is told to the page
importance (OPIC): when its page completes, the page's cash is split over its links, and a
queued URL whose cash grew may move to a better band.  ``dont_filter`` skips the seen set,
except for a redirect's target, unless the user set it on the request themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from sys import intern
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request

from crawler_ext.admission import Admission, RuleLearning
from crawler_ext.admission.urls import REST_BITS, fingerprint, host_of
from crawler_ext.frontier.adapter.codec import peek
from crawler_ext.frontier.adapter.events import Decisions
from crawler_ext.frontier.adapter.keys import PolitenessKeys
from crawler_ext.frontier.adapter.requests import StoredRequests
from crawler_ext.frontier.adapter.roles import Gates, Port, Stores
from crawler_ext.frontier.adapter.robotsgate import RobotsGate
from crawler_ext.frontier.contract import FrontierBackend
from crawler_ext.frontier.controls import KeyControls
from crawler_ext.frontier.entries import CHAIN
from crawler_ext.frontier.keys import canonical_key, politeness_key
from crawler_ext.frontier.storage import Entry
from crawler_ext.frontier.strategy import CrawlingStrategy
from crawler_ext.hosts.blocklist import Blocklist
from crawler_ext.meta import REFRESH_META, ROBOTS_META
from crawler_ext.recent import RecentMap
from crawler_ext.seen import MAYBE, SeenSet

__all__ = ["KNOWN_MEMORY", "USER_DONT_FILTER", "Intake", "checks_seen"]

_LOW_BITS = (1 << REST_BITS) - 1
#: exact spellings of links recently admitted or found seen, remembered (at least half of it)
KNOWN_MEMORY = 200_000

#: meta flag of a request the user made with ``dont_filter=True`` (not a retry's copy)
USER_DONT_FILTER = "crawler_ext_dont_filter"

#: what waits (for the seen set's confirmation, or a host's address): request, canonical
#: URL, fingerprint, referer
Waiting = tuple[Request, str, int, str | None]


def checks_seen(request: Request) -> bool:
    """Whether a request meets the seen set: unless ``dont_filter``; a redirect's target
    always does (Scrapy copies dont_filter onto it from a retry, and the target may have
    been fetched already), unless the user asked for ``dont_filter`` themselves."""
    if not request.dont_filter:
        return True
    return "redirect_urls" in request.meta and not request.meta.get(USER_DONT_FILTER)


class Intake:
    def __init__(self, stores: Stores, strategy: CrawlingStrategy, gates: Gates,
                 requests: StoredRequests, port: Port, known: RecentMap,
                 request_fingerprinter: Any = None) -> None:
        self.frontier: FrontierBackend = stores.frontier
        self.seen: SeenSet = stores.seen
        self.strategy = strategy
        self.admission: Admission = gates.admission
        self.learning: RuleLearning = gates.learning
        self.keys: PolitenessKeys = gates.keys
        self.robots: RobotsGate | None = gates.robots
        self.blocklist: Blocklist = gates.blocklist
        self.controls: KeyControls = gates.controls
        self.requests = requests
        self._inc = port.inc
        self._wake = port.wake
        self.clock = port.clock
        self.decisions: Decisions = port.decisions  # told of each URL refused here
        self._fingerprinter = request_fingerprinter
        self._on_resolved = self.resolved  # (bound once: handed to the keys at each wait)
        self.unconfirmed: list[Waiting] = []
        # exact spellings of links recently admitted or found seen -> their fingerprint: a
        # link seen again (a site's navigation, on every page) is refused without
        # canonicalisation and trap analysis; the answer is the seen set's all the same.
        # (Built by the wiring: the rule learning clears it when canonical forms change.)
        self.known = known
        self._enqueued: dict[tuple[int, str], int] = {}  # (band, memory|disk) -> entries
        self._page: tuple[str | None, int] = (None, 0)  # the last Referer -> its fingerprint

    def count_into(self, inc: Callable[..., None]) -> None:
        """Hand the enqueue counts over as stats (``frontier/enqueued`` and by band, Scrapy's
        ``scheduler/enqueued`` and by memory or disk): one count per entry on the hot path,
        four stats at the flush."""
        enqueued, self._enqueued = self._enqueued, {}
        for (band, where), n in enqueued.items():
            inc("frontier/enqueued", n)
            inc(f"frontier/enqueued/band_{band}", n)
            inc("scheduler/enqueued", n)  # Scrapy's own scheduler stats, for tools that read them
            inc(f"scheduler/enqueued/{where}", n)

    def forget_seen(self) -> None:
        """The shared store lost writes: forget the known spellings and the local seen set
        (the shared seen set, checked at the push, decides alone)."""
        self.known.clear()
        self.seen.forget()

    def _wake_now(self) -> None:
        now = self.clock()
        self._wake(now, now)

    def enqueue(self, request: Request) -> bool:
        """``Scheduler.enqueue_request``: True if the request was queued (or waits to be)."""
        if request.meta.get(ROBOTS_META) and self.robots is not None:
            # a robots.txt redirect: paced on its target's key, behind the same guards
            self.frontier.add([self.robots.redirected(request, politeness_key(request.url))],
                              check_seen=False)
            self._wake_now()
            return True
        if self.blocklist.blocked(request.url):
            self._inc("admission/rejected/blocklist")
            self.decisions.tell("refused", request.url, "blocklist")
            return False
        raw = request.url
        scheme = raw.partition(":")[0].lower()
        if scheme not in ("http", "https"):
            return self._enqueue_other(request, scheme)
        if request.dont_filter and "redirect_urls" not in request.meta and \
                "retry_times" not in request.meta:
            request.meta[USER_DONT_FILTER] = True  # the user's own: honoured for its redirects
        if self._refuse_known(request):
            return False
        headers = peek(request, "headers")  # (most links carry none: no lookup then)
        referer = headers.get(b"Referer") if headers else None
        referer_url = referer.decode("latin-1") if referer else None
        canonical = self.admission.check(request.url, referer_url)
        if canonical is None:
            if self.decisions.heard:
                self.decisions.tell("refused", request.url, self.admission.last_reason)
            return False
        if canonical != request.url:
            request = request.replace(url=canonical)
        plain = request.method in ("GET", "HEAD") and not request.body
        fp = fingerprint(canonical) if plain else self._request_fp(request, canonical)
        if checks_seen(request):
            seen = self.seen.check(request, fp)
            if seen is MAYBE:  # exact mode: confirmed in one batch at the next flush
                self.unconfirmed.append((request, canonical, fp, referer_url))
                return True
            if seen:
                if plain:
                    self._remember_known(raw, fp)
                self._rediscovered(request, canonical, fp, referer_url)
                return False
            if plain:
                self._remember_known(raw, fp)
        self._admit(request, canonical, fp, referer_url)
        return True

    def refresh(self, url: str, due: float, history: dict | None = None) -> None:
        """A delayed entry for ``url`` at unix time ``due``, past the seen set (recrawl)."""
        key = self.keys.known(canonical_key(url))  # (a fetched page's host is resolved)
        request = Request(url, dont_filter=True, meta={REFRESH_META: history or True})
        band = self.strategy.band(key, 0, 0)
        entry = Entry(key, band, self.requests.encode(request), fingerprint(url), refresh=True)
        self.frontier.add_delayed([entry], due)
        self._wake(due, self.clock())

    def trap_pattern(self, url: str) -> tuple[str, bool]:
        """The shared frontier's question at a push: ``url``'s host and pattern, and whether
        the pages fetched here call the pattern a trap."""
        host = host_of(url)
        pattern = self.admission.pattern(url)
        return f"{host}\t{pattern}", self.admission.is_trap(host, pattern)

    def refuse_known(self, request: Request) -> bool:
        """True if ``request`` is a link whose exact spelling was recently admitted or found
        seen: refused (counted, credited as an inlink) as :meth:`enqueue` would, without the
        engine's round.  The known-links spider middleware asks this."""
        if self.blocklist.blocked(request.url):
            return False  # enqueue counts it as the blocklist's
        if self._refuse_known(request):
            self._inc("frontier/known_links/before_engine")
            return True
        return False

    def refuse_known_link(self, url: str, page: str, depth: int, priority: int) -> bool:
        """True if ``url``, a plain GET link found on the page whose URL is ``page``, at
        ``depth`` with ``priority``, is known: refused, counted and credited to the page as
        :meth:`refuse_known` would, before a request is made for it (the reference spider
        asks this for each link; ``url`` must be spelled as its request's would be)."""
        known = self.known.get(url)
        if known is None or self.blocklist.blocked(url):
            return False
        self._inc("dupefilter/filtered")
        self._inc("frontier/known_links")
        self._inc("frontier/known_links/before_request")
        self.strategy.rediscovered(self._page_fp(page), known, url, depth, priority)
        return True

    def _refuse_known(self, request: Request) -> bool:
        if request.dont_filter or request.method != "GET":
            return False
        known = self.known.get(request.url)
        if known is None:
            return False
        self._inc("dupefilter/filtered")
        self._inc("frontier/known_links")
        self._rediscovered(request, request.url, known, None)
        return True

    def _enqueue_other(self, request: Request, scheme: str) -> bool:
        """data:, file:, ftp:, s3:, ...: no canonicalisation, robots.txt or trap rules.  The
        guard in the download path lets data: through and refuses the rest unless
        CRAWLER_EXT_ALLOWED_SCHEMES allows them (NotSupported, in the request's errback)."""
        fp = fingerprint(request.url)
        if not request.dont_filter:
            seen = self.seen.check(request, fp)
            if seen is MAYBE:
                seen = self.seen.confirm([fp])[0]
            if seen:
                return False
        if scheme == "data":  # nothing to be polite to: each its own key, no delay between
            key = f"data:{fp:x}"
        else:
            try:
                key = f"{scheme}:{(urlsplit(request.url).netloc or '').lower()}"
            except ValueError:
                key = f"{scheme}:"
        band = self.strategy.band(key, int(request.meta.get("depth", 0)), request.priority)
        entry = Entry(key, band, self.requests.encode(request), fp, priority=request.priority)
        self._queue(entry, check_seen=not request.dont_filter)
        return True

    def _request_fp(self, request: Request, canonical: str) -> int:
        """A request with a body or another method than GET/HEAD is judged by Scrapy's
        configured request fingerprinter (REQUEST_FINGERPRINTER_CLASS), folded to 64 bits
        under the URL's host bits: two POSTs to one URL with different bodies stay two."""
        fingerprinter = self._fingerprinter
        if fingerprinter is None:
            return fingerprint(canonical)
        low = int.from_bytes(fingerprinter.fingerprint(request)[:8], "big") & _LOW_BITS
        return (fingerprint(canonical) & ~_LOW_BITS) | low

    def _remember_known(self, url: str, fp: int) -> None:
        self.known[url] = fp

    def _admit(self, request: Request, canonical: str, fp: int, referer: str | None) -> None:
        host = intern(canonical_key(canonical))  # (one string a host, not one a queued URL)
        # a request Scrapy's downloader puts in a slot of its own (meta download_slot) is
        # paced as that slot: its key, whose DOWNLOAD_SLOTS delay is a floor
        slot = request.meta.get("download_slot")
        key = slot if isinstance(slot, str) and slot else \
            self.keys.key(host, (request, canonical, fp, referer), self._on_resolved)
        if key is None:  # keyed by address: admitted when the host's address is known
            return
        chain = self.admission.count(canonical, referer)
        if chain:  # stored with the URL: whoever fetches it continues the chain
            request.meta[CHAIN] = chain
        depth = int(request.meta.get("depth", 0))
        # (no Referer: a start URL, or the Referer policy or the spider left it out)
        page = self._page_fp(referer) if referer else None
        demoted = self.learning.demoted(canonical)  # this pattern keeps duplicating
        if demoted:
            self._inc("frontier/demoted")
        band = self.strategy.link(fp, host, depth, request.priority, page, demoted)
        checked = checks_seen(request)
        # (the Referer read once per link: as admission's string, back to its bytes here)
        data = self.requests.encode(request, referer.encode("latin-1") if referer else b"")
        self._queue(Entry(key, band, data, fp, priority=request.priority), check_seen=checked)

    def _queue(self, entry: Entry, check_seen: bool) -> None:
        self.frontier.add([entry], check_seen=check_seen)
        if self.controls.cleared:  # a queue was deleted: this URL came after
            self.controls.admitted(entry.key, entry.fp)
        key = (entry.band, self.requests.where(entry.data))
        self._enqueued[key] = self._enqueued.get(key, 0) + 1

    def resolved(self, waited: list[Waiting]) -> None:
        """A host's address is known: admit the URLs that waited for it."""
        for item in waited:
            self._admit(*item)
        self._wake_now()

    def _rediscovered(self, request: Request, canonical: str, fp: int,
                      referer: str | None) -> None:
        """A link to a URL already admitted: told to the page importance, which credits it
        when its page completes if it is still queued (``referer`` None: read here)."""
        if referer is None:
            headers = peek(request, "headers")
            raw = headers.get(b"Referer") if headers else None
            referer = raw.decode("latin-1") if raw else None
        if referer:
            self.strategy.rediscovered(self._page_fp(referer), fp, canonical,
                                       int(request.meta.get("depth", 0)), request.priority)
        self.seen.log(request, self.requests.spider)

    def _page_fp(self, referer: str) -> int:
        """The fingerprint of the page a link was found on (its Referer: the page's URL, in
        canonical form unless it was redirected), remembered for the page's next link."""
        last, fp = self._page
        if referer != last:
            fp = fingerprint(referer)
            self._page = (referer, fp)
        return fp

    def fetched(self, fp: int) -> None:
        """A page was fetched and its links admitted: the strategy moves queued URLs to a
        better band if they earned one (with OPIC: the page's importance flows to its links)."""
        for target, band in self.strategy.page_crawled(fp):
            self.frontier.promote(target, band)

    def confirm(self) -> None:
        """Exact mode: the seen set's batched answer for the URLs that wait for it."""
        if not self.unconfirmed:
            return
        batch, self.unconfirmed = self.unconfirmed, []
        seen = self.seen.confirm([fp for _, _, fp, _ in batch])
        for (request, canonical, fp, referer), was_seen in zip(batch, seen):
            if was_seen:
                self._rediscovered(request, canonical, fp, referer)
            else:
                self._admit(request, canonical, fp, referer)
        self._wake_now()
