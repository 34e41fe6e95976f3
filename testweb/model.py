"""The test web's content model: a deterministic synthetic web with the hazards of the real one.

Everything here is a pure function of (seed, number of hosts, pages per host, hazards flag):
the same arguments give the same hosts, pages, links and ground truth on every machine.
The server (``server.py``) turns :meth:`TestWeb.respond` into HTTP; tests and benchmarks read
:meth:`TestWeb.ground_truth` and the server's request log.

Host kinds (by host index modulo 10, when hazards are on)::

    0 robots: disallow /private/ and /*.pdf$, agent group "crawler_ext" disallows /nocrawl/
    1 robots.txt answers 503              2 robots Crawl-delay: 1.5
    3 no robots.txt (404)                 4 rate-limited: 429 + Retry-After when hit too fast
    5 slow (300 ms per response)          6 gzip bodies; every 200th host serves a 10.5 MiB page
    7 traps: infinite calendar, repeating segments, session IDs in paths, session query params
    8 exact mirror of host index-8        9 pages changing every 60 s, 503 + Retry-After once,
                                            query pages linked with reordered parameters
"""

from __future__ import annotations

import bisect
import functools
import gzip
import hashlib
import math
import random
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from urllib.parse import parse_qsl, unquote

__all__ = ["HostSpec", "Reply", "TestWeb", "IGNORED_PARAMS"]

# Parameters the server ignores: tracking and session parameters do not change the page.
IGNORED_PARAMS = frozenset({"utm_source", "utm_medium", "utm_campaign", "fbclid", "gclid", "sid"})
AGENT = "crawler_ext"
BIG_PAGE_BYTES = 10 * 1024 * 1024 + 512 * 1024
CHANGE_PERIOD = 60.0
#: a changing web's page classes (``--change-classes``): page n changes every change period x
#: the factor of class n % len, never where it is None
DEFAULT_CHANGE_CLASSES: tuple[float | None, ...] = (None, 1.0, 4.0, 16.0)


def pagerank(out: Mapping[Hashable, Sequence[Hashable]], damping: float = 0.85,
             iterations: int = 50) -> dict:
    """PageRank of a link graph (node -> the nodes it links to, all of them nodes), dangling
    nodes' rank spread over every node."""
    nodes = list(out)
    rank = dict.fromkeys(nodes, 1.0 / len(nodes))
    for _ in range(iterations):
        new = dict.fromkeys(nodes, (1.0 - damping) / len(nodes))
        dangling = 0.0
        for node, targets in out.items():
            if targets:
                share = damping * rank[node] / len(targets)
                for t in targets:
                    new[t] += share
            else:
                dangling += damping * rank[node]
        for node in nodes:
            new[node] += dangling / len(nodes)
        rank = new
    return rank


def parse_change_classes(text: str) -> tuple[float | None, ...]:
    """``never,1,4,16`` -> (None, 1.0, 4.0, 16.0)."""
    out: list[float | None] = []
    for part in text.split(","):
        part = part.strip().lower()
        if part in ("never", "none", "-"):
            out.append(None)
            continue
        value = float(part)
        if value <= 0:
            raise ValueError(f"a change class is a positive factor or 'never', got {part!r}")
        out.append(value)
    return tuple(out)


_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qui", "dor", "fen",
              "gal", "hab", "jun", "ster", "wex", "yol", "bri", "cla", "dro", "fle", "gri"]


@functools.cache
def _vocabulary(seed: int) -> tuple[str, ...]:
    rng = random.Random(f"vocab:{seed}")
    words = {"".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 3))) for _ in range(6000)}
    return tuple(sorted(words))


@dataclass(frozen=True)
class HostSpec:
    index: int
    name: str
    kind: int  # index % 10 when hazards are on, else -1
    latency: float
    robots: str  # "rules", "5xx", "crawl-delay", "none", "plain"
    crawl_delay: float | None
    rate_limit: float | None  # minimum seconds between requests before 429
    gzip: bool
    mirror_of: int | None
    traps: bool
    changing: bool
    big_page: bool


