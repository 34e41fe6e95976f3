"""PDF: text, links (URI link annotations and URLs written in the text), metadata.

By PDFium (``pypdfium2``; Apache-2.0 or BSD-3-Clause, PDFium itself BSD-3-Clause),
chosen by measurement on real manuals (``benchmarks/run.py processors``): 640 pages/s
against 46 for pypdf and 19 for pdfminer.six, with as much text kept.  It is C++: a file
that crashes it costs the worker process it runs in, which the pool restarts.
"""

from __future__ import annotations

import ctypes
from datetime import datetime, timezone
from typing import Any

from crawler_ext.processors.contract import Document, Link, Processed
from crawler_ext.processors.links import extract_links, urls_in_text

__all__ = ["PdfProcessor", "pdf_date"]

MAX_PAGES = 5_000  # pages read of one document (the rest counted in metadata)
MAX_LINKS = 10_000  # link annotations kept of one document
MAX_TEXT = 20_000_000  # characters of text kept


def pdf_date(value: str) -> float | None:
    """``D:20240131120000+01'00'`` -> epoch seconds (None if unreadable)."""
    text = value.strip()
    if text.startswith("D:"):
        text = text[2:]
    digits = "".join(c for c in text[:14] if c.isdigit())
    if len(digits) < 4:
        return None
    digits = (digits + "0101000000")[:14] if len(digits) < 8 else digits.ljust(14, "0")
    try:
        moment = datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError:
        return None
    offset = 0
    rest = text[14:]
    if rest[:1] in ("+", "-"):
        parts = "".join(c for c in rest[1:] if c.isdigit())
        if len(parts) >= 2:
            offset = int(parts[:2]) * 3600 + int(parts[2:4] or 0) * 60
            offset = offset if rest[0] == "+" else -offset
    return moment.replace(tzinfo=timezone.utc).timestamp() - offset


class PdfProcessor:
    name = "pdfium"
    content_kind = "pdf"

    def process(self, document: Document) -> Processed:
        import pypdfium2 as pdfium
        import pypdfium2.raw as raw

        try:
            pdf = pdfium.PdfDocument(document.body)
        except pdfium.PdfiumError as exc:
            refused = "encrypted" if "password" in str(exc).lower() else "error"
            return Processed("pdf", self.name, refused=refused,
                             metadata={"error": str(exc)[:200]})
        try:
            return self._read(pdf, raw, document)
        finally:
            pdf.close()

    def _read(self, pdf: Any, raw: Any, document: Document) -> Processed:
        pages = len(pdf)
        texts: list[str] = []
        size = 0
        annotations: dict[str, None] = {}
        for number in range(min(pages, MAX_PAGES)):
            page = pdf[number]
            try:
                textpage = page.get_textpage()
                try:
                    text = textpage.get_text_bounded()
                finally:
                    textpage.close()
                if size < MAX_TEXT:
                    texts.append(text[:MAX_TEXT - size])
                    size += len(texts[-1])
                if len(annotations) < MAX_LINKS:
                    self._links(raw, page, annotations)
            finally:
                page.close()
        text = "\n".join(texts)
        links: dict[str, Link] = {}
        for url in extract_links(document.url, annotations)[0]:
            links.setdefault(url, Link(url))
        for url in urls_in_text(text):
            links.setdefault(url, Link(url))
        metadata: dict[str, Any] = {"pages": pages}
        info = pdf.get_metadata_dict(skip_empty=True)
        for key, name in (("Title", "title"), ("Author", "author"), ("Subject", "subject"),
                          ("Producer", "producer")):
            if info.get(key):
                metadata[name] = info[key][:500]
        for key, name in (("CreationDate", "created"), ("ModDate", "modified")):
            when = pdf_date(info.get(key, ""))
            if when is not None:
                metadata[name] = when
        if pages > MAX_PAGES:
            metadata["pages_read"] = MAX_PAGES
        return Processed("pdf", self.name, text, tuple(links.values()), metadata)

    @staticmethod
    def _links(raw: Any, page: Any, found: dict[str, None]) -> None:
        position = ctypes.c_int(0)
        link = raw.FPDF_LINK()
        buffer = ctypes.create_string_buffer(4096)
        while len(found) < MAX_LINKS and raw.FPDFLink_Enumerate(
                page.raw, ctypes.byref(position), ctypes.byref(link)):
            action = raw.FPDFLink_GetAction(link)
            if not action or raw.FPDFAction_GetType(action) != raw.PDFACTION_URI:
                continue
            length = raw.FPDFAction_GetURIPath(page.pdf.raw, action, buffer, len(buffer))
            if 1 < length <= len(buffer):
                found[buffer.raw[:length - 1].decode("latin-1")] = None
