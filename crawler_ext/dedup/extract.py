"""Page text for content fingerprints, by a maintained extractor (Resiliparse).

Resiliparse was chosen by measurement on the real-site corpus (``benchmarks/run.py
extraction``): its main-content mode is the fastest of the candidates (resiliparse,
trafilatura, jusText, html-text) by far, and the only one above 1,000 pages/s; trafilatura
finds main text on slightly more pages but at about a sixteenth of the speed.  Where the main
content is too short to be evidence (Javadoc class pages, index pages, app shells),
``fingerprint_text`` falls back to the page's full visible text, and below that to the raw
body (exact hash only): a page never becomes a duplicate on a trivial text.

Texts are normalised for hashing: lower case, words only.  Digits are kept: folding them
(for timestamps) made every page of version numbers alike -- release indexes and changelog
navigation of different sites became "duplicates"; a timestamp on a page with real text
moves its SimHash by a bit or two, which the near-duplicate test absorbs.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str, detect_encoding
from resiliparse.parse.html import HTMLTree

__all__ = ["FingerprintText", "decode_html", "fingerprint_text", "main_text", "normalise",
           "too_deep"]

_WORD = re.compile(r"\w+", re.UNICODE)
#: bytes.translate's table: an ASCII byte that is not a word character becomes a space;
#: bytes of UTF-8 sequences (128 and up) are kept, their words settled by ``_WORD``
_ASCII_WORDS = bytes(c if chr(c).isalnum() and c < 128 or c == 95 or c >= 128 else 32
                     for c in range(256)).translate(bytes.maketrans(
                         b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz"))
#: Resiliparse's main-content detection takes time quadratic in the DOM's depth (112 s for a
#: hostile page nested 100,000 deep, 38 ms at 2,000); deeper pages are judged by their full text
MAX_MAIN_DEPTH = 2000
_TAG = re.compile(rb"<(/?)([a-zA-Z][a-zA-Z0-9]*)")
_VOID = frozenset({b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input",
                   b"keygen", b"link", b"meta", b"param", b"source", b"track", b"wbr"})


class FingerprintText(NamedTuple):
    """The normalised text a page is fingerprinted by, and what it was taken from:
    ``main`` (main content), ``full`` (all visible text) or ``body`` (too little text: the
    caller hashes the raw body instead, exactly)."""

    text: str
    basis: str


def decode_html(html: bytes) -> str:
    """The page's text, decoded by its detected encoding (UTF-8 if none is found)."""
    return bytes_to_str(html, detect_encoding(html) or "utf-8")


def _tree(html: str | bytes) -> HTMLTree:
    return HTMLTree.parse(decode_html(html) if isinstance(html, bytes) else html)


def normalise(text: str) -> str:
    """The text's words (``\\w+``), lower case, one space apart.  ASCII is mapped by a
    byte table (4x faster than the regular expression on a 35 KB text); only the words
    holding other characters go through the expression."""
    lowered = text.lower()
    if lowered.isascii():
        return " ".join(lowered.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split())
    words = lowered.encode("utf-8", "surrogatepass").translate(_ASCII_WORDS) \
        .decode("utf-8", "surrogatepass").split()
    out: list[str] = []
    for word in words:
        if word.isascii():
            out.append(word)
        else:
            out.extend(_WORD.findall(word))
    return " ".join(out)


def main_text(html: str | bytes) -> str:
    """The main content's text (boilerplate such as navigation, headers, footers dropped)."""
    return normalise(extract_plain_text(_tree(html), main_content=True, alt_texts=False))


def too_deep(html: str | bytes, limit: int = MAX_MAIN_DEPTH) -> bool:
    """Whether the page's tags may nest deeper than ``limit`` (an upper bound: unclosed
    tags count as open).  Pages with at most ``limit`` opening tags are never scanned."""
    data = html.encode("utf-8", "surrogatepass") if isinstance(html, str) else html
    if data.count(b"<") - data.count(b"</") <= limit:  # every "<" not of a closing tag
        return False
    depth = 0
    for match in _TAG.finditer(data):
        if match.group(2).lower() in _VOID:
            continue
        if match.group(1):
            depth = max(0, depth - 1)
        else:
            depth += 1
            if depth > limit:
                return True
    return False


def fingerprint_text(html: str | bytes, min_words: int = 20) -> FingerprintText:
    """The main text if it has at least ``min_words`` words, else the full visible text if
    that has, else ``("", "body")``.  A page nested deeper than ``MAX_MAIN_DEPTH`` goes
    straight to its full text (main-content detection would take minutes)."""
    tree = _tree(html)
    if not too_deep(html):
        text = normalise(extract_plain_text(tree, main_content=True, alt_texts=False))
        if text.count(" ") + 1 >= min_words:
            return FingerprintText(text, "main")
    text = normalise(extract_plain_text(tree, alt_texts=False))
    if text.count(" ") + 1 >= min_words:
        return FingerprintText(text, "full")
    return FingerprintText("", "body")
