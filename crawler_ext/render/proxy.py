"""The rendering pool's way to the network: a forward proxy on loopback in the crawl's own
process, through which every browser context sends its requests.

Chromium then never resolves a name itself (it is launched with every name mapped to
nothing): the proxy connects with the reactor's name resolution, where the SSRF guard has
pinned the address it checked for the page (:mod:`crawler_ext.hosts.pinning`) and judges any
other answer -- so a page's navigation and its sub-requests go to the address the guard
checked, whatever resolver is installed, and DNS rebinding between the check and the browser's
connection is impossible.  Plain HTTP requests arrive in absolute form and are sent on in
origin form, one request a connection (``Connection: close``: a browser reuses a proxy
connection for other origins); HTTPS arrives as ``CONNECT host:port`` and is relayed as bytes.
A request the proxy cannot connect answers 502.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from twisted.internet.protocol import ClientFactory, Factory, Protocol

__all__ = ["GuardProxy"]

logger = logging.getLogger(__name__)

MAX_HEAD = 64 * 1024
_HOP_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


class _Upstream(Protocol):
    """The server side of one proxied request: relays its bytes to the browser."""

    transport: Any

    def __init__(self, browser: _Browser, first: bytes) -> None:
        self.browser, self.first = browser, first

    def connectionMade(self) -> None:
        self.browser.upstream = self
        if self.browser.tunnel:
            self.browser.transport.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if self.first or self.browser.pending:
            self.transport.write(self.first + self.browser.pending)
        self.browser.pending = b""
        self.browser.transport.resumeProducing()

    def dataReceived(self, data: bytes) -> None:
        self.browser.transport.write(data)

    def connectionLost(self, reason: Any = None) -> None:
        self.browser.transport.loseConnection()


class _UpstreamFactory(ClientFactory):
    def __init__(self, browser: _Browser, first: bytes) -> None:
        self.browser, self.first = browser, first

    def buildProtocol(self, addr: Any) -> _Upstream:
        return _Upstream(self.browser, self.first)

    def clientConnectionFailed(self, connector: Any, reason: Any) -> None:
        self.browser.failed(reason.getErrorMessage())


class _Browser(Protocol):
    """The browser side: reads one request head, then relays."""

    transport: Any

    def __init__(self, proxy: GuardProxy) -> None:
        self.proxy = proxy
        self.head = b""
        self.upstream: _Upstream | None = None
        self.tunnel = False
        self.connecting = False
        self.pending = b""  # bytes that came while the upstream connection was made

    def dataReceived(self, data: bytes) -> None:
        if self.upstream is not None:
            self.upstream.transport.write(data)
            return
        if self.connecting:  # (paused meanwhile; what was read already goes on after)
            self.pending += data
            return
        self.head += data
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            if len(self.head) > MAX_HEAD:
                self.transport.loseConnection()
            return
        self._open(self.head[:end], self.head[end + 4:])

    def _open(self, head: bytes, rest: bytes) -> None:
        lines = head.split(b"\r\n")
        try:
            method, target, version = lines[0].split(b" ", 2)
            if method == b"CONNECT":
                host, _, port_text = target.decode("ascii").rpartition(":")
                host, port, first = host.strip("[]"), int(port_text), rest
                self.tunnel = True
            else:
                parts = urlsplit(target.decode("ascii"))
                if parts.scheme != "http" or not parts.hostname:
                    raise ValueError(target)
                host, port = parts.hostname, parts.port or 80
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                headers = [line for line in lines[1:]
                           if line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
                first = b"\r\n".join([b"%s %s %s" % (method, path.encode("ascii"), version),
                                      *headers, b"Connection: close", b"", b""]) + rest
        except (ValueError, UnicodeError):
            self._answer(400, "bad proxy request")
            return
        self.head, self.connecting = b"", True
        self.transport.pauseProducing()
        self.proxy.connect(host, port, _UpstreamFactory(self, first))

    def failed(self, why: str) -> None:
        self.proxy.failures += 1
        self._answer(502, why)

    def _answer(self, status: int, why: str) -> None:
        body = why.encode("utf-8", "replace")[:500]
        self.transport.write(b"HTTP/1.1 %d %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                             % (status, b"Bad Gateway" if status == 502 else b"Bad Request",
                                len(body), body))
        self.transport.loseConnection()

    def connectionLost(self, reason: Any = None) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.loseConnection()


class GuardProxy(Factory):
    """``start()`` listens on 127.0.0.1 (a free port) and returns the port.  ``before_connect``
    is called before each connection (the guard puts its pinned resolution in place)."""

    def __init__(self, before_connect: Callable[[], object] = lambda: None,
                 reactor: Any = None) -> None:
        self.before_connect = before_connect
        self._reactor = reactor
        self.port: Any = None
        self.failures = 0

    @property
    def reactor(self) -> Any:
        if self._reactor is None:
            from twisted.internet import reactor

            self._reactor = reactor
        return self._reactor

    def start(self) -> int:
        if self.port is None:
            self.port = self.reactor.listenTCP(0, self, interface="127.0.0.1")
        return int(self.port.getHost().port)

    def stop(self) -> None:
        if self.port is not None:
            self.port.stopListening()
            self.port = None

    def buildProtocol(self, addr: Any) -> _Browser:
        return _Browser(self)

    def connect(self, host: str, port: int, factory: ClientFactory) -> None:
        self.before_connect()
        # the reactor resolves the name: its pinned address, or an answer the guard judged
        self.reactor.connectTCP(host, port, factory, timeout=30)
