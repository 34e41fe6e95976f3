"""Scrapy requests as the frontier's entries hold them (``Entry.data``).

A plain link is stored in the compact form (``crawler_ext.frontier.adapter.codec``: ``b"U..."``); any
other request, in the memory frontier, as the ``Request`` object itself (``b"M<token>"``: no
pickling, any callback, any meta); in a durable one as its pickle (``b"D..."``), or as the
object if it cannot be pickled -- logged once and counted in ``scheduler/unserializable``, as
Scrapy does: such a request is lost if the process dies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scrapy import Request

from crawler_ext.frontier.adapter.codec import (
    decode_request,
    encode_plain,
    encode_request,
    is_plain,
)
from crawler_ext.frontier.entries import LiveRecord, decode, encode, entry_url, is_live

__all__ = ["StoredRequests"]

logger = logging.getLogger(__name__)


class StoredRequests:
    def __init__(self, durable: bool, inc: Callable[..., None], tracked: bool = True) -> None:
        self.durable = durable
        self._inc = inc
        self.spider: Any = None  # callbacks are the spider's: set when the scheduler opens
        # stored links rebuilt as requests registered in Scrapy's trackref (the scheduler's
        # from MEMDEBUG_ENABLED: codec.decode_request)
        self.tracked = tracked
        self._live: dict[int, Request] = {}  # b"M<token>" entries
        self._tokens = 0
        self._unserialisable_logged = False

    def encode(self, request: Request, referer: bytes | None = None) -> bytes:
        """``request`` as an entry's data (``referer``: its Referer header, if read already)."""
        if is_plain(request, self.spider):
            return encode_plain(request, referer)
        if self.durable:
            try:
                return encode_request(request, self.spider)
            except Exception as exc:  # noqa: BLE001 - to_dict/pickle raise many types
                self._inc("scheduler/unserializable")
                if not self._unserialisable_logged:
                    self._unserialisable_logged = True
                    logger.warning("Unable to serialize request: %s - reason: %s - it is kept "
                                   "in memory for this run only; no more unserializable "
                                   "requests will be logged (counted in "
                                   "scheduler/unserializable)", request, exc)
        self._tokens += 1
        self._live[self._tokens] = request
        return encode(LiveRecord(self._tokens))

    def decode(self, data: bytes) -> Request:
        if is_live(data):
            return self._live[_token(data)]
        return decode_request(data, self.spider, self.tracked)

    def url(self, data: bytes) -> str | None:
        """The URL of an entry's request without building it (None: a request kept in memory
        by a run that ended, lost with it)."""
        if is_live(data):
            live = self._live.get(_token(data))
            return live.url if live is not None else None
        return entry_url(data)

    def forget(self, data: bytes) -> None:
        """The entry is complete: a request kept in memory for it goes."""
        if is_live(data):
            self._live.pop(_token(data), None)

    def where(self, data: bytes) -> str:
        """``memory`` or ``disk``, for Scrapy's scheduler stats."""
        return "memory" if is_live(data) or not self.durable else "disk"


def _token(data: bytes) -> int:
    record = decode(data)
    assert isinstance(record, LiveRecord)
    return record.token
