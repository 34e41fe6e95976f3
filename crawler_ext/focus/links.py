"""The link scorer: a link's chance to lead to a relevant page, learned online.

A link is described by its anchor text, its URL's tokens, the relevance of the page it was
found on, its directory's harvest so far (relevant pages / fetched pages, drawn towards its
host's: ``crawler_ext.focus.harvest``) and, where the HTML processor took them, the words
around it (its sentence or list item).  Before any outcome is known, its score is a prior:
the page classifier's relevance of the anchor text and URL words (``link_relevances``: a
keyword there counts fully), the parent page's relevance and the directory's harvest (the
words around a link are learned from only: in the prior they cost harvest, docs/focus.md).
Each fetched page is an outcome (relevant or not) for the link that led to it; from them an
online logistic regression (scikit-learn's ``SGDClassifier``, ``partial_fit`` in small
batches) learns which words, URL tokens and contexts lead to the topic -- ACHE's online
link classifier -- with the link words' relevance among its features
(so it learns how far to trust the classifier on this web), and its answer takes over from
the prior as outcomes accumulate.  ``learn=False`` keeps the prior
alone (the crawl test compares the two).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from crawler_ext.focus.classifier import PageClassifier

__all__ = ["FEATURES", "LinkFeatures", "LinkScorer", "url_words"]

_TOKEN = re.compile(r"[a-z0-9]+")
BATCH = 16  # outcomes learned at once
FULL_TRUST = 200  # outcomes after which the learned answer weighs its most
LEARNED_WEIGHT = 0.8  # the learned answer's weight at full trust
JUDGED = 400  # the latest outcomes on which the learned answer and the prior are compared
MIN_JUDGED = 60  # outcomes (of both kinds) before the comparison counts
#: the learned model's kinds of feature: the link words' relevance by the page classifier,
#: the anchor's words (and those around it), the URL's words, the parent page's relevance,
#: the directory's harvest so far (and the host itself), the off-topic pages in a row behind
#: it
FEATURES = frozenset({"topical", "anchor", "url", "parent", "host", "distance"})
MAX_DISTANCE = 4  # tunnelling distances from which the learned model tells them apart no more


def url_words(url: str) -> list[str]:
    """The words of a URL's path and query (``/docs/pdf-export.html`` -> docs pdf export)."""
    parts = urlsplit(url)
    return [t for t in _TOKEN.findall(f"{parts.path} {parts.query}".lower())
            if t not in ("html", "htm", "php", "aspx", "index", "www")]


def _bucket(value: float) -> int:
    return min(4, int(value * 5))


@dataclass(frozen=True)
class LinkFeatures:
    """What is known of a link when it is found."""

    url: str
    anchor: str
    parent_relevance: float
    host: str
    harvest: float  # the harvest of the link's directory so far (``Harvest.of``)
    context: str = ""  # the words around the link
    #: the relevance of the link's words (``PageClassifier.link_relevances``), once scored:
    #: carried with the request, so that learning from its outcome does not score it again
    topical: float | None = None
    #: off-topic pages in a row behind the link's page (0: found on an on-topic page)
    distance: int = 0

    def tokens(self, topical: float, kinds: frozenset[str] = FEATURES) -> list[str]:
        """The learned model's features of the ``kinds`` asked for (``FEATURES``);
        ``topical``: the relevance of the link's words."""
        words = [f"t:{min(9, int(topical * 10))}"] if "topical" in kinds else []
        if "anchor" in kinds:
            words += [f"a:{w}" for w in _TOKEN.findall(self.anchor.lower())[:20]]
            words += [f"c:{w}" for w in _TOKEN.findall(self.context.lower())[:30]]
        if "url" in kinds:
            words += [f"u:{w}" for w in url_words(self.url)[:20]]
        if "parent" in kinds:
            words.append(f"p:{_bucket(self.parent_relevance)}")
        if "host" in kinds:
            words += [f"h:{_bucket(self.harvest)}", f"host:{self.host}"]
        if "distance" in kinds:
            words.append(f"d:{min(self.distance, MAX_DISTANCE)}")
        return words

    def text(self) -> str:
        return f"{self.anchor} {' '.join(url_words(self.url))}"


