"""The SSRF guard's reading of IP-literal hosts (pure logic): every spelling a resolver or a
socket library accepts is an address; a name is a name -- also through the fast test that
skips the parsers for hosts with a character no IPv4 spelling has."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from crawler_ext.hosts.addresses import literal_address
from crawler_ext.hosts.guard import NetworkGuard


def _parsed(host: str):
    """The parsers alone, tried on every host: the oracle."""
    host = host.strip().strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if not host or not set(host) <= set("0123456789abcdefxABCDEFX.") or not host[0].isdigit():
        return None  # (inet_aton stops at a space: "0 0" would be 0.0.0.0)
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def test_every_spelling_of_an_address_is_one_and_names_are_names() -> None:
    loopback = ipaddress.ip_address("127.0.0.1")
    for spelling in ("127.0.0.1", "2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1",
                     "127.1", "127.0.0.1.", " 127.0.0.1 "):
        assert literal_address(spelling) == loopback, spelling
    assert literal_address("[::1]") == ipaddress.ip_address("::1")
    assert literal_address("fe80::1%eth0") == ipaddress.ip_address("fe80::1")
    assert literal_address("::ffff:127.0.0.1") == ipaddress.ip_address("::ffff:127.0.0.1")
    for name in ("example.com", "cafe.be", "dead.beef", "h12.example.com", "localhost",
                 "xn--bcher-kva.example", "1.2.3.4.nip.io", "10.0.0.1%eth0x"):
        assert literal_address(name) == _parsed(name), name
    guard = NetworkGuard()
    assert not guard.allows("0x7f.1") and not guard.allows("169.254.169.254")
    assert guard.allows("example.com")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789abcdefxX.:%[]gz- ", max_size=24))
def test_the_fast_name_test_answers_as_the_parsers_do(host: str) -> None:
    assert literal_address(host) == _parsed(host)


# -- failing closed and pinning (the middleware's and the connection's half) ---------------------

def _guard_middleware(resolve):
    from scrapy.utils.test import get_crawler

    from crawler_ext.hosts.netguard import NetworkGuardMiddleware

    crawler = get_crawler(settings_dict={"CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.1/32"})
    middleware = NetworkGuardMiddleware.from_crawler(crawler)
    middleware._resolve = resolve
    return middleware, crawler.stats


def _run(coroutine):
    import asyncio

    return asyncio.run(coroutine)


def test_a_failed_look_up_refuses_the_request_and_a_good_one_pins_its_address() -> None:
    import pytest
    from scrapy import Request
    from scrapy.exceptions import IgnoreRequest
    from twisted.internet import defer
    from twisted.internet.error import DNSLookupError

    answers = {"ok.test": defer.succeed, "bad.test": lambda _: defer.succeed("127.0.0.3"),
               "down.test": lambda _: defer.fail(DNSLookupError("down.test: time-out"))}
    middleware, stats = _guard_middleware(
        lambda host: answers[host]("127.0.0.1") if host == "ok.test" else answers[host](host))
    from crawler_ext.hosts.pinning import REFUSED

    for _ in range(2):  # (logged once, counted each time)
        # refused: its connection resolves to nothing, so the download fails as a failed
        # look-up does (in the downloader: Scrapy's signals and retries as usual)
        assert _run(middleware.process_request(Request("http://down.test/"))) is None
    assert stats.get_value("netguard/lookup_failed") == 2
    assert middleware.pins.get("down.test") == REFUSED
    with pytest.raises(IgnoreRequest):
        _run(middleware.process_request(Request("http://bad.test/")))
    assert middleware.pins.get("bad.test") is None
    _run(middleware.process_request(Request("http://ok.test/")))
    assert middleware.pins.get("OK.test.") == "127.0.0.1"


def test_the_connections_resolver_answers_the_pin_and_judges_every_other_answer() -> None:
    from twisted.internet.address import IPv4Address
    from twisted.internet.interfaces import IResolutionReceiver
    from zope.interface import implementer

    from crawler_ext.hosts.pinning import AddressPins, PinnedNameResolver

    @implementer(IResolutionReceiver)
    class Answers:
        def __init__(self):
            self.got, self.done = [], False

        def resolutionBegan(self, resolution):
            pass

        def addressResolved(self, address):
            self.got.append(address.host)

        def resolutionComplete(self):
            self.done = True

    class Attacker:  # answers the forbidden address to every connection's look-up
        def resolveHostName(self, receiver, name, port=0, types=None, semantics="TCP"):
            receiver.resolutionBegan(None)
            receiver.addressResolved(IPv4Address("TCP", "127.0.0.3", port))
            receiver.resolutionComplete()

    pins, dropped = AddressPins(size=2), []  # (room for the two pins asked below)
    guard = NetworkGuard(["127.0.0.1/32"])
    resolver = PinnedNameResolver(Attacker(), pins, guard.allows,
                                  lambda name, address: dropped.append((name, address)))
    pins.pin("checked.test", "127.0.0.1")
    pins.refuse("failed.test")  # the guard's look-up failed: nothing, not the attacker's
    for name, expected in (("checked.test", ["127.0.0.1"]), ("other.test", []),
                           ("failed.test", []),
                           ("127.0.0.3", ["127.0.0.3"])):  # a literal is the project's own
        answers = Answers()
        resolver.resolveHostName(answers, name, 80)
        assert (answers.got, answers.done) == (expected, True), name
    assert dropped == [("other.test", "127.0.0.3")]
    pins.pin("a.test", "127.0.0.1")
    pins.pin("b.test", "127.0.0.1")  # bounded: the oldest pins go, their names judged again
    assert pins.get("checked.test") is None and len(pins) == 2


def test_a_new_connection_goes_straight_to_the_pin_or_the_standard_way() -> None:
    """``DirectConnectionPool``: a pinned, allowed name connects to its pin (TLS kept around
    it); a refused, forbidden or unpinned name, or an endpoint of another kind, goes through
    Twisted's endpoint and the pinned resolver.  The real crawls under a rebinding DNS are in
    tests/test_rebinding.py."""
    from twisted.internet import reactor as real_reactor
    from twisted.internet.endpoints import HostnameEndpoint, TCP4ClientEndpoint, wrapClientTLS

    from crawler_ext.hosts.direct import DirectConnectionPool
    from crawler_ext.hosts.pinning import AddressPins, PinnedNameResolver

    pins = AddressPins()
    guard = NetworkGuard(["127.0.0.1/32"])
    pins.pin("checked.test", "127.0.0.1")
    pins.pin("forbidden.test", "127.0.0.3")
    pins.refuse("failed.test")

    class Reactor:
        nameResolver = PinnedNameResolver(None, pins, guard.allows)

    pool = DirectConnectionPool(real_reactor)
    pool._reactor = Reactor()

    def endpoint(name: str) -> HostnameEndpoint:
        return HostnameEndpoint(real_reactor, name.encode(), 8080, timeout=7,
                                bindAddress=("127.0.0.9", 0))

    direct = pool._direct(endpoint("checked.test"))
    assert (direct._host, direct._port, direct._timeout, direct._bindAddress) == \
        ("127.0.0.1", 8080, 7, ("127.0.0.9", 0))
    tls = pool._direct(wrapClientTLS(object(), endpoint("Checked.test.")))
    assert tls._wrappedEndpoint._host == "127.0.0.1"
    for name in ("forbidden.test", "failed.test", "unpinned.test"):
        assert pool._direct(endpoint(name)) is None, name
    assert pool._direct(TCP4ClientEndpoint(real_reactor, "127.0.0.3", 80)) is None
    Reactor.nameResolver = object()  # a resolver without the pins: the standard way
    assert pool._direct(endpoint("checked.test")) is None


_CONNECTIONS_LEFT = """
import gc, socket, sys
gc.disable()  # what reference counting alone frees
from twisted.internet import protocol, reactor, tcp
from twisted.internet.endpoints import TCP4ClientEndpoint, _WrappingFactory
from crawler_ext.hosts.direct import CycleFreeTCPEndpoint

