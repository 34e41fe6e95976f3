"""Idle kept-alive connections close after ``CRAWLER_EXT_KEEPALIVE_TIMEOUT``, and Scrapy's
downloader drops an idle host's slot after ``CRAWLER_EXT_DOWNLOADER_SLOT_IDLE``: a real crawl of
one host whose politeness delay is longer than both opens a connection and makes a slot a
request; with Twisted's 240 s and the 10 s default it reuses one of each.  The server counts
the connections it accepted; the stats, the slots dropped."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import run_crawl

PAGES = {"/": ["/a", "/b", "/c"], "/a": [], "/b": [], "/c": []}


def text(path: str) -> str:  # a text of its own for each page (dedup would drop copies)
    return " ".join(f"{path} word{i} of a page about keeping connections" for i in range(40))


class Counting(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    connections = 0
    requests = 0
    lock = threading.Lock()

    def setup(self) -> None:
        super().setup()
        with Counting.lock:
            Counting.connections += 1

    def do_GET(self) -> None:
        with Counting.lock:
            Counting.requests += 1
        links = PAGES.get(self.path)
        if links is None:
            body, status = b"not here", 404
        else:
            anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
            page = f"<html><body><p>{text(self.path)}</p>{anchors}</body></html>"
            body, status = page.encode(), 200
        self.send_response(status)
        self.send_header("Content-Type", "text/html" if status == 200 else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("timeout, fresh", [(0.2, True), (None, False)])
def test_idle_connections_and_slots_go_after_their_timeouts(
        tmp_path: Path, timeout: float | None, fresh: bool) -> None:
    Counting.connections = Counting.requests = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings = {"CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.8, "CLOSESPIDER_TIMEOUT": 60}
    if timeout is not None:
        settings["CRAWLER_EXT_KEEPALIVE_TIMEOUT"] = timeout
        settings["CRAWLER_EXT_DOWNLOADER_SLOT_IDLE"] = timeout
    try:
        result = run_crawl("-a", f"seeds=http://127.0.0.1:{server.server_port}/",
                           items_path=tmp_path / "items.jsonl", settings=settings, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    dropped = result.stats.get("hosts/downloader_slots_dropped", 0)
    assert result.returncode == 0, result.output[-3000:]
    assert len(result.items) == 4, result.output[-3000:]
    assert Counting.requests == 5  # robots.txt and the four pages
    if fresh:  # each request after a pause longer than the timeout: a new connection
        assert Counting.connections == Counting.requests
        assert dropped >= Counting.requests - 2, result.stats  # (a sweep may miss a pause)
    else:
        assert Counting.connections <= 2
        assert dropped == 0, result.stats
    assert result.stats.get("hosts/downloader_slots_max", 1) == 1


def test_the_addon_sets_the_handler_unless_the_project_chose_one() -> None:
    from scrapy.settings import Settings

    from crawler_ext.addon import KEEPALIVE_HANDLER, Addon

    settings = Settings()
    Addon().update_settings(settings)
    assert settings["DOWNLOAD_HANDLERS"]["http"] == KEEPALIVE_HANDLER
    assert settings["DOWNLOAD_HANDLERS"]["https"] == KEEPALIVE_HANDLER
    assert settings["DOWNLOADER"] == "crawler_ext.hosts.slots.IdleSlotDownloader"
    own = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"
    settings = Settings({"DOWNLOAD_HANDLERS": {"http": own}}, priority="project")
    Addon().update_settings(settings)
    assert settings["DOWNLOAD_HANDLERS"]["http"] == own
    assert settings["DOWNLOAD_HANDLERS"]["https"] == KEEPALIVE_HANDLER
    settings = Settings({"DOWNLOADER": "scrapy.core.downloader.Downloader"}, priority="project")
    Addon().update_settings(settings)
    assert settings["DOWNLOADER"] == "scrapy.core.downloader.Downloader"
