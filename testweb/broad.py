"""The broad test web: thousands of hosts, as a broad crawl meets them.

``python -m testweb.broad --hosts 10000 --log requests.jsonl --dns-log dns.jsonl`` serves
``hNNNNN.broad.test`` (10,000 by default), generated lazily and deterministically from a seed:

* **addresses**: ``127.1.0.0/16``, clear of the other test webs' ``127.0.0.x``; many names
  share one address (shared hosting: about a quarter as many addresses as hosts, a few of
  them holding hundreds of names).  One port; a listener on each address in use (a listener on
  ``0.0.0.0`` would take every interface of the machine).  The socket's local address tells
  the server which address a request came to, the ``Host`` header which name; a name asked
  on another address than its own is answered 421.
* **DNS**: its own UDP (and TCP) server, authoritative for ``broad.test`` (every name an A
  record of its address; the crawler reaches it through ``CRAWLER_EXT_DNS_SERVERS``), each
  query logged.
* **sizes**: Zipf-like, 1 to ``--max-pages`` pages a host; each page links 8 pages of its
  host and 2 of other hosts; 8 to 30 KB of real English text (the docstrings of Python's
  standard library, sentences drawn by the page's seed).
* **latency**: lognormal, a median of about ``0.3 x --latency-scale`` s per host, with a heavy
  tail (one request in 50 takes 10 times as long); one host in 100 never answers.
* **robots.txt**: 200 with ``Disallow: /private/`` (most), 404, 503, ``Crawl-delay: 3``,
  ``Disallow: /`` and no answer at all; pages of hosts that disallow ``/private/`` link there.
* **the request log**: one JSON line a request (``host``, ``path``, ``start``, ``end``,
  ``status``, ``bytes``, ``ip``); :func:`robots_violations` and
  :func:`~testweb.requestlog.politeness_violations` (by ``host``, or by ``ip``) judge a crawl.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import ipaddress
import json
import math
import random
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from testweb.process import ServerProcess, serve_until_stopped
from testweb.requestlog import LogEntry

__all__ = ["DOMAIN", "BroadWeb", "BroadWebServer", "main", "robots_violations"]

DOMAIN = "broad.test"
NETWORK = ipaddress.ip_network("127.1.0.0/16")
ROBOTS_KINDS = (("private", 60), ("missing", 18), ("unavailable", 5), ("crawl_delay", 5),
                ("disallow_all", 4), ("no_answer", 3), ("allow_all", 5))
_MODULES = ("argparse", "asyncio", "calendar", "collections", "concurrent.futures",
            "configparser", "contextlib", "csv", "dataclasses", "datetime", "decimal",
            "difflib", "email.message", "enum", "fractions", "functools", "gettext", "glob",
            "gzip", "hashlib", "heapq", "html.parser", "http.client", "http.cookies",
            "inspect", "io", "ipaddress", "itertools", "json", "logging", "mailbox",
            "multiprocessing", "operator", "os", "pathlib", "pickle", "pprint", "queue",
            "random", "re", "sched", "secrets", "shutil", "socket", "sqlite3", "ssl",
            "statistics", "string", "subprocess", "tarfile", "tempfile", "textwrap",
            "threading", "timeit", "tokenize", "traceback", "typing", "unittest", "urllib.parse",
            "urllib.request", "uuid", "wave", "weakref", "xml.dom.minidom", "zipfile")


@lru_cache(maxsize=1)
def sentences() -> tuple[str, ...]:
    """Real English sentences: the docstrings of the standard library's modules and their
    members (the same on every machine with the same Python)."""
    import importlib

    found: list[str] = []
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        docs = [inspect.getdoc(module) or ""] + [
            inspect.getdoc(member) or "" for _, member in sorted(vars(module).items())
            if not _.startswith("_") and (inspect.isfunction(member) or inspect.isclass(member))
            and getattr(member, "__module__", "") == module.__name__]
        for doc in docs:
            for sentence in " ".join(doc.split()).split(". "):
                if 40 <= len(sentence) <= 400 and not sentence.startswith((">>>", "...")):
                    found.append(sentence.rstrip(".") + ".")
    return tuple(found)


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from ``parts``."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0 ** 64


class BroadWeb:
    """The web's model: every answer a function of (seed, host, path)."""

    def __init__(self, seed: int = 1, hosts: int = 10_000, max_pages: int = 200,
                 latency_scale: float = 1.0) -> None:
        self.seed, self.n_hosts, self.max_pages = seed, hosts, max_pages
        self.latency_scale = latency_scale
        self.n_addresses = max(1, hosts // 4)
        if self.n_addresses > NETWORK.num_addresses // 2:
            raise ValueError(f"{hosts} hosts: more than this web's addresses can hold")

    # -- hosts ------------------------------------------------------------------------------
    def name(self, i: int) -> str:
        return f"h{i:05d}.{DOMAIN}"

    def index(self, name: str) -> int | None:
        if not name.endswith("." + DOMAIN) or not name.startswith("h"):
            return None
        digits = name[1:-len(DOMAIN) - 1]
        if not digits.isdigit() or int(digits) >= self.n_hosts:
            return None
        return int(digits)

    def address_index(self, i: int) -> int:
        """Shared hosting: a few addresses hold many names, most hold a few."""
        return int(self.n_addresses * _unit(self.seed, "ip", i) ** 3)

    def address(self, i: int) -> str:
        k = self.address_index(i)
        return str(NETWORK.network_address + 256 * (k // 254) + k % 254 + 1)

    def addresses(self) -> list[str]:
        return sorted({self.address(i) for i in range(self.n_hosts)},
                      key=lambda a: ipaddress.ip_address(a))

    def pages(self, i: int) -> int:
        """Zipf-like: most hosts small, a few large."""
        return max(1, int(self.max_pages * _unit(self.seed, "size", i) ** 4))

    def robots_kind(self, i: int) -> str:
        u = _unit(self.seed, "robots", i) * 100
        for kind, share in ROBOTS_KINDS:
            if u < share:
                return kind
            u -= share
        return ROBOTS_KINDS[-1][0]

    def dead(self, i: int) -> bool:
        """One host in 100 never answers anything."""
        return _unit(self.seed, "dead", i) < 0.01

    def latency(self, i: int, path: str) -> float:
        median = 0.3 * math.exp(0.5 * _gauss(self.seed, "host", i))
        delay = median * math.exp(0.6 * _gauss(self.seed, "req", i, path))
        if _unit(self.seed, "tail", i, path) < 0.02:
            delay *= 10
        return delay * self.latency_scale

    def url(self, i: int, path: str = "/", port: int = 80) -> str:
        return f"http://{self.name(i)}:{port}{path}"

    # -- answers ----------------------------------------------------------------------------
    def robots(self, i: int) -> tuple[int, bytes] | None:
        kind = self.robots_kind(i)
        if kind == "no_answer":
            return None
        return {"private": (200, b"User-agent: *\nDisallow: /private/\n"),
                "missing": (404, b"not found\n"),
                "unavailable": (503, b"unavailable\n"),
                "crawl_delay": (200, b"User-agent: *\nCrawl-delay: 3\n"),
                "disallow_all": (200, b"User-agent: *\nDisallow: /\n"),
                "allow_all": (200, b"User-agent: *\nAllow: /\n")}[kind]

    def page(self, i: int, n: int, port: int) -> bytes:
        rng = random.Random(f"{self.seed}:{i}:{n}")
        words = sentences()
        size = rng.randint(8_000, 30_000)
        paragraphs, total = [], 0
        while total < size:
            paragraph = " ".join(rng.choice(words) for _ in range(rng.randint(3, 8)))
            paragraphs.append(f"<p>{paragraph}</p>")
            total += len(paragraph) + 7
        pages = self.pages(i)
        links = [f"/p/{rng.randrange(pages)}" for _ in range(8)]
        if self.robots_kind(i) == "private":
            links.append(f"/private/{rng.randrange(pages)}")
        others = [self.url(rng.randrange(self.n_hosts), "/", port) for _ in range(2)]
        anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links + others)
        title = rng.choice(words)[:60]
        return (f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
                f"{''.join(paragraphs)}<ul>{anchors}</ul></body></html>").encode()

    def respond(self, name: str, path: str, local: str,
                port: int) -> tuple[int, dict[str, str], bytes, float] | None:
        """(status, headers, body, delay) for a request, or None: never answered."""
        i = self.index(name)
        if i is None:
            return 404, {"Content-Type": "text/plain"}, b"no such host\n", 0.0
        if local != self.address(i):
            return 421, {"Content-Type": "text/plain"}, b"misdirected request\n", 0.0
        if self.dead(i):
            return None
        delay = self.latency(i, path)
        if path == "/robots.txt":
            answer = self.robots(i)
            if answer is None:
                return None
            return answer[0], {"Content-Type": "text/plain"}, answer[1], delay
        if path == "/":
            n = 0
        elif path.startswith(("/p/", "/private/")) and path.rsplit("/", 1)[1].isdigit():
            n = int(path.rsplit("/", 1)[1])
            if n >= self.pages(i):
                return 404, {"Content-Type": "text/html"}, b"<html>not found</html>", delay
        else:
            return 404, {"Content-Type": "text/html"}, b"<html>not found</html>", delay
        return 200, {"Content-Type": "text/html; charset=utf-8"}, self.page(i, n, port), delay


def _gauss(*parts: object) -> float:
    """A standard normal number from ``parts`` (Box-Muller over two deterministic units)."""
    u1 = max(_unit(*parts, 1), 1e-12)
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * _unit(*parts, 2))


def robots_violations(log: list[LogEntry], web: BroadWeb) -> list[LogEntry]:
    """Requests robots.txt forbade (RFC 9309): under ``/private/`` where disallowed, anything
    on a host that disallows all, whose robots.txt answered 5xx or never answered."""
    bad = []
    for entry in log:
        i = web.index(entry.host)
        if i is None or entry.path == "/robots.txt":
            continue
        kind = web.robots_kind(i)
        if kind in ("disallow_all", "unavailable", "no_answer") or \
                kind == "private" and entry.path.startswith("/private/"):
            bad.append(entry)
    return bad


# -- serving ------------------------------------------------------------------------------
def _serve(web: BroadWeb, log: IO[str] | None) -> int:
    from twisted.internet import reactor
    from twisted.internet.error import CannotListenError
    from twisted.web.resource import Resource
    from twisted.web.server import NOT_DONE_YET, Site

    class Broad(Resource):
        isLeaf = True
        port = 0

        def render(self, request: Any) -> Any:
            start = time.time()
            name = (request.getHeader("host") or "").split(":")[0].lower()
            path = request.uri.decode("latin-1")
            local = request.getHost().host
            answer = web.respond(name, path, local, self.port)

            def logged(status: int, size: int) -> None:
                if log is not None:
                    log.write(json.dumps({"host": name, "path": path, "start": round(start, 6),
                                          "end": round(time.time(), 6), "client": "",
                                          "status": status, "bytes": size, "ip": local}) + "\n")

            if answer is None:
                logged(0, 0)
                return NOT_DONE_YET  # accepted, never answered
            status, headers, body, delay = answer
            request.setResponseCode(status)
            for key, value in headers.items():
                request.setHeader(key, value)
            request.setHeader("Content-Length", str(len(body)))

            def finish() -> None:
                if request.finished or request._disconnected:
                    return
                request.write(body)
                request.finish()
                logged(status, len(body))

            reactor.callLater(delay, finish)
            return NOT_DONE_YET

    resource = Broad()
    site = Site(resource)
    site.log = lambda request: None
    addresses = web.addresses()
    for _ in range(20):  # one port free on every address
        first = reactor.listenTCP(0, site, interface=addresses[0], backlog=1024)
        port = first.getHost().port
        listening = [first]
        try:
            for address in addresses[1:]:
                listening.append(reactor.listenTCP(port, site, interface=address, backlog=256))
        except CannotListenError:
            for item in listening:
                item.stopListening()
            continue
        resource.port = port
        return port
    raise OSError("no port free on every address of the broad web")


def _serve_dns(web: BroadWeb, log: IO[str] | None) -> int:
    from twisted.internet import defer, reactor
    from twisted.internet.error import CannotListenError
    from twisted.names import dns, server
    from twisted.names.common import ResolverBase
    from twisted.names.error import AuthoritativeDomainError

    class Authority(ResolverBase):
        def _lookup(self, name: bytes, cls: int, type: int, timeout: Any) -> defer.Deferred:
            text = name.decode("ascii", "replace").lower().rstrip(".")
            if log is not None:
                log.write(json.dumps({"name": text, "type": dns.QUERY_TYPES.get(type, type),
                                      "time": round(time.time(), 6)}) + "\n")
            i = web.index(text)
            if i is None:
                return defer.fail(AuthoritativeDomainError(text))
            if type not in (dns.A, dns.ALL_RECORDS):
                return defer.succeed(([], [], []))
            return defer.succeed(([dns.RRHeader(name, dns.A, dns.IN, 300,
                                                dns.Record_A(web.address(i), 300), auth=True)],
                                  [], []))

    factory = server.DNSServerFactory(authorities=[Authority()])
    udp = reactor.listenUDP(0, dns.DNSDatagramProtocol(factory), interface="127.0.0.1")
    port = udp.getHost().port
    try:
        reactor.listenTCP(port, factory, interface="127.0.0.1")
    except CannotListenError:
        pass
    return port


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testweb.broad", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--max-pages", type=int, default=200, help="pages of the largest host")
    parser.add_argument("--latency-scale", type=float, default=1.0,
                        help="times the latencies (0.3 s median at 1)")
    parser.add_argument("--log", help="request log file (JSON lines)")
    parser.add_argument("--dns-log", help="DNS query log file (JSON lines)")
    parser.add_argument("--seeds-file", help="write every host's home page URL here")
    args = parser.parse_args(argv)
    try:
        web = BroadWeb(args.seed, args.hosts, args.max_pages, args.latency_scale)
        sentences()
        log = open(args.log, "a", encoding="utf-8", buffering=1 << 16) if args.log else None  # noqa: SIM115
        dns_log = open(args.dns_log, "a", encoding="utf-8", buffering=1 << 16) \
            if args.dns_log else None  # noqa: SIM115
        port = _serve(web, log)
        dns_port = _serve_dns(web, dns_log)
    except (ValueError, OSError) as exc:
        print(f"testweb.broad: {exc}", file=sys.stderr)
        return 2
    if args.seeds_file:
        with open(args.seeds_file, "w", encoding="utf-8") as fh:
            fh.writelines(web.url(i, "/", port) + "\n" for i in range(web.n_hosts))
    from twisted.internet import task

    def flush() -> None:
        for file in (log, dns_log):
            if file is not None:
                file.flush()

    task.LoopingCall(flush).start(0.5, now=False)
    serve_until_stopped(port=port, dns=dns_port, hosts=web.n_hosts,
                        addresses=len(web.addresses()))
    flush()
    return 0


