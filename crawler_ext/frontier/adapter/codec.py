"""Scrapy requests as the frontier's entries hold them (the records and their one codec:
``crawler_ext.frontier.entries``).

A plain GET (default callback; no body, cookies, or headers but Referer; no meta beyond
depth) -- what a link-following spider yields -- is stored as
``b"U" + depth[.chain] + NUL + referer + NUL + url`` (about a third of its pickle); any other
request as ``b"D" +`` a pickle of Scrapy's ``Request.to_dict`` (callbacks by name, so they survive a
restart).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.utils.request import request_from_dict

from crawler_ext.frontier.entries import (CHAIN, LINK, RequestRecord, decode, decode_link, encode,
                                          encode_link, entry_url, kind_of)

__all__ = ["CHAIN", "decode_request", "encode_plain", "encode_request", "entry_url", "is_plain",
           "peek"]


# meta keys that Scrapy sets itself and that need not survive storage; a user's own
# ``download_slot`` and ``download_timeout`` are kept (Scrapy sets the slot to the host name,
# which is dropped as its default)
_TRANSIENT_META = frozenset({"download_latency"})


def _stored_meta(request: Request) -> dict[str, Any]:
    meta = {k: v for k, v in request.meta.items() if k not in _TRANSIENT_META}
    slot = meta.get("download_slot")
    if slot is not None:
        try:
            default = urlsplit(request.url).hostname
        except ValueError:
            default = None
        if slot == default:
            del meta["download_slot"]
    return meta


_PLAIN_META = frozenset({"depth", CHAIN}) | _TRANSIENT_META
_UNSET = object()


def peek(request: Request, name: str) -> Any:
    """``request.<name>`` (``headers``, ``cookies``, ``flags``, ``cb_kwargs``) without creating
    it: since Scrapy 2.19 they stay None until first read, and a read builds an empty one --
    an empty ``Headers`` costs 3 us, on every link a spider yields.  (Older Scrapy sets them
    at once: the attribute itself is read then.)"""
    value = getattr(request, "_" + name, _UNSET)
    return getattr(request, name) if value is _UNSET else value


def is_plain(request: Request, spider: Any) -> bool:
    """A link as a spider yields it: stored in the compact form.  (On every admitted link:
    it reads attributes only, builds nothing, in the common case.)"""
    if request.method != "GET" or request.body or peek(request, "cookies") \
            or request.dont_filter or request.priority or request.errback is not None \
            or peek(request, "flags") or request.encoding != "utf-8":
        return False
    headers = peek(request, "headers")
    if headers and (len(headers) != 1 or len(headers.getlist(b"Referer")) != 1):
        return False
    if peek(request, "cb_kwargs"):
        return False
    if request.callback is not None and request.callback != getattr(spider, "parse", None):
        return False
    meta = request.meta
    if all(key in _PLAIN_META for key in meta):
        return True
    return set(_stored_meta(request)) <= {"depth", CHAIN}


def encode_plain(request: Request, referer: bytes | None = None) -> bytes:
    """The compact form of a request :func:`is_plain` said yes to (``referer``: its Referer
    header, if the caller has read it already)."""
    meta = request.meta
    if referer is None:
        headers = peek(request, "headers")
        referer = (headers.get(b"Referer") if headers else None) or b""
    return encode_link(int(meta.get("depth", 0)), int(meta.get(CHAIN, 0)), referer,
                       request.url.encode("utf-8"))


def encode_request(request: Request, spider: Any) -> bytes:
    if is_plain(request, spider):
        return encode_plain(request)
    data = request.to_dict(spider=spider)
    data["meta"] = _stored_meta(request)
    return encode(RequestRecord(data))


def decode_request(blob: bytes, spider: Any, tracked: bool = True) -> Request:
    """The request an entry's data holds.  ``tracked=False``: a stored link's ``Request`` is
    built by its own ``__init__`` but not registered in Scrapy's ``trackref`` (a debugging
    aid that ``MEMDEBUG_ENABLED`` and the telnet console's ``prefs()`` read): its weak
    reference was a third of the objects each request in flight kept alive for the garbage
    collector, and a quarter of building it."""
    if kind_of(blob) == LINK:
        depth, chain, referer, url = decode_link(blob)
        # the URL was made safe by the Request it was stored from: Scrapy need not quote it
        # again (its documented ``verbatim_url``, 3x faster to build; taken out at once, so
        # that a redirect's Location is still made safe)
        meta: dict[str, Any] = {"verbatim_url": True}
        if depth:
            meta["depth"] = depth
        if chain:
            meta[CHAIN] = chain
        headers = {b"Referer": referer} if referer else None
        if tracked:
            request = Request(url.decode("utf-8"), meta=meta, headers=headers)
        else:
            request = object.__new__(Request)  # (not object_ref.__new__, which tracks it)
            Request.__init__(request, url.decode("utf-8"), meta=meta, headers=headers)
        del request.meta["verbatim_url"]
        return request
    record = decode(blob)
    if not isinstance(record, RequestRecord):
        raise ValueError(f"not a stored request: {record!r}")
    return request_from_dict(record.fields, spider=spider)
