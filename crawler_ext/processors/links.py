"""Out-links: hrefs resolved to absolute http(s) URLs, and URLs found in plain text."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urljoin, urlsplit

__all__ = ["MAX_LINK_LENGTH", "extract_links", "urls_in_text"]

MAX_LINK_LENGTH = 16_384
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_STRIPPED = re.compile(r"[\t\n\r]")  # browsers remove these anywhere in a URL (WHATWG)
#: a URL written in text: http(s)://, then anything but space, quotes and angle brackets
_TEXT_URL = re.compile(r"https?://[^\s<>\"'`{}|\\^\[\]]{1,2048}", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\""  # sentence punctuation after a URL in prose


def extract_links(base: str, hrefs: Iterable[str]) -> tuple[list[str], list[str]]:
    """Absolute http(s) URLs of ``hrefs`` resolved against ``base``, each once, in document
    order; and the reasons of those left out (``scheme``, ``bad_url``, ``too_long``).  Never
    raises: one bad link never costs a page its other links."""
    links: dict[str, None] = {}
    invalid: list[str] = []
    for href in hrefs:
        href = _STRIPPED.sub("", href).strip(" \x00\x0b\x0c")
        if not href or href.startswith("#"):
            continue
        if len(href) > MAX_LINK_LENGTH:
            invalid.append("too_long")
            continue
        scheme = _SCHEME.match(href)
        if scheme and scheme.group(1).lower() not in ("http", "https"):
            invalid.append("scheme")  # javascript:, mailto:, data:, tel:, ftp:, file:, ...
            continue
        try:
            url = urljoin(base, href)
            parts = urlsplit(url)
            parts.port  # noqa: B018 -- raises on a bad port
        except ValueError:  # invalid IPv6 literal, bad port, ...
            invalid.append("bad_url")
            continue
        if parts.scheme not in ("http", "https") or not parts.hostname:
            invalid.append("scheme" if parts.scheme not in ("http", "https") else "bad_url")
            continue
        links[url.partition("#")[0]] = None
    return list(links), invalid


def urls_in_text(text: str, limit: int = 10_000) -> list[str]:
    """The http(s) URLs written in ``text`` (sentence punctuation after one left off; a
    closing parenthesis kept when the URL opened one), each once, at most ``limit``."""
    found: dict[str, None] = {}
    for match in _TEXT_URL.finditer(text):
        url = match.group(0)
        while url and url[-1] in _TRAILING:
            if url[-1] == ")" and url.count("(") >= url.count(")"):
                break
            url = url[:-1]
        found[url] = None
        if len(found) >= limit:
            break
    links, _ = extract_links("", found)
    return links
