"""The app web: client-rendered sites (app shells) beside server-rendered ones, on loopback.

``python -m testweb.apps --log requests.jsonl --forbidden-log forbidden.jsonl`` serves
virtual hosts ``<kind>.apps.test`` (and copies ``<kind>-<n>.apps.test``) on 127.0.0.1, and a
*forbidden* listener on ``FORBIDDEN_ADDRESS`` (outside the crawl's allowed networks) that logs
every connection it receives.  Every page's label (shell or not) and the pages that only
JavaScript links reach are in :func:`truth`.

App shells (the same small HTML for every route; ``/app.js`` builds the page):

* ``vanilla``: ``/`` and ``/page/1`` ... ``/page/5``; the script inserts the text and the links,
  an image (``/img/logo.png``) and a fetch of ``/api/secret``, which robots.txt disallows.
* ``jsonapp``: ``/`` and ``/item/1`` ... ``/item/4``; the script fetches ``/api/item/N.json``
  from its own host and renders the text and links it holds.
* ``nosy``: ``/`` and ``/n/1`` ... ``/n/3``; the script first tries the forbidden listener
  (a private address) and another host (``vanilla``'s ``/cross-probe``), then renders.
* ``hang``: ``/`` and ``/h/1``, shells with one plain link (to the next page) whose
  ``/app.js`` answers only after ``HANG_SECONDS``: the page never loads in time.

Server-rendered pages, which must not be rendered:

* ``ssr``: ``/`` and ``/s/1`` ... ``/s/5``: the text and links in the HTML inside a framework
  root (``<div id="root">``), eight scripts and 30 kB of inline state, as a hydrated React or
  Next.js page ships.
* ``noscript``: ``/`` and ``/ns/1`` ... ``/ns/3``: an empty framework root whose
  ``<noscript>`` carries the page's text and links.
* ``tiny``: ``/`` and ``/t/1`` ... ``/t/3``: short pages (a dozen words, two links, one
  analytics script).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import IO, Any

__all__ = ["FORBIDDEN_ADDRESS", "HANG_SECONDS", "KINDS", "respond", "truth"]

FORBIDDEN_ADDRESS = "127.0.0.4"
KINDS = ("vanilla", "jsonapp", "nosy", "hang", "ssr", "noscript", "tiny")
HANG_SECONDS = 30.0
#: kind -> (path prefix of its pages, number of pages besides "/", is an app shell)
_SITES = {"vanilla": ("/page/", 5, True), "jsonapp": ("/item/", 4, True),
          "nosy": ("/n/", 3, True), "hang": ("/h/", 1, True),
          "ssr": ("/s/", 5, False), "noscript": ("/ns/", 3, False),
          "tiny": ("/t/", 3, False)}
_WORDS = ("archive crawler frontier page script render browser index server content link "
          "politeness host queue fetch robots budget shell token node layout event window "
          "document element text anchor route state cache header status").split()


def _text(seed: str, count: int = 120) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(_WORDS) for _ in range(count)).capitalize() + "."


def _pages(kind: str) -> list[str]:
    prefix, count, _ = _SITES[kind]
    return ["/"] + [f"{prefix}{i}" for i in range(1, count + 1)]


def _page_number(kind: str, path: str) -> int | None:
    if path == "/":
        return 0
    prefix, count, _ = _SITES[kind]
    if path.startswith(prefix) and path[len(prefix):].isdigit():
        n = int(path[len(prefix):])
        return n if 1 <= n <= count else None
    return None


def _links(kind: str, n: int) -> list[str]:
    """Page n links the next two pages of its site (so every page is reachable from "/")."""
    pages = _pages(kind)
    return [pages[i] for i in (n + 1, n + 2) if i < len(pages)]


def truth(port: int) -> dict[str, Any]:
    """``pages``: URL -> {"shell", "js_only"}; ``forbidden``: what no request may reach."""
    pages = {}
    for kind in KINDS:
        shell = _SITES[kind][2]
        for path in _pages(kind):
            pages[f"http://{kind}.apps.test:{port}{path}"] = {
                "shell": shell, "js_only": shell and path != "/" and kind != "hang"}
    return {"pages": pages, "forbidden_paths": ["/cross-probe", "/api/secret", "/img/logo.png"]}


_SHELL = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="icon" href="data:,">
<script defer src="/app.js"></script></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="{root}"></div>{links}</body></html>
"""

