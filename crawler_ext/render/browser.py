"""The headless browser the rendering pool launches: found by path (the system's Chromium;
nothing is downloaded), pinned to the crawl's host names, and its memory measured."""

from __future__ import annotations

import shutil
from typing import Any

from crawler_ext import config

__all__ = ["browser_rss_mb", "find_browser", "require_render"]

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser(setting: str | None) -> str:
    """The Chromium executable to launch: the setting, else the first found on the PATH."""
    if setting:
        path = shutil.which(setting)
        if path is None:
            raise config.ConfigError(f"CRAWLER_EXT_RENDER_BROWSER: {setting!r} is not an "
                                     "executable")
        return path
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise config.ConfigError("CRAWLER_EXT_RENDER_ENABLED: no Chromium found on the PATH "
                             "(apt-get install chromium, or set CRAWLER_EXT_RENDER_BROWSER)")


def require_render(settings: Any) -> None:
    """Rendering asked for: scrapy-playwright installed and a browser found, or one line
    saying what is missing (the crawl command refuses to start)."""
    if not config.get(settings, "CRAWLER_EXT_RENDER_ENABLED"):
        return
    try:
        import scrapy_playwright  # noqa: F401
    except ImportError:
        raise config.ConfigError("CRAWLER_EXT_RENDER_ENABLED needs scrapy-playwright: pip "
                                 "install 'crawler_ext[render]'") from None
    if not settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS"):
        find_browser(config.get(settings, "CRAWLER_EXT_RENDER_BROWSER"))


def browser_rss_mb() -> float | None:
    """Resident memory of the browser's processes (this process' Chromium children), MiB."""
    try:
        import psutil
    except ImportError:
        return None
    total = 0
    try:
        for child in psutil.Process().children(recursive=True):
            try:
                if "chrom" in child.name():
                    total += child.memory_info().rss
            except psutil.Error:
                continue
    except psutil.Error:
        return None
    return total / 2**20
