"""The test web's DNS server (twisted.names) on loopback, logging every query.

It is authoritative for the test web's domain: ``hNNNN.<domain>`` (a host of the web) answers
an A record with the server's address and a fixed TTL, ``alias.hNNNN.<domain>`` a CNAME to
it, any other name NXDOMAIN.  Each query is logged as a JSON line ``{"name", "type", "time"}``.

:class:`RebindingAuthority` is the DNS of an attacker, for the SSRF guard's tests: every answer
has a TTL of 0; a name under ``rebind.test`` answers an allowed address to its first address
query, a forbidden one to its second, and so on alternately (DNS rebinding between a check
and the connection), under ``pair.rebind.test`` two allowed answers, then two forbidden, and
so on; a name under ``late.test`` leaves its first query unanswered (the asker times out) and
answers the forbidden address after.
"""

from __future__ import annotations

import ipaddress
import json
import re
import time
from typing import IO, Any

from twisted.internet import defer, reactor
from twisted.internet.error import CannotListenError
from twisted.names import dns, server
from twisted.names.common import ResolverBase
from twisted.names.error import AuthoritativeDomainError

__all__ = ["PlainResolver", "RebindingAuthority", "TestWebAuthority", "listen_dns",
           "listen_rebinding_dns", "serve_rebinding"]


class TestWebAuthority(ResolverBase):
    def __init__(self, domain: str, hosts: int, address: str, ttl: int,
                 log: IO[str] | None = None) -> None:
        super().__init__()
        self.domain, self.hosts, self.address, self.ttl, self.log = (
            domain.lower(), hosts, address, ttl, log)
        self._host = re.compile(r"^(alias\.)?h(\d+)\." + re.escape(self.domain) + r"$")

    def _lookup(self, name: bytes, cls: int, type: int, timeout: Any) -> defer.Deferred:
        text = name.decode("ascii", "replace").lower().rstrip(".")
        if self.log is not None:
            self.log.write(json.dumps({"name": text, "type": dns.QUERY_TYPES.get(type, type),
                                       "time": round(time.time(), 6)}) + "\n")
            self.log.flush()
        match = self._host.match(text)
        if match is None or int(match.group(2)) >= self.hosts:
            return defer.fail(AuthoritativeDomainError(text))
        answers: list[dns.RRHeader] = []
        target = text
        if match.group(1):  # alias.hNNNN -> hNNNN
            target = text.split(".", 1)[1]
            answers.append(dns.RRHeader(name, dns.CNAME, dns.IN, self.ttl,
                                        dns.Record_CNAME(target, self.ttl), auth=True))
        if type in (dns.A, dns.ALL_RECORDS) and ipaddress.ip_address(self.address).version == 4:
            answers.append(dns.RRHeader(target, dns.A, dns.IN, self.ttl,
                                        dns.Record_A(self.address, self.ttl), auth=True))
        return defer.succeed((answers, [], []))


def listen_dns(domain: str, hosts: int, address: str = "127.0.0.1", port: int = 0,
               ttl: int = 300, log: IO[str] | None = None) -> int:
    """Serve the test web's names over UDP and TCP on ``address``; return the port."""
    if not ipaddress.ip_address(address).is_loopback:
        raise ValueError(f"the test web's DNS binds loopback addresses only, not {address}")
    authority = TestWebAuthority(domain, hosts, address, ttl, log)
    factory = server.DNSServerFactory(authorities=[authority])
    protocol = dns.DNSDatagramProtocol(factory)
    udp = reactor.listenUDP(port, protocol, interface=address)
    bound = udp.getHost().port
    try:
        reactor.listenTCP(bound, factory, interface=address)
    except CannotListenError:  # TCP port taken: UDP answers alone (every answer here is small)
        pass
    return bound


class RebindingAuthority(ResolverBase):
    def __init__(self, allowed: str, forbidden: str, log: IO[str] | None = None) -> None:
        super().__init__()
        self.allowed, self.forbidden, self.log = allowed, forbidden, log
        self.asked: dict[str, int] = {}

    def _lookup(self, name: bytes, cls: int, type: int, timeout: Any) -> defer.Deferred:
        text = name.decode("ascii", "replace").lower().rstrip(".")
        if not text.endswith((".rebind.test", ".late.test")):
            return defer.fail(AuthoritativeDomainError(text))
        if type not in (dns.A, dns.ALL_RECORDS):
            return defer.succeed(([], [], []))  # no AAAA: the A answers decide
        n = self.asked[text] = self.asked.get(text, 0) + 1
        if text.endswith(".late.test"):
            address = None if n == 1 else self.forbidden
        elif text.endswith(".pair.rebind.test"):  # two allowed answers, then two forbidden
            address = self.allowed if (n - 1) // 2 % 2 == 0 else self.forbidden
        else:
            address = self.allowed if n % 2 else self.forbidden
        if self.log is not None:
            self.log.write(json.dumps({"name": text, "n": n, "answer": address,
                                       "time": round(time.time(), 6)}) + "\n")
            self.log.flush()
        if address is None:
            return defer.Deferred()  # never answered: the asker times out
        return defer.succeed(([dns.RRHeader(name, dns.A, dns.IN, 0, dns.Record_A(address, 0),
                                            auth=True)], [], []))


def listen_rebinding_dns(allowed: str, forbidden: str, log: IO[str] | None = None) -> int:
    """Serve :class:`RebindingAuthority` over UDP on 127.0.0.1 (any free port); the port."""
    factory = server.DNSServerFactory(authorities=[RebindingAuthority(allowed, forbidden, log)])
    return reactor.listenUDP(0, dns.DNSDatagramProtocol(factory),
                             interface="127.0.0.1").getHost().port


class PlainResolver:
    """A project's own DNS resolver without the pack's checks (``TWISTED_DNS_RESOLVER =
    "testweb.dns.PlainResolver"``): asks the servers of ``TESTWEB_DNS_SERVER`` (host:port)
    each time, caches nothing, judges nothing."""

    def __init__(self, reactor: Any, server_address: str) -> None:
        from twisted.names import client

        host, port = server_address.rsplit(":", 1)
        self.reactor = reactor
        self.client = client.Resolver(servers=[(host, int(port))], reactor=reactor)

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> PlainResolver:
        return cls(reactor, crawler.settings.get("TESTWEB_DNS_SERVER"))

    def install_on_reactor(self) -> None:
        from twisted.internet.interfaces import IResolverSimple
        from zope.interface import directlyProvides

        directlyProvides(self, IResolverSimple)
        self.reactor.installResolver(self)

    def getHostByName(self, name: str, timeout: Any = ()) -> defer.Deferred:
        from twisted.internet.error import DNSLookupError

        def failed(failure: Any) -> None:  # as Twisted's and Scrapy's resolvers report it
            raise DNSLookupError(f"{name}: {failure.getErrorMessage()}")

        return self.client.getHostByName(name, timeout or (2,)).addErrback(failed)


def serve_rebinding(forbidden: str, forbidden_log: str, web_port: int, dns_log: str) -> int:
    """The attacker of the SSRF tests beside a test web on 127.0.0.1:``web_port``: its DNS
    (:class:`RebindingAuthority`, logging to ``dns_log``) and a forbidden listener at the web's
    own port on the ``forbidden`` address (a re-pointed name keeps the URL's port).  The DNS
    port."""
    from testweb.forbidden import listen_forbidden

    listen_forbidden(forbidden, forbidden_log, web_port)
    return listen_rebinding_dns("127.0.0.1", forbidden,
                                open(dns_log, "a", encoding="utf-8"))  # noqa: SIM115
