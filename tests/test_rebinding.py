"""The SSRF guard fails closed and pins the address it checked (issue: faults between
machines, part 3).  An attacker's DNS on loopback (``testweb.dns.RebindingAuthority``) answers
with a TTL of 0 an allowed address and the forbidden one alternately, or times out once and
then answers the forbidden one; a listener on the forbidden address at the web's own port logs
every connection.  Real `scrapy crawl` runs, with the pack's resolver, with a project's own
resolver that checks nothing, and in Scrapy's reactorless mode (aiohttp resolving through
getaddrinfo, which the attacker answers), robots.txt obeyed or not, through pages, redirects
to other names and sitemaps: the forbidden listener must log nothing."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, run_crawl

from testweb import read_log
from testweb.process import ServerProcess


class AttackerWeb(ServerProcess):
    def __init__(self, workdir: Path) -> None:
        self.log_path = workdir / "requests.jsonl"
        self.forbidden_path = workdir / "forbidden.jsonl"
        self.dns_log = workdir / "dns.jsonl"
        ready = self._launch([sys.executable, "-m", "testweb.hostile", "--log",
                              str(self.log_path), "--forbidden-log", str(self.forbidden_path),
                              "--rebind-dns", str(self.dns_log)])
        self.port = int(ready["port"])
        self.dns_port = int(ready["dns"])

    def forbidden_connections(self) -> list[dict]:
        if not self.forbidden_path.exists():
            return []
        return [json.loads(x) for x in self.forbidden_path.read_text().splitlines() if x]

    def answers(self) -> list[dict]:
        return [json.loads(x) for x in self.dns_log.read_text().splitlines() if x]


@pytest.fixture
def attacker(tmp_path: Path) -> Iterator[AttackerWeb]:
    server = AttackerWeb(tmp_path)
    yield server
    server.stop()


def crawl(attacker: AttackerWeb, tmp_path: Path, resolver: str, obey: bool):
    p = attacker.port
    seeds = [f"http://normal.rebind.test:{p}/", f"http://sitemaps.rebind.test:{p}/",
             # a redirect to another name: the target is checked and pinned on its own
             f"http://redirects.rebind.test:{p}/xgo/target.rebind.test/ok/1",
             f"http://normal.late.test:{p}/", f"http://redirects.late.test:{p}/go/ok/2"]
    settings = {"CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.1/32", "ROBOTSTXT_OBEY": obey,
                "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05, "CRAWLER_EXT_SITEMAPS_ENABLED": True,
                "DNS_TIMEOUT": 2, "RETRY_TIMES": 1, "LOG_LEVEL": "INFO",
                "CLOSESPIDER_TIMEOUT": 25}
    if resolver == "pack":  # the add-on's caching resolver, told to honour a TTL of 0
        settings.update({"CRAWLER_EXT_DNS_SERVERS": f"127.0.0.1:{attacker.dns_port}",
                         "CRAWLER_EXT_DNS_MIN_TTL": 0, "CRAWLER_EXT_DNS_PREFETCH": False})
    elif resolver == "plain":  # a project's own resolver that checks nothing
        settings.update({"TWISTED_DNS_RESOLVER": "testweb.dns.PlainResolver",
                         "TESTWEB_DNS_SERVER": f"127.0.0.1:{attacker.dns_port}",
                         "CRAWLER_EXT_DNS_PREFETCH": False})
    env = None
    if resolver == "reactorless":
        # Scrapy without a reactor: aiohttp resolves through getaddrinfo, which the attacker
        # answers here (the system's resolver asking the attacker's DNS, in effect)
        settings["TWISTED_REACTOR_ENABLED"] = False
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(REBINDING_GETADDRINFO)
        attacker.dns_log = tmp_path / "getaddrinfo.jsonl"
        env = {"PYTHONPATH": f"{site}{os.pathsep}{ROOT}", "REBIND_LOG": str(attacker.dns_log)}
    return run_crawl("-a", f"seeds={','.join(seeds)}", items_path=tmp_path / "items.jsonl",
                     settings=settings, timeout=180, env=env)


#: the attacker behind getaddrinfo, as RebindingAuthority answers over DNS
REBINDING_GETADDRINFO = """
import json, os, socket, time

