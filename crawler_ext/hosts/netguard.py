"""The SSRF guard as a downloader middleware: never fetch private, loopback, link-local, multicast or reserved addresses
unless ``CRAWLER_EXT_ALLOWED_NETWORKS`` lists them (e.g. ``127.0.0.0/8`` for the test web).

It is enforced on every path to the network, by construction:

* ``NetworkGuardMiddleware``, the first downloader middleware, checks every request the
  downloader is about to send -- links, seeds, robots.txt and its redirects, retries,
  redirects of anything, ``dont_filter`` or not: an IP literal in any spelling (dotted,
  decimal ``2130706433``, hex ``0x7f.1``, octal ``0177.0.0.1``, short ``127.1``, IPv4-mapped
  or -compatible IPv6, 6to4 and NAT64 embeddings, ``[::]``, ``0.0.0.0``) is judged as the
  address it is; a name is resolved through the installed resolver (cached) and its address
  judged;
* it fails closed: a look-up that fails or takes longer than ``DNS_TIMEOUT`` refuses the
  request (counted in ``netguard/lookup_failed``): the name is pinned to no address, so the
  download fails as a failed look-up does (``CannotResolveHostError``, retried as any DNS
  failure) and never resolves the name by itself;
* the connection goes to the address it checked (:mod:`crawler_ext.hosts.pinning`): the
  reactor's name resolution answers a checked name with its pinned address, and judges any
  other answer, whichever resolver the project installed, so a name cannot be re-pointed
  between the check and the connection (DNS rebinding); in Scrapy's reactorless mode the
  add-on's aiohttp handler (:mod:`crawler_ext.hosts.aiopinning`) does the same;
* the pack's resolvers (``crawler_ext.hosts.dns``, ``crawler_ext.hosts``) refuse private
  answers too;
* admission refuses IP-literal URLs early (a refused URL never occupies the frontier).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from crawler_ext import config
from crawler_ext.hosts.addresses import literal_address
from crawler_ext.hosts.guard import NetworkGuard
from crawler_ext.hosts.pinning import AddressPins
from crawler_ext.config.scrapyside import use_bundled_public_suffix_list

__all__ = ["NetworkGuard", "NetworkGuardMiddleware", "literal_address", "network_guard",
           "shared_pins"]

logger = logging.getLogger(__name__)


def network_guard(settings: Any) -> NetworkGuard:
    """The SSRF guard of ``CRAWLER_EXT_ALLOWED_NETWORKS`` (every component's from_crawler)."""
    return NetworkGuard(config.get(settings, "CRAWLER_EXT_ALLOWED_NETWORKS"))


def shared_pins(crawler: Any) -> AddressPins:
    """The crawler's address pins: one table for the guard and the download handler."""
    pins = getattr(crawler, "_crawler_ext_pins", None)
    if pins is None:
        pins = AddressPins()
        crawler._crawler_ext_pins = pins
    return pins


class NetworkGuardMiddleware:
    """Downloader middleware: nothing reaches the network that the SSRF guard forbids.

        DOWNLOADER_MIDDLEWARES = {"crawler_ext.netguard.NetworkGuardMiddleware": 10}

    Refused requests fail with IgnoreRequest (their errback sees it), are counted in
    ``netguard/refused`` and the first is logged.  URLs of schemes other than http, https
    and data that Scrapy has a download handler for (``file:`` reads the local disk, ``s3:``
    and ``ftp:`` reach other networks) fail with NotSupported, as stock Scrapy fails a scheme
    it has no handler for, unless ``CRAWLER_EXT_ALLOWED_SCHEMES`` lists them; a scheme without
    a handler is left to Scrapy, which says so itself.
    """

    def __init__(self, guard: NetworkGuard, stats: Any = None, resolve: Any = None,
                 schemes: Iterable[str] = (), handled: Iterable[str] | None = None,
                 timeout: float = 60.0, pins: AddressPins | None = None) -> None:
        self.guard = guard
        self.timeout = timeout
        self.pins = pins if pins is not None else AddressPins()
        self.stats = stats
        self.schemes = {"http", "https", "data", *(s.lower() for s in schemes)}
        # schemes Scrapy has a download handler for (None: assume every scheme)
        self.handled = None if handled is None else {s.lower() for s in handled}
        self._schemes_logged: set[str] = set()
        self._resolve = resolve  # name -> Deferred[address]; default: the reactor's resolver
        self._logged = False
        self._failure_logged = False
        self._dropped_logged = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> NetworkGuardMiddleware:
        use_bundled_public_suffix_list()
        s = crawler.settings
        handlers = {**s.getdict("DOWNLOAD_HANDLERS_BASE"), **s.getdict("DOWNLOAD_HANDLERS")}
        return cls(network_guard(s), crawler.stats,
                   schemes=config.get(s, "CRAWLER_EXT_ALLOWED_SCHEMES"),
                   handled=[scheme for scheme, handler in handlers.items() if handler],
                   timeout=s.getfloat("DNS_TIMEOUT") or 60.0, pins=shared_pins(crawler))

    async def process_request(self, request: Any, spider: Any = None) -> None:
        try:
            parts = urlsplit(request.url)
            host = parts.hostname
        except ValueError:
            return None  # the download handler rejects it
        if parts.scheme not in ("http", "https"):
            if parts.scheme not in self.schemes and (
                    self.handled is None or parts.scheme in self.handled):
                self._refuse_scheme(request, parts.scheme)
            return None  # data:, allowed schemes, and those Scrapy has no handler for
        if not host:
            return None
        ip = literal_address(host)
        if ip is not None:
            if not self.guard._allows_ip(ip):
                self._refuse(request, str(ip))
            return None
        address = await self._lookup(request, host)
        if address is None:  # the look-up failed: the connection resolves to nothing
            self.pins.refuse(host)
            return None
        if not self.guard.allows(address):
            self._refuse(request, address)
        self.pins.pin(host, address)  # the connection goes here, nowhere else
        return None

    async def _lookup(self, request: Any, host: str) -> str | None:
        """The address that decides: the first one the resolver gives now.  A failed or
        timed-out look-up refuses the request (fail closed): with a reactor, None -- the name
        is pinned to no address, so the download fails in the downloader as a failed look-up
        does (Scrapy's signals, retries and stats as usual) and nothing resolves it
        unchecked; in the reactorless mode, CannotResolveHostError at once."""
        from scrapy.utils.defer import maybe_deferred_to_future
        from scrapy.utils.reactor import is_reactor_installed

        try:
            if self._resolve is not None:
                return str(await maybe_deferred_to_future(self._resolve(host)))
            if is_reactor_installed():
                from twisted.internet import reactor

                from crawler_ext.hosts.pinning import pinned_resolver

                resolver = pinned_resolver(reactor, self.pins, self.guard.allows, self._dropped)
                address = resolver.answer_now(host)  # a known host: its cached answer
                if address is not None:
                    return address
                addresses = await maybe_deferred_to_future(resolver.lookup(host, self.timeout))
                return addresses[0]
            import asyncio  # Scrapy's reactorless mode

            infos = await asyncio.wait_for(
                asyncio.get_running_loop().getaddrinfo(host, None), self.timeout)
            if not infos:
                raise OSError(f"{host}: no address")
            return str(infos[0][4][0])
        except Exception as exc:  # noqa: BLE001 - whatever failed, the request is refused
            failure = self._lookup_failed(request, host, exc)
            if self._resolve is None and not is_reactor_installed():
                raise failure from None
            return None

    def _lookup_failed(self, request: Any, host: str, exc: BaseException) -> Exception:
        from scrapy.exceptions import CannotResolveHostError

        why = str(exc) or type(exc).__name__
        if self.stats is not None:
            self.stats.inc_value("netguard/lookup_failed")
        if not self._failure_logged:
            self._failure_logged = True
            logger.warning("SSRF guard: the look-up of %s failed (%s): %s refused, not fetched "
                           "unchecked (further ones are counted in netguard/lookup_failed)",
                           host, why[:200], request.url[:200])
        return CannotResolveHostError(f"SSRF guard: the look-up of {host} failed ({why[:200]})")

    def _dropped(self, name: str, address: str) -> None:
        """A connection's own resolution gave an address the guard forbids: dropped."""
        if self.stats is not None:
            self.stats.inc_value("netguard/refused_at_connect")
        if not self._dropped_logged:
            self._dropped_logged = True
            logger.warning("SSRF guard: a connection to %s was to go to %s, a private or "
                           "reserved address: dropped (further ones are counted in "
                           "netguard/refused_at_connect)", name, address)

    def _refuse_scheme(self, request: Any, scheme: str) -> None:
        from scrapy.exceptions import NotSupported

        if self.stats is not None:
            self.stats.inc_value(f"netguard/refused_scheme/{scheme[:20]}")
        if scheme not in self._schemes_logged and len(self._schemes_logged) < 20:
            self._schemes_logged.add(scheme)
            logger.warning("%s: the %r scheme is not fetched unless CRAWLER_EXT_ALLOWED_SCHEMES "
                           "lists it (further ones are counted in netguard/refused_scheme/%s)",
                           request.url[:200], scheme, scheme[:20])
        raise NotSupported(f"Unsupported URL scheme {scheme!r}: crawler_ext does not fetch it "
                           f"unless CRAWLER_EXT_ALLOWED_SCHEMES lists it")

    def _refuse(self, request: Any, address: str) -> None:
        from scrapy.exceptions import IgnoreRequest

        if self.stats is not None:
            self.stats.inc_value("netguard/refused")
        if not self._logged:
            self._logged = True
            logger.warning("SSRF guard: %s goes to %s, a private or reserved address: refused "
                           "(CRAWLER_EXT_ALLOWED_NETWORKS can allow it; further refusals are "
                           "counted in netguard/refused)", request.url, address)
        raise IgnoreRequest(f"SSRF guard: {request.url} goes to {address}")
