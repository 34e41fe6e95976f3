"""The rendering pool: scrapy-playwright's download handler with the pack's budget and guards.

    DOWNLOAD_HANDLERS = {"http": "crawler_ext.render.handler.RenderDownloadHandler",
                         "https": "crawler_ext.render.handler.RenderDownloadHandler"}

(the add-on sets it with ``CRAWLER_EXT_RENDER_ENABLED``).  Requests without
``meta["playwright"]`` are plain fetches, as before.  A render request -- queued by the render
middleware, dispatched by the frontier like any fetch, so its host's politeness slot, delay and
robots.txt apply -- opens a page in headless Chromium (the system's, by path: nothing is
downloaded) with:

* its own budget: ``CRAWLER_EXT_RENDER_CONCURRENCY`` pages at once, a load timeout
  (``CRAWLER_EXT_RENDER_TIMEOUT``) and a settle time for network idle
  (``CRAWLER_EXT_RENDER_SETTLE``); a fresh browser context after
  ``CRAWLER_EXT_RENDER_CONTEXT_PAGES`` pages, or sooner when the browser's processes use more
  than ``CRAWLER_EXT_RENDER_MEMORY_MB`` (a leaking app);
* every request the page makes judged by :class:`~crawler_ext.render.guard.SubrequestPolicy`
  (its own host only, the SSRF guard, robots.txt, no images/fonts/media by default; the rest
  aborted and counted) and paced by :class:`~crawler_ext.render.guard.PagePacer` at the host's
  politeness delay; service workers blocked (their requests would pass no route).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler
from scrapy_playwright.page import PageMethod

from crawler_ext import config
from crawler_ext.frontier.delays import KeyDelays
from crawler_ext.hosts.netguard import network_guard, shared_pins
from crawler_ext.hosts.pinning import pinned_resolver
from crawler_ext.render.browser import browser_rss_mb, find_browser
from crawler_ext.render.guard import PagePacer, SubrequestPolicy
from crawler_ext.render.proxy import GuardProxy
from crawler_ext.signals import frontier_opened, host_released

__all__ = ["RenderDownloadHandler"]

logger = logging.getLogger(__name__)

_TRANSIENT_META = ("playwright_page_init_callback", "playwright_page_methods")
LATENCY_META = "crawler_ext_render_server_latency"
#: Chromium's --host-resolver-rules: no name resolves in the browser (the proxy's address is a
#: literal); a request that would not go through the proxy fails instead of resolving
NO_RESOLUTION = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
#: crawler -> its handler: one for http and https (one browser, one budget)
_HANDLERS: weakref.WeakKeyDictionary[Any, RenderDownloadHandler] = weakref.WeakKeyDictionary()


@dataclass
class _Page:
    url: str
    meta: dict
    pacer: PagePacer
    deadline: float
    navigation: Any = None
    navigated_at: float = 0.0

    def finished(self, request: Any) -> None:
        if request is self.navigation and LATENCY_META not in self.meta:
            # the server's time for the page itself: the frontier's adaptive delay follows
            # the server, never the browser's work on the page
            self.meta[LATENCY_META] = time.time() - self.navigated_at
        self.pacer.finished(request)


class RenderDownloadHandler(ScrapyPlaywrightDownloadHandler):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        s = crawler.settings
        self.concurrency = config.get(s, "CRAWLER_EXT_RENDER_CONCURRENCY")
        self.timeout = config.get(s, "CRAWLER_EXT_RENDER_TIMEOUT")
        self.settle = config.get(s, "CRAWLER_EXT_RENDER_SETTLE")
        self.context_pages = config.get(s, "CRAWLER_EXT_RENDER_CONTEXT_PAGES")
        self.memory_mb = config.get(s, "CRAWLER_EXT_RENDER_MEMORY_MB")
        self.floor = max(config.get(s, "CRAWLER_EXT_POLITENESS_MIN_DELAY"),
                         s.getfloat("DOWNLOAD_DELAY"))
        cfg = self.config
        cfg.browser_type_name = "chromium"
        if not s.getdict("PLAYWRIGHT_LAUNCH_OPTIONS"):
            # the browser resolves no name itself: its contexts go through the guard's proxy
            args = ["--disable-background-networking", "--disable-component-update",
                    "--no-first-run", "--disable-sync", "--disable-default-apps",
                    f"--host-resolver-rules={NO_RESOLUTION}"]
            cfg.launch_options = {"executable_path": find_browser(
                config.get(s, "CRAWLER_EXT_RENDER_BROWSER")), "headless": True, "args": args}
        if s.get("PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT") is None:
            cfg.navigation_timeout_ms = self.timeout * 1000
        if not s.getint("PLAYWRIGHT_MAX_PAGES_PER_CONTEXT"):
            cfg.max_pages_per_context = self.concurrency
        self.abort_request = self._judge
        guard = network_guard(s)
        self.proxy = GuardProxy(lambda: pinned_resolver(
            self.proxy.reactor, shared_pins(crawler), guard.allows,
            lambda name, address: self.stats.inc_value("netguard/refused_at_connect")))
        self.policy = SubrequestPolicy(
            frozenset(config.get(s, "CRAWLER_EXT_RENDER_BLOCK_RESOURCES")), guard.allows)
        self._lease_key: Any = None
        self._delays = KeyDelays()
        self._pages: dict[Any, _Page] = {}
        self._slots: Any = None  # an asyncio.Semaphore, made on the reactor's loop
        self._closing = False
        self._generation = 0
        self._in_context: Counter[str] = Counter()
        self._rendered: Counter[str] = Counter()
        self._ms_total = 0.0
        self._count = 0
        self._memory_logged = False
        crawler.signals.connect(self._frontier_opened, signal=frontier_opened)
        crawler.signals.connect(self._delays.released, signal=host_released)

    @classmethod
    def from_crawler(cls, crawler: Any) -> RenderDownloadHandler:
        """Scrapy asks once per scheme: http and https share one handler, so one browser and
        one rendering budget."""
        handler = _HANDLERS.get(crawler)
        if handler is None:
            handler = _HANDLERS[crawler] = cls(crawler)
        return handler

    async def close(self) -> None:
        if self._closing:  # (asked once per scheme)
            return
        self._closing = True
        self.proxy.stop()
        await super().close()

    # -- what the frontier tells -----------------------------------------------------------
    def _frontier_opened(self, lease_key: Any = None, robots_allows: Any = None,
                         **_: Any) -> None:
        self._lease_key = lease_key
        self.policy.robots_allows = robots_allows

    def _delay_for(self, request: Any) -> float:
        key = self._lease_key(request) if self._lease_key is not None else None
        return max(self._delays.get(key, 0.0), self.floor)

    # -- a render ---------------------------------------------------------------------------
    async def download_request(self, request: Any, spider: Any = None) -> Any:
        if not request.meta.get("playwright"):
            return await super().download_request(request)
        import asyncio

        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrency)
        async with self._slots:
            name = f"crawler_ext-render-{self._generation}"
            request.meta["playwright_context"] = name
            request.meta.setdefault("playwright_context_kwargs", {
                "service_workers": "block",
                # every request of the page through the guard's proxy, loopback included
                "proxy": {"server": f"http://127.0.0.1:{self.proxy.start()}",
                          "bypass": "<-loopback>"}})
            request.meta["playwright_page_init_callback"] = self._page_opened
            request.meta["playwright_page_methods"] = [PageMethod(self._settle_page)]
            self._in_context[name] += 1
            started = time.monotonic()
            try:
                response = await super().download_request(request)
            finally:
                for key in _TRANSIENT_META:
                    request.meta.pop(key, None)
                # scrapy-playwright's download_latency is the whole render: the frontier
                # takes the page's own fetch instead (0 if it never answered)
                request.meta["download_latency"] = request.meta.pop(LATENCY_META, 0.0)
                self._in_context[name] -= 1
                self._rendered[name] += 1
                await self._recycle(name)
            self._count += 1
            self._ms_total += (time.monotonic() - started) * 1000
            self.stats.inc_value("render/rendered")
            self.stats.set_value("render/ms", round(self._ms_total / self._count, 1))
            return response

    async def _page_opened(self, page: Any, request: Any) -> None:
        state = _Page(request.url, request.meta, PagePacer(self._delay_for(request)),
                      time.time() + self.timeout + self.settle)
        self._pages[page] = state
        page.on("requestfinished", state.finished)
        page.on("requestfailed", state.finished)
        page.on("close", lambda _page: self._pages.pop(page, None))

    async def _settle_page(self, page: Any) -> None:
        try:
            await page.wait_for_load_state("networkidle", timeout=self.settle * 1000)
        except PlaywrightTimeoutError:
            self.stats.inc_value("render/settle_timeouts")

    async def _judge(self, request: Any) -> bool:
        """scrapy-playwright's PLAYWRIGHT_ABORT_REQUEST: True aborts the browser's request."""
        try:
            frame = request.frame
            page = frame.page
            main = frame == page.main_frame
        except PlaywrightError:
            return self._blocked("detached")
        state = self._pages.get(page)
        if state is None:
            return self._blocked("unknown_page")
        navigation = main and request.is_navigation_request()
        if navigation and state.navigation is None:
            state.navigation = request  # the page itself: the frontier paced it
            await state.pacer.hold(request)
            state.navigated_at = time.time()
            return False
        if navigation:
            return self._blocked("navigation")  # a script sending the page elsewhere
        reason = self.policy.verdict(state.url, request.url, request.resource_type)
        if reason is not None:
            return self._blocked(reason)
        if not await state.pacer.acquire(request, state.deadline):
            return self._blocked("late")
        self.stats.inc_value("render/subrequests")
        return False

    def _blocked(self, reason: str) -> bool:
        self.stats.inc_value("render/subrequests_blocked")
        self.stats.inc_value(f"render/subrequests_blocked/{reason}")
        return True

    # -- contexts ---------------------------------------------------------------------------
    async def _recycle(self, name: str) -> None:
        """Move new pages to a fresh context after CRAWLER_EXT_RENDER_CONTEXT_PAGES pages or
        past the memory cap; close old contexts once their pages are done."""
        current = f"crawler_ext-render-{self._generation}"
        if name == current:
            reason = None
            if self._rendered[name] >= self.context_pages:
                reason = "pages"
            elif (rss := browser_rss_mb()) is not None and rss > self.memory_mb:
                reason = "memory"
                if not self._memory_logged:
                    self._memory_logged = True
                    logger.warning("Rendering: the browser uses %.0f MiB (cap "
                                   "CRAWLER_EXT_RENDER_MEMORY_MB=%d): a fresh context replaces "
                                   "the old one (counted in render/context_restarts)",
                                   rss, self.memory_mb)
            if reason is not None:
                self._generation += 1
                self.stats.inc_value("render/context_restarts")
                self.stats.inc_value(f"render/context_restarts/{reason}")
        latest = f"crawler_ext-render-{self._generation}"
        for old in [n for n, busy in self._in_context.items() if n != latest and not busy]:
            del self._in_context[old]
            self._rendered.pop(old, None)
            wrapper = self.context_wrappers.get(old)
            if wrapper is not None:
                try:
                    await wrapper.context.close()
                except PlaywrightError:
                    pass

