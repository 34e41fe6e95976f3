"""The processor contract: a fetched document in, its text, links and metadata out.

A processor is any object with a ``name``, a ``content_kind`` and a ``process(document)``
method returning :class:`Processed`; it runs in a worker process (``spawn``ed: it must be
importable by dotted path and build itself with no argument), so it may be slow or crash
without costing the crawl more than that worker.  It raises for a document it cannot read;
the worker counts the refusal (``processor/<content_kind>/error``) and the page goes on
without text or links.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

__all__ = ["Document", "Link", "Processed", "Processor", "RelevanceScorer"]


class Link(NamedTuple):
    """An out-link: an absolute http(s) URL, with its anchor text where the format has one,
    and the words around it (HTML, in a focused crawl: the link scorer reads them)."""

    url: str
    text: str = ""
    context: str = ""


class Document(NamedTuple):
    """What a processor reads: the final URL, the MIME type chosen for the bytes (lower
    case, no parameters), the response headers (lower-case names, latin-1 text) and the
    body (already decoded from any ``Content-Encoding``)."""

    url: str
    mime: str
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class Processed:
    """A processor's answer.

    ``text`` is the document's text (for HTML, the text content dedup fingerprints);
    ``links`` its out-links in document order, each once; ``metadata`` what the format
    tells (``title``, ``author``, ``created``, ``modified``, ``language``, ``pages``,
    ``format``, ``width``, ``height``, ``phash``, ``dates`` of feed entries, ...);
    ``refused`` the reason a document was not read (``too_large``, ``timeout``, ``memory``,
    ``error``, ``encrypted``, ``crashed``) or empty.
    """

    content_kind: str
    processor: str
    text: str = ""
    links: tuple[Link, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    refused: str = ""

    @property
    def text_length(self) -> int:
        return len(self.text)


@runtime_checkable
class Processor(Protocol):
    """A content-type processor (see the module's documentation)."""

    name: str
    content_kind: str

    def process(self, document: Document) -> Processed: ...


class RelevanceScorer(Protocol):
    """What scores a document in the workers (a focused crawl's page classifier): its
    relevance to the crawl's topic, 0 to 1.  Pickled into each worker."""

    def document_relevance(self, text: str, html: bytes | None) -> float:
        """``text``: the processor's; ``html``: the body of an HTML document (None for other
        kinds), which the scorer may read as it reads its own examples."""
