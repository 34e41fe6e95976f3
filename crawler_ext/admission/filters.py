"""URL admission: canonicalise, then trap filters, before the seen set and the frontier.

Each rejection has a reason (counted in stats as ``admission/rejected/<reason>``):
malformed URLs (the reasons of :class:`~crawler_ext.admission.urls.InvalidURL`), ``too_long``,
``path_depth``, ``repeated_segments``, ``host_budget`` and ``pattern_cap`` (too many URLs of
one host whose paths and parameters differ only in numeric or id-like values) and
``pattern_chain`` (a URL of the same pattern as the page that linked to it, that page
itself so linked, and so on, more than ``max_pattern_chain`` times: next-month links of an
infinite calendar) and ``id_chain`` (the second link in a row that only renames an id-like
path segment: a session id renewed on every page).

Structure alone does not make a trap: release notes, changelogs, paginated archives and
catalogues are long runs of one pattern.  So ``pattern_cap``, ``pattern_chain`` and
``id_chain`` cut a pattern only once its fetched pages are content evidence of a trap
(``note_content``): at least ``trap_min_evidence`` of them empty, duplicates or error answers
(a 404 is a page that is not there), and no fewer than its distinct pages; and a chain runs
only through such pages (a distinct page starts it afresh).  Each host's first such refusal is
logged.

One page can queue a whole trap before any of it is fetched (200,000 links to URLs that all
answer 404): URLs admitted before their pattern proved a trap are judged again when their turn
comes (:meth:`Admission.queued_trap`), and those past the pattern's cap are dropped then,
counted as ``pattern_cap`` too.
"""

from __future__ import annotations

import logging
import re
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from sys import intern

from crawler_ext.admission.urls import InvalidURL, canonicalize, host_of
from crawler_ext.hosts.guard import NetworkGuard
from crawler_ext.recent import RecentMap

__all__ = ["Admission", "AdmissionRules", "differing_parameter", "renamed_id", "url_pattern"]

logger = logging.getLogger(__name__)

_ID_SEGMENT = re.compile(r"^(?=[^/]*\d)[0-9a-fA-F-]{6,}$|^\d+$")
_DIGITS = re.compile(r"\d+")
#: in one pass over a path: a whole id-like segment (6+ hex digits or dashes, a digit among
#: them), else each run of digits (a segment of digits only is one run)
_BLANKS = re.compile(r"(?<=/)(?=[^/]*\d)[0-9a-fA-F-]{6,}(?=/|\Z)|\d+")
_ONE_EMPTY = 1 << 32  # an evidence count: pages empty or duplicate above bit 32 ...
_DISTINCT = _ONE_EMPTY - 1  # ... distinct pages below it


def url_pattern(canonical_url: str) -> str:
    """The URL with its values blanked: digit runs and id-like segments become '#',
    parameter values are dropped and names sorted."""
    start = canonical_url.find("/", canonical_url.find("//") + 2)
    if start < 0:
        return "/"
    path, _, query = canonical_url[start:].partition("?")
    path = _BLANKS.sub("#", path)
    if not query:
        return path
    names = sorted({p.split("=", 1)[0] for p in query.split("&") if p})
    return path + ("?" + "&".join(names) if names else "")


def renamed_id(url: str, referer: str) -> bool:
    """True if ``url`` is ``referer`` with one id-like path segment (hex with letters, not a
    page number) replaced by another: the same page under a new session id.  Two such links
    in a row end a chain at once, where ``max_pattern_chain`` would allow more."""
    a_base, _, a_query = url.partition("?")
    b_base, _, b_query = referer.partition("?")
    if a_query != b_query:
        return False
    a, b = a_base.split("/"), b_base.split("/")
    if len(a) != len(b):
        return False
    diff = [(x, y) for x, y in zip(a, b) if x != y]
    return len(diff) == 1 and all(_ID_SEGMENT.match(s) and not s.isdigit() for s in diff[0])


def differing_parameter(url: str, other: str) -> str | None:
    """The one query parameter in which two URLs of the same host and path differ, if only one."""
    a_base, _, a_query = url.partition("?")
    b_base, _, b_query = other.partition("?")
    if a_base != b_base:
        return None
    a = Counter(p for p in a_query.split("&") if p)
    b = Counter(p for p in b_query.split("&") if p)
    names = {p.split("=", 1)[0] for p in (a - b) + (b - a)}
    return names.pop() if len(names) == 1 else None