server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(8)
ports = [server.getsockname()[1]] * 4
left = [len(ports)]

def over(_=None):
    left[0] -= 1
    if not left[0]:
        reactor.callLater(0.1, reactor.stop)

class Hangup(protocol.Protocol):
    def connectionMade(self):
        self.transport.loseConnection()

    def connectionLost(self, reason):
        over()

kind = CycleFreeTCPEndpoint if sys.argv[1] == "cycle-free" else TCP4ClientEndpoint
for port in ports:
    kind(reactor, "127.0.0.1", port, timeout=5).connect(
        protocol.Factory.forProtocol(Hangup)).addErrback(over)
reactor.callLater(10, reactor.stop)
reactor.run()
print(sum(isinstance(o, (tcp.Client, tcp.Connector, _WrappingFactory)) for o in gc.get_objects()))
"""


def test_a_closed_direct_connection_is_freed_without_the_collector() -> None:
    """``CycleFreeTCPEndpoint``: a connection made and closed leaves none of its transport,
    connector and wrapping factory to the cyclic collector (Twisted's own endpoint leaves
    all three, a cycle for each connection)."""
    def left(kind: str) -> int:
        run = subprocess.run([sys.executable, "-c", _CONNECTIONS_LEFT, kind], timeout=60,
                             capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        return int(run.stdout.split()[-1])

    assert left("twisted") == 12  # the reference: 4 connections x 3 objects
    assert left("cycle-free") == 0



# -- a known host's look-up answered from the resolver's cache, without Deferreds -------------

FAST_PATH_SCRIPT = """
import asyncio, json, sys
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.test import get_crawler
from twisted.internet import asyncioreactor
asyncioreactor.install()
from twisted.internet import defer, reactor
from crawler_ext.hosts.dns import CachingResolver, DnsCache
from crawler_ext.hosts.guard import NetworkGuard
from crawler_ext.hosts.netguard import NetworkGuardMiddleware
from testweb.dns import listen_dns

