"""``ControlExtension``: the control API and the live page, served from the crawl process.

    CRAWLER_EXT_CONTROL_ENABLED = True   # the add-on adds the extension; off by default

Twisted Web serves it on the crawl's own reactor: no thread, no second event loop, and a
request is answered between two of the crawl's callbacks (the answers are small: figures
kept up to date as the crawl goes, a key read from the frontier).  It listens on
``CRAWLER_EXT_CONTROL_HOST``:``CRAWLER_EXT_CONTROL_PORT`` and writes where (``url``,
``port``, ``pid``) to ``JOBDIR/control.json``; the bearer token is
``CRAWLER_EXT_CONTROL_TOKEN`` or generated, written to ``JOBDIR/control.token`` (mode 0600)
or, without JOBDIR, to the log once.  Request bodies over ``MAX_BODY`` are discarded as they
arrive and answered 413.
"""

from __future__ import annotations

import io
import json
import logging
import os
import secrets
from importlib import resources
from typing import Any, cast
from urllib.parse import parse_qs, unquote

from scrapy import signals
from scrapy.utils.job import job_dir
from twisted.internet import defer, task
from twisted.web import resource, server

from crawler_ext import config
from crawler_ext.control.api import MAX_BODY, ControlAPI, Reply
from crawler_ext.control.crawl import RunningCrawl
from crawler_ext.frontier.contract import FrontierControl
from crawler_ext.signals import frontier_opened, host_released

__all__ = ["ControlExtension", "write_private"]

logger = logging.getLogger(__name__)

INFO_NAME = "control.json"
TOKEN_NAME = "control.token"
SAMPLE_INTERVAL = 1.0  # seconds between the live page's samples


class ControlExtension:
    def __init__(self, crawler: Any, host: str, port: int, token: str | None,
                 jobdir: str | None) -> None:
        self.crawler = crawler
        self.host, self.port, self.token, self.jobdir = host, port, token, jobdir
        self.crawl: RunningCrawl | None = None
        self._control: FrontierControl | None = None  # the frontier's, once it opened
        self._listening: Any = None
        self._loop: Any = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> ControlExtension:
        settings = config.enabled_settings(crawler, "CRAWLER_EXT_CONTROL_ENABLED")
        ext = cls(crawler, config.get(settings, "CRAWLER_EXT_CONTROL_HOST"),
                  config.get(settings, "CRAWLER_EXT_CONTROL_PORT"),
                  config.get(settings, "CRAWLER_EXT_CONTROL_TOKEN"), job_dir(settings))
        crawler.signals.connect(ext.frontier_opened, signal=frontier_opened)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def frontier_opened(self, control: FrontierControl | None = None, **_: Any) -> None:
        """The frontier scheduler opened (before ``spider_opened``): its control handle."""
        self._control = control

    def spider_opened(self, spider: Any) -> None:
        from twisted.internet import reactor
        from twisted.internet.interfaces import IReactorTCP

        control = self._control
        if control is None:
            logger.warning("Control API: off, the scheduler is not crawler_ext's frontier")
            return
        crawl = self.crawl = RunningCrawl(self.crawler, control)
        control.controls.counting = True  # (requests per key, for the keys' budgets)
        sig = self.crawler.signals
        sig.connect(self._released, signal=host_released)
        sig.connect(self._spider_error, signal=signals.spider_error)
        token = self.token or secrets.token_urlsafe(32)
        from crawler_ext import __version__

        page = resources.files("crawler_ext.control").joinpath("page.html").read_bytes()
        api = ControlAPI(crawl, token, __version__, page, self._inc)
        site = server.Site(_Root(api))
        site.requestFactory = _CappedRequest
        site.noisy = False
        # (zope interfaces declare their methods without self: mypy reads them one off)
        self._listening = cast(IReactorTCP, reactor).listenTCP(
            self.port, site, interface=self.host)  # type: ignore[arg-type]
        port = self._listening.getHost().port
        host = f"[{self.host}]" if ":" in self.host else self.host
        url = f"http://{host}:{port}/"
        where = "set by CRAWLER_EXT_CONTROL_TOKEN"
        if self.jobdir:
            os.makedirs(self.jobdir, exist_ok=True)
            write_private(os.path.join(self.jobdir, INFO_NAME),
                          json.dumps({"url": url, "port": port, "pid": os.getpid()}))
            if not self.token:
                write_private(os.path.join(self.jobdir, TOKEN_NAME), token + "\n")
                where = f"in {os.path.join(self.jobdir, TOKEN_NAME)}"
        elif not self.token:
            where = f"{token} (no JOBDIR to keep it in)"
        logger.info("Control API on %s (OpenAPI at %sopenapi.json, live page at %s); its "
                    "token: %s", url, url, url, where)
        self._loop = task.LoopingCall(crawl.sample)
        self._loop.start(SAMPLE_INTERVAL, now=True)

    def spider_closed(self, spider: Any, reason: str) -> None:
        if self.crawl is not None:
            self.crawl.closing = True
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self.jobdir:
            try:
                os.unlink(os.path.join(self.jobdir, INFO_NAME))
            except OSError:
                pass
        if self._listening is not None:
            listening, self._listening = self._listening, None
            listening.stopListening()  # (the reactor closes the port; nothing to wait for)

    def _released(self, key: str, status: int | None, started: float, delay: float,
                  **_: Any) -> None:
        if self.crawl is not None:
            self.crawl.released(key, status, started, delay)

    def _spider_error(self, failure: Any, response: Any, **_: Any) -> None:
        if self.crawl is not None:
            self.crawl.spider_error(failure, response)

    def _inc(self, name: str) -> None:
        self.crawler.stats.inc_value(name)


def write_private(path: str, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner alone (mode 0600, from creation)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # (a file that was there keeps its mode through O_CREAT)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)


class _CappedRequest(server.Request):
    """A request whose body is dropped as it arrives once over ``MAX_BODY``."""

    over = False
    _received = 0

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > MAX_BODY:
            self.over = True
            self.content = io.BytesIO()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        self._received += len(data)
        if self._received > MAX_BODY:
            self.over = True
        if not self.over:
            super().handleContentChunk(data)


class _Root(resource.Resource):
    isLeaf = True

    def __init__(self, api: ControlAPI) -> None:
        super().__init__()
        self.api = api

    def render(self, request: Any) -> Any:
        method = request.method.decode("ascii", "replace")
        path = unquote(request.path.decode("utf-8", "replace"))
        query = parse_qs(request.uri.decode("utf-8", "replace").partition("?")[2])
        body = None if getattr(request, "over", False) else request.content.read()
        auth = request.getHeader("authorization")
        content_type = request.getHeader("content-type")
        d = defer.Deferred.fromCoroutine(self.api.handle(method, path, query, auth,
                                                         content_type, body))
        d.addCallback(self._write, request)
        d.addErrback(self._failed, request)
        return server.NOT_DONE_YET

    @staticmethod
    def _write(reply: Reply, request: Any) -> None:
        if request.finished or getattr(request, "_disconnected", False):
            return
        request.setResponseCode(reply.status)
        request.setHeader("content-type", reply.content_type)
        request.setHeader("cache-control", "no-store")
        request.setHeader("x-content-type-options", "nosniff")
        if reply.status == 401:
            request.setHeader("www-authenticate", 'Bearer realm="crawler_ext"')
        request.write(reply.body)
        request.finish()

    @staticmethod
    def _failed(failure: Any, request: Any) -> None:
        logger.error("Control API: %s %s failed: %s", request.method, request.path,
                     failure.getErrorMessage())
        _Root._write(Reply(500, json.dumps({"error": "internal error"}).encode()), request)
