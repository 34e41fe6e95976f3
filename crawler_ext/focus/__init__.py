"""Focused crawling: spend the crawl's budget on a topic (``CRAWLER_EXT_FOCUS_ENABLED``).

The topic (:mod:`~crawler_ext.focus.topic`) is given by example pages and keywords; a page
classifier (:mod:`~crawler_ext.focus.classifier`) trained from them at start-up scores each
fetched page's relevance; a link scorer (:mod:`~crawler_ext.focus.links`) learned online
from the outcomes of fetched links gives each link its priority; the focus strategy
(:mod:`~crawler_ext.focus.strategy`) maps it onto the frontier's bands.  See docs/focus.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FocusMiddleware", "build_classifier", "classifier_for", "processor_scoring"]

_SCRAPY_SIDE = {"FocusMiddleware", "build_classifier", "classifier_for", "processor_scoring"}


def __getattr__(name: str) -> Any:
    # the entry points speak Scrapy (settings, signals): imported when asked for, so that a
    # content processors' worker unpickling the classifier loads no Scrapy
    if name in _SCRAPY_SIDE:
        from crawler_ext.focus import middleware

        return getattr(middleware, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
