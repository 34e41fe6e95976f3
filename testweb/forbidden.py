"""A *forbidden* listener for the SSRF tests: a TCP server on a loopback address outside the
crawl's allowed networks that logs every connection it receives (one JSON line each) and
answers "secret".  A crawl that obeys the SSRF guard leaves its log empty."""

from __future__ import annotations

import json
import time

__all__ = ["listen_forbidden"]


def listen_forbidden(address: str, log_path: str, port: int = 0) -> int:
    """Start the listener on ``address`` (``port``, or any free one) in this process' reactor;
    its port."""
    from twisted.internet import reactor
    from twisted.internet.protocol import Factory, Protocol

    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 -- open while serving

    class Forbidden(Protocol):
        def connectionMade(self) -> None:
            log.write(json.dumps({"time": time.time(),
                                  "peer": self.transport.getPeer().host}) + "\n")
            log.flush()
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
            self.transport.loseConnection()

    return reactor.listenTCP(port, Factory.forProtocol(Forbidden), interface=address).getHost().port
