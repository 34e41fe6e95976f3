"""``FocusMiddleware``: the focused crawl's spider middleware (order 60).

Each response gets a relevance (``response.meta["relevance"]``: the page classifier on the
content processor's text, or the page's own text without processors), which goes into the
reference spider's item, the stats (``focus/fetched``, ``focus/relevant``,
``focus/harvest_rate``, ``focus/relevance/<tenth>``) and, as an outcome, into the link
scorer's learning for the link that led to the page.  Each request the spider yields from
it gets its link's score as ``Request.priority`` (0 to 100, which the focus strategy maps
onto the frontier's bands) and, in its meta, what the scorer learns from when it is
fetched.  Off-topic branches are followed ``CRAWLER_EXT_FOCUS_TUNNEL_DEPTH`` pages deep,
then their links are dropped (``focus/dropped/tunnel``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Response, TextResponse

from crawler_ext import config
from crawler_ext.focus.classifier import PageClassifier
from crawler_ext.focus.links import LinkFeatures
from crawler_ext.focus.policy import FocusPolicy, Found
from crawler_ext.focus.strategy import SCORE_SCALE
from crawler_ext.focus.topic import Keywords, load_examples, page_text

__all__ = ["FOCUS_META", "RELEVANCE_META", "FocusMiddleware", "build_classifier",
           "classifier_for", "processor_scoring"]

logger = logging.getLogger(__name__)

RELEVANCE_META = "relevance"
#: a request's link features and its off-topic distance: (anchor, parent relevance, its
#: directory's harvest, distance, the words around the link, the relevance of the link's words)
FOCUS_META = "crawler_ext_focus"


def build_classifier(settings: Any) -> PageClassifier:
    """The page classifier from the ``CRAWLER_EXT_FOCUS_*`` settings (ConfigError, one line,
    on bad input)."""
    get = lambda name: config.get(settings, name)
    relevant = get("CRAWLER_EXT_FOCUS_RELEVANT")
    irrelevant = get("CRAWLER_EXT_FOCUS_IRRELEVANT")
    return PageClassifier.train(
        load_examples(relevant, "CRAWLER_EXT_FOCUS_RELEVANT") if relevant else [],
        load_examples(irrelevant, "CRAWLER_EXT_FOCUS_IRRELEVANT") if irrelevant else [],
        Keywords.parse(get("CRAWLER_EXT_FOCUS_KEYWORDS")))


#: crawler -> its page classifier: two components Scrapy builds apart (this middleware and the
#: content processors) score with the one classifier, trained once per crawl
_CLASSIFIERS: WeakKeyDictionary[Any, PageClassifier] = WeakKeyDictionary()


def classifier_for(crawler: Any) -> PageClassifier:
    """The crawl's page classifier, trained once (the focus middleware scores with it; the
    content processors' workers run it on each document's text, off the reactor)."""
    classifier = _CLASSIFIERS.get(crawler)
    if classifier is None:
        classifier = _CLASSIFIERS[crawler] = build_classifier(crawler.settings)
    return classifier


def processor_scoring(crawler: Any) -> tuple[PageClassifier | None, bool]:
    """What the content processors' workers run for a focused crawl: the page classifier
    (on each document's text, off the reactor) and whether they keep the words around each
    link (``CRAWLER_EXT_FOCUS_LINK_CONTEXT``); ``(None, False)`` when focus is off."""
    if not config.focus_enabled(crawler.settings):
        return None, False
    return classifier_for(crawler), config.get(crawler.settings,
                                               "CRAWLER_EXT_FOCUS_LINK_CONTEXT")


class FocusMiddleware:
    def __init__(self, crawler: Any, classifier: PageClassifier, threshold: float,
                 tunnel: int, learn: bool) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.classifier = classifier
        self.policy = FocusPolicy(classifier, threshold, tunnel, learn)
        self._total = [0, 0]  # fetched, relevant
        self._certainty = 0.0
        self._quality: tuple[float, float] | None = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> FocusMiddleware:
        s = crawler.settings
        if not config.focus_enabled(s):
            raise NotConfigured  # (no message: Scrapy would log it as a warning)
        classifier = classifier_for(crawler)
        mw = cls(crawler, classifier, config.get(s, "CRAWLER_EXT_FOCUS_THRESHOLD"),
                 config.get(s, "CRAWLER_EXT_FOCUS_TUNNEL_DEPTH"),
                 config.get(s, "CRAWLER_EXT_FOCUS_LEARN"))
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        logger.info("Focused crawl: a %s; off-topic branches followed %d pages deep",
                    "page classifier trained from examples" if classifier.model is not None
                    else "keyword classifier", mw.policy.tunnel)
        return mw

    def spider_closed(self, spider: Any = None) -> None:
        fetched, relevant = self._total
        logger.info("Focused crawl: %d of %d pages on topic (harvest rate %.3f)", relevant,
                    fetched, relevant / fetched if fetched else 0.0)

    # -- a fetched page: its relevance, and the outcome of the link that led to it ----------
    def process_spider_input(self, response: Response, spider: Any = None) -> None:
        processed = response.meta.get("processed")
        relevance = processed.metadata.get(RELEVANCE_META) if processed is not None and \
            not processed.refused else None
        if relevance is None:  # (not scored by a processor worker)
            text = self._text(response)
            if text is None:
                return
            relevance = self.classifier.relevance(text)
            self.stats.inc_value("focus/scored_on_reactor")
        response.meta[RELEVANCE_META] = round(relevance, 4)
        carried = response.meta.get(FOCUS_META)
        link = None
        if carried:
            anchor, parent, harvest = carried[:3]
            # (a request queued by an earlier version carries fewer fields)
            context = carried[4] if len(carried) > 4 else ""
            topical = carried[5] if len(carried) > 5 else None
            distance = carried[3] if len(carried) > 3 else 0
            link = LinkFeatures(response.request.url if response.request else response.url,
                                anchor, parent, urlsplit(response.url).netloc, harvest, context,
                                topical, distance)
        relevant = self.policy.judged(response.url, relevance, link)
        self._total[0] += 1
        self._total[1] += relevant
        stats = self.stats
        stats.inc_value("focus/fetched")
        if relevant:
            stats.inc_value("focus/relevant")
        stats.set_value("focus/harvest_rate", round(self._total[1] / self._total[0], 4))
        # the classifier's confidence: how far its answers stand from undecided (0.5), on
        # average, 0 (every page a coin toss) to 1 (every page sure)
        self._certainty += abs(2 * relevance - 1)
        stats.set_value("focus/confidence", round(self._certainty / self._total[0], 4))
        stats.inc_value(f"focus/relevance/{min(9, int(relevance * 10))}")
        scorer = self.policy.scorer
        quality = scorer.quality
        if link is not None and quality is not None and quality != self._quality:
            self._quality = quality
            stats.set_value("focus/link_model/prior_auc", round(quality[0], 4))
            stats.set_value("focus/link_model/learned_auc", round(quality[1], 4))
            stats.set_value("focus/link_model/trusted", int(scorer.trusted))

    @staticmethod
    def _text(response: Response) -> str | None:
        """The text to score, as a processor's worker scores it
        (``PageClassifier.document_relevance``): an HTML page's whole visible text, another
        kind's processed text."""
        processed = response.meta.get("processed")
        if processed is not None and (processed.refused or processed.content_kind != "html"):
            return processed.text if not processed.refused else None
        if isinstance(response, TextResponse):
            return page_text(response.body, True)
        return None

    # -- the links found on it ---------------------------------------------------------------
    def process_spider_output(self, response: Response, result: Iterable[Any],
                              spider: Any = None) -> Iterator[Any]:
        items, requests = self._split(result)
        yield from items
        yield from self._scored(response, requests)

    async def process_spider_output_async(self, response: Response, result: AsyncIterator[Any],
                                          spider: Any = None) -> AsyncIterator[Any]:
        collected = [r async for r in result]
        for out in self.process_spider_output(response, collected, spider):
            yield out

    @staticmethod
    def _split(result: Iterable[Any]) -> tuple[list[Any], list[Request]]:
        items: list[Any] = []
        requests: list[Request] = []
        for out in result:
            (requests if isinstance(out, Request) else items).append(out)
        return items, requests

    def _scored(self, response: Response, requests: list[Request]) -> Iterator[Request]:
        relevance = response.meta.get(RELEVANCE_META)
        if relevance is None:
            yield from requests
            return
        carried = response.meta.get(FOCUS_META)
        distance = self.policy.distance(relevance, carried[3] if carried else None)
        processed = response.meta.get("processed")
        found = {link.url: link for link in processed.links} if processed else {}
        scored = self.policy.scored(relevance, distance, [
            Found(r.url, link.text, link.context) if (link := found.get(r.url)) else Found(r.url)
            for r in requests])
        if scored is None:
            if requests:
                self.stats.inc_value("focus/dropped/tunnel", len(requests))
            return
        for request, (link, score) in zip(requests, scored, strict=True):
            request.priority = round(score * SCORE_SCALE)
            request.meta[FOCUS_META] = (link.anchor, link.parent_relevance, link.harvest,
                                        distance, link.context, link.topical)
            yield request
