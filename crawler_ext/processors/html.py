"""HTML: the text content dedup fingerprints, and the page's links with their anchor text.

The text is what :func:`crawler_ext.dedup.extract.fingerprint_text` takes -- the main
content's words, or the full visible text where the main content is too short -- so
``metadata["text_basis"]`` says which (``main``, ``full``, or ``body``: too little text, the
raw body is hashed instead).  Links are the ``<a href>`` not marked ``rel=nofollow``,
resolved against ``<base href>``, read with lxml (as Scrapy's selectors read them):
walking Resiliparse's DOM from Python costs about 7 µs a node, and iterating its element
collections takes time quadratic in their length (106 s for 5,000 links), against 0.6 ms
for a typical page and 0.7 s for a page of 200,000 links with lxml.
"""

from __future__ import annotations

from typing import Any

import lxml.html
from lxml import etree

from crawler_ext.dedup.extract import decode_html, fingerprint_text
from crawler_ext.processors.contract import Document, Link, Processed
from crawler_ext.processors.links import extract_links

__all__ = ["HtmlProcessor"]

MAX_ANCHOR_TEXT = 200


def _lxml_tree(body: bytes, text: str) -> Any:
    try:
        return lxml.html.document_fromstring(text)
    except ValueError:  # a str with an XML encoding declaration: lxml wants the bytes
        return lxml.html.document_fromstring(body)


#: words taken on each side of a link's anchor text
CONTEXT_WORDS = 12


def link_context(anchor: Any, label: str) -> str:
    """The words around a link: up to ``CONTEXT_WORDS`` on each side of its anchor text in
    the text of the element holding it (its sentence or list item; where the link is all of
    that element's text, the element above: the list it is an item of)."""
    element = anchor.getparent()
    for _ in range(2):
        if element is None:
            return ""
        text = " ".join(element.text_content()[:3000].split())
        if text != label:
            break
        element = element.getparent()
    else:
        return ""
    before, _, after = text.partition(label) if label else (text, "", "")
    return " ".join(before.split()[-CONTEXT_WORDS:] + after.split()[:CONTEXT_WORDS])


_DIRECTIVE_WORDS = ("noindex", "nofollow", "none")


def page_directive_sources(root: Any) -> dict[str, Any]:
    """What :func:`crawler_ext.hosts.directives.page_directives` reads in a page, read here
    so the crawl's reactor does not parse the page again: the ``<meta name content>`` pairs
    whose content holds a directive word (name in lower case; the agent a name addresses is
    judged there) and the first ``<link rel=canonical>``'s href, unresolved."""
    metas = []
    for meta in root.iter("meta"):
        name, content = meta.get("name"), meta.get("content")
        if name and content and any(w in content.lower() for w in _DIRECTIVE_WORDS):
            metas.append((name.lower(), content))
    canonical = None
    for link in root.iter("link"):
        if link.get("rel") == "canonical" and link.get("href") is not None:
            canonical = link.get("href")
            break
    return {"metas": metas[:100], "canonical": canonical}


class HtmlProcessor:
    name = "html"
    content_kind = "html"
    min_words = 20  # the worker sets CRAWLER_EXT_DEDUP_MIN_WORDS
    link_context = False  # the words around each link (a focused crawl's workers set it)

    def process(self, document: Document) -> Processed:
        decoded = decode_html(document.body)
        text, basis = fingerprint_text(decoded, self.min_words)
        metadata: dict[str, object] = {"text_basis": basis}
        try:
            root = _lxml_tree(document.body, decoded)
        except (etree.ParserError, ValueError):  # an empty or unreadable document
            return Processed("html", self.name, text, (), metadata)
        title = root.find(".//title")
        metadata["title"] = " ".join((title.text_content() if title is not None else "").split())
        if root.get("lang"):
            metadata["language"] = root.get("lang")
        metas = [{key: meta.get(key) for key in ("name", "property", "http-equiv", "content")
                  if meta.get(key) is not None}
                 for meta in root.iterfind(".//head/meta")][:100]
        if metas:
            metadata["metas"] = metas
        metadata["directives"] = page_directive_sources(root)
        base = document.url
        for href in root.iterfind(".//base[@href]"):
            resolved, _ = extract_links(document.url, [href.get("href") or ""])
            base = resolved[0] if resolved else document.url
            break
        links: dict[str, Link] = {}
        invalid: dict[str, int] = {}
        for anchor in root.iter("a"):
            try:
                href, rel = anchor.get("href"), anchor.get("rel") or ""
            except ValueError:  # attributes lxml cannot read (control characters)
                invalid["unreadable"] = invalid.get("unreadable", 0) + 1
                continue
            if href is None or "nofollow" in rel.lower().split():
                continue
            urls, reasons = extract_links(base, [href])
            for url in urls:
                if url not in links:
                    label = " ".join(anchor.text_content().split())[:MAX_ANCHOR_TEXT]
                    links[url] = Link(url, label, link_context(anchor, label)
                                      if self.link_context else "")
            for reason in reasons:
                invalid[reason] = invalid.get(reason, 0) + 1
        if invalid:
            metadata["links_invalid"] = invalid
        return Processed("html", self.name, text, tuple(links.values()), metadata)