class BroadWebServer(ServerProcess):
    """The broad web in a subprocess (a context manager): ``port``, ``dns_port``, the logs."""

    def __init__(self, workdir: str | Path, hosts: int = 10_000, seed: int = 1,
                 max_pages: int = 200, latency_scale: float = 1.0) -> None:
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.web = BroadWeb(seed, hosts, max_pages, latency_scale)
        self.log_path = self.dir / "requests.jsonl"
        self.dns_log_path = self.dir / "dns.jsonl"
        self.seeds_path = self.dir / "seeds.txt"
        self.port = self.dns_port = 0

    def start(self) -> BroadWebServer:
        web = self.web
        fields = self._launch([sys.executable, "-m", "testweb.broad", "--seed", str(web.seed),
                               "--hosts", str(web.n_hosts), "--max-pages", str(web.max_pages),
                               "--latency-scale", str(web.latency_scale),
                               "--log", str(self.log_path), "--dns-log", str(self.dns_log_path),
                               "--seeds-file", str(self.seeds_path)])
        self.port, self.dns_port = int(fields["port"]), int(fields["dns"])
        return self

    def dns_queries(self) -> dict[str, int]:
        """Queries per name, from the DNS log."""
        counts: dict[str, int] = {}
        if self.dns_log_path.exists():
            for line in self.dns_log_path.read_text().splitlines():
                if line.endswith("}"):
                    name = json.loads(line)["name"]
                    counts[name] = counts.get(name, 0) + 1
        return counts


if __name__ == "__main__":
    sys.exit(main())
