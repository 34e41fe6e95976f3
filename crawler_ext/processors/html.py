"""HTML: the text content dedup fingerprints, and the page's links with their anchor text.

One parse (Resiliparse's lexbor parser) serves both.  The text is what
:func:`crawler_ext.dedup.extract.fingerprint_text` takes -- the main content's words, or the
full visible text where the main content is too short -- so ``metadata["text_basis"]`` says
which (``main``, ``full``, or ``body``: too little text, the raw body is hashed instead).
Links are the ``<a href>`` not marked ``rel=nofollow``, resolved against ``<base href>``.
"""

from __future__ import annotations

from crawler_ext.dedup.extract import fingerprint_text, parse_html
from crawler_ext.processors.contract import Document, Link, Processed
from crawler_ext.processors.links import extract_links

__all__ = ["HtmlProcessor"]

MAX_ANCHOR_TEXT = 200


class HtmlProcessor:
    name = "html"
    content_kind = "html"
    min_words = 20  # the worker sets CRAWLER_EXT_DEDUP_MIN_WORDS

    def process(self, document: Document) -> Processed:
        tree = parse_html(document.body)
        text, basis = fingerprint_text(document.body, self.min_words, tree)
        base = document.url
        if tree.head is not None:
            tag = tree.head.query_selector("base[href]")
            if tag is not None:
                resolved, _ = extract_links(document.url, [tag.getattr("href") or ""])
                base = resolved[0] if resolved else document.url
        anchors: dict[str, str] = {}
        if tree.document is not None:
            for anchor in tree.document.query_selector_all("a[href]"):
                if "nofollow" in (anchor.getattr("rel") or "").lower().split():
                    continue
                href = anchor.getattr("href") or ""
                anchors.setdefault(href, " ".join((anchor.text or "").split())[:MAX_ANCHOR_TEXT])
        links: dict[str, Link] = {}
        invalid: dict[str, int] = {}
        for href, label in anchors.items():
            urls, reasons = extract_links(base, [href])
            for url in urls:
                links.setdefault(url, Link(url, label))
            for reason in reasons:
                invalid[reason] = invalid.get(reason, 0) + 1
        metadata: dict[str, object] = {"title": tree.title or "", "text_basis": basis}
        if invalid:
            metadata["links_invalid"] = invalid
        html = tree.document.query_selector("html") if tree.document is not None else None
        if html is not None and html.getattr("lang"):
            metadata["language"] = html.getattr("lang")
        return Processed("html", self.name, text, tuple(links.values()), metadata)
