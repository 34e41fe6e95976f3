"""Asynchronous caching DNS resolver on twisted.names, installed as Scrapy's DNS resolver:

    TWISTED_DNS_RESOLVER = "crawler_ext.dns.CachingResolver"

* asks the servers of ``CRAWLER_EXT_DNS_SERVERS`` (default: those of /etc/resolv.conf) over
  UDP/TCP from the reactor thread: no resolver threads, so thousands of look-ups can be
  outstanding at once;
* caches answers for their TTL, but at least ``CRAWLER_EXT_DNS_MIN_TTL`` seconds (a crawler
  re-resolving a host every few seconds only loads the DNS);
* caches negative answers (NXDOMAIN, or no address record) for ``CRAWLER_EXT_DNS_NEGATIVE_TTL``;
  a server failure or time-out is not cached;
* coalesces concurrent look-ups of one name into one query;
* answers names of ``CRAWLER_EXT_HOSTS`` (the hosts override) and of /etc/hosts first;
* passes every answer through the SSRF guard (``crawler_ext.hosts.netguard``).

The frontier resolves a host when its first URL is admitted (prefetch), so the address is
cached by the time the host's turn comes.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from sys import intern
from typing import TYPE_CHECKING, Any

from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from twisted.names import client, dns
from twisted.names import error as dns_error
from zope.interface import implementer

from crawler_ext import config
from crawler_ext.hosts.guard import AddressRefused, NetworkGuard
from crawler_ext.hosts.hostsmap import HostsMap
from crawler_ext.hosts.netguard import network_guard

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["CachingResolver", "DnsCache", "read_hosts_file", "resolve"]

logger = logging.getLogger(__name__)

MAX_CNAME_CHAIN = 8


def read_hosts_file(path: str | Path = "/etc/hosts") -> dict[str, str]:
    """name -> first address of a hosts(5) file (read once, at start)."""
    names: dict[str, str] = {}
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return names
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        try:
            ipaddress.ip_address(fields[0])
        except ValueError:
            continue
        for name in fields[1:]:
            names.setdefault(name.lower().rstrip("."), fields[0])
    return names


class DnsCache:
    """Bounded LRU of name -> (address or None for a negative answer, expiry time)."""

    def __init__(self, size: int, min_ttl: float, negative_ttl: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.size, self.min_ttl, self.negative_ttl, self.clock = size, min_ttl, negative_ttl, clock
        self._entries: OrderedDict[str, tuple[str | None, float]] = OrderedDict()

    def get(self, name: str) -> tuple[bool, str | None]:
        """(hit, address); a hit with address None is a cached negative answer."""
        item = self._entries.get(name)
        if item is None:
            return False, None
        address, expires = item
        if expires <= self.clock():
            del self._entries[name]
            return False, None
        self._entries.move_to_end(name)
        return True, address

    def put(self, name: str, address: str | None, ttl: float | None = None) -> float:
        """Cache an answer; returns the seconds it is kept."""
        keep = self.negative_ttl if address is None else max(float(ttl or 0), self.min_ttl)
        if self.size <= 0 or keep <= 0:
            return 0.0
        # (names on shared hosting share an address: one string for it, not one a name)
        self._entries[intern(name)] = (intern(address) if address else None, self.clock() + keep)
        self._entries.move_to_end(name)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return keep

    def __len__(self) -> int:
        return len(self._entries)


@implementer(IResolverSimple)
class CachingResolver:
    """Scrapy DNS resolver (``TWISTED_DNS_RESOLVER``) built on twisted.names."""

    def __init__(self, reactor: Any, servers: Sequence[tuple[str, int]] = (),
                 timeout: float = 60.0, cache: DnsCache | None = None,
                 hosts: HostsMap | None = None, guard: NetworkGuard | None = None,
                 hosts_file: str | Path | None = "/etc/hosts", stats: Any = None) -> None:
        self.reactor = reactor
        self.timeout = timeout
        # (by default: 10,000 names, answers kept at least 5 minutes, failures 1 minute)
        self.cache = cache if cache is not None else DnsCache(10_000, 300.0, 60.0)
        self.hosts = hosts or HostsMap({})
        self.static = read_hosts_file(hosts_file) if hosts_file else {}
        self.guard = guard or NetworkGuard()
        self.stats = stats
        if servers:
            self.client = client.Resolver(servers=list(servers), reactor=reactor)
        else:  # the system's name servers (re-read by twisted.names when the file changes)
            self.client = client.Resolver(resolv="/etc/resolv.conf", reactor=reactor)
        self._pending: dict[str, list[defer.Deferred[str]]] = {}
        self._failure_logged = False

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> Self:
        """Scrapy passes its crawler process here: settings, no stats (see attach_stats)."""
        s = crawler.settings
        cache_size = s.getint("DNSCACHE_SIZE") if s.getbool("DNSCACHE_ENABLED") else 0
        return cls(reactor,
                   servers=config.get(s, "CRAWLER_EXT_DNS_SERVERS"),
                   timeout=s.getfloat("DNS_TIMEOUT"),
                   cache=DnsCache(cache_size, config.get(s, "CRAWLER_EXT_DNS_MIN_TTL"),
                                  config.get(s, "CRAWLER_EXT_DNS_NEGATIVE_TTL")),
                   hosts=HostsMap(config.get(s, "CRAWLER_EXT_HOSTS")),
                   guard=network_guard(s))

    def attach_stats(self, stats: Any) -> None:
        """Count into a crawl's stats (Scrapy builds the resolver before any crawler)."""
        self.stats = stats

    def install_on_reactor(self) -> None:
        self.reactor.installResolver(self)

    # -- IResolverSimple ---------------------------------------------------------------------
    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:
        name = name.lower().rstrip(".")
        try:
            ipaddress.ip_address(name.strip("[]"))
            return defer.succeed(name.strip("[]"))  # a literal: nothing to resolve
        except ValueError:
            pass
        pinned = self.hosts.lookup(name) or self.static.get(name)
        if pinned is not None:
            return self._guarded(defer.succeed(pinned), name)
        hit, address = self.cache.get(name)
        if hit:
            self._inc("dns/cache_hits" if address is not None else "dns/negative_hits")
            if address is None:
                return defer.fail(DNSLookupError(f"{name}: no such host (cached)"))
            return self._guarded(defer.succeed(address), name)
        waiter: defer.Deferred[str] = defer.Deferred()
        waiting = self._pending.get(name)
        if waiting is not None:  # a query for this name is out already
            waiting.append(waiter)
            self._inc("dns/coalesced")
        else:
            self._pending[name] = [waiter]
            self._inc("dns/queries")
            self._query(name).addBoth(self._answered, name)
        return self._guarded(waiter, name)

    def answer_now(self, name: str) -> str | None:
        """The address :meth:`getHostByName` would give for ``name`` at once from its cache,
        the guard allowing it (counted as the cache hit it is); None wherever it would not
        answer that way -- a name it has not cached, a cached failure, a name of
        ``CRAWLER_EXT_HOSTS`` or the hosts file, an address the guard refuses: ask it then."""
        name = name.lower().rstrip(".")
        if self.hosts.lookup(name) is not None or name in self.static:
            return None
        hit, address = self.cache.get(name)
        if not hit or address is None or not self.guard.allows(address):
            return None
        self._inc("dns/cache_hits")
        return address

    # -- internals ---------------------------------------------------------------------------
    def _query(self, name: str) -> defer.Deferred[tuple[str, float]]:
        """(address, ttl) of ``name``: A first, else AAAA; CNAME chains followed."""
        seconds = (max(1, round(self.timeout)),)

        @defer.inlineCallbacks
        def resolve() -> Any:
            target, ttl = name, None
            for kind, lookup in ((dns.A, self.client.lookupAddress),
                                 (dns.AAAA, self.client.lookupIPV6Address)):
                for _ in range(MAX_CNAME_CHAIN):
                    answers, _authority, _additional = yield lookup(target, seconds)
                    address, cname, record_ttl = _pick(answers, target, kind)
                    ttl = record_ttl if ttl is None else min(ttl, record_ttl)
                    if address is not None:
                        return address, ttl
                    if cname is None:
                        break
                    target = cname
                target = name
            raise dns_error.DNSNameError(f"{name}: no address record")

        return resolve()

    def _answered(self, result: Any, name: str) -> None:
        waiters = self._pending.pop(name, [])
        if isinstance(result, tuple):
            address, ttl = result
            self.cache.put(name, address, ttl)
            for waiter in waiters:
                waiter.callback(address)
            return
        failure = result
        if failure.check(dns_error.DNSNameError):
            self.cache.put(name, None)  # negative answer: remembered for a while
            self._inc("dns/nxdomain")
            message = f"{name}: no such host"
        else:
            self._inc("dns/errors")
            message = f"{name}: DNS look-up failed ({failure.getErrorMessage() or failure.type.__name__})"
            if not self._failure_logged:
                self._failure_logged = True
                logger.warning("%s; further failures are counted in dns/errors", message)
        for waiter in waiters:
            waiter.errback(DNSLookupError(message))

    def _guarded(self, d: defer.Deferred[str], name: str) -> defer.Deferred[str]:
        return d.addCallback(self._guard, name)

    def _guard(self, address: str, name: str) -> str:
        try:
            return self.guard.resolved(address, name)
        except AddressRefused as exc:
            self._inc("dns/refused")
            raise DNSLookupError(str(exc)) from None

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)


