"""IP addresses as hosts spell them: an IP-literal host in any spelling a resolver or socket
library accepts (dotted, decimal ``2130706433``, hex ``0x7f.1``, octal ``0177.0.0.1``, short
``127.1``), and the IPv4 address inside an IPv6 one (mapped, compatible, 6to4, NAT64)."""

from __future__ import annotations

import ipaddress
import re
import socket
from sys import intern

__all__ = ["embedded_v4", "literal_address"]

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_LEGACY_V4 = frozenset("0123456789abcdefxABCDEFX.")
_NOT_V4 = re.compile(r"[^0-9a-fA-FxX.]")  # (a name's test without an exception: the cache
                                          # below misses when hosts outnumber it)


# host -> literal_address(host), emptied when full: hot (every admitted link; hosts repeat),
# and a plain dict of names -> None is left out of the garbage collector's walks (an
# lru_cache's linked entries were walked at every full collection, 200,000 references)
_LITERALS: dict[str, ipaddress.IPv4Address | ipaddress.IPv6Address | None] = {}
_LITERALS_MAX = 1 << 16


def literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address an IP-literal host names, in any spelling a resolver or socket library
    would accept (``inet_aton``'s decimal, hex, octal and short forms included); None for a
    host name."""
    address = _LITERALS.get(host, _LITERALS)
    if address is not _LITERALS:
        return address  # type: ignore[return-value]
    address = _literal_address(host)
    if len(_LITERALS) >= _LITERALS_MAX:
        _LITERALS.clear()
    _LITERALS[intern(host)] = address
    return address


def _literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    host = host.strip().strip("[]").rstrip(".")
    bare = host.split("%", 1)[0]  # a zone id does not change it
    if ":" not in bare and _NOT_V4.search(bare):
        return None  # no colon (IPv6), and a character no IPv4 spelling has: a name
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if host and set(host) <= _LEGACY_V4 and host[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv4-mapped, -compatible, 6to4 or NAT64 IPv6 address."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (int(ip) >> 32 == 0 and int(ip) > 1):  # NAT64, or ::a.b.c.d
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None
