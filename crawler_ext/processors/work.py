"""One document's processing, as a worker process runs it: the processor chosen by the
table, its answer, and the fingerprint content dedup judges the document by.

The fingerprint comes from the processor's text, as a page's comes from its main text: the
exact hash of its normalised words and their SimHash, or the raw body's hash below
``min_words`` words.  An image's is its perceptual hash (salted, so no text ever lands near
a picture), which the SimHash index compares by the same Hamming distance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from crawler_ext.dedup.extract import normalise
from crawler_ext.dedup.index import PageFingerprint
from crawler_ext.dedup.simhash import exact_hash, near_hash
from crawler_ext.processors.contract import Document, Processed, RelevanceScorer
from crawler_ext.processors.registry import load_processor, lookup
from crawler_ext.processors.sniff import kind_of

__all__ = ["IMAGE_SALT", "Runner", "fingerprint_of"]

IMAGE_SALT = 0x5A17_1E5C_0DE5_A17E


def fingerprint_of(processed: Processed, body: bytes, min_words: int) -> PageFingerprint | None:
    """What content dedup judges a processed document by (None: a refused document)."""
    if processed.refused:
        return None
    if processed.content_kind == "image":
        phash = int(str(processed.metadata.get("phash") or "0"), 16)
        return PageFingerprint(exact_hash(b"image\x00" + phash.to_bytes(8, "big")),
                               (phash ^ IMAGE_SALT) or 1, "image")
    basis = str(processed.metadata.get("text_basis") or "text")
    words = processed.text if processed.content_kind == "html" else normalise(processed.text)
    if basis == "body" or words.count(" ") + 1 < min_words or not words:
        return PageFingerprint(exact_hash(b"body\x00" + body), 0, "body")
    return PageFingerprint(exact_hash(words), near_hash(words), basis)


class Runner:
    """Processors by MIME type, each built once, in the process that runs them."""

    def __init__(self, table: Mapping[str, str], min_words: int = 20,
                 scorer: RelevanceScorer | None = None, link_context: bool = False) -> None:
        self.table = dict(table)
        self.min_words = min_words
        self.link_context = link_context  # the words around each link (a focused crawl)
        # a focused crawl's page classifier: each document's relevance goes in the
        # metadata, computed here rather than on the crawl's reactor
        self.scorer = scorer
        self._built: dict[str, Any] = {}

    def processor(self, mime: str) -> Any:
        path = lookup(self.table, mime)
        if path is None:
            return None
        if path not in self._built:
            processor = load_processor(path)
            if hasattr(processor, "min_words"):
                processor.min_words = self.min_words
            if hasattr(processor, "link_context"):
                processor.link_context = self.link_context
            self._built[path] = processor
        return self._built[path]

    def run(self, document: Document) -> tuple[Processed, PageFingerprint | None]:
        processor = self.processor(document.mime)
        kind = kind_of(document.mime)
        if processor is None:
            return Processed(kind, ""), None
        try:
            processed = processor.process(document)
        except MemoryError:
            processed = Processed(processor.content_kind, processor.name, refused="memory")
        except RecursionError:
            processed = Processed(processor.content_kind, processor.name, refused="error",
                                  metadata={"error": "RecursionError"})
        except Exception as exc:  # noqa: BLE001 -- a processor's failure is one document's
            processed = Processed(processor.content_kind, processor.name, refused="error",
                                  metadata={"error": f"{type(exc).__name__}: {exc}"[:200]})
        if self.scorer is not None and processed.text and not processed.refused:
            relevance = round(float(self.scorer.document_relevance(
                processed.text, document.body if processed.content_kind == "html" else None)), 4)
            processed = replace(processed, metadata={**processed.metadata,
                                                     "relevance": relevance})
        return processed, fingerprint_of(processed, document.body, self.min_words)
