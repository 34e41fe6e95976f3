"""A hostile web on loopback: servers that misbehave on purpose, for the reliability tests.

``python -m testweb.hostile --log requests.jsonl --forbidden-log forbidden.jsonl``
serves virtual hosts ``<kind>.hostile.test`` on 127.0.0.1 and opens a *forbidden* listener on
127.0.0.3 (outside the crawl's allowed networks) that logs every connection it receives: a
crawl that obeys the SSRF guard leaves that log empty.

Hosts (each with a home page ``/`` linking its pages):

* ``robots``: ``/robots.txt`` redirects to the forbidden address.
* ``redirects``: ``/to/<form>`` redirects to the forbidden address spelled as ``plain``
  (127.0.0.3), ``decimal``, ``hex``, ``octal``, ``short`` (127.3), ``mapped``
  (``[::ffff:127.0.0.3]``), ``compat``, ``v6loop`` (``[::1]``), ``zero`` (0.0.0.0); ``/ok/N`` are
  normal pages.
* ``sitemaps``: ``/sitemap.xml`` is a sitemap index of ``/sitemap-pages.xml`` (its ``/ok/N``
  pages and a page URL at the forbidden address in every form), ``/to/<form>`` (redirects to
  a sitemap at the forbidden address) and the forbidden address's own sitemap.
* ``hops``: ``/robots.txt`` redirects six times (``/robots1.txt`` ... ``/robots6.txt``).
* ``retryafter``: every page answers 429 with ``Retry-After: 999999``.
* ``retrydate``: every page answers 503 with a ``Retry-After`` HTTP-date a week ahead.
* ``crawldelay``: robots.txt says ``Crawl-delay: 86400``.
* ``cookies``: pages set cookies for their registrable domain.
* ``normal``: five ordinary pages.
* every host: ``/go/<path>`` redirects to ``/<path>``, ``/xgo/<host>/<path>`` to
  ``http://<host>:<port>/<path>``.
* ``hazards``: ``/h/<name>`` for each of ``HAZARDS`` (gzip bomb, huge body, lying
  Content-Length, slow body, no answer, reset mid-body, invalid status line, 5,000 headers,
  a 1 MB header line, a redirect loop, a 30-hop chain, 50,000 links, 100,000-deep nesting,
  invalid UTF-8, a lying charset), beside five ordinary pages.
* ``cookiebomb``: ``/h/cookies`` sets 10,000 cookies (the host's later requests then carry
  them, and the server refuses them: its own doing).
* ``robots5mb``, ``robotsbinary``, ``robotshtml``, ``robotsslow``, ``robots503``: a robots.txt
  of 5 MB, of binary garbage, an HTML page, one that never answers, and one that answers 503;
  five ordinary pages each.
* ``sink``: ``/sink`` links 200,000 URLs ``/gone/N`` that all answer 404 (a budget sink).
* ``failing``: its home page links ``FAILING_PAGES`` pages ``/f/N`` that always answer 503
  (the even ones with ``Retry-After: 1``) and ``/never``, which never answers (a host whose
  fetches keep failing: the error budget).

Legitimate sites that look like traps (a crawler must fetch them whole):

* ``shop``: a catalogue of ``CATALOGUE_ITEMS`` distinct ``/item/N`` pages, listed 100 a page
  on ``/catalogue/1`` ... ``/catalogue/50`` (each links the next).
* ``blog``: ``PAGINATION`` distinct pages ``/page/1`` ... ``/page/200``, each linking its
  previous and next page only.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from email.utils import formatdate
from typing import IO, Any

__all__ = ["CATALOGUE_ITEMS", "FAILING_PAGES", "FORBIDDEN_ADDRESS", "HAZARDS", "PAGINATION",
           "SINK_LINKS", "forbidden_forms", "main"]

FAILING_PAGES = 12

HAZARDS = ("gzip-bomb", "huge", "lying-length", "slow-body", "no-answer", "reset",
           "bad-status", "many-headers", "huge-header", "loop", "chain", "links", "deep",
           "bad-utf8", "lying-charset")

FORBIDDEN_ADDRESS = "127.0.0.3"
CATALOGUE_ITEMS = 5_000
PAGINATION = 200


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


def respond(host: str, path: str, forbidden_port: int,
            authority: str = "") -> tuple[int, dict[str, str], bytes]:
    kind = host.split(".")[0]
    forms = forbidden_forms(forbidden_port)
    pages = [f"/ok/{i}" for i in range(5)]
    html = {"Content-Type": "text/html; charset=utf-8"}
    if path == "/robots.txt":
        if kind == "robots":
            return 301, {"Location": f"http://{forms['plain']}/robots.txt"}, b""
        if kind == "hops":
            return 301, {"Location": "/robots1.txt"}, b""
        if kind == "robots503":
            return 503, {"Content-Type": "text/plain"}, b"robots.txt unavailable"
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
    if kind == "failing" and path.startswith("/f/"):
        retry = {"Retry-After": "1"} if int(path[3:] or 0) % 2 == 0 else {}
        return 503, {**retry, **html}, b"unavailable"
    if kind == "retrydate" and path != "/":
        return 503, {"Retry-After": formatdate(time.time() + 7 * 86400, usegmt=True), **html}, \
            b"come back next week"
    if path.startswith("/xgo/"):  # /xgo/<host>/<path>: a redirect to another host
        _, _, target, rest = path.split("/", 3)
        port = authority.rsplit(":", 1)[1] if ":" in authority else "80"
        return 302, {"Location": f"http://{target}:{port}/{rest}"}, b""
    if kind == "hazards" and path.startswith("/h/loop"):
        return 302, {"Location": "/h/loop"}, b""
    if kind == "hazards" and path.startswith("/h/chain"):
        n = int(path[len("/h/chain"):] or 0)
        if n < 30:
            return 302, {"Location": f"/h/chain{n + 1}"}, b""
        return 200, html, _page(pages, "end of chain")
    if kind == "sink" and path == "/sink":
        return 200, html, _sink_page()
    if kind == "hazards" and path == "/h/links":
        return 200, html, _page([f"/l/{i}" for i in range(50_000)], "fifty thousand links")
    if kind == "hazards" and path == "/h/deep":
        return 200, html, b"<html><body>" + b"<div>" * 100_000 + b"deep" + \
            b"</div>" * 100_000 + b"</body></html>"
    if kind == "hazards" and path == "/h/bad-utf8":
        return 200, html, b"<html><body><p>bad \xff\xfe\xc3\x28 bytes " + b"\x80" * 1000 + \
            b'</p><a href="/ok/0">ok</a></body></html>'
    if kind == "hazards" and path == "/h/lying-charset":
        return 200, {"Content-Type": "text/html; charset=iso-2022-jp"}, \
            "<html><body><p>caf\u00e9 \u2603 na\u00efve</p></body></html>".encode()
    if kind == "cookiebomb" and path == "/h/cookies":
        return 200, {"Set-Cookie": [f"c{i}=v{i}; Path=/" for i in range(10_000)], **html}, \
            _page(pages, "ten thousand cookies")
    if kind == "hazards" and path == "/h/many-headers":
        return 200, {**{f"X-H{i}": "v" for i in range(5_000)}, **html}, _page(pages, "headers")
    if path.startswith("/go/"):  # a plain redirect to the path after /go
        return 302, {"Location": path[len("/go"):]}, b""
    if kind == "sitemaps" and path in ("/sitemap.xml", "/sitemap-pages.xml"):
        return 200, {"Content-Type": "application/xml"}, _sitemap(authority or host, path, forms)
    if kind in ("redirects", "sitemaps") and path.startswith("/to/"):
        form = path[len("/to/"):]
        if form in forms:
            return 302, {"Location": f"http://{forms[form]}/secret"}, b""
    if kind == "robots5mb" and path == "/robots.txt":
        return 200, {"Content-Type": "text/plain"}, \
            b"User-agent: *\nDisallow: /private/\n" + b"# filler\n" * (5 * 1024 * 1024 // 9)
    if kind == "robotsbinary" and path == "/robots.txt":
        return 200, {"Content-Type": "text/plain"}, bytes(range(256)) * 4096
    if kind == "robotshtml" and path == "/robots.txt":
        return 200, {"Content-Type": "text/html"}, _page(pages, "this is not a robots.txt")
    legit = _legit_site(kind, path)
    if legit is not None:
        return legit
    if path == "/":
        links = pages + ([f"/to/{form}" for form in forms] if kind == "redirects" else []) + \
            ([f"/h/{name}" for name in HAZARDS] if kind == "hazards" else []) + \
            (["/h/cookies"] if kind == "cookiebomb" else []) + \
            (["/sink"] if kind == "sink" else []) + \
            ([f"/f/{i}" for i in range(FAILING_PAGES)] + ["/never"] if kind == "failing" else [])
        headers = dict(html)
        return 200, headers, _page(links, f"{kind} home page")
    if path in pages:
        headers = dict(html)
        if kind == "cookies":
            headers["Set-Cookie"] = f"session={path[-1]}; Domain=cookies.hostile.test; Path=/"
        return 200, headers, _page(pages, f"{kind} page {path}: {_words(kind + path)}")
    return 404, html, b"<html><body>not found</body></html>"


SINK_LINKS = 200_000
_SINK: list[bytes] = []


def _sink_page() -> bytes:
    """A page of SINK_LINKS links to URLs that all answer 404 (a budget sink), 5 MB."""
    if not _SINK:
        links = "".join(f"<a href=/gone/{i}>{i}</a> " for i in range(SINK_LINKS))
        _SINK.append(f"<html><body><h1>sink</h1><p>{links}</p></body></html>".encode())
    return _SINK[0]


def _words(seed: str, count: int = 40) -> str:
    """A text of its own: no page duplicates another."""
    return " ".join(hashlib.sha1(f"{seed}{j}".encode()).hexdigest()[:8] for j in range(count))


def _sitemap(host: str, path: str, forms: dict[str, str]) -> bytes:
    if path == "/sitemap.xml":  # an index: local, redirected and forbidden sitemaps
        tag = "sitemap"
        urls = ["/sitemap-pages.xml"] + [f"/to/{form}" for form in forms] + \
            [f"http://{forms['plain']}/sitemap.xml"]
    else:
        tag = "url"
        urls = [f"/ok/{i}" for i in range(5)] + [f"http://{f}/secret" for f in forms.values()]
    base = f"http://{host}"
    body = "".join(f"<{tag}><loc>{u if u.startswith('http') else base + u}</loc></{tag}>"
                   for u in urls)
    root = "sitemapindex" if tag == "sitemap" else "urlset"
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<{root} '
            f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</{root}>').encode()


def _legit_site(kind: str, path: str) -> tuple[int, dict[str, str], bytes] | None:
    html = {"Content-Type": "text/html; charset=utf-8"}
    if kind == "shop":
        per_page = 100
        if path == "/":
            return 200, html, _page(["/catalogue/1"], "shop")
        if path.startswith("/catalogue/") and path[11:].isdigit():
            n = int(path[11:])
            last = CATALOGUE_ITEMS // per_page
            if 1 <= n <= last:
                items = [f"/item/{i}" for i in range((n - 1) * per_page, n * per_page)]
                more = [f"/catalogue/{n + 1}"] if n < last else []
                return 200, html, _page(items + more, f"catalogue page {n} {_words(path, 10)}")
        if path.startswith("/item/") and path[6:].isdigit() and int(path[6:]) < CATALOGUE_ITEMS:
            return 200, html, _page([], f"item {path[6:]}: {_words(path)}")
    if kind == "blog":
        if path == "/":
            return 200, html, _page(["/page/1"], "blog")
        if path.startswith("/page/") and path[6:].isdigit() and 1 <= int(path[6:]) <= PAGINATION:
            n = int(path[6:])
            links = ([f"/page/{n - 1}"] if n > 1 else []) + \
                ([f"/page/{n + 1}"] if n < PAGINATION else [])
            return 200, html, _page(links, f"post page {n}: {_words(path)}")
    return None


_BOMB: list[bytes] = []


def _transport_hazard(host: str, path: str, request: Any, logged: Any) -> Any:
    """Hazards that need the connection itself: NOT_DONE_YET, or None for a plain answer."""
    from twisted.internet import reactor
    from twisted.web.server import NOT_DONE_YET

    kind = host.split(".")[0]
    if kind == "robotsslow" and path == "/robots.txt" or \
            kind == "hazards" and path == "/h/no-answer" or \
            kind == "failing" and path == "/never":
        logged(0, 0)
        return NOT_DONE_YET  # accepted, never answered
    if kind != "hazards" or not path.startswith("/h/"):
        return None
    name = path[len("/h/"):]
    raw = request.channel.transport
    if name == "gzip-bomb":
        if not _BOMB:
            import gzip
            _BOMB.append(gzip.compress(b"\0" * (100 * 1024 * 1024), compresslevel=9))
        request.setHeader("Content-Type", "text/html")
        request.setHeader("Content-Encoding", "gzip")
        logged(200, len(_BOMB[0]))
        return _BOMB[0]
    if name == "huge":
        request.setHeader("Content-Type", "text/html")
        logged(200, 50 * 1024 * 1024)
        return b"<html><body>" + b"x" * (50 * 1024 * 1024) + b"</body></html>"
    if name == "lying-length":
        raw.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n"
                  b"\r\n<html><body>short</body></html>")
        raw.loseConnection()
        logged(200, 30)
        return NOT_DONE_YET
    if name == "slow-body":
        raw.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n")
        ticks = [0]

        def dribble() -> None:
            if ticks[0] >= 60 or not raw.connected:
                raw.loseConnection()
                return
            ticks[0] += 1
            raw.write(b"x")
            reactor.callLater(1.0, dribble)

        dribble()
        logged(200, 0)
        return NOT_DONE_YET
    if name == "reset":
        raw.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n"
                  b"\r\n<html><body>" + b"y" * 5000)
        raw.abortConnection()
        logged(200, 5000)
        return NOT_DONE_YET
    if name == "bad-status":
        raw.write(b"HTTP/1.1 99999999 \x00\xff garbage\r\nContent-Length: 2\r\n\r\nok")
        raw.loseConnection()
        logged(0, 2)
        return NOT_DONE_YET
    if name == "huge-header":
        raw.write(b"HTTP/1.1 200 OK\r\nX-Huge: " + b"h" * (1024 * 1024) +
                  b"\r\nContent-Length: 2\r\n\r\nok")
        raw.loseConnection()
        logged(200, 2)
        return NOT_DONE_YET
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testweb.hostile",
                                     description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True, help="request log file (JSON lines)")
    parser.add_argument("--forbidden-log", required=True,
                        help="connections received by the forbidden listener (JSON lines)")
    parser.add_argument("--rebind-dns", metavar="LOG",
                        help="also serve an attacker's DNS (testweb.dns.RebindingAuthority) on "
                             "127.0.0.1, logging its answers here, and listen on the forbidden "
                             "address at the web's own port too")
    args = parser.parse_args(argv)
    from twisted.internet import reactor
    from twisted.web.resource import Resource
    from twisted.web.server import Site

    from testweb.forbidden import listen_forbidden
    from testweb.process import serve_until_stopped
    from testweb.requestlog import write_entry

    log: IO[str] = open(args.log, "a", encoding="utf-8")  # noqa: SIM115
    forbidden_port = listen_forbidden(FORBIDDEN_ADDRESS, args.forbidden_log)

    class Hostile(Resource):
        isLeaf = True

        def render(self, request: Any) -> Any:
            start = time.time()
            host = (request.getHeader("host") or "").split(":")[0].lower()
            path = request.uri.decode("latin-1")

            def logged(status: int, size: int) -> None:
                write_entry(log, request, host, path, start, status, size)

            special = _transport_hazard(host, path, request, logged)
            if special is not None:
                return special
            status, headers, body = respond(host, path, forbidden_port,
                                            authority=request.getHeader("host") or host)
            request.setResponseCode(status)
            for name, value in headers.items():
                if isinstance(value, list):
                    for item in value:
                        request.responseHeaders.addRawHeader(name, item)
                else:
                    request.setHeader(name, value)
            logged(status, len(body))
            return body

    site = Site(Hostile())
    site.log = lambda request: None
    port = reactor.listenTCP(args.port, site, interface="127.0.0.1").getHost().port
    fields = {"port": port, "forbidden": forbidden_port}
    if args.rebind_dns:
        from testweb.dns import serve_rebinding

        fields["dns"] = serve_rebinding(FORBIDDEN_ADDRESS, args.forbidden_log, port,
                                        args.rebind_dns)
    serve_until_stopped(**fields)
    return 0


if __name__ == "__main__":
    sys.exit(main())