fast = sys.argv[1] == "fast"
port = listen_dns("web.test", 10, ttl=300)
resolver = CachingResolver(reactor, servers=[("127.0.0.1", port)], timeout=5,
                           cache=DnsCache(100, 300.0, 60.0), hosts_file=None,
                           guard=NetworkGuard(["127.0.0.0/8"]))
resolver.install_on_reactor()
crawler = get_crawler(settings_dict={"CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8"})
middleware = NetworkGuardMiddleware.from_crawler(crawler)
resolver.attach_stats(crawler.stats)
asked = []
if not fast:  # the cache's answers go the standard way: Twisted's chain of Deferreds
    resolver.answer_now = lambda name: None
wrapped = resolver.getHostByName
resolver.getHostByName = lambda name, *a: (asked.append(name), wrapped(name, *a))[1]

async def main():
    out = []
    for step in ("h0001.web.test", "h0001.web.test", "H0001.WEB.TEST", "refuse",
                 "h0001.web.test", "h0002.web.test", "nxdomain.other.test",
                 "nxdomain.other.test"):
        if step == "refuse":  # the resolver's guard no longer allows the cached address
            resolver.guard = NetworkGuard([])
            continue
        try:
            await middleware.process_request(Request(f"http://{step}/"))
            out.append([step, middleware.pins.get(step)])
        except IgnoreRequest as exc:
            out.append([step, "ignored"])
    stats = {k: v for k, v in crawler.stats.get_stats().items() if k.startswith(("dns/", "netguard/"))}
    print(json.dumps({"out": out, "stats": stats, "asked": asked}))

def run():
    d = defer.Deferred.fromFuture(asyncio.ensure_future(main()))
    d.addBoth(lambda _: reactor.stop())

reactor.callWhenRunning(run)
reactor.run()
"""


def test_a_known_hosts_look_up_is_answered_from_the_cache_as_the_resolver_answers_it() -> None:
    import json

    from conftest import ROOT

    runs = {}
    for mode in ("fast", "standard"):
        proc = subprocess.run([sys.executable, "-c", FAST_PATH_SCRIPT, mode], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
    fast, standard = runs["fast"], runs["standard"]
    # the same decisions and pins, the same counts
    assert fast["out"] == standard["out"]
    assert fast["stats"] == standard["stats"]
    assert fast["out"][0] == fast["out"][1] == ["h0001.web.test", "127.0.0.1"], fast
    # once the resolver's guard refuses the cached address, the look-up fails closed
    assert fast["out"][3] == ["h0001.web.test", ""]  # REFUSED: its connection resolves to nothing
    assert fast["stats"]["dns/cache_hits"] == 3 and fast["stats"]["dns/queries"] >= 2
    # the fast path asked the resolver's chain only for what it did not have at hand
    assert fast["asked"].count("h0001.web.test") == 2  # the first look-up, the refused one
    assert standard["asked"].count("h0001.web.test") == 4
