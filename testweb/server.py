"""Serve a :class:`~testweb.model.TestWeb` over HTTP on loopback, logging every request.

One Twisted site answers for every virtual host (chosen by the ``Host`` header).  Each request
is delayed by its host's latency and then written to the request log as one JSON line:
``{"host", "path", "start", "end", "client", "status", "bytes"}`` (times are Unix seconds).
"""

from __future__ import annotations

import ipaddress
import time
from typing import IO, Any

from twisted.internet import reactor
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Site

from testweb.model import TestWeb
from testweb.netlab import in_test_namespace
from testweb.requestlog import write_entry

__all__ = ["TestWebResource", "listen"]


class TestWebResource(Resource):
    isLeaf = True

    def __init__(self, web: TestWeb, port: int, log: IO[str] | None) -> None:
        super().__init__()
        self.web, self.port, self.log = web, port, log
        self.state: dict[Any, Any] = {}

    def render(self, request: Any) -> Any:
        start = time.time()
        host = (request.getHeader("host") or "").split(":")[0].lower()
        target = request.uri.decode("latin-1")
        accept = request.getHeader("accept-encoding") or ""
        conditional = {name: value for name in ("if-none-match", "if-modified-since")
                       if (value := request.getHeader(name)) is not None}
        reply = self.web.respond(host, target, self.port, start, "gzip" in accept, self.state,
                                 conditional)
        request.setResponseCode(reply.status)
        for name, value in reply.headers.items():
            request.setHeader(name, value)
        request.setHeader("Content-Length", str(len(reply.body)))

        def finish() -> None:
            if request.finished or request._disconnected:
                return
            if request.method != b"HEAD":
                request.write(reply.body)
            request.finish()
            if self.log is not None:
                write_entry(self.log, request, host, target, start, reply.status,
                            len(reply.body))

        reactor.callLater(reply.delay, finish)
        return NOT_DONE_YET


def listen(web: TestWeb, port: int = 0, address: str = "127.0.0.1",
           log: IO[str] | None = None) -> int:
    """Start serving on ``address:port`` (loopback only); return the bound port."""
    if not ipaddress.ip_address(address).is_loopback and not in_test_namespace():
        raise ValueError(f"the test web binds loopback addresses only (or any address in a "
                         f"network namespace a test made), not {address}")
    resource = TestWebResource(web, port, log)
    site = Site(resource)
    site.log = lambda request: None  # the request log above replaces the access log
    listening = reactor.listenTCP(port, site, interface=address)
    resource.port = listening.getHost().port
    return resource.port
