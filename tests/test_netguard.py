"""The SSRF guard's reading of IP-literal hosts (pure logic): every spelling a resolver or a
socket library accepts is an address; a name is a name -- also through the fast test that
skips the parsers for hosts with a character no IPv4 spelling has."""

from __future__ import annotations

import ipaddress
import socket

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
