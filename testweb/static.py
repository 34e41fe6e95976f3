"""Serve real documentation trees (``testweb.corpus``) as loopback virtual hosts.

``python -m testweb.static --sites sites.json --log requests.jsonl`` serves each
site at ``http://<name>.real.test:<port>/`` with the same request log as the test web (so
``politeness_violations`` judges a crawl of it), ``--latency`` seconds per response.  Each
site may carry a robots.txt of its own (``robots`` in sites.json); without one it is a 404.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import mimetypes
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from testweb.corpus import Site, build_corpus, reachable, resolve_path
from testweb.process import ServerProcess
from testweb.requestlog import write_entry

__all__ = ["RealWebServer", "SPHINX_ROBOTS", "main"]

# robots.txt as real documentation hosts serve them: Read the Docs' default keeps the
# reStructuredText sources out; MkDocs sites commonly allow all.
SPHINX_ROBOTS = "User-agent: *\nDisallow: /_sources/\n\nUser-agent: GPTBot\nDisallow: /\n"
MKDOCS_ROBOTS = "User-agent: *\nAllow: /\n"


def robots_for(site: Site) -> str | None:
    if site.generator.startswith("Sphinx"):
        return SPHINX_ROBOTS
    if site.generator.startswith("MkDocs"):
        return MKDOCS_ROBOTS
    return None


def _resource(sites: dict[str, dict[str, Any]], latency: float, log: IO[str] | None) -> Any:
    from twisted.internet import reactor
    from twisted.web.resource import Resource
    from twisted.web.server import NOT_DONE_YET

    class StaticSites(Resource):
        isLeaf = True

        def render(self, request: Any) -> Any:
            start = time.time()
            host = (request.getHeader("host") or "").split(":")[0].lower()
            target = request.uri.decode("latin-1")
            path = target.split("?", 1)[0].split("#", 1)[0]
            site = sites.get(host.split(".")[0]) if host.endswith(".real.test") else None
            status, body, ctype = 404, b"not found", "text/plain"
            if site is not None:
                if path == "/robots.txt" and site.get("robots") is not None:
                    status, body, ctype = 200, site["robots"].encode(), "text/plain"
                else:
                    file = resolve_path(Path(site["root"]), path)
                    if file is not None:
                        status, body = 200, file.read_bytes()
                        ctype = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
                        if ctype.startswith("text/"):
                            ctype += "; charset=utf-8"
            request.setResponseCode(status)
            request.setHeader("Content-Type", ctype)
            request.setHeader("Content-Length", str(len(body)))

            def finish() -> None:
                if request.finished or request._disconnected:
                    return
                if request.method != b"HEAD":
                    request.write(body)
                request.finish()
                if log is not None:
                    write_entry(log, request, host, target, start, status, len(body))

            reactor.callLater(latency, finish)
            return NOT_DONE_YET

    return StaticSites()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testweb.static",
                                     description=__doc__)
    parser.add_argument("--sites", required=True, help="JSON: {name: {root, robots}}")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--log", help="request log file (JSON lines)")
    args = parser.parse_args(argv)
    if not ipaddress.ip_address(args.address).is_loopback:
        print(f"static: binds loopback addresses only, not {args.address}", file=sys.stderr)
        return 2
    from twisted.internet import reactor
    from twisted.web.server import Site as WebSite

    sites = json.loads(Path(args.sites).read_text())
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115
    web = WebSite(_resource(sites, args.latency, log))
    web.log = lambda request: None
    port = reactor.listenTCP(args.port, web, interface=args.address).getHost().port
    signal.signal(signal.SIGTERM, lambda *_: reactor.callFromThread(reactor.stop))
    print(f"READY port={port} sites={len(sites)}", flush=True)
    reactor.run()
    return 0


class RealWebServer(ServerProcess):
    """The corpus served in a subprocess; ``truth()`` gives each site's reachable paths."""

    def __init__(self, sites: list[Site] | None = None, latency: float = 0.0,
                 workdir: str | Path | None = None, port: int = 0) -> None:
        self.sites = {s.name: s for s in (sites if sites is not None else build_corpus())}
        self.latency = latency
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="realweb-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.dir / "requests.jsonl"
        self.port = port  # 0: a free one

    def start(self) -> RealWebServer:
        spec = {name: {"root": str(s.root), "robots": robots_for(s)}
                for name, s in self.sites.items()}
        (self.dir / "sites.json").write_text(json.dumps(spec))
        ready = self._launch([sys.executable, "-m", "testweb.static", "--sites",
                              str(self.dir / "sites.json"), "--log", str(self.log_path),
                              "--latency", str(self.latency), "--port", str(self.port)])
        self.port = int(ready["port"])
        return self

    hosts_setting = "*.real.test=127.0.0.1"

    def url(self, name: str, path: str | None = None) -> str:
        site = self.sites[name]
        return f"http://{site.host()}:{self.port}{path if path is not None else site.start}"

    def truth(self, name: str) -> set[str]:
        """Paths reachable from the start page that robots.txt allows."""
        site = self.sites[name]
        paths = reachable(site.root, site.start)
        if robots_for(site) == SPHINX_ROBOTS:
            paths = {p for p in paths if not p.startswith("/_sources/")}
        return paths


if __name__ == "__main__":
    sys.exit(main())
