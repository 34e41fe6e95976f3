"""Rules learned from content: what duplicate pages teach about a host's URLs.

* A query parameter whose values never change a host's content (``?sessionid=``, ``?ref=``):
  after ``min_evidence`` duplicate pairs that differ only in it, the host's URLs are
  canonicalised without it (:meth:`Admission.learn_drop`).
* A URL pattern that keeps producing duplicates: its new URLs go one band lower
  (:meth:`RuleLearning.demoted`).
* Empty and duplicate pages, and error answers (:meth:`RuleLearning.answered`), are the
  evidence the trap rules wait for (:meth:`Admission.note_content`).

Learned parameters persist in ``JOBDIR/learned_rules.json`` (written at once: rare and small)
and, in a distributed crawl, go to the other workers through a shared log.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crawler_ext.admission.filters import Admission, differing_parameter, url_pattern
from crawler_ext.admission.urls import host_of

__all__ = ["RuleLearning", "url_error"]

#: error statuses of the server's state, not of the URL asked for
_SERVER_STATE = frozenset({408, 429, 502, 503, 504})


def url_error(status: int) -> bool:
    """Whether an HTTP status says the URL itself is bad (trap evidence)."""
    return 400 <= status < 600 and status not in _SERVER_STATE

logger = logging.getLogger(__name__)


class RuleLearning:
    def __init__(self, admission: Admission, min_evidence: int = 3, path: Path | None = None,
                 on_learned: Callable[[], None] = lambda: None,
                 inc: Callable[[str, int], None] = lambda name, n: None,
                 shared: Any = None) -> None:
        self.admission = admission
        self.min_evidence = min_evidence
        self.path = path
        self._on_learned = on_learned  # canonical forms changed (the scheduler's caches)
        self._inc = inc
        self._evidence: Counter[tuple[str, str]] = Counter()
        self._dup_patterns: Counter[tuple[str, str]] = Counter()
        self.shared = shared  # the distributed crawl's rule log (publish(bytes)), or None

    def content_duplicate(self, url: str, original: str, **_: Any) -> None:
        """The ``content_duplicate`` signal (the dedup middleware's): learn from it."""
        self.duplicate(url, original)

    def content_checked(self, url: str, kind: str, basis: str, **_: Any) -> None:
        """The ``content_checked`` signal: evidence for the trap rules (empty and duplicate
        pages of a URL pattern)."""
        self.admission.note_content(url, trap_like=kind != "unique" or basis == "body")

    def answered(self, url: str, status: int) -> None:
        """A fetched URL's status: an error that is the URL's own (404, 410, 500, ...) is
        trap evidence as an empty page is; one that tells the server's state (408, 429, 502,
        503, 504) is not -- a host that is down must not lose its URLs."""
        if url_error(status):
            self._inc("admission/error_answers", 1)
            self.admission.note_content(url, trap_like=True)

    def duplicate(self, url: str, original: str) -> None:
        """``url``'s content duplicates ``original``'s."""
        host = host_of(url)
        self._dup_patterns[(host, url_pattern(url))] += 1
        param = differing_parameter(url, original) if original else None
        if param is None:
            return
        self._evidence[(host, param)] += 1
        if self._evidence[(host, param)] >= self.min_evidence and \
                self.admission.learn_drop(host, param):
            logger.info("Learned: parameter %r does not change the content on %s; dropping it "
                        "from that host's URLs", param, host)
            self._inc("admission/learned_rules", 1)
            self._on_learned()
            self.save()
            if self.shared is not None:
                self.shared.publish(f"{host}\t{param}".encode())

    def demoted(self, canonical: str) -> bool:
        """Whether ``canonical``'s pattern keeps duplicating (its URLs go a band lower)."""
        return bool(self._dup_patterns) and self._dup_patterns.get(
            (host_of(canonical), self.admission.pattern(canonical)), 0) >= self.min_evidence

    def from_others(self, items: list[bytes]) -> None:
        """Rules other workers learned (distributed crawl)."""
        for item in items:
            host, _, param = item.decode("utf-8", "replace").partition("\t")
            if param and self.admission.learn_drop(host, param):
                logger.info("Learned (by another worker): parameter %r does not change the "
                            "content on %s", param, host)
                self._on_learned()
                self._inc("admission/learned_rules_shared", 1)

    def load(self) -> None:
        if self.path is not None and self.path.exists():
            for host, params in json.loads(self.path.read_text()).items():
                for param in params:
                    self.admission.learn_drop(host, param)
            if self.admission.learned:
                logger.info("Learned rules loaded: %s", self.admission.learned)

    def save(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({h: sorted(p) for h, p in self.admission.learned.items()}))
            tmp.replace(self.path)
