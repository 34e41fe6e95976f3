"""Out-links: hrefs resolved to absolute http(s) URLs, and URLs found in plain text."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

__all__ = ["MAX_LINK_LENGTH", "extract_links", "is_safe_url", "urls_in_text"]

MAX_LINK_LENGTH = 16_384
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_STRIPPED = re.compile(r"[\t\n\r]")  # browsers remove these anywhere in a URL (WHATWG)
#: a URL written in text: http(s)://, then anything but space, quotes and angle brackets
_TEXT_URL = re.compile(r"https?://[^\s<>\"'`{}|\\^\[\]]{1,2048}", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'\""  # sentence punctuation after a URL in prose
#: a URL Scrapy's ``safe_url_string`` (w3lib: the WHATWG URL standard, then percent-encoding)
#: returns unchanged, in the common shape: lower-case http(s), a lower-case name, an optional
#: port, a path and a query of the characters it leaves alone, no fragment, no user info
_SAFE = re.compile(
    r"(https?)://([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)"
    r"(?::([1-9][0-9]{0,4}))?(/[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*)"
    r"(\?[A-Za-z0-9\-._~!$&()*+,;=:@/?%]+)?")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*")
_DOTTED_QUAD = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
                          r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])")


@lru_cache(maxsize=64)
def _origin(base: str) -> str | None:
    """The base's scheme and authority, where root-relative links may be joined by hand
    (the HTML processor resolves a page's links one anchor at a time: once a page)."""
    return base[:base.index("/", base.index("//") + 2)] if is_safe_url(base) else None


def extract_links(base: str, hrefs: Iterable[str]) -> tuple[list[str], list[str]]:
    """Absolute http(s) URLs of ``hrefs`` resolved against ``base``, each once, in document
    order; and the reasons of those left out (``scheme``, ``bad_url``, ``too_long``).  Never
    raises: one bad link never costs a page its other links."""
    links: dict[str, None] = {}
    invalid: list[str] = []
    origin = _origin(base)
    for href in hrefs:
        href = _STRIPPED.sub("", href).strip(" \x00\x0b\x0c")
        if not href or href.startswith("#"):
            continue
        if len(href) > MAX_LINK_LENGTH:
            invalid.append("too_long")
            continue
        # fast paths, where urljoin gives the same (tests/test_processors.py compares them):
        # a link already in Scrapy's form, and a root-relative one that makes such a link
        # with the base's origin; not with a ";" (urljoin drops an empty parameter)
        if ";" in href:
            pass
        elif href[0] == "/" and origin is not None and href[1:2] != "/":
            joined = origin + href
            if is_safe_url(joined):
                links[joined] = None
                continue
        elif href[:4] == "http" and is_safe_url(href):
            links[href] = None
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


def is_safe_url(url: str) -> bool:
    """Whether ``url`` is already in the form Scrapy gives a request's URL (w3lib's
    ``safe_url_string`` would return it unchanged), so a ``Request`` may take it verbatim
    (Scrapy's ``verbatim_url``) instead of parsing it again.  Conservative: False for anything
    the standard would rewrite or that this check does not model -- upper case in the scheme
    or the name, a dot segment, a stray ``%``, an IDNA (``xn--``) label, a name
    that ends in a number but is not a plain dotted quad, user info, a fragment."""
    match = _SAFE.fullmatch(url)
    if match is None or len(url) > MAX_LINK_LENGTH:
        return False
    _scheme, host, port, path, query = match.groups()
    if len(host) > 253 or "xn--" in host:
        return False
    if port is not None and int(port) > 65535:
        return False
    if _NUMERIC_LABEL.fullmatch(host.rpartition(".")[2]) and not _DOTTED_QUAD.fullmatch(host):
        return False
    if "%" in url and (_BAD_PERCENT.search(path) or (query and _BAD_PERCENT.search(query))
                       or "%2e" in path.lower()):
        return False
    if "/." in path:
        for segment in path.split("/"):
            if segment in (".", ".."):
                return False
    return True
