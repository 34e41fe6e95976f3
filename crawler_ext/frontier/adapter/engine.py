"""What the frontier needs from Scrapy's engine beyond its public API, in one place.

Two things have no public API in Scrapy 2.19:

* waking the engine's loop when a politeness key becomes ready (``engine._slot.nextcall``),
  so that a 0.25 s delay means 0.25 s and not the engine's 5 s heartbeat;
* the requests whose responses the engine is still processing (``engine._slot.inprogress``),
  so that a durable frontier forgets an entry only after its links were admitted.

:meth:`EngineHandle.check` runs when the scheduler opens: if the engine is there but these
internals are not (a Scrapy that renamed them), the crawl stops at start with one clear
error, instead of crawling with 5 s stalls or completing entries too early.  Without an
engine (the scheduler used on its own, in tests) there is nothing to wake.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EngineHandle", "engine_of"]


def engine_of(crawler: Any) -> Any:
    """The crawler's engine, or None (Scrapy 2.19's ``Crawler.engine`` raises without one)."""
    try:
        return getattr(crawler, "engine", None)
    except (AttributeError, RuntimeError):
        return None


class EngineHandle:
    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self._call: Any = None  # the armed wake-up
        self._due: float | None = None  # when it fires (time.time())
        self._arrived: set[Any] = set()  # responses out of the download handler (unscored)

    def _slot(self) -> Any:
        return getattr(engine_of(self.crawler), "_slot", None)

    def check(self) -> None:
        """Fail loudly if the engine is running without the internals relied on."""
        engine = engine_of(self.crawler)
        if engine is None:
            return
        if not hasattr(engine, "_slot"):
            missing = ["ExecutionEngine._slot"]
        elif engine._slot is None:  # opened outside the engine's open_spider: nothing to check
            return
        else:
            slot = engine._slot
            missing = [name for name, ok in (
                ("_slot.nextcall.schedule()", callable(getattr(getattr(slot, "nextcall", None),
                                                               "schedule", None))),
                ("_slot.inprogress", hasattr(slot, "inprogress")),
            ) if not ok]
        if missing:
            import scrapy

            raise RuntimeError(
                f"crawler_ext's frontier scheduler needs Scrapy's engine internals "
                f"{', '.join(missing)}, which Scrapy {scrapy.__version__} does not have; "
                f"use a Scrapy version crawler_ext supports (see docs/usage.md)")

    def present(self) -> bool:
        """Whether there is an engine to wake (not when the scheduler is used on its own)."""
        return engine_of(self.crawler) is not None

    def wake(self) -> None:
        """Ask the engine for its next loop now."""
        slot = self._slot()
        if slot is not None:
            slot.nextcall.schedule()

    def wake_at(self, when: float | None, now: float) -> None:
        """Make the engine ask again at unix time ``when`` (the next key ready), not at its
        5 s heartbeat; an earlier wake-up already armed stands."""
        if when is None or not self.present():
            return
        from scrapy.utils.asyncio import call_later

        when = max(when, now)
        if self._call is not None:
            if self._due is not None and self._due <= when:
                return
            self._call.cancel()
        self._due = when
        self._call = call_later(when - now, self.wake_now)

    def wake_now(self) -> None:
        """Wake the engine now, forgetting the armed wake-up (the next one is armed anew)."""
        self._call = self._due = None
        self.wake()

    def stop(self) -> None:
        """Cancel an armed wake-up (the scheduler closes)."""
        if self._call is not None:
            self._call.cancel()
            self._call = self._due = None

    def in_progress(self) -> Any:
        """Requests the engine is processing (a set), or None without an engine."""
        slot = self._slot()
        return None if slot is None else slot.inprogress

    def arrived(self, request: Any) -> None:
        """``request``'s response came out of the download handler (for :meth:`unscored`)."""
        self._arrived.add(request)

    def unscored(self) -> int:
        """Responses fetched and not yet through the spider: in the downloader middlewares
        (the content processors, which score a page's relevance) or in Scrapy's scraper
        (the link scores).  0 without an engine."""
        engine = engine_of(self.crawler)
        if engine is None:
            return 0
        arrived = self._arrived
        waiting = 0
        if arrived:
            active = engine.downloader.active
            for request in [r for r in arrived if r not in active]:  # (left the downloader)
                arrived.discard(request)
            waiting = len(arrived)
        slot = getattr(engine.scraper, "slot", None)
        return waiting + (0 if slot is None else len(slot.active))

    def send(self, signal: object, **kwargs: Any) -> None:
        """Send one of the pack's signals to the crawl (nothing without a crawler)."""
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(signal, **kwargs)
