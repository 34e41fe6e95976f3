"""Scrapy configured for the pack, where its components are built (``from_crawler``): which
components are on, and the Public Suffix List kept off the network."""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["component_path", "enabled_component", "enabled_settings",
           "use_bundled_public_suffix_list"]

logger = logging.getLogger(__name__)


def enabled_settings(crawler: Any, setting: str) -> Any:
    """The crawler's settings if the boolean ``setting`` switches the component on; else
    Scrapy's ``NotConfigured`` (no message: Scrapy would log it as a warning) -- the check at
    the top of an optional component's ``from_crawler``."""
    from crawler_ext.config.registry import get

    if not get(crawler.settings, setting):
        from scrapy.exceptions import NotConfigured

        raise NotConfigured
    return crawler.settings


def component_path(value: Any) -> str:
    """The dotted path of a component dict's key (Scrapy takes a path or the class itself),
    without importing anything."""
    return value if isinstance(value, str) else f"{value.__module__}.{value.__qualname__}"


def enabled_component(settings: Any, setting: str, path: str) -> bool:
    """Whether the component at dotted ``path`` is enabled in the ``setting`` component
    dict (``DOWNLOADER_MIDDLEWARES``...), however the project or the add-on listed it."""
    from scrapy.utils.conf import build_component_list
    from scrapy.utils.misc import load_object

    wanted = load_object(path)
    return any(load_object(c) is wanted
               for c in build_component_list(settings.getwithbase(setting)))


def use_bundled_public_suffix_list() -> bool:
    """No network access nobody asked for: Scrapy's cookie middleware asks tldextract for
    public suffixes, and tldextract downloads the Public Suffix List on first use unless told
    to use the copy it ships.  Point it at that copy (loudly, if Scrapy changed)."""
    try:
        from scrapy.downloadermiddlewares import cookies
        from tldextract import TLDExtract
    except ImportError:
        return False
    if not hasattr(cookies, "_split_domain"):
        logger.warning("Scrapy's cookie middleware has no _split_domain any more: tldextract "
                       "may try to download the Public Suffix List during the crawl")
        return False
    cookies._split_domain = TLDExtract(suffix_list_urls=(), include_psl_private_domains=True)
    return True