_real = socket.getaddrinfo
_asked = {}


def getaddrinfo(host, port, *args, **kwargs):
    name = (host.decode() if isinstance(host, bytes) else str(host or "")).lower().rstrip(".")
    if not name.endswith((".rebind.test", ".late.test")):
        return _real(host, port, *args, **kwargs)
    n = _asked[name] = _asked.get(name, 0) + 1
    if name.endswith(".late.test"):
        answer = None if n == 1 else "127.0.0.3"
    else:
        answer = "127.0.0.1" if n % 2 else "127.0.0.3"
    with open(os.environ["REBIND_LOG"], "a") as fh:
        fh.write(json.dumps({"name": name, "n": n, "answer": answer}) + "\\n")
    if answer is None:
        time.sleep(4)  # past the asker's DNS_TIMEOUT, then the forbidden address
        answer = "127.0.0.3"
    return _real(answer, port, *args, **kwargs)


socket.getaddrinfo = getaddrinfo
"""


@pytest.mark.slow
@pytest.mark.parametrize("obey", [True, False], ids=["robots", "no-robots"])
@pytest.mark.parametrize("resolver", ["pack", "plain", "reactorless"])
def test_a_rebinding_or_failing_dns_never_reaches_a_forbidden_address(
        attacker, tmp_path: Path, resolver: str, obey: bool) -> None:
    result = crawl(attacker, tmp_path, resolver, obey)
    assert result.returncode == 0, result.output[-3000:]
    assert "Traceback" not in result.output, result.output[-3000:]
    assert attacker.forbidden_connections() == []
    fetched = {(e.host.split(":")[0], e.path) for e in read_log(attacker.log_path)}
    # each path was taken: robots.txt (when obeyed), a page, a redirect's first hop
    first = "/robots.txt" if obey else "/"
    assert ("normal.rebind.test", first) in fetched, fetched
    assert ("redirects.rebind.test", "/robots.txt" if obey else
            "/xgo/target.rebind.test/ok/1") in fetched, fetched
    # the attacker re-pointed names after the first answer: the later checks were refused
    # (by the pack's resolver itself, or by the guard behind a resolver that checks nothing)
    assert result.stat("dns/refused" if resolver == "pack" else "netguard/refused") >= 1
    # the timed-out look-ups were refused, never left to the download to resolve again
    assert result.stat("netguard/lookup_failed") >= 1
    assert any(a["answer"] is None for a in attacker.answers())
    assert not any(host.endswith(".late.test") for host, _ in fetched)
    if resolver != "reactorless":  # Twisted's connections went straight to the pins
        assert result.stat("hosts/connections_direct") >= 1


# -- the rendering pool: Chromium resolves nothing itself --------------------------------------

class AttackerApps(AttackerWeb):
    def __init__(self, workdir: Path) -> None:
        self.log_path = workdir / "requests.jsonl"
        self.forbidden_path = workdir / "forbidden.jsonl"
        self.dns_log = workdir / "dns.jsonl"
        ready = self._launch([sys.executable, "-m", "testweb.apps", "--log", str(self.log_path),
                              "--forbidden-log", str(self.forbidden_path),
                              "--rebind-dns", str(self.dns_log)])
        self.port = int(ready["port"])
        self.dns_port = int(ready["dns"])


@pytest.mark.slow
def test_a_rendered_page_and_its_requests_go_to_the_address_the_guard_checked(
        tmp_path: Path) -> None:
    """An app shell on a name the attacker answers twice with the allowed address (the page's
    fetch and its render request are checked), then twice with a forbidden one: the browser's
    navigation and every sub-request go through the guard's proxy to the pinned address.
    Without the proxy the browser cannot resolve the name at all, so nothing renders."""
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not installed")
    apps = AttackerApps(tmp_path)
    try:
        url = f"http://vanilla.pair.rebind.test:{apps.port}/"
        result = run_crawl("-a", f"seeds={url}", items_path=tmp_path / "items.jsonl",
                           settings={"CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.1/32",
                                     "CRAWLER_EXT_RENDER_ENABLED": True, "ROBOTSTXT_OBEY": False,
                                     "TWISTED_DNS_RESOLVER": "testweb.dns.PlainResolver",
                                     "TESTWEB_DNS_SERVER": f"127.0.0.1:{apps.dns_port}",
                                     "CRAWLER_EXT_DNS_PREFETCH": False,
                                     "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.1, "DNS_TIMEOUT": 2,
                                     "CLOSESPIDER_TIMEOUT": 90}, timeout=180)
        assert result.returncode == 0, result.output[-3000:]
        assert apps.forbidden_connections() == []
        assert result.stat("render/rendered") >= 1, result.output[-3000:]
        assert result.stat("render/fallback") == 0, result.output[-3000:]
        assert result.stat("render/subrequests") >= 1  # app.js, through the proxy, pinned
        paths = [e.path for e in read_log(apps.log_path)]
        assert paths.count("/") == 2 and "/app.js" in paths  # the plain fetch and the render
    finally:
        apps.stop()


CONNECT_SCRIPT = r"""
import socket, sys, threading
from twisted.internet import reactor
from twisted.internet.protocol import Factory, Protocol
from crawler_ext.hosts.pinning import AddressPins, pinned_resolver
from crawler_ext.render.proxy import GuardProxy