@dataclass
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0


class TestWeb:
    """A deterministic web of ``hosts`` virtual hosts with ``pages`` pages each."""

    __test__ = False  # not a pytest test class

    def __init__(
        self, seed: int = 1, hosts: int = 1000, pages: int = 20, hazards: bool = True,
        domain: str = "web.test", latency: float | None = None, robots_change: bool = False,
        change_period: float | None = None,
        change_classes: tuple[float | None, ...] = DEFAULT_CHANGE_CLASSES,
    ) -> None:
        if hosts < 1 or pages < 2:
            raise ValueError("the test web needs at least 1 host and 2 pages per host")
        self.seed, self.n_hosts, self.n_pages, self.hazards = seed, hosts, pages, hazards
        self.domain = domain
        # robots_change: a changing host's robots.txt disallows /p/ once it was fetched once
        self.robots_change = robots_change
        # change_period: every page changes on a known schedule (a changing web, for
        # recrawling): page n changes every change_period x change_classes[n % len] seconds,
        # never where that class is None (by default: never if n % 4 == 0, else every
        # change_period x 4^(n%4 - 1)); pages answer with ETag and Last-Modified, and 304 to a
        # conditional GET
        self.change_period = change_period
        if not change_classes:
            raise ValueError("change_classes: at least one class")
        self.change_classes = tuple(change_classes)
        self.vocab = _vocabulary(seed)
        self.hosts = [self._make_host(i, latency) for i in range(hosts)]
        self._by_name = {h.name: h for h in self.hosts}
        self._page_cache: dict[tuple[int, str], bytes] = {}

    # -- hosts -----------------------------------------------------------------------------
    def host_name(self, index: int) -> str:
        return f"h{index:04d}.{self.domain}"

    def _make_host(self, i: int, latency: float | None) -> HostSpec:
        rng = random.Random(f"host:{self.seed}:{i}")
        base_latency = rng.uniform(0.002, 0.02) if latency is None else latency
        kind = i % 10 if self.hazards else -1
        robots = {0: "rules", 1: "5xx", 2: "crawl-delay", 3: "none"}.get(kind, "plain")
        mirror_of = i - 8 if kind == 8 else None
        return HostSpec(
            index=i, name=self.host_name(i), kind=kind,
            latency=0.3 if kind == 5 else base_latency,
            robots=robots, crawl_delay=1.5 if kind == 2 else None,
            rate_limit=0.8 if kind == 4 else None, gzip=kind == 6,
            mirror_of=mirror_of, traps=kind == 7, changing=kind == 9,
            big_page=kind == 6 and i % 200 == 6,
        )

    def host(self, name: str) -> HostSpec | None:
        name = name.lower().split(":")[0].rstrip(".")
        spec = self._by_name.get(name)
        if spec is None and name.replace(".", "").isdigit():
            return self.hosts[0]  # IP-literal requests reach the first host
        return spec

    # -- the link graph ----------------------------------------------------------------------
    def page_path(self, n: int) -> str:
        return "/" if n == 0 else f"/p/{n}.html"

    def _zipf(self, rng: random.Random, n: int, s: float) -> int:
        weights = _zipf_cumulative(n, s)
        return min(n - 1, bisect.bisect_left(weights, rng.random() * weights[-1]))

    @functools.cache  # noqa: B019 -- the model is immutable and lives as long as the server
    def links(self, host: int, n: int) -> tuple[tuple[int, int], ...]:
        """Content links of page ``n`` of ``host`` as (host, page) pairs, mirrors resolved."""
        content_host = self.hosts[host].mirror_of if self.hosts[host].mirror_of is not None else host
        rng = random.Random(f"links:{self.seed}:{content_host}:{n}")
        out: list[tuple[int, int]] = []
        if n + 1 < self.n_pages:
            out.append((content_host, n + 1))  # a chain keeps every page reachable
        if n == 0:
            out.append(((content_host + 1) % self.n_hosts, 0))  # and a ring every host
        for _ in range(rng.randint(3, 10)):
            if rng.random() < 0.75:
                out.append((content_host, self._zipf(rng, self.n_pages, 1.0)))
            else:
                out.append((self._zipf(rng, self.n_hosts, 0.8), self._zipf(rng, self.n_pages, 1.0)))
        if self.hosts[host].mirror_of is not None:  # mirrors link within themselves
            out = [(host if h == content_host else h, p) for h, p in out]
        seen: set[tuple[int, int]] = set()
        return tuple(x for x in out if not (x in seen or seen.add(x)) and x != (host, n))

    # -- pages -------------------------------------------------------------------------------
    def _words(self, rng: random.Random, count: int) -> str:
        return " ".join(rng.choice(self.vocab) for _ in range(count))

    def _href(self, spec: HostSpec, src: int, target: tuple[int, int], k: int, port: int) -> str:
        """The spelling of one link: mostly plain, sometimes a safe variant of the same URL."""
        th, tp = target
        path = self.page_path(tp)
        content = spec.mirror_of if spec.mirror_of is not None else spec.index
        rng = random.Random(f"href:{self.seed}:{content}:{src}:{k}")
        roll = rng.random() if self.hazards else 1.0
        if th != spec.index:
            name = self.host_name(th)
            if roll < 0.1:
                return f"HTTP://{name.upper()}:{port}{path}"
            return f"http://{name}:{port}{path}"
        if roll < 0.05:
            return f"{path}#section-{k}"
        if roll < 0.10:
            return "/x/.." + path if tp else "/x/../"
        if roll < 0.15 and tp:
            return path.replace("/p/", "/%70/")
        if roll < 0.20:
            return f"{path}?utm_source=feed&utm_medium=rss"
        if roll < 0.23 and spec.traps:
            return f"{path}?sid={rng.randrange(10**6):06d}"
        return path

    def page_period(self, n: int) -> float | None:
        """Seconds between changes of page ``n`` in a changing web (None: never changes)."""
        factor = self.change_classes[n % len(self.change_classes)]
        if self.change_period is None or factor is None:
            return None
        return self.change_period * factor

    def page_version(self, spec: HostSpec, n: int, now: float) -> int:
        period = self.page_period(n)
        if period is not None:
            return int(now // period)
        return int(now // CHANGE_PERIOD) if spec.changing else 0

    def render_page(self, spec: HostSpec, n: int, port: int, now: float) -> bytes:
        content = spec.mirror_of if spec.mirror_of is not None else spec.index
        version = self.page_version(spec, n, now)
        key = (spec.index, f"{n}:{version}:{port}")
        cached = self._page_cache.get(key)
        if cached is not None:
            return cached
        rng = random.Random(f"page:{self.seed}:{content}:{n}")
        title = self._words(rng, 4).title()
        paragraphs = [self._words(rng, rng.randint(40, 90)) for _ in range(rng.randint(2, 5))]
        links = self.links(spec.index, n)
        anchors = [f'<a href="{self._href(spec, n, t, k, port)}">{self._words(rng, 2)}</a>'
                   for k, t in enumerate(links)]
        extras = self._hazard_links(spec, n) if self.hazards else []
        if spec.changing or self.page_period(n) is not None:
            paragraphs.append(f"Edition {version}: " + self._words(random.Random(version), 30))
        body = "".join(f"<p>{p}</p>\n" for p in paragraphs)
        html = (
            f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n"
            f"<body>\n<div class=\"nav\"><a href=\"/\">Home</a> | Site {content}</div>\n"
            f"<div class=\"content\"><h1>{title}</h1>\n{body}"
            f"<ul>{''.join(f'<li>{a}</li>' for a in anchors + extras)}</ul></div>\n"
            f"<div class=\"footer\">Footer of site {content}</div>\n</body></html>\n"
        )
        data = html.encode()
        self._page_cache[key] = data
        return data

    def _hazard_links(self, spec: HostSpec, n: int) -> list[str]:
        links: list[str] = []
        if n == 1:
            links += ['<a href="/private/1.html">private</a>', '<a href="/doc1.pdf">pdf</a>',
                      '<a href="/nocrawl/1.html">agent-specific</a>', '<a href="/img/1.png">img</a>',
                      '<a href="/missing.html">missing</a>', '<a href="/gone.html">gone</a>',
                      '<a href="/r/2">redirect</a>', '<a href="/chain/3">chain</a>',
                      '<a href="/loop/a">loop</a>', '<a href="/malformed.html">malformed</a>',
                      '<a href="/noindex.html">noindex</a>', '<a href="/nofollow.html">nofollow</a>',
                      '<a href="/xrobots.html">x-robots</a>',
                      '<a rel="nofollow" href="/nf/1.html">rel nofollow</a>']
        if n % 4 == 1:
            links.append(f'<a href="/print/{n}.html">print</a>')
        if spec.big_page and n == 2:
            links.append('<a href="/big.html">big</a>')
        if spec.traps and n == 1:
            links += ['<a href="/cal/2026/1">calendar</a>', '<a href="/rep/a/">repeat</a>',
                      '<a href="/s/a1b2c3/p/1.html">session path</a>']
        if spec.changing and n == 1:
            links += ['<a href="/q?a=1&amp;b=2">query</a>', '<a href="/q?b=2&amp;a=1">query, reordered</a>']
        return links

    def render_print(self, spec: HostSpec, n: int, now: float) -> bytes:
        """A near-duplicate of page n: same text, other boilerplate, a timestamp."""
        content = spec.mirror_of if spec.mirror_of is not None else spec.index
        rng = random.Random(f"page:{self.seed}:{content}:{n}")
        title = self._words(rng, 4).title()
        paragraphs = [self._words(rng, rng.randint(40, 90)) for _ in range(rng.randint(2, 5))]
        body = "".join(f"<p>{p}</p>\n" for p in paragraphs)
        return (
            f"<html><head><title>{title} (print)</title>"
            f"<link rel=\"canonical\" href=\"/p/{n}.html\"></head><body>\n"
            f"<div class=\"content\"><h1>{title}</h1>\n{body}</div>\n"
            f"<p class=\"stamp\">Printed at {int(now)}</p></body></html>\n"
        ).encode()

    def robots_txt(self, spec: HostSpec, state: dict | None = None, port: int = 80) -> Reply:
        if self.robots_change and spec.changing and state is not None:
            fetched = state.get(("robots", spec.index), 0)
            state[("robots", spec.index)] = fetched + 1
            if fetched:
                return Reply(200, {"Content-Type": "text/plain"},
                             b"User-agent: *\nDisallow: /p/\n")
        if spec.robots == "none":
            return Reply(404, {"Content-Type": "text/plain"}, b"not found\n")
        if spec.robots == "5xx":
            return Reply(503, {"Content-Type": "text/plain"}, b"unavailable\n")
        lines = [f"User-agent: {AGENT}", "Disallow: /nocrawl/", "Disallow: /private/",
                 "Disallow: /*.pdf$", "", "User-agent: *", "Disallow: /private/",
                 "Disallow: /*.pdf$"] if spec.robots == "rules" else ["User-agent: *", "Disallow:"]
        if spec.crawl_delay:
            lines.append(f"Crawl-delay: {spec.crawl_delay}")
        lines.append(f"Sitemap: {self.base_url(spec.index, port)}/sitemap.xml")
        return Reply(200, {"Content-Type": "text/plain"}, ("\n".join(lines) + "\n").encode())

    # -- serving ---------------------------------------------------------------------------
    def respond(self, host: str, target: str, port: int, now: float,
                accept_gzip: bool = False, state: dict | None = None,
                conditional: dict[str, str] | None = None) -> Reply:
        """The reply for one request; ``state`` carries per-server memory (rate limits, 503s);
        ``conditional``: the request's ``if-none-match`` and ``if-modified-since``."""
        spec = self.host(host)
        if spec is None:
            return Reply(404, {"Content-Type": "text/plain"}, b"unknown host\n")
        state = state if state is not None else {}
        reply = self._route(spec, target, port, now, state)
        if self.change_period is not None and reply.status == 200:
            reply = self._validated(spec, target, now, reply, conditional or {})
        reply.delay = spec.latency
        if spec.rate_limit:
            last = state.get(("last", spec.index))
            state[("last", spec.index)] = now
            if last is not None and now - last < spec.rate_limit and not target.startswith("/robots"):
                return Reply(429, {"Retry-After": "2", "Content-Type": "text/plain"},
                             b"slow down\n", spec.latency)
        if accept_gzip and spec.gzip and reply.status == 200 and reply.body:
            reply.body = gzip.compress(reply.body, mtime=0)
            reply.headers["Content-Encoding"] = "gzip"
        return reply

    def _validated(self, spec: HostSpec, target: str, now: float, reply: Reply,
                   conditional: dict[str, str]) -> Reply:
        """A changing web's page: ETag and Last-Modified of its version; 304 when the
        request's validators still match it."""
        n = _page_number(target.partition("?")[0])
        if n is None or n >= self.n_pages:
            return reply
        period = self.page_period(n)
        version = self.page_version(spec, n, now)
        etag = f'"{spec.index}-{n}-{version}"'
        modified = version * period if period is not None else 0.0
        reply.headers["ETag"] = etag
        reply.headers["Last-Modified"] = _http_date(modified)
        since = conditional.get("if-modified-since")
        try:
            since_ts = parsedate_to_datetime(since).timestamp() if since else None
        except (TypeError, ValueError):
            since_ts = None
        if conditional.get("if-none-match") == etag or (
                "if-none-match" not in conditional and since_ts is not None and
                since_ts >= modified):
            return Reply(304, {"ETag": etag, "Last-Modified": reply.headers["Last-Modified"]},
                         b"", reply.delay)
        return reply

    def _route(self, spec: HostSpec, target: str, port: int, now: float, state: dict) -> Reply:
        path, _, query = target.partition("?")
        path = unquote(path) if "%" in path else path
        params = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True)
                  if k not in IGNORED_PARAMS and not k.startswith("utm_")]
        html = {"Content-Type": "text/html; charset=utf-8"}
        if path == "/robots.txt":
            return self.robots_txt(spec, state, port)
        n = _page_number(path)
        if n is not None and n < self.n_pages:
            if spec.changing and n % 7 == 3 and not state.get(("503", spec.index, n)):
                state[("503", spec.index, n)] = True
                return Reply(503, {"Retry-After": "1", "Content-Type": "text/plain"}, b"busy\n")
            headers = dict(html)
            if spec.changing:
                headers["Last-Modified"] = _http_date(int(now // CHANGE_PERIOD) * CHANGE_PERIOD)
            return Reply(200, headers, self.render_page(spec, n, port, now))
        sitemap = self._sitemap(spec, path, port, now)
        if sitemap is not None:
            return sitemap
        if not self.hazards:
            return Reply(404, html, b"<html><body>not found</body></html>")
        return self._route_hazard(spec, path, params, now)

    #: pages of each host that no page links to: only its sitemap lists them
    ORPHANS = 3

    def _sitemap(self, spec: HostSpec, path: str, port: int, now: float) -> Reply | None:
        """/sitemap.xml (an index; junk on a host whose robots.txt is missing), the pages'
        sitemap with lastmod, a gzip sitemap of orphan pages, and the orphans themselves."""
        xml = {"Content-Type": "application/xml"}
        base = self.base_url(spec.index, port)
        ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        if path == "/sitemap.xml":
            if spec.robots == "none":
                return Reply(200, xml, b"<html><body>this is not a sitemap</body></html>")
            body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {ns}>'
                    f"<sitemap><loc>{base}/sitemap-pages.xml</loc></sitemap>"
                    f"<sitemap><loc>{base}/sitemap-orphans.xml.gz</loc></sitemap>"
                    "</sitemapindex>\n")
            return Reply(200, xml, body.encode())
        if path == "/sitemap-pages.xml":
            urls = []
            for n in range(self.n_pages):
                period = self.page_period(n)
                modified = self.page_version(spec, n, now) * period if period else 0.0
                urls.append(f"<url><loc>{base}/p/{n}.html</loc><lastmod>"
                            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(modified))}"
                            "</lastmod></url>")
            body = f'<?xml version="1.0"?>\n<urlset {ns}>{"".join(urls)}</urlset>\n'
            return Reply(200, xml, body.encode())
        if path == "/sitemap-orphans.xml.gz":
            urls = "".join(f"<url><loc>{base}/orphan/{k}.html</loc></url>"
                           for k in range(self.ORPHANS))
            body = f'<?xml version="1.0"?>\n<urlset {ns}>{urls}</urlset>\n'.encode()
            return Reply(200, {"Content-Type": "application/gzip"},
                         gzip.compress(body, mtime=0))
        if path.startswith("/orphan/"):
            k = _page_number("/p/" + path[len("/orphan/"):])
            if k is not None and k < self.ORPHANS:
                rng = random.Random(f"orphan:{self.seed}:{spec.index}:{k}")
                return Reply(200, {"Content-Type": "text/html; charset=utf-8"},
                             (f"<html><head><title>Orphan {k}</title></head><body><p>"
                              f"{self._words(rng, 60)}</p></body></html>").encode())
        return None

    def _route_hazard(self, spec: HostSpec, path: str, params: list, now: float) -> Reply:
        html = {"Content-Type": "text/html; charset=utf-8"}
        simple = {
            "/noindex.html": ('<meta name="robots" content="noindex">', ""),
            "/nofollow.html": ('<meta name="robots" content="nofollow">',
                               '<a href="/secret/1.html">secret</a>'),
            "/xrobots.html": ("", '<a href="/secret/2.html">secret</a>'),
        }
        if path in simple:
            head, links = simple[path]
            headers = dict(html)
            if path == "/xrobots.html":
                headers["X-Robots-Tag"] = "noindex, nofollow"
            return Reply(200, headers, (f"<html><head>{head}<title>{path}</title></head><body>"
                                        f"<p>directive page {spec.index}</p>{links}</body></html>").encode())
        if path.startswith(("/private/", "/nocrawl/", "/secret/", "/nf/")):
            return Reply(200, html, f"<html><body><p>{path} of {spec.index}</p></body></html>".encode())
        if path.startswith("/print/"):
            n = _page_number("/p/" + path[len("/print/"):])
            if n is not None and n < self.n_pages:
                return Reply(200, html, self.render_print(spec, n, now))
        if path.endswith(".pdf"):
            return Reply(200, {"Content-Type": "application/pdf"}, b"%PDF-1.4\n% test\n" + b"0" * 2000)
        if path.startswith("/img/"):
            return Reply(200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + bytes(1000))
        if path == "/missing.html":
            return Reply(404, html, b"<html><body>missing</body></html>")
        if path == "/gone.html":
            return Reply(410, html, b"<html><body>gone</body></html>")
        if path.startswith("/r/"):
            return Reply(301, {"Location": f"/p/{path[3:]}.html"})
        if path.startswith("/chain/"):
            k = int(path[7:] or 0) if path[7:].isdigit() else 0
            return Reply(302, {"Location": f"/chain/{k - 1}" if k > 0 else "/p/1.html"})
        if path in ("/loop/a", "/loop/b"):
            return Reply(302, {"Location": "/loop/b" if path.endswith("a") else "/loop/a"})
        if path == "/malformed.html":
            return Reply(200, html, b"<html><head><title>broken<body><p>unclosed <b>bold <a href="
                                    b"'/p/1.html'>one<a href=/p/2.html>two</p></div></span><<>>")
        if path == "/big.html" and spec.big_page:
            return Reply(200, html, b"<html><body>" + b"x" * BIG_PAGE_BYTES + b"</body></html>")
        if spec.traps:
            trap = self._trap(spec, path)
            if trap is not None:
                return Reply(200, html, trap)
        if path == "/q" and spec.changing:
            text = "&".join(f"{k}={v}" for k, v in sorted(params))
            return Reply(200, html, f"<html><body><p>query page {text}</p></body></html>".encode())
        return Reply(404, html, b"<html><body>not found</body></html>")

    def _trap(self, spec: HostSpec, path: str) -> bytes | None:
        parts = path.strip("/").split("/")
        if parts[0] == "cal" and len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            y, m = int(parts[1]), int(parts[2])
            ny, nm = (y + 1, 1) if m == 12 else (y, m + 1)
            return f'<html><body><p>{y}-{m}</p><a href="/cal/{ny}/{nm}">next</a></body></html>'.encode()
        if parts[0] == "rep":
            return b'<html><body><p>repeat</p><a href="a/">deeper</a></body></html>'
        if parts[0] == "s" and len(parts) >= 2:
            sid = hashlib.sha1(path.encode()).hexdigest()[:6]
            rest = "/".join(parts[2:]) or "p/1.html"
            return f'<html><body><p>session {parts[1]}</p><a href="/s/{sid}/{rest}">on</a></body></html>'.encode()
        return None

    # -- ground truth ----------------------------------------------------------------------
    def base_url(self, index: int, port: int) -> str:
        return f"http://{self.host_name(index)}:{port}"

    def content_pages(self) -> Iterable[tuple[int, int]]:
        return ((h, n) for h in range(self.n_hosts) for n in range(self.n_pages))

    def pagerank(self, damping: float = 0.85, iterations: int = 50) -> dict[tuple[int, int], float]:
        return pagerank({node: self.links(*node) for node in self.content_pages()}, damping,
                        iterations)

    def ground_truth(self, port: int) -> dict:
        url = lambda h, n: self.base_url(h, port) + self.page_path(n)  # noqa: E731
        ranks = self.pagerank()
        exact, near = [], []
        for spec in self.hosts:
            if spec.mirror_of is not None:
                exact += [[url(spec.mirror_of, n), url(spec.index, n)] for n in range(self.n_pages)]
            if self.hazards:
                near += [[url(spec.index, n), self.base_url(spec.index, port) + f"/print/{n}.html"]
                         for n in range(1, self.n_pages, 4)]
        return {
            "seed": self.seed, "hosts": self.n_hosts, "pages_per_host": self.n_pages,
            "hazards": self.hazards, "port": port,
            "host_specs": [spec.__dict__ for spec in self.hosts],
            "pages": [url(h, n) for h, n in self.content_pages()],
            "pagerank": {url(h, n): r for (h, n), r in ranks.items()},
            "duplicates": {"exact": exact, "near": near},
            "change_periods": {url(s.index, n): CHANGE_PERIOD
                               for s in self.hosts if s.changing for n in range(self.n_pages)}
            if self.change_period is None else
            {url(s.index, n): self.page_period(n) for s in self.hosts
             for n in range(self.n_pages)},
        }


def _page_number(path: str) -> int | None:
    if path == "/":
        return 0
    if path.startswith("/p/") and path.endswith(".html") and path[3:-5].isdigit():
        return int(path[3:-5])
    return None


@functools.cache
def _zipf_cumulative(n: int, s: float) -> tuple[float, ...]:
    total, out = 0.0, []
    for k in range(n):
        total += 1.0 / math.pow(k + 1, s)
        out.append(total)
    return tuple(out)


def _http_date(ts: float) -> str:
    return formatdate(ts, usegmt=True)
