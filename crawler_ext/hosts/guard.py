"""The SSRF guard's rule: never fetch private, loopback, link-local, multicast or reserved
addresses unless ``CRAWLER_EXT_ALLOWED_NETWORKS`` lists them (e.g. ``127.0.0.0/8`` for the
test web).  Where it is enforced -- every path to the network -- is said in
``crawler_ext.hosts.netguard`` (the downloader middleware) and ``crawler_ext.hosts.dns``."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable

from crawler_ext.errors import ConfigError
from crawler_ext.hosts.addresses import embedded_v4, literal_address

__all__ = ["AddressRefused", "NetworkGuard"]

logger = logging.getLogger("crawler_ext.hosts.netguard")


class AddressRefused(Exception):
    """A name resolved to an address the guard refuses (resolvers report it as a failed
    look-up)."""


class NetworkGuard:
    def __init__(self, allowed: Iterable[str] = ()) -> None:
        try:
            self.allowed = [ipaddress.ip_network(c, strict=False) for c in allowed]
        except ValueError as exc:
            raise ConfigError(f"CRAWLER_EXT_ALLOWED_NETWORKS: {exc}") from None
        self.refusals = 0

    def allows(self, address: str) -> bool:
        ip = literal_address(address)
        if ip is None:
            return True  # a name, not an address: the resolver checks what it resolves to
        return self._allows_ip(ip)

    def _allows_ip(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        if any(ip.version == net.version and ip in net for net in self.allowed):
            return True
        if isinstance(ip, ipaddress.IPv6Address):
            inner = embedded_v4(ip)
            if inner is not None:
                return self._allows_ip(inner)
        return not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
                    or ip.is_reserved or ip.is_unspecified)

    def resolved(self, address: str, name: str) -> str:
        """A resolver's answer for ``name``: the address, or :class:`AddressRefused` (the
        resolver reports it as a failed look-up, so the first refusal is logged with why)."""
        if self.allows(address):
            return address
        self.refusals += 1
        if self.refusals == 1:
            logger.warning("%s resolves to %s, a private or reserved address: refused "
                           "(CRAWLER_EXT_ALLOWED_NETWORKS can allow it; further refusals show "
                           "as DNS look-up failures)", name, address)
        raise AddressRefused(f"{name} resolves to {address}, a private or reserved address")
