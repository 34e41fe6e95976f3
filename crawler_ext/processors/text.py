"""Plain text: the text, and the URLs written in it."""

from __future__ import annotations

import codecs

from crawler_ext.processors.contract import Document, Link, Processed
from crawler_ext.processors.links import urls_in_text

__all__ = ["TextProcessor", "decode_text"]


def decode_text(document: Document) -> str:
    """The body as text: the header's charset, else a BOM's, else UTF-8 (bad bytes
    replaced)."""
    charset = "utf-8"
    for part in document.headers.get("content-type", "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            charset = value.strip("\"' ")
    body = document.body
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                      (codecs.BOM_UTF16_BE, "utf-16-be")):
        if body.startswith(bom):
            body, charset = body[len(bom):], name
    try:
        return body.decode(charset, errors="replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", errors="replace")


class TextProcessor:
    name = "text"
    content_kind = "text"

    def process(self, document: Document) -> Processed:
        text = decode_text(document)
        links = tuple(Link(url) for url in urls_in_text(text))
        return Processed("text", self.name, text, links, {})
