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

A direct connection also leaves no reference cycle behind.  Twisted's TCP endpoint keeps a
closed connection's connector, transport and wrapping factory in cycles (the connector and
its transport point at each other, the factory and the connector too, and the factory's
Deferred may hold the protocol, which holds the transport), with Scrapy's
client factory, the pool's callback and the connection's Deferred hanging from them: about
14 objects a connection that reference counting cannot free, left for a full collection.  On
a broad crawl almost every fetch opens a connection, and with the collector tuned for it
(``CRAWLER_EXT_GC_THRESHOLD``) full collections are rare: at the end of a crawl of 4,000
hosts, 8,276 closed connections waited.  :class:`CycleFreeTCPEndpoint` connects as Twisted's
``TCP4ClientEndpoint``/``TCP6ClientEndpoint`` do and, when the connection is lost or fails,
drops the back references, so that its objects are freed at once.  (A transport that never
connected keeps a cycle of its own, its connect step as its read and write handlers, which
Twisted may set again after the failure: left to the collector.)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from twisted.internet import defer
from twisted.internet.endpoints import (
    HostnameEndpoint,
    TCP4ClientEndpoint,
    _WrapperEndpoint,
    _WrappingFactory,
)
from twisted.web.client import HTTPConnectionPool

__all__ = ["CycleFreeTCPEndpoint", "DirectConnectionPool"]


class _CycleFreeWrappingFactory(_WrappingFactory):
    """Twisted's wrapping factory, dropping its connector, its connection's Deferred (fired
    by then; it may hold the protocol, which holds the transport) and the connector's
    transport once the connection is over: the connector reports it lost or failed after
    its transport is closed, and none of the three is read again (an endpoint's connector
    never reconnects)."""

    def clientConnectionFailed(self, connector: Any, reason: Any) -> None:
        super().clientConnectionFailed(connector, reason)
        self._release(connector)

    def clientConnectionLost(self, connector: Any, reason: Any) -> None:
        super().clientConnectionLost(connector, reason)
        self._release(connector)

    def _release(self, connector: Any) -> None:
        self.__dict__.pop("_connector", None)
        self.__dict__.pop("_onConnection", None)
        if getattr(connector, "transport", None) is not None:
            connector.transport = None


class CycleFreeTCPEndpoint(TCP4ClientEndpoint):
    """A TCP client endpoint (IPv4 or IPv6: the reactor tells by the address) whose closed
    connections are freed by reference counting."""

    def connect(self, protocolFactory: Any) -> Any:
        try:
            wrapping = _CycleFreeWrappingFactory(protocolFactory)
            self._reactor.connectTCP(self._host, self._port, wrapping, timeout=self._timeout,
                                     bindAddress=self._bindAddress)
            return wrapping._onConnection
        except Exception:  # noqa: BLE001 -- as Twisted's endpoint: the error is the Deferred's
            return defer.fail()


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
        tcp = CycleFreeTCPEndpoint(self._reactor, address, port, timeout=timeout,
                                   bindAddress=bind)
        return tcp if wrapper is None else _WrapperEndpoint(tcp, wrapper)
