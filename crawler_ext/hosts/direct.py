"""Direct connections: a new connection to a name the guard pinned goes straight to the
pinned address, without Twisted's ``HostnameEndpoint``.

Twisted's HTTP/1.1 agent connects through a ``HostnameEndpoint``, which builds a new
zope-interface class for each connection and asks the reactor's name resolver again; the
pinned resolver (:mod:`crawler_ext.hosts.pinning`) then answers with the pin.  On a broad
crawl, where almost every fetch opens a connection, that took about 6 % of the crawl
process's CPU (py-spy, ``benchmarks/run.py broad``; ``docs/broad.md``).
:class:`DirectConnectionPool` is Twisted's connection pool which, when the endpoint asked for
is such a ``HostnameEndpoint`` (plain or inside TLS) and its name is pinned to an address the
guard allows, connects a TCP endpoint to that address instead -- the address the pinned
resolver would have given, with the same connect timeout and bind address, TLS still
verified against the name.  Anything else (an unpinned, refused or forbidden name, an
endpoint of another kind, another resolver installed) goes the standard way, through the
pinned resolver and its checks; a proxy's connection is judged by the proxy's name alike.
Stats: ``hosts/connections_direct``, ``hosts/connections_resolved``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from twisted.internet.endpoints import (
    HostnameEndpoint,
    TCP4ClientEndpoint,
    TCP6ClientEndpoint,
    _WrapperEndpoint,
)
from twisted.web.client import HTTPConnectionPool

__all__ = ["DirectConnectionPool"]


class DirectConnectionPool(HTTPConnectionPool):
    def __init__(self, reactor: Any, persistent: bool = True,
                 inc: Callable[[str], None] = lambda name: None) -> None:
        super().__init__(reactor, persistent)
        self._inc = inc

    def _newConnection(self, key: Hashable, endpoint: Any) -> Any:
        direct = self._direct(endpoint)
        self._inc("hosts/connections_resolved" if direct is None else
                  "hosts/connections_direct")
        return super()._newConnection(key, endpoint if direct is None else direct)

    def _direct(self, endpoint: Any) -> Any:
        """The endpoint to the pinned address, or None (the standard way)."""
        wrapper = None
        if type(endpoint) is _WrapperEndpoint:  # TLS around the TCP endpoint
            wrapper, endpoint = endpoint._wrapperFactory, endpoint._wrappedEndpoint
        if type(endpoint) is not HostnameEndpoint:
            return None
        pinned = getattr(self._reactor.nameResolver, "allowed_pin", None)
        try:
            address = pinned(endpoint._hostText) if pinned is not None else None
            port, timeout = endpoint._port, endpoint._timeout
            bind = endpoint._bindAddress
        except AttributeError:  # another Twisted's endpoint: the standard way
            return None
        if not address:
            return None
        kind = TCP6ClientEndpoint if ":" in address else TCP4ClientEndpoint
        tcp = kind(self._reactor, address, port, timeout=timeout, bindAddress=bind)
        return tcp if wrapper is None else _WrapperEndpoint(tcp, wrapper)