def _pick(answers: Sequence[dns.RRHeader], name: str,
          kind: int) -> tuple[str | None, str | None, float]:
    """From one answer section: an address of ``kind`` for ``name`` (following CNAMEs within
    the section), else the CNAME target to ask for next; and the smallest TTL on the way."""
    by_name: dict[str, list[dns.RRHeader]] = {}
    for record in answers:
        by_name.setdefault(record.name.name.decode("ascii", "replace").lower().rstrip("."),
                           []).append(record)
    current, ttl = name, float("inf")
    for _ in range(MAX_CNAME_CHAIN):
        records = by_name.get(current, [])
        for record in records:
            if record.type == kind:
                ttl = min(ttl, record.ttl)
                return _address(record), None, ttl
        cname = next((r for r in records if r.type == dns.CNAME), None)
        if cname is None:
            return None, (current if current != name else None), (0.0 if ttl == float("inf") else ttl)
        ttl = min(ttl, cname.ttl)
        payload: Any = cname.payload
        current = payload.name.name.decode("ascii", "replace").lower().rstrip(".")
    return None, None, 0.0


def _address(record: dns.RRHeader) -> str:
    payload: Any = record.payload
    if record.type == dns.A:
        return payload.dottedQuad()
    return ipaddress.IPv6Address(payload.address).compressed


