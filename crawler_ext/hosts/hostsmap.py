"""Hosts override: pin host names (or ``*.wildcards``) to addresses, like curl's ``--resolve``.

``HostsMap`` is the pure lookup; ``HostsOverrideResolver`` installs it as Scrapy's
``TWISTED_DNS_RESOLVER`` (``DNS_RESOLVER`` before Scrapy 2.17) in front of the default
caching resolver, so names not in the map resolve as usual.  Every answer passes the SSRF
guard (``crawler_ext.hosts.netguard``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer
from twisted.internet.error import DNSLookupError
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer

from crawler_ext import config
from crawler_ext.errors import ConfigError
from crawler_ext.hosts.guard import AddressRefused, NetworkGuard
from crawler_ext.hosts.netguard import network_guard

if TYPE_CHECKING:
    from twisted.internet.base import ReactorBase
    from typing_extensions import Self

__all__ = ["HostsMap", "HostsOverrideResolver"]


class HostsMap:
    """Exact names win over wildcards; among wildcards the longest suffix wins."""

    def __init__(self, mapping: Mapping[str, str]) -> None:
        self._exact: dict[str, str] = {}
        self._suffixes: list[tuple[str, str]] = []
        for name, address in mapping.items():
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise ConfigError(
                    f"CRAWLER_EXT_HOSTS: {address!r} (for {name!r}) is not an IP address"
                ) from None
            name = name.strip().lower().rstrip(".")
            if name.startswith("*."):
                self._suffixes.append((name[1:], address))
            else:
                self._exact[name] = address
        self._suffixes.sort(key=lambda item: -len(item[0]))

    def __bool__(self) -> bool:
        return bool(self._exact or self._suffixes)

    def lookup(self, name: str) -> str | None:
        name = name.lower().rstrip(".")
        if name in self._exact:
            return self._exact[name]
        for suffix, address in self._suffixes:
            if name.endswith(suffix):
                return address
        return None


@implementer(IResolverSimple)
class HostsOverrideResolver(CachingThreadedResolver):
    """Scrapy DNS resolver that answers pinned names from ``CRAWLER_EXT_HOSTS``."""

    def __init__(
        self, reactor: ReactorBase, cache_size: int, timeout: float, hosts: HostsMap,
        guard: NetworkGuard | None = None,
    ) -> None:
        super().__init__(reactor, cache_size, timeout)
        self.hosts = hosts
        self.guard = guard or NetworkGuard()

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: ReactorBase) -> Self:
        settings = crawler.settings
        cache_size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        hosts = HostsMap(config.get(settings, "CRAWLER_EXT_HOSTS"))
        return cls(reactor, cache_size, settings.getfloat("DNS_TIMEOUT"), hosts,
                   network_guard(settings))

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:
        address = self.hosts.lookup(name)
        d = defer.succeed(address) if address is not None else super().getHostByName(name, timeout)
        return d.addCallback(self._guard, name)

    def _guard(self, address: str, name: str) -> str:
        try:
            return self.guard.resolved(address, name)
        except AddressRefused as exc:
            raise DNSLookupError(str(exc)) from None
