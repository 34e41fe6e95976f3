"""Focused crawling: spend the crawl's budget on a topic (``CRAWLER_EXT_FOCUS_ENABLED``).

The topic (:mod:`~crawler_ext.focus.topic`) is given by example pages and keywords; a page
classifier (:mod:`~crawler_ext.focus.classifier`) trained from them at start-up scores each
fetched page's relevance; a link scorer (:mod:`~crawler_ext.focus.links`) learned online
from the outcomes of fetched links gives each link its priority; the focus strategy
(:mod:`~crawler_ext.focus.strategy`) maps it onto the frontier's bands.  See docs/focus.md.
"""
