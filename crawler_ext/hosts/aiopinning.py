"""Address pinning in Scrapy's reactorless mode (``TWISTED_REACTOR_ENABLED = False``), where
aiohttp downloads and resolves names by itself: :class:`GuardedAiohttpDownloadHandler` is
Scrapy's aiohttp handler whose connections resolve as
:class:`~crawler_ext.hosts.pinning.PinnedNameResolver` does -- a name the SSRF guard checked to
its checked address, any other name through aiohttp's resolver with every answer judged.  The
add-on sets it for http and https in that mode.

    DOWNLOAD_HANDLERS = {"http": "crawler_ext.hosts.aiopinning.GuardedAiohttpDownloadHandler",
                         "https": "crawler_ext.hosts.aiopinning.GuardedAiohttpDownloadHandler"}
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from aiohttp.abc import AbstractResolver, ResolveResult
from scrapy.core.downloader.handlers._aiohttp import AiohttpDownloadHandler

from crawler_ext.hosts.addresses import literal_address
from crawler_ext.hosts.netguard import network_guard, shared_pins
from crawler_ext.hosts.pinning import REFUSED, AddressPins

__all__ = ["GuardedAiohttpDownloadHandler", "PinnedAiohttpResolver"]


class PinnedAiohttpResolver(AbstractResolver):
    def __init__(self, inner: AbstractResolver, pins: AddressPins,
                 allows: Callable[[str], bool]) -> None:
        self.inner, self.pins, self.allows = inner, pins, allows
        self.dropped = 0

    async def resolve(self, host: str, port: int = 0,
                      family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        pinned = self.pins.get(host)
        if pinned is None and literal_address(host.strip("[]")) is not None:
            return await self.inner.resolve(host, port, family)  # (as pinning.py says)
        if pinned == REFUSED:
            raise OSError(f"{host}: the SSRF guard's look-up failed")
        if pinned is not None:
            answers = [_result(host, pinned, port)]
        else:
            answers = await self.inner.resolve(host, port, family)
        kept = [a for a in answers if self.allows(a["host"])]
        self.dropped += len(answers) - len(kept)
        if not kept:
            raise OSError(f"{host}: every address refused by the SSRF guard")
        return kept

    async def close(self) -> None:
        await self.inner.close()


def _result(host: str, address: str, port: int) -> ResolveResult:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return {"hostname": host, "host": address, "port": port, "family": family, "proto": 0,
            "flags": socket.AI_NUMERICHOST}


class GuardedAiohttpDownloadHandler(AiohttpDownloadHandler):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        connector: Any = self._session.connector
        # aiohttp takes its resolver at construction only: the built one is wrapped in place
        connector._resolver = PinnedAiohttpResolver(
            connector._resolver, shared_pins(crawler), network_guard(crawler.settings).allows)