class LinkScorer:
    def __init__(self, classifier: PageClassifier, learn: bool = True,
                 features: frozenset[str] = FEATURES) -> None:
        self.classifier = classifier
        self.learn = learn
        self.features = features  # (the benchmark turns each off in turn)
        self.outcomes = Counter[int]()
        self._pending: list[tuple[LinkFeatures, int]] = []
        self._model: Any = None
        self._hasher: Any = None
        #: (prior, learned answer, outcome) of the latest outcomes, each judged before it was
        #: learned from: the learned answer takes over only while it ranks them better
        self._judged: deque[tuple[float, float, int]] = deque(maxlen=JUDGED)
        self.quality: tuple[float, float] | None = None  # (the prior's, the learned) AUC
        self.gated = True  # (the benchmark turns the check off to measure the features)

    def scores(self, links: Sequence[LinkFeatures]) -> list[float]:
        """Each link's score, 0 to 1."""
        if not links:
            return []
        topical = self._topical(links)
        prior = self._prior(links, topical)
        if self._model is None:
            return prior
        if not self.trusted:
            return prior
        learned = self._learned(links, topical)
        weight = LEARNED_WEIGHT * min(1.0, sum(self.outcomes.values()) / FULL_TRUST)
        return [(1 - weight) * p + weight * q for p, q in zip(prior, learned, strict=True)]

    @staticmethod
    def _prior(links: Sequence[LinkFeatures], topical: Sequence[float]) -> list[float]:
        return [0.45 * t + 0.35 * link.parent_relevance + 0.2 * link.harvest
                for t, link in zip(topical, links, strict=True)]

    def _learned(self, links: Sequence[LinkFeatures], topical: Sequence[float]) -> list[float]:
        return [float(q) for q in self._model.predict_proba(self._hash(
            [link.tokens(t, self.features) for link, t in zip(links, topical, strict=True)]
        ))[:, 1]]

    @property
    def trusted(self) -> bool:
        """Whether the learned answer ranks the latest outcomes (judged before it learned
        from them) better than the prior: the safe fallback is the prior."""
        if not self.gated:
            return True
        return self.quality is not None and self.quality[1] > self.quality[0]

    def described(self, links: Sequence[LinkFeatures]) -> list[LinkFeatures]:
        """``links`` with the relevance of their words (scored once, for all of them)."""
        return [replace(link, topical=t) for link, t in zip(links, self._topical(links),
                                                             strict=True)]

    def _topical(self, links: Sequence[LinkFeatures]) -> list[float]:
        """Each link's words' relevance: carried, or scored now (in one call)."""
        scored = iter(self.classifier.link_relevances(
            [link.text() for link in links if link.topical is None]))
        return [next(scored) if link.topical is None else link.topical for link in links]

    def outcome(self, link: LinkFeatures, relevant: bool) -> None:
        """The page ``link`` led to was fetched: learn from whether it was on topic."""
        self.outcomes[int(relevant)] += 1
        if not self.learn:
            return
        self._pending.append((link, int(relevant)))
        if len(self._pending) >= BATCH and len(self.outcomes) == 2:
            self._fit()

    def _compare(self) -> None:
        judged = self._judged
        positives = sum(label for _, _, label in judged)
        if len(judged) < MIN_JUDGED or not 0 < positives < len(judged):
            return
        from sklearn.metrics import roc_auc_score

        labels = [label for _, _, label in judged]
        self.quality = (float(roc_auc_score(labels, [p for p, _, _ in judged])),
                        float(roc_auc_score(labels, [q for _, q, _ in judged])))

    def _hash(self, token_lists: list[list[str]]) -> Any:
        if self._hasher is None:
            from sklearn.feature_extraction import FeatureHasher

            self._hasher = FeatureHasher(n_features=2 ** 18, input_type="string",
                                         alternate_sign=False)
        return self._hasher.transform(token_lists)

    def _fit(self) -> None:
        if self._model is None:
            from sklearn.linear_model import SGDClassifier

            self._model = SGDClassifier(loss="log_loss", alpha=1e-4, class_weight=None,
                                        random_state=0)
        links, labels = zip(*self._pending, strict=True)
        topical = self._topical(links)
        if self._judged.maxlen and hasattr(self._model, "coef_"):  # (fitted once already)
            self._judged.extend(zip(self._prior(links, topical), self._learned(links, topical),
                                    labels, strict=True))
            self._compare()
        # each class weighs as much as the other, by the outcomes so far: on a web where one
        # link in ten leads to the topic the model would otherwise answer "no" to every link
        # and order them by noise
        negative, positive = self.outcomes[0], self.outcomes[1]
        weights = {0: (negative + positive) / (2 * max(1, negative)),
                   1: (negative + positive) / (2 * max(1, positive))}
        self._model.partial_fit(
            self._hash([link.tokens(t, self.features)
                        for link, t in zip(links, topical, strict=True)]),
            list(labels), classes=[0, 1], sample_weight=[weights[y] for y in labels])
        self._pending.clear()
