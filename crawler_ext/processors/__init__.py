"""Content-type processors: text, out-links and metadata of every fetched document.

A processor (:class:`~crawler_ext.processors.contract.Processor`) turns a fetched document
into a :class:`~crawler_ext.processors.contract.Processed` record; the
:class:`~crawler_ext.processors.middleware.ProcessorMiddleware` chooses one by MIME type
(sniffed from the bytes where the header is missing, generic or wrong) and runs it in worker
processes under a size, time and memory cap.  See docs/processors.md.
"""

from crawler_ext.processors.contract import Document, Link, Processed, Processor

__all__ = ["Document", "Link", "Processed", "Processor"]
