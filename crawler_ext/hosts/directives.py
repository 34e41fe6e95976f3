"""Page directives: ``<meta name="robots">``, the ``X-Robots-Tag`` header, ``rel=canonical``."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scrapy.http import HtmlResponse, TextResponse

_MAX_INFLATED = 16 * 1024 * 1024

__all__ = ["PageDirectives", "page_directives", "raw_noindex"]


@dataclass(frozen=True)
class PageDirectives:
    noindex: bool = False
    nofollow: bool = False
    canonical: str | None = None


def _tokens(values: list[str], agent: str) -> set[str]:
    tokens: set[str] = set()
    for value in values:
        value = value.lower()
        # "googlebot: noindex" applies to that agent only; a bare list applies to all.
        head, sep, rest = value.partition(":")
        if sep and "," not in head and head.strip() not in ("unavailable_after",):
            if head.strip() not in (agent, "*"):
                continue
            value = rest
        tokens.update(t.strip() for t in value.split(","))
    return tokens


def page_directives(response: Any, agent: str = "crawler_ext",
                    found: Mapping[str, Any] | None = None) -> PageDirectives:
    """Directives of an HTML (or any) response; ``none`` means noindex and nofollow.
    ``found``: what the HTML processor read in the page (``page_directive_sources``), so
    the page is not parsed again here."""
    headers = [v.decode("latin-1") for v in response.headers.getlist("X-Robots-Tag")]
    metas: list[str] = []
    canonical = None
    if found is not None:
        names = ("robots", agent.lower())
        metas = [content for name, content in found.get("metas", ()) if name in names]
        href = found.get("canonical")
        try:
            canonical = response.urljoin(href.strip()) if href else None
        except ValueError:
            canonical = None
    elif isinstance(response, TextResponse):
        try:
            for name in ("robots", agent):
                metas += response.xpath(
                    f"//meta[translate(@name,'ABCDEFGHIJKLMNOPQRSTUVWXYZ','abcdefghijklmn"
                    f"opqrstuvwxyz')='{name}']/@content").getall()
            href = response.xpath("//link[@rel='canonical']/@href").get()
            canonical = response.urljoin(href.strip()) if href else None
        except ValueError:  # an unparseable page or <base>/canonical URL (found by fuzzing)
            canonical = None
    tokens = _tokens(headers + metas, agent.lower())
    none = "none" in tokens
    return PageDirectives("noindex" in tokens or none, "nofollow" in tokens or none, canonical)


def _inflate(body: bytes, encoding: str) -> bytes | None:
    """The decoded body of a ``gzip``/``deflate`` coding (None: unknown coding, or broken)."""
    if encoding in ("", "identity"):
        return body
    if encoding in ("gzip", "x-gzip", "deflate"):
        wbits = 16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS
        try:
            return zlib.decompressobj(wbits).decompress(body, _MAX_INFLATED)
        except zlib.error:
            if encoding == "deflate":  # raw deflate, as some servers send it
                try:
                    return zlib.decompressobj(-zlib.MAX_WBITS).decompress(body, _MAX_INFLATED)
                except zlib.error:
                    return None
            return None
    return None


def raw_noindex(response: Any, agent: str = "crawler_ext") -> bool:
    """noindex of a response as transferred (before the downloader middlewares decode it):
    the X-Robots-Tag header, and the meta robots tag of an HTML body in a known coding."""
    content_type = response.headers.get("Content-Type", b"").decode("latin-1").lower()
    if "html" not in content_type:
        return page_directives(response, agent).noindex
    encoding = response.headers.get("Content-Encoding", b"").decode("latin-1").strip().lower()
    body = _inflate(response.body, encoding)
    if body is None:  # cannot look inside: judged by the header alone
        return page_directives(response, agent).noindex
    headers = {k: v for k, v in response.headers.items() if k.lower() != b"content-encoding"}
    html = HtmlResponse(response.url, status=response.status, headers=headers, body=body)
    return page_directives(html, agent).noindex
