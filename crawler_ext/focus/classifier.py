"""The page classifier: how relevant a page's text is to the topic, 0 to 1.

Trained at start-up from the example folders with scikit-learn: a hashing vectoriser (word
unigrams and bigrams, English stop words left out, no vocabulary to keep), TF-IDF weights
(sublinear term frequencies, inverse document frequencies from the examples) and a
logistic regression with balanced class weights, chosen by measurement (docs/focus.md: on
the focus benchmark's three webs, TF-IDF ranked pages at ROC AUC 0.993 to 0.995 where raw
term frequencies gave 0.871 to 0.982), calibrated on the examples by cross-validation
(scikit-learn's ``CalibratedClassifierCV``, sigmoid) so that 0.5 means undecided.  Keywords alone make a
keyword classifier (the share of keywords a page holds, saturating at three); with
examples too, a keyword hit raises the model's answer.  A model that predicts one class on
its own examples is refused: it could not tell the topic from the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crawler_ext.errors import ConfigError
from crawler_ext.focus.topic import Keywords, page_text

__all__ = ["PageClassifier", "vectoriser", "weighting"]

N_FEATURES = 2 ** 18
CALIBRATION_FOLDS = 5  # folds of the examples the classifier's calibration holds out
KEYWORD_SATURATION = 3  # keywords a page must hold to count as fully on topic by them


def vectoriser(ngrams: tuple[int, int] = (1, 2)) -> Any:
    """Term counts, hashed (TF-IDF weighs them: ``Weighting``)."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=N_FEATURES, alternate_sign=False,
                             ngram_range=ngrams, norm=None, lowercase=True,
                             stop_words="english")


def weighting() -> Any:
    """TF-IDF over the hashed counts: a word common to every example weighs little, and a
    page's length does not decide its score (sublinear term frequencies, l2 norm)."""
    from sklearn.feature_extraction.text import TfidfTransformer

    return TfidfTransformer(sublinear_tf=True)


class PageClassifier:
    """``relevance(text)``: the topic's probability for a page's text."""

    def __init__(self, model: Any = None, keywords: Keywords | None = None,
                 weights: Any = None) -> None:
        self.model = model
        self.keywords = keywords or Keywords(())
        self._vectoriser = vectoriser() if model is not None else None
        self._weights = weights  # the TF-IDF weighting fitted on the examples

    @classmethod
    def train(cls, relevant: Sequence[str], irrelevant: Sequence[str],
              keywords: Keywords | None = None) -> PageClassifier:
        keywords = keywords or Keywords(())
        if not relevant and not irrelevant:
            if not keywords:
                raise ConfigError("CRAWLER_EXT_FOCUS_RELEVANT, CRAWLER_EXT_FOCUS_IRRELEVANT or "
                                  "CRAWLER_EXT_FOCUS_KEYWORDS: give examples or keywords of "
                                  "the topic")
            return cls(None, keywords)
        if not relevant or not irrelevant:
            missing = "CRAWLER_EXT_FOCUS_IRRELEVANT" if relevant else "CRAWLER_EXT_FOCUS_RELEVANT"
            raise ConfigError(f"{missing}: the classifier learns from both relevant and "
                              "irrelevant examples (or use CRAWLER_EXT_FOCUS_KEYWORDS alone)")
        from sklearn.linear_model import LogisticRegression

        texts = list(relevant) + list(irrelevant)
        labels = [1] * len(relevant) + [0] * len(irrelevant)
        weights = weighting()
        features = weights.fit_transform(vectoriser().transform(texts))
        model: Any = LogisticRegression(C=10.0, class_weight="balanced", max_iter=1000)
        folds = min(CALIBRATION_FOLDS, len(relevant), len(irrelevant))
        if folds >= 2:
            # calibrated on answers for examples held out of each fit (Platt's sigmoid): the
            # bare model, sure of its few examples, answers a new page of the topic below 0.5
            # two times in three on the focus benchmark's webs (docs/focus.md)
            from sklearn.calibration import CalibratedClassifierCV

            model = CalibratedClassifierCV(model, method="sigmoid", cv=folds)
        model.fit(features, labels)
        predicted = set(model.predict(features).tolist())
        if len(predicted) < 2:
            raise ConfigError(f"CRAWLER_EXT_FOCUS_RELEVANT: the classifier trained on "
                              f"{len(relevant)} relevant and {len(irrelevant)} irrelevant "
                              f"examples predicts one class only; give examples that differ")
        return cls(model, keywords, weights)

    def relevance(self, text: str) -> float:
        return self.relevances([text])[0]

    def document_relevance(self, text: str, html: bytes | None) -> float:
        """A fetched document's relevance, in a content processors' worker: an HTML page read
        as the examples are read (``page_text``: its title and whole visible text, links'
        anchors included), other kinds from their processor's ``text``.  (The HTML
        processor's text is the main content dedup fingerprints: without the page's title and
        anchors the classifier missed 7 to 10 points more of the focus benchmark's pages on
        topic, docs/focus.md.)"""
        return self.relevance(page_text(html, True) if html is not None else text)

    def relevances(self, texts: Sequence[str]) -> list[float]:
        """The relevance of each page's text (one vectorisation for them all): a keyword hit
        raises the model's answer."""
        return [k if p is None else 1.0 - (1.0 - p) * (1.0 - 0.5 * k)
                for p, k in self._answers(texts)]

    def link_relevances(self, texts: Sequence[str]) -> list[float]:
        """The relevance of each link's few words (anchor and URL): the model's answer or the
        keywords', whichever is higher -- on a short text a keyword hit is the strongest
        evidence there is, where the model, trained on whole pages, answers weakly."""
        return [k if p is None else max(p, k) for p, k in self._answers(texts)]

    def _answers(self, texts: Sequence[str]) -> list[tuple[float | None, float]]:
        """(the model's probability, None without a model; the share of keywords) of each
        text."""
        if not texts:
            return []
        keyword = [min(1.0, self.keywords.hits(t) / min(KEYWORD_SATURATION,
                                                        len(self.keywords.patterns)))
                   if self.keywords else 0.0 for t in texts]
        if self.model is None:
            return [(None, k) for k in keyword]
        assert self._vectoriser is not None
        counts = self._vectoriser.transform(texts)
        if self._weights is not None:
            counts = self._weights.transform(counts)
        probabilities = self.model.predict_proba(counts)[:, 1]
        return [(float(p), k) for p, k in zip(probabilities, keyword, strict=True)]
