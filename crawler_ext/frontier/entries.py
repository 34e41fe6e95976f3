"""What an entry of the frontier holds (``Entry.data``): its kinds and their one format.

The first byte of an entry's data names its kind:

* ``LINK`` (``b"U"``): a link as a spider yields it, ``U depth[.chain] NUL referer NUL url``;
* ``REQUEST`` (``b"D"``): any other request, a pickle of Scrapy's ``Request.to_dict``;
* ``LIVE`` (``b"M<token>"``): a request kept as the object itself (memory frontiers only);
* ``ROBOTS`` (``b"R<origin>"``): the frontier's own robots.txt fetch for an origin;
* ``ROBOTS_HOP`` (``b"H<token>"``): a robots.txt redirect waiting on its target's key.

These formats are persisted (disk, sqlite and Redis frontiers).  This module is their one
codec: each kind is a typed record (:class:`LinkRecord`, :class:`RequestRecord`,
:class:`LiveRecord`, :class:`RobotsRecord`, :class:`RobotsHopRecord`), written by
:func:`encode` and read by :func:`decode`; no other module reads or writes the bytes.  The
requests they stand for are built by the adapter (``crawler_ext.frontier.adapter.codec``).
"""

from __future__ import annotations

import pickle
from typing import Any, Final, NamedTuple, Union
from crawler_ext.meta import REFRESH_META  # (its home; re-exported here)

__all__ = ["CHAIN", "LINK", "LIVE", "REFRESH_META", "REQUEST", "ROBOTS", "ROBOTS_HOP",
           "LinkRecord", "LiveRecord", "Record", "RequestRecord", "RobotsHopRecord",
           "RobotsRecord", "decode", "decode_link", "encode", "encode_link", "entry_url",
           "is_live", "is_robots", "kind_of"]

LINK: Final = b"U"
REQUEST: Final = b"D"
LIVE: Final = b"M"
ROBOTS: Final = b"R"
ROBOTS_HOP: Final = b"H"

#: request meta of a URL's pattern-chain length (admission), kept with it in the frontier so
#: that the worker that fetches it -- after a restart, or another worker -- continues the chain
CHAIN: Final = "crawler_ext_chain"


class LinkRecord(NamedTuple):
    """A link as a spider yields it (a plain GET): ``U depth[.chain] NUL referer NUL url``."""

    depth: int
    chain: int  # its URL pattern's chain length (admission), 0: none
    referer: bytes
    url: bytes  # UTF-8, made safe by the Request it was stored from


class RequestRecord(NamedTuple):
    """Any other request: ``D`` + a pickle of Scrapy's ``Request.to_dict``."""

    fields: dict[str, Any]


class LiveRecord(NamedTuple):
    """A request kept as the object itself, in this process (``M`` + its token)."""

    token: int


class RobotsRecord(NamedTuple):
    """The frontier's own robots.txt fetch for an origin (``R`` + the origin)."""

    origin: str


class RobotsHopRecord(NamedTuple):
    """A robots.txt redirect waiting on its target's key (``H`` + its token)."""

    token: int


Record = Union[LinkRecord, RequestRecord, LiveRecord, RobotsRecord, RobotsHopRecord]


def kind_of(data: bytes) -> bytes:
    """The kind of an entry's data: ``LINK``, ``REQUEST``, ``LIVE``, ``ROBOTS``, ``ROBOTS_HOP``."""
    return data[:1]


def is_live(data: bytes) -> bool:
    return data[:1] == LIVE


def encode_link(depth: int, chain: int, referer: bytes, url: bytes) -> bytes:
    """A :class:`LinkRecord`'s bytes (every admitted link goes through here: no record is
    built for it)."""
    head = b"%d.%d" % (depth, chain) if chain else b"%d" % depth
    return b"%s%s\x00%s\x00%s" % (LINK, head, referer, url)


def decode_link(data: bytes) -> LinkRecord:
    head, referer, url = data[1:].split(b"\x00", 2)
    depth, _, chain = head.partition(b".")
    return LinkRecord(int(depth), int(chain or 0), referer, url)


def encode(record: Record) -> bytes:
    if isinstance(record, LinkRecord):
        return encode_link(record.depth, record.chain, record.referer, record.url)
    if isinstance(record, RequestRecord):
        return REQUEST + pickle.dumps(record.fields, protocol=4)
    if isinstance(record, LiveRecord):
        return b"%s%d" % (LIVE, record.token)
    if isinstance(record, RobotsRecord):
        return ROBOTS + record.origin.encode("ascii")
    return b"%s%d" % (ROBOTS_HOP, record.token)


def decode(data: bytes) -> Record:
    """The record an entry's data holds (a ValueError for an unknown kind)."""
    kind = data[:1]
    if kind == LINK:
        return decode_link(data)
    if kind == REQUEST:
        return RequestRecord(pickle.loads(data[1:]))
    if kind == LIVE:
        return LiveRecord(int(data[1:]))
    if kind == ROBOTS:
        return RobotsRecord(data[1:].decode("ascii"))
    if kind == ROBOTS_HOP:
        return RobotsHopRecord(int(data[1:]))
    raise ValueError(f"an entry of an unknown kind: {bytes(kind)!r}")


def is_robots(kind: bytes) -> bool:
    """Whether an entry of this kind is the frontier's own robots.txt work."""
    return kind == ROBOTS or kind == ROBOTS_HOP


def entry_url(data: bytes) -> str:
    """The URL of a stored request (``LINK`` or ``REQUEST``), without building the request."""
    if data[:1] == LINK:
        return data.split(b"\x00", 2)[2].decode("utf-8")
    return pickle.loads(data[1:])["url"]