@dataclass
class AdmissionRules:
    strip_tracking: bool = True
    strip_session: bool = False
    sort_query: bool = False
    max_url_length: int = 2000
    max_path_depth: int = 20
    max_repeated_segments: int = 2
    host_page_budget: int = 0  # 0: unlimited
    pattern_cap: int = 1000
    max_pattern_chain: int = 1
    chain_memory: int = 200_000  # URLs whose chain length is remembered (the latest: half at least)
    trap_min_evidence: int = 2  # empty or duplicate pages of a pattern before it is a trap
    evidence_memory: int = 200_000  # (host, pattern) pairs whose evidence is kept (LRU)


@dataclass
class Admission:
    """Decides whether a URL may enter the frontier, and in which spelling."""

    rules: AdmissionRules = field(default_factory=AdmissionRules)
    guard: NetworkGuard = field(default_factory=NetworkGuard)
    on_reject: Callable[[str], None] = lambda reason: None
    learned: dict[str, set[str]] = field(default_factory=dict)  # host -> dropped parameters
    # plain dicts of strings and numbers, which the garbage collector does not walk (they
    # grow with the hosts and patterns): host -> URLs admitted; "host pattern" -> URLs
    # admitted; URL -> "chain length" + " " + its pattern
    _per_host: dict[str, int] = field(default_factory=dict)
    _per_pattern: dict[str, int] = field(default_factory=dict)
    _chains: RecentMap = field(init=False)
    _last_pattern: tuple[str, str] = ("", "")
    # "host pattern" (the string ``_per_pattern`` holds) -> pages empty or duplicate << 32 |
    # distinct pages, among those fetched (one int, not a list and a tuple: a broad crawl
    # keeps one or two for each of its many hosts)
    _evidence: OrderedDict[str, int] = field(default_factory=OrderedDict)
    _trap_logged: set[str] = field(default_factory=set)
    # hosts with a pattern that has had trap evidence enough (a hint: is_trap decides)
    _trap_hosts: set[str] = field(default_factory=set)
    last_reason: str = ""  # the reason of the last refusal

    def __post_init__(self) -> None:
        self._chains = RecentMap(self.rules.chain_memory)

    def pattern(self, canonical: str) -> str:
        """``url_pattern`` of a canonical URL, remembered for the URL just checked (check,
        count and the frontier's demotion all ask for it in one admission)."""
        if self._last_pattern[0] != canonical:
            self._last_pattern = (canonical, url_pattern(canonical))
        return self._last_pattern[1]

    def canonical(self, url: str) -> str:
        r = self.rules
        return canonicalize(url, strip_tracking=r.strip_tracking, strip_session=r.strip_session,
                            sort_query=r.sort_query, drop_params=self.learned)

    def check(self, url: str, referer: str | None = None) -> str | None:
        """The canonical URL if it passes the trap filters (it is not counted yet);
        ``referer`` is the page that linked to it, for the pattern-chain filter."""
        try:
            canonical = self.canonical(url)
        except InvalidURL as exc:
            return self._reject(exc.reason)
        r = self.rules
        if len(canonical) > r.max_url_length:
            return self._reject("too_long")
        start = canonical.find("/", canonical.find("//") + 2)
        path = canonical[start:].partition("?")[0]
        segments = [s for s in path.split("/") if s]
        if len(segments) > r.max_path_depth:
            return self._reject("path_depth")
        if len(set(segments)) < len(segments) - r.max_repeated_segments + 1 and \
                max(Counter(segments).values()) > r.max_repeated_segments:
            return self._reject("repeated_segments")
        host = host_of(canonical)
        if not self.guard.allows(host[1:host.find("]")] if host.startswith("[")
                                 else host.partition(":")[0]):
            return self._reject("private_address")  # an IP literal (names: the resolver)
        if r.host_page_budget and self._per_host.get(host, 0) >= r.host_page_budget:
            return self._reject("host_budget")
        pattern = self.pattern(canonical)
        if r.pattern_cap and self._per_pattern.get(f"{host} {pattern}", 0) >= r.pattern_cap and \
                self.is_trap(host, pattern):
            return self._reject_trap("pattern_cap", host, pattern)
        if r.max_pattern_chain and referer is not None:
            parent = self._chain(referer)
            if parent is not None and parent[0] == pattern:
                if parent[1] >= r.max_pattern_chain and self.is_trap(host, pattern):
                    return self._reject_trap("pattern_chain", host, pattern)
                if parent[1] >= 1 and renamed_id(canonical, referer) and \
                        self.is_trap(host, pattern):
                    return self._reject_trap("id_chain", host, pattern)
        return canonical

    def note_content(self, url: str, trap_like: bool) -> None:
        """A fetched page of ``url``'s pattern was empty or a duplicate (``trap_like``), or
        a distinct page: the evidence the pattern rules need before they cut."""
        host, pattern = host_of(url), url_pattern(url)
        key = intern(f"{host} {pattern}")
        evidence = self._evidence
        counts = evidence.get(key, 0)
        if trap_like:
            counts += _ONE_EMPTY
        elif counts & _DISTINCT != _DISTINCT:
            counts += 1
        new = key not in evidence
        evidence[key] = counts
        if new and len(evidence) > self.rules.evidence_memory:
            evidence.popitem(last=False)
        if not trap_like and url in self._chains:  # a distinct page: no trap chain through it
            self._chains[url] = f"0 {pattern}"
        elif trap_like and counts >> 32 >= self.rules.trap_min_evidence:
            self._trap_hosts.add(host)

    def queued_trap(self, url: str) -> bool:
        """Whether a queued URL, admitted before its pattern proved a trap, is past the
        pattern's cap now (it is dropped at its turn; counted as ``pattern_cap``).  Nothing to
        do, and one look at an empty set, until some pattern has trap evidence."""
        if not self._trap_hosts:
            return False
        host = host_of(url)
        if host not in self._trap_hosts:
            return False
        cap = self.rules.pattern_cap
        pattern = url_pattern(url)
        if not cap or self._per_pattern.get(f"{host} {pattern}", 0) < cap or \
                not self.is_trap(host, pattern):
            return False
        self._reject_trap("pattern_cap", host, pattern)
        return True

    def is_trap(self, host: str, pattern: str) -> bool:
        empty, distinct = self._evidence_of(host, pattern)
        return empty >= self.rules.trap_min_evidence and empty >= distinct

    def _evidence_of(self, host: str, pattern: str) -> tuple[int, int]:
        """(pages empty or duplicate, distinct pages) of ``pattern`` on ``host``."""
        counts = self._evidence.get(f"{host} {pattern}", 0)
        return counts >> 32, counts & _DISTINCT

    def _reject_trap(self, reason: str, host: str, pattern: str) -> str | None:
        if host not in self._trap_logged and len(self._trap_logged) < 10_000:
            self._trap_logged.add(host)
            empty, distinct = self._evidence_of(host, pattern)
            logger.info("Trap defence: %s stops following %s on %s (%d of its pages empty, "
                        "duplicates or errors, %d distinct); further refusals are counted in "
                        "admission/rejected/...", reason, pattern, host, empty, distinct)
        return self._reject(reason)

    def count(self, canonical: str, referer: str | None = None) -> int:
        """Charge an admitted (new) URL to its host's budget, its pattern's cap and chain;
        returns its chain length (links in a row between URLs of its pattern)."""
        host = host_of(canonical)
        per_host = self._per_host
        per_host[host] = per_host.get(host, 0) + 1
        pattern = self.pattern(canonical)
        if self.rules.pattern_cap:
            key = intern(f"{host} {pattern}")  # (the same string as its evidence's key)
            self._per_pattern[key] = self._per_pattern.get(key, 0) + 1
        if self.rules.max_pattern_chain:
            parent = self._chain(referer) if referer is not None else None
            chain = parent[1] + 1 if parent is not None and parent[0] == pattern else 0
            self.restore_chain(canonical, chain, pattern)
            return chain
        return 0

    def restore_chain(self, canonical: str, chain: int, pattern: str | None = None) -> None:
        """Remember a URL's chain length (at admission, or when a URL admitted elsewhere -- by
        another worker, or before a restart -- is about to be fetched here)."""
        self._chains[canonical] = f"{chain} {pattern or self.pattern(canonical)}"

    def _chain(self, url: str) -> tuple[str, int] | None:
        """(pattern, chain length) remembered for ``url``."""
        record = self._chains.get(url)
        if record is None:
            return None
        chain, _, pattern = record.partition(" ")
        return pattern, int(chain)

    def learn_drop(self, host: str, param: str) -> bool:
        """Drop ``param`` from ``host``'s URLs from now on (it does not change the content)."""
        params = self.learned.setdefault(host, set())
        if param in params:
            return False
        params.add(param)
        return True

    def _reject(self, reason: str) -> str | None:
        """Count the refusal; ``check``'s answer for a refused URL (None)."""
        self.last_reason = reason
        self.on_reject(reason)
        return None
