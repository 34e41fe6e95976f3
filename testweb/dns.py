"""The test web's DNS server (twisted.names) on loopback, logging every query.

It is authoritative for the test web's domain: ``hNNNN.<domain>`` (a host of the web) answers
an A record with the server's address and a fixed TTL, ``alias.hNNNN.<domain>`` a CNAME to
it, any other name NXDOMAIN.  Each query is logged as a JSON line ``{"name", "type", "time"}``.
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

__all__ = ["TestWebAuthority", "listen_dns"]


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
