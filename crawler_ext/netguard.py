"""The SSRF guard: never fetch private, loopback, link-local, multicast or reserved addresses
unless ``CRAWLER_EXT_ALLOWED_NETWORKS`` lists them (e.g. ``127.0.0.0/8`` for the test web).

It is enforced where an address becomes known: in the resolver for host names (a refused
name fails like an unknown one), and at admission for IP-literal URLs.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable

from twisted.internet.error import DNSLookupError

from crawler_ext import config

__all__ = ["NetworkGuard"]

logger = logging.getLogger(__name__)


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
        try:
            ip = ipaddress.ip_address(address.strip("[]"))
        except ValueError:
            return True  # a name, not an address: the resolver checks what it resolves to
        if any(ip in net for net in self.allowed):
            return True
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
