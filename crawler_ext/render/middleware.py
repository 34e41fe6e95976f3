"""``RenderMiddleware``: the two-stage fetch.  An HTML page is fetched plainly; if it looks like
an app shell (:mod:`crawler_ext.render.detect`) it goes to the rendering pool.

    DOWNLOADER_MIDDLEWARES = {"crawler_ext.render.middleware.RenderMiddleware": 455}

(the add-on lists it; it is off unless ``CRAWLER_EXT_RENDER_ENABLED``).  At 455 it sees the
decoded body before content dedup (450), so a shell is never fingerprinted: the frontier
queues a render request for the page's URL instead (``meta["playwright"]``, past the seen
set), paced on the host like any fetch.  The rendered DOM then replaces the shell for the
spider's links and text and for dedup; the WARC keeps the shell's response record and adds the
DOM as a ``conversion`` record referring to it.  ``response.meta["render"]`` holds the verdict
(the reference spider copies it into its item).  A render that fails (timeout, crash) is not a
lost page: the page is fetched plainly again and parsed as it is (``render/fallback``).
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import load_object

from crawler_ext import config
from crawler_ext.hosts.guard import NetworkGuard
from crawler_ext.hosts.netguard import network_guard
from crawler_ext.render.browser import require_render
from crawler_ext.render.detect import ShellDetector

__all__ = ["HANDLER", "RENDER_META", "RenderMiddleware", "check_installed"]

logger = logging.getLogger(__name__)

#: the verdict on a page (a dict; ``rendered`` True on the browser's response)
RENDER_META = "render"
#: a page whose render failed: fetched plainly again and not judged again
FALLBACK_META = "crawler_ext_render_fallback"
HANDLER = "crawler_ext.render.handler.RenderDownloadHandler"
#: Scrapy's per-fetch meta, not carried into the render request
_TRANSIENT = frozenset({"redirect_urls", "redirect_reasons", "redirect_times", "redirect_ttl",
                        "retry_times", "download_latency", "download_slot", "download_timeout",
                        "_scheme_proxy", "crawler_ext_dont_filter"})


def check_installed(settings: Any) -> None:
    """Rendering on: scrapy-playwright and a browser there, and the render handler installed
    for http and https; or one line saying what to do."""
    require_render(settings)
    from crawler_ext.render.handler import RenderDownloadHandler

    for scheme in ("http", "https"):
        path = settings.getdict("DOWNLOAD_HANDLERS").get(scheme)
        handler = load_object(path) if path else None
        if not (isinstance(handler, type) and issubclass(handler, RenderDownloadHandler)):
            raise config.ConfigError(
                f"CRAWLER_EXT_RENDER_ENABLED needs DOWNLOAD_HANDLERS['{scheme}'] = "
                f"'{HANDLER}' (the add-on sets it), not {path!r}")


class RenderMiddleware:
    def __init__(self, detector: ShellDetector, guard: NetworkGuard, stats: Any = None) -> None:
        self.detector = detector
        self.guard = guard
        self.stats = stats
        self._fallback_logged = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> RenderMiddleware:
        s = config.enabled_settings(crawler, "CRAWLER_EXT_RENDER_ENABLED")
        check_installed(s)
        detector = ShellDetector(threshold=config.get(s, "CRAWLER_EXT_RENDER_THRESHOLD"),
                                 min_words=config.get(s, "CRAWLER_EXT_RENDER_MIN_WORDS"),
                                 max_words=config.get(s, "CRAWLER_EXT_RENDER_MAX_WORDS"))
        return cls(detector, network_guard(s), crawler.stats)

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    def process_response(self, request: Request, response: Response,
                         spider: Any = None) -> Request | Response:
        verdict = request.meta.get(RENDER_META)
        if request.meta.get("playwright") and isinstance(verdict, dict):
            # the browser connected where the guard looked (names are pinned, but a browser
            # resolves on its own): a page served from a refused address is dropped
            address = response.ip_address
            if address is not None and not self.guard.allows(str(address)):
                self._inc("render/refused_address")
                raise IgnoreRequest(f"rendered page served from refused address {address}")
            verdict["rendered"] = True
            return response
        if response.status != 200 or not isinstance(response, HtmlResponse) or \
                request.method != "GET" or request.meta.get(FALLBACK_META):
            return response
        judged = self.detector.judge(response.body, response.encoding)
        if judged.veto == "no_script":
            return response
        self._inc("render/checked")
        request.meta[RENDER_META] = judged.as_dict()
        if not judged.shell:
            return response
        self._inc("render/detected")
        self._inc("render/queued")
        meta = {k: v for k, v in request.meta.items() if k not in _TRANSIENT}
        meta["playwright"] = True
        meta[RENDER_META] = dict(judged.as_dict(), rendered=False)
        return request.replace(url=response.url, meta=meta, dont_filter=True)

    def process_exception(self, request: Request, exception: BaseException,
                          spider: Any = None) -> Request | None:
        if not (request.meta.get("playwright") and isinstance(request.meta.get(RENDER_META),
                                                              dict)):
            return None
        from playwright.async_api import TimeoutError as PlaywrightTimeoutError

        self._inc("render/timeouts" if isinstance(exception, PlaywrightTimeoutError)
                  else "render/failed")
        self._inc("render/fallback")
        if not self._fallback_logged:
            self._fallback_logged = True
            logger.warning("Rendering %s failed (%s: %s): the page is fetched plainly again and "
                           "parsed as served (counted in render/fallback)", request.url,
                           type(exception).__name__, str(exception).splitlines()[0][:200])
        meta = {k: v for k, v in request.meta.items()
                if k not in _TRANSIENT and not k.startswith("playwright")}
        meta[FALLBACK_META] = True
        meta[RENDER_META] = dict(request.meta[RENDER_META], rendered=False, failed=True)
        return request.replace(meta=meta, dont_filter=True)