_VANILLA_JS = """(function () {
  var DATA = %s;
  var path = location.pathname, app = document.getElementById('app');
  var page = DATA[path] || {title: 'Not found', text: '', links: []};
  var h = document.createElement('h1'); h.textContent = page.title; app.appendChild(h);
  var p = document.createElement('p'); p.textContent = page.text; app.appendChild(p);
  page.links.forEach(function (href) {
    var a = document.createElement('a'); a.href = href; a.textContent = 'Next: ' + href;
    app.appendChild(a);
  });
  var img = document.createElement('img'); img.src = '/img/logo.png'; app.appendChild(img);
  fetch('/api/secret').catch(function () {});
})();
"""

_JSONAPP_JS = """(function () {
  var m = location.pathname.match(/^\\/item\\/(\\d+)$/), n = m ? m[1] : '0';
  fetch('/api/item/' + n + '.json').then(function (r) { return r.json(); }).then(function (d) {
    var app = document.getElementById('root');
    var h = document.createElement('h1'); h.textContent = d.title; app.appendChild(h);
    var p = document.createElement('p'); p.textContent = d.text; app.appendChild(p);
    d.links.forEach(function (href) {
      var a = document.createElement('a'); a.href = href; a.textContent = href;
      app.appendChild(a);
    });
  });
})();
"""

_NOSY_JS = """(function () {
  var DATA = %s;
  function render() {
    var app = document.getElementById('__next'), page = DATA[location.pathname];
    var h = document.createElement('h1'); h.textContent = page.title; app.appendChild(h);
    var p = document.createElement('p'); p.textContent = page.text; app.appendChild(p);
    page.links.forEach(function (href) {
      var a = document.createElement('a'); a.href = href; a.textContent = href;
      app.appendChild(a);
    });
  }
  Promise.allSettled([fetch(%s), fetch(%s)]).then(render, render);
})();
"""

_SSR = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="icon" href="data:,">
{scripts}
<script id="__STATE__" type="application/json">{state}</script></head>
<body><div id="root"><header><h1>{title}</h1></header><main><p>{text}</p>
<p>{more}</p><nav>{links}</nav></main></div></body></html>
"""

_NOSCRIPT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="icon" href="data:,">
<script defer src="/static/a.js"></script><script defer src="/static/b.js"></script>
<script defer src="/static/c.js"></script></head>
<body><div id="app"></div>
<noscript><h1>{title}</h1><p>{text}</p><nav>{links}</nav></noscript></body></html>
"""

