"""The MIME type a document is processed as: its ``Content-Type``, unless the bytes say
otherwise.

The bytes are sniffed by libmagic (``python-magic``), chosen by measurement among the
candidates (``benchmarks/run.py processors``): it is the only one that tells HTML, XML and
plain text apart as well as the binary formats (puremagic fails on plain text and on HTML
after blank lines, filetype knows binary signatures only), at 26 µs a document (up to
~0.4 ms on real HTML pages: a page declared HTML that opens as HTML is not sniffed).  Where
libmagic is not installed the header is trusted (logged once, counted in
``processor/sniff/unavailable``).

The header is overruled when it is missing or generic (``application/octet-stream``...),
when the bytes carry a binary signature of another kind (a PDF served as ``text/html``), or
when a binary type is declared over text (an HTML error page served as ``application/pdf``).
Text types are never overruled by text types: libmagic's guess between HTML, XML and prose
is weaker than the server's word.  XML is a feed when its root is ``rss``, ``feed`` or
``rdf:RDF``.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["GENERIC", "kind_of", "media_type", "sniff", "choose_mime"]

GENERIC = frozenset({"", "application/octet-stream", "binary/octet-stream",
                     "application/unknown", "unknown/unknown", "application/x-download",
                     "application/download", "application/force-download"})
_FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml", "application/rdf+xml",
                         "application/feed+json"})
_XML_TYPES = frozenset({"text/xml", "application/xml"})
_FEED_ROOT = re.compile(rb"<(?:[A-Za-z0-9_-]+:)?(rss|feed|RDF)[\s>/]")
_OTHER_ROOT = re.compile(rb"<(?!\?|!)[A-Za-z]")
#: an HTML document's own first bytes (after a BOM and blank space): no binary signature can
#: follow, and text types never overrule text types, so libmagic's verdict would be "header"
_HTML_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*<(?:!doctype\s+html|html[\s>])", re.IGNORECASE)
SNIFF_BYTES = 4096

_magic: Any = None  # the libmagic handle, or False where it cannot be loaded


def media_type(content_type: str | bytes | None) -> str:
    """``"Text/HTML; charset=utf-8"`` -> ``"text/html"``."""
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    return (content_type or "").split(";", 1)[0].strip().lower()


def kind_of(mime: str) -> str:
    """The content kind of a MIME type (``html``, ``pdf``, ``feed``, ``text``, ``image``,
    ``xml``; ``other`` for the rest)."""
    if mime in ("text/html", "application/xhtml+xml"):
        return "html"
    if mime in ("application/pdf", "application/x-pdf"):
        return "pdf"
    if mime in _FEED_TYPES:
        return "feed"
    if mime.startswith("image/"):
        return "image"
    if mime in _XML_TYPES or mime.endswith("+xml"):
        return "xml"
    if mime.startswith("text/"):
        return "text"
    return "other"


def _libmagic() -> Any:
    global _magic
    if _magic is None:
        try:
            import magic

            _magic = magic.Magic(mime=True)
        except (ImportError, OSError):  # python-magic without libmagic raises ImportError
            _magic = False
    return _magic


def sniff(body: bytes) -> str | None:
    """libmagic's MIME type of the first bytes, or None (libmagic missing)."""
    handle = _libmagic()
    if handle is False:
        return None
    try:
        return media_type(handle.from_buffer(body[:SNIFF_BYTES]))
    except Exception:  # noqa: BLE001 -- libmagic's error on odd input: no verdict
        return "application/octet-stream"


def _xml_is_feed(body: bytes) -> bool:
    head = body[:SNIFF_BYTES]
    for match in _OTHER_ROOT.finditer(head):
        return bool(_FEED_ROOT.match(head, match.start()))  # the first element is the root
    return False


def choose_mime(declared: str | bytes | None, body: bytes) -> tuple[str, str]:
    """The MIME type to process ``body`` as, and how it was chosen: ``header``, ``sniffed``
    (no useful header), ``overruled`` (the bytes contradict the header) or ``unsniffed``
    (libmagic missing: the header, whatever it says)."""
    mime = media_type(declared)
    if kind_of(mime) == "html" and _HTML_START.match(body, 0, 512):
        return mime, "header"  # (libmagic spends ~0.4 ms on a page to say the same)
    sniffed = sniff(body) if body else None
    if sniffed is None:
        how = "unsniffed" if body else "header"
    elif mime in GENERIC:
        mime, how = sniffed, "sniffed"
    else:
        ours, theirs = kind_of(mime), kind_of(sniffed)
        binary_lie = theirs in ("pdf", "image") and theirs != ours
        text_lie = ours in ("pdf", "image") and theirs in ("html", "xml", "text")
        if binary_lie or text_lie:
            mime, how = sniffed, "overruled"
        else:
            how = "header"
    if kind_of(mime) == "xml" and _xml_is_feed(body):
        mime = "application/rss+xml" if b"<rss" in body[:SNIFF_BYTES] else "application/atom+xml"
    return mime, how
