"""The SSRF guard: never fetch private, loopback, link-local, multicast or reserved addresses
unless ``CRAWLER_EXT_ALLOWED_NETWORKS`` lists them (e.g. ``127.0.0.0/8`` for the test web).

It is enforced on every path to the network, by construction:

* ``NetworkGuardMiddleware``, the first downloader middleware, checks every request the
  downloader is about to send -- links, seeds, robots.txt and its redirects, retries,
  redirects of anything, ``dont_filter`` or not: an IP literal in any spelling (dotted,
  decimal ``2130706433``, hex ``0x7f.1``, octal ``0177.0.0.1``, short ``127.1``, IPv4-mapped
  or -compatible IPv6, 6to4 and NAT64 embeddings, ``[::]``, ``0.0.0.0``) is judged as the
  address it is; a name is resolved through the installed resolver (cached) and its address
  judged;
* the resolvers (``crawler_ext.hosts.dns``, ``crawler_ext.hosts``) refuse private answers too, so a
  name cannot be re-pointed between the check and the connection;
* admission refuses IP-literal URLs early (a refused URL never occupies the frontier).
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from twisted.internet.error import DNSLookupError

from crawler_ext import config

__all__ = ["NetworkGuard", "NetworkGuardMiddleware", "literal_address",
           "use_bundled_public_suffix_list"]

logger = logging.getLogger(__name__)

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LEGACY_V4 = frozenset("0123456789abcdefxABCDEFX.")
_NOT_V4 = re.compile(r"[^0-9a-fA-FxX.]")  # (a name's test without an exception: the cache
                                          # below misses when hosts outnumber it)


# host -> literal_address(host), emptied when full: hot (every admitted link; hosts repeat),
# and a plain dict of names -> None is left out of the garbage collector's walks (an
# lru_cache's linked entries were walked at every full collection, 200,000 references)
_LITERALS: dict[str, ipaddress.IPv4Address | ipaddress.IPv6Address | None] = {}
_LITERALS_MAX = 1 << 16


def literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address an IP-literal host names, in any spelling a resolver or socket library
    would accept (``inet_aton``'s decimal, hex, octal and short forms included); None for a
    host name."""
    address = _LITERALS.get(host, _LITERALS)
    if address is not _LITERALS:
        return address  # type: ignore[return-value]
    address = _literal_address(host)
    if len(_LITERALS) >= _LITERALS_MAX:
        _LITERALS.clear()
    _LITERALS[host] = address
    return address


def _literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    host = host.strip().strip("[]").rstrip(".")
    bare = host.split("%", 1)[0]  # a zone id does not change it
    if ":" not in bare and _NOT_V4.search(bare):
        return None  # no colon (IPv6), and a character no IPv4 spelling has: a name
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if host and set(host) <= _LEGACY_V4 and host[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def use_bundled_public_suffix_list() -> bool:
    """No network access nobody asked for: Scrapy's cookie middleware asks tldextract for
    public suffixes, and tldextract downloads the Public Suffix List on first use unless told
    to use the copy it ships.  Point it at that copy (loudly, if Scrapy changed)."""
    try:
        from scrapy.downloadermiddlewares import cookies
        from tldextract import TLDExtract
    except ImportError:
        return False
    if not hasattr(cookies, "_split_domain"):
        logger.warning("Scrapy's cookie middleware has no _split_domain any more: tldextract "
                       "may try to download the Public Suffix List during the crawl")
        return False
    cookies._split_domain = TLDExtract(suffix_list_urls=(), include_psl_private_domains=True)
    return True


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv4-mapped, -compatible, 6to4 or NAT64 IPv6 address."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (int(ip) >> 32 == 0 and int(ip) > 1):  # NAT64, or ::a.b.c.d
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


class NetworkGuard:
    def __init__(self, allowed: Iterable[str] = ()) -> None:
        try:
            self.allowed = [ipaddress.ip_network(c, strict=False) for c in allowed]
        except ValueError as exc:
            raise config.ConfigError(f"CRAWLER_EXT_ALLOWED_NETWORKS: {exc}") from None
        self.refusals = 0

    @classmethod
    def from_settings(cls, settings: object) -> NetworkGuard:
        return cls(config.get(settings, "CRAWLER_EXT_ALLOWED_NETWORKS"))

    def allows(self, address: str) -> bool:
        ip = literal_address(address)
        if ip is None:
            return True  # a name, not an address: the resolver checks what it resolves to
        return self._allows_ip(ip)

    def _allows_ip(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        if any(ip.version == net.version and ip in net for net in self.allowed):
            return True
        if isinstance(ip, ipaddress.IPv6Address):
            inner = _embedded_v4(ip)
            if inner is not None:
                return self._allows_ip(inner)
        return not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
                    or ip.is_reserved or ip.is_unspecified)

    def resolved(self, address: str, name: str) -> str:
        """A resolver's answer for ``name``: the address, or DNSLookupError if it is refused
        (Twisted reports that as a failed look-up, so the first refusal is logged with why)."""
        if self.allows(address):
            return address
        self.refusals += 1
        if self.refusals == 1:
            logger.warning("%s resolves to %s, a private or reserved address: refused "
                           "(CRAWLER_EXT_ALLOWED_NETWORKS can allow it; further refusals show "
                           "as DNS look-up failures)", name, address)
        raise DNSLookupError(f"{name} resolves to {address}, a private or reserved address")


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
                 schemes: Iterable[str] = (), handled: Iterable[str] | None = None) -> None:
        self.guard = guard
        self.stats = stats
        self.schemes = {"http", "https", "data", *(s.lower() for s in schemes)}
        # schemes Scrapy has a download handler for (None: assume every scheme)
        self.handled = None if handled is None else {s.lower() for s in handled}
        self._schemes_logged: set[str] = set()
        self._resolve = resolve  # name -> Deferred[address]; default: the reactor's resolver
        self._logged = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> NetworkGuardMiddleware:
        use_bundled_public_suffix_list()
        s = crawler.settings
        handlers = {**s.getdict("DOWNLOAD_HANDLERS_BASE"), **s.getdict("DOWNLOAD_HANDLERS")}
        return cls(NetworkGuard.from_settings(s), crawler.stats,
                   schemes=config.get(s, "CRAWLER_EXT_ALLOWED_SCHEMES"),
                   handled=[scheme for scheme, handler in handlers.items() if handler])

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
        address = await self._lookup(host)
        if address is not None and not self.guard.allows(address):
            self._refuse(request, address)
        return None

    async def _lookup(self, host: str) -> str | None:
        from scrapy.utils.defer import maybe_deferred_to_future
        from scrapy.utils.reactor import is_reactor_installed

        try:
            if self._resolve is not None:
                return await maybe_deferred_to_future(self._resolve(host))
            if is_reactor_installed():
                from twisted.internet import reactor

                return await maybe_deferred_to_future(reactor.resolve(host))
            import asyncio  # Scrapy's reactorless mode

            infos = await asyncio.get_running_loop().getaddrinfo(host, None)
            return str(infos[0][4][0]) if infos else None
        except Exception:  # noqa: BLE001 - a failed look-up fails the download as usual
            return None

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