connections = []

class Echo(Protocol):
    def connectionMade(self):
        connections.append(1)

    def dataReceived(self, data):
        self.transport.write(data)

echo = reactor.listenTCP(0, Factory.forProtocol(Echo), interface="127.0.0.3").getHost().port
# the same server on the forbidden address too: a tunnel that got there would be counted
reactor.listenTCP(echo, Factory.forProtocol(Echo), interface="127.0.0.1")
pins = AddressPins()
pins.pin("allowed.test", "127.0.0.3")
pins.refuse("refused.test")
# a name not pinned (localhost) is judged as it resolves: 127.0.0.1 is not allowed here
proxy = GuardProxy(lambda: pinned_resolver(reactor, pins, lambda a: a == "127.0.0.3",
                                           lambda n, a: None))
port = proxy.start()

def tunnel(target, payload):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        status = head.split(b"\r\n", 1)[0].decode()
        if " 200 " not in status:
            return status, b""
        s.sendall(payload)
        return status, s.recv(4096)

def run():
    out = [tunnel(f"allowed.test:{echo}", b"ping"), tunnel(f"refused.test:{echo}", b"x"),
           tunnel(f"localhost:{echo}", b"x")]
    print(repr([out, len(connections)]), flush=True)
    reactor.callFromThread(reactor.stop)

reactor.callWhenRunning(lambda: threading.Thread(target=run).start())
reactor.run()
"""


def test_the_render_proxy_relays_https_tunnels_only_to_checked_addresses(tmp_path) -> None:
    """CONNECT (the rendering pool's HTTPS): a pinned name is relayed byte for byte; a name
    the guard refused, or one that resolves to an address it does not allow, answers 502 and
    nothing reaches the server behind it."""
    import ast
    import subprocess
    import sys

    from conftest import ROOT

    done = subprocess.run([sys.executable, "-c", CONNECT_SCRIPT], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    out, connections = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    (ok, echoed), (refused, _), (other, _) = out
    assert " 200 " in ok and echoed == b"ping"
    assert " 502 " in refused and " 502 " in other
    assert connections == 1  # the refused tunnels never connected