def resolve(host: str) -> defer.Deferred[str]:
    """``host``'s address from the reactor's resolver (the pack's caching resolver when the
    add-on installed it, so every answer was checked by the SSRF guard)."""
    from twisted.internet import reactor

    resolver: Any = reactor
    return resolver.resolve(host)


def install_resolver(crawler: Any, stats: Any = None) -> bool:
    """Install the crawler's ``TWISTED_DNS_RESOLVER`` when an add-on set it: Scrapy installs
    the resolver of the *process* settings before add-ons run, so the add-on's choice would
    otherwise be ignored (and with it the SSRF checks of DNS answers and CRAWLER_EXT_HOSTS).
    ``stats``: the caching resolver, whoever installed it, counts ``dns/...`` in them.
    Whether it installed one."""
    from scrapy.settings import SETTINGS_PRIORITIES
    from scrapy.utils.misc import build_from_crawler, load_object
    from twisted.internet import reactor

    installed = False
    settings = crawler.settings if crawler is not None else None
    if settings is not None and \
            settings.getpriority("TWISTED_DNS_RESOLVER") == SETTINGS_PRIORITIES["addon"]:
        wanted = load_object(settings["TWISTED_DNS_RESOLVER"])
        if not isinstance(getattr(reactor, "resolver", None), wanted):
            build_from_crawler(wanted, crawler, reactor=reactor).install_on_reactor()
            logger.info("DNS: %s installed (set by an add-on)", settings["TWISTED_DNS_RESOLVER"])
            installed = True
    resolver: Any = getattr(reactor, "resolver", None)
    if stats is not None and hasattr(resolver, "attach_stats"):
        resolver.attach_stats(stats)
    return installed
