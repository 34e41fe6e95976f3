"""A hostile web on loopback: servers that misbehave on purpose, for the reliability tests.

``python -m crawler_ext.testweb.hostile --log requests.jsonl --forbidden-log forbidden.jsonl``
serves virtual hosts ``<kind>.hostile.test`` on 127.0.0.1 and opens a *forbidden* listener on
127.0.0.3 (outside the crawl's allowed networks) that logs every connection it receives: a
crawl that obeys the SSRF guard leaves that log empty.

Hosts (each with a home page ``/`` linking its pages):

* ``robots``: ``/robots.txt`` redirects to the forbidden address.
* ``redirects``: ``/to/<form>`` redirects to the forbidden address spelled as ``plain``
  (127.0.0.3), ``decimal``, ``hex``, ``octal``, ``short`` (127.3), ``mapped``
  (``[::ffff:127.0.0.3]``), ``compat``, ``v6loop`` (``[::1]``), ``zero`` (0.0.0.0); ``/ok/N`` are
  normal pages.
* ``hops``: ``/robots.txt`` redirects six times (``/robots1.txt`` ... ``/robots6.txt``).
* ``retryafter``: every page answers 429 with ``Retry-After: 999999``.
* ``retrydate``: every page answers 503 with a ``Retry-After`` HTTP-date a week ahead.
* ``crawldelay``: robots.txt says ``Crawl-delay: 86400``.
* ``cookies``: pages set cookies for their registrable domain.
* ``normal``: five ordinary pages.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
import time
from email.utils import formatdate
from typing import IO, Any

__all__ = ["FORBIDDEN_ADDRESS", "forbidden_forms", "main"]

FORBIDDEN_ADDRESS = "127.0.0.3"


def forbidden_forms(port: int) -> dict[str, str]:
    """The forbidden listener's address in every spelling, as URL authorities."""
    return {"plain": f"127.0.0.3:{port}", "decimal": f"2130706435:{port}",
            "hex": f"0x7f000003:{port}", "octal": f"0177.0.0.3:{port}",
            "short": f"127.3:{port}", "mapped": f"[::ffff:127.0.0.3]:{port}",
            "compat": f"[::127.0.0.3]:{port}", "v6loop": f"[::1]:{port}",
            "zero": f"0.0.0.0:{port}"}


def _page(links: list[str], text: str = "") -> bytes:
    body = "".join(f'<p><a href="{link}">{link}</a></p>' for link in links)
    return f"<html><body><h1>{text}</h1><p>{text}</p>{body}</body></html>".encode()


def respond(host: str, path: str, forbidden_port: int) -> tuple[int, dict[str, str], bytes]:
    kind = host.split(".")[0]
    forms = forbidden_forms(forbidden_port)
    pages = [f"/ok/{i}" for i in range(5)]
    html = {"Content-Type": "text/html; charset=utf-8"}
    if path == "/robots.txt":
        if kind == "robots":
            return 301, {"Location": f"http://{forms['plain']}/robots.txt"}, b""
        if kind == "hops":
            return 301, {"Location": "/robots1.txt"}, b""
        if kind == "crawldelay":
            return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nCrawl-delay: 86400\n"
        return 404, {"Content-Type": "text/plain"}, b"no robots.txt"
    if kind == "hops" and path.startswith("/robots") and path.endswith(".txt"):
        n = int(path[len("/robots"):-4] or 0)
        if n < 6:
            return 301, {"Location": f"/robots{n + 1}.txt"}, b""
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"
    if kind == "retryafter" and path != "/":
        return 429, {"Retry-After": "999999", **html}, b"slow down"
    if kind == "retrydate" and path != "/":
        return 503, {"Retry-After": formatdate(time.time() + 7 * 86400, usegmt=True), **html}, \
            b"come back next week"
    if kind == "redirects" and path.startswith("/to/"):
        form = path[len("/to/"):]
        if form in forms:
            return 302, {"Location": f"http://{forms[form]}/secret"}, b""
    if path == "/":
        links = pages + ([f"/to/{form}" for form in forms] if kind == "redirects" else [])
        headers = dict(html)
        return 200, headers, _page(links, f"{kind} home page")
    if path in pages:
        headers = dict(html)
        if kind == "cookies":
            headers["Set-Cookie"] = f"session={path[-1]}; Domain=cookies.hostile.test; Path=/"
        words = " ".join(hashlib.sha1(f"{kind}{path}{j}".encode()).hexdigest()[:8]
                         for j in range(40))  # a text of its own: no page duplicates another
        return 200, headers, _page(pages, f"{kind} page {path}: {words}")
    return 404, html, b"<html><body>not found</body></html>"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawler_ext.testweb.hostile",
                                     description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True, help="request log file (JSON lines)")
    parser.add_argument("--forbidden-log", required=True,
                        help="connections received by the forbidden listener (JSON lines)")
    args = parser.parse_args(argv)
    from twisted.internet import reactor
    from twisted.internet.protocol import Factory, Protocol
    from twisted.web.resource import Resource
    from twisted.web.server import Site

    log: IO[str] = open(args.log, "a", encoding="utf-8")  # noqa: SIM115
    forbidden_log: IO[str] = open(args.forbidden_log, "a", encoding="utf-8")  # noqa: SIM115

    class Forbidden(Protocol):
        def connectionMade(self) -> None:
            forbidden_log.write(json.dumps({"time": time.time(),
                                            "peer": self.transport.getPeer().host}) + "\n")
            forbidden_log.flush()
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
            self.transport.loseConnection()

    forbidden = reactor.listenTCP(0, Factory.forProtocol(Forbidden), interface=FORBIDDEN_ADDRESS)
    forbidden_port = forbidden.getHost().port

    class Hostile(Resource):
        isLeaf = True

        def render(self, request: Any) -> bytes:
            start = time.time()
            host = (request.getHeader("host") or "").split(":")[0].lower()
            path = request.uri.decode("latin-1")
            status, headers, body = respond(host, path, forbidden_port)
            request.setResponseCode(status)
            for name, value in headers.items():
                request.setHeader(name, value)
            log.write(json.dumps({"host": host, "path": path, "start": round(start, 6),
                                  "end": round(time.time(), 6),
                                  "client": request.getClientAddress().host, "status": status,
                                  "bytes": len(body)}) + "\n")
            log.flush()
            return body

    site = Site(Hostile())
    site.log = lambda request: None
    port = reactor.listenTCP(args.port, site, interface="127.0.0.1").getHost().port
    signal.signal(signal.SIGTERM, lambda *_: reactor.callFromThread(reactor.stop))
    print(f"READY port={port} forbidden={forbidden_port}", flush=True)
    reactor.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
