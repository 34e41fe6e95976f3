"""How long Scrapy's downloader keeps a host's slot: :class:`IdleSlotDownloader` is Scrapy's
downloader dropping a slot idle ``CRAWLER_EXT_DOWNLOADER_SLOT_IDLE`` seconds instead of 60.

Scrapy's downloader makes a slot for each host it fetches from (a deque and two sets, about
1.3 KB) and drops it a minute after the host's last request.  The frontier paces hosts itself
and hands a host's next request out only when it may go, so the slot holds nothing between
two fetches; a broad crawl comes back to a host after its delay at best, often after half a
minute, and kept every host of the last minute's slot (``docs/broad.md`` has the
measurement).  A slot with a delay of its own (``DOWNLOAD_SLOTS``) is kept until that delay
has passed, as Scrapy does.  The add-on sets it unless the project chose a downloader::

    DOWNLOADER = "crawler_ext.hosts.slots.IdleSlotDownloader"
"""

from __future__ import annotations

from typing import Any

from scrapy.core.downloader import Downloader
from scrapy.utils.asyncio import create_looping_call

from crawler_ext import config

__all__ = ["IdleSlotDownloader"]


class IdleSlotDownloader(Downloader):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        self._idle = config.get(crawler.settings, "CRAWLER_EXT_DOWNLOADER_SLOT_IDLE")
        self._idle_loop = create_looping_call(self._slot_gc, self._idle)
        self._idle_loop.start(max(0.1, self._idle / 2), now=False)

    def _slot_gc(self, age: float = 60) -> None:
        # (Scrapy's own minute-long sweep comes here too, with its default age)
        held = len(self.slots)
        super()._slot_gc(min(age, self._idle))
        stats = self.crawler.stats
        stats.max_value("hosts/downloader_slots_max", held)
        if held > len(self.slots):
            stats.inc_value("hosts/downloader_slots_dropped", held - len(self.slots))

    def close(self) -> None:
        if self._idle_loop.running:
            self._idle_loop.stop()
        super().close()