_TINY = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="icon" href="data:,">
<script async src="/static/analytics.js"></script></head>
<body><p>{text}</p>{links}</body></html>
"""


def _page_data(kind: str, label: str) -> dict[str, dict[str, Any]]:
    """The pages of host ``label`` (``kind`` or a copy ``kind-n``, whose texts differ)."""
    return {path: {"title": f"{label} {path}", "text": _text(f"{label}{path}"),
                   "links": _links(kind, n)} for n, path in enumerate(_pages(kind))}


def _anchors(links: list[str]) -> str:
    return "".join(f'<a href="{href}">{href}</a> ' for href in links)


def respond(host: str, path: str, port: int, forbidden_port: int) -> tuple[int, dict, bytes]:
    label = host.split(".")[0]
    kind = label.split("-")[0]  # <kind>-<n>.apps.test: a copy (benchmarks)
    html = {"Content-Type": "text/html; charset=utf-8"}
    js = {"Content-Type": "application/javascript"}
    if kind not in _SITES:
        return 404, html, b"no such host"
    if path == "/robots.txt":
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /api/secret\n"
    if path.startswith("/static/"):
        return 200, js, b"/* " + b"x" * 2000 + b" */\nwindow.loaded = (window.loaded || 0) + 1;\n"
    if path == "/img/logo.png":
        return 200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + b"\0" * 64
    if path == "/api/secret":
        return 200, {"Content-Type": "application/json"}, b'{"secret": true}'
    if path == "/app.js":
        data = json.dumps(_page_data(kind, label))
        if kind == "vanilla":
            return 200, js, (_VANILLA_JS % data).encode()
        if kind == "jsonapp":
            return 200, js, _JSONAPP_JS.encode()
        if kind == "nosy":
            private = json.dumps(f"http://{FORBIDDEN_ADDRESS}:{forbidden_port}/steal")
            cross = json.dumps(f"http://vanilla.apps.test:{port}/cross-probe")
            return 200, js, (_NOSY_JS % (data, private, cross)).encode()
    if kind == "jsonapp" and path.startswith("/api/item/") and path.endswith(".json"):
        number = path[len("/api/item/"):-len(".json")]
        page = "/" if number == "0" else f"/item/{number}"
        data = _page_data(kind, label).get(page)
        if data is None:
            return 404, {"Content-Type": "application/json"}, b"{}"
        return 200, {"Content-Type": "application/json"}, json.dumps(data).encode()
    n = _page_number(kind, path)
    if n is None:
        return 404, html, b"<html><body>not found</body></html>"
    title = f"{kind} {path}"
    if _SITES[kind][2]:  # an app shell: the same HTML on every route
        root = {"vanilla": "app", "jsonapp": "root", "nosy": "__next", "hang": "app"}[kind]
        plain = _anchors(_links(kind, n)) if kind == "hang" else ""
        return 200, html, _SHELL.format(title=title, root=root, links=plain).encode()
    links = _links(kind, n)
    if kind == "ssr":
        scripts = "\n".join(f'<script defer src="/static/chunk{i}.js"></script>'
                            for i in range(7))
        state = json.dumps({"props": {"page": path, "blob": _text(path, 4000)}})
        body = _SSR.format(title=title, scripts=scripts, state=state,
                           text=_text(f"{kind}{path}"), more=_text(f"{kind}{path}+", 200),
                           links=_anchors(links))
    elif kind == "noscript":
        body = _NOSCRIPT.format(title=title, text=_text(f"{kind}{path}"),
                                links=_anchors(links))
    else:
        body = _TINY.format(title=title, text=_text(f"{kind}{path}", 12), links=_anchors(links))
    return 200, html, body.encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testweb.apps", description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True, help="request log file (JSON lines)")
    parser.add_argument("--forbidden-log", required=True,
                        help="connections received by the forbidden listener (JSON lines)")
    parser.add_argument("--truth", help="write the ground truth here (JSON)")
    parser.add_argument("--rebind-dns", metavar="LOG",
                        help="also serve an attacker's DNS (testweb.dns.serve_rebinding)")
    args = parser.parse_args(argv)
    from twisted.internet import reactor
    from twisted.web.resource import Resource
    from twisted.web.server import NOT_DONE_YET, Site

    from testweb.forbidden import listen_forbidden
    from testweb.process import serve_until_stopped
    from testweb.requestlog import write_entry

    log: IO[str] = open(args.log, "a", encoding="utf-8")  # noqa: SIM115
    forbidden_port = listen_forbidden(FORBIDDEN_ADDRESS, args.forbidden_log)
    state = {"port": 0}

    class Apps(Resource):
        isLeaf = True

        def render(self, request: Any) -> Any:
            start = time.time()
            host = (request.getHeader("host") or "").split(":")[0].lower()
            path = request.uri.decode("latin-1").split("?")[0]
            status, headers, body = respond(host, path, state["port"], forbidden_port)
            request.setResponseCode(status)
            for name, value in headers.items():
                request.setHeader(name, value)

            def finish() -> None:
                if request.finished or request._disconnected:
                    return
                request.write(body)
                request.finish()
                write_entry(log, request, host, path, start, status, len(body))

            if host.startswith("hang.") and path == "/app.js":
                reactor.callLater(HANG_SECONDS, finish)
                return NOT_DONE_YET
            write_entry(log, request, host, path, start, status, len(body))
            return body

    site = Site(Apps())
    site.log = lambda request: None
    state["port"] = port = reactor.listenTCP(args.port, site,
                                             interface="127.0.0.1").getHost().port
    if args.truth:
        with open(args.truth, "w", encoding="utf-8") as fh:
            json.dump(truth(port), fh)
    fields = {"port": port, "forbidden": forbidden_port}
    if args.rebind_dns:
        from testweb.dns import serve_rebinding

        fields["dns"] = serve_rebinding(FORBIDDEN_ADDRESS, args.forbidden_log, port,
                                        args.rebind_dns)
    serve_until_stopped(**fields)
    return 0


if __name__ == "__main__":
    sys.exit(main())
