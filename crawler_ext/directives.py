"""Page directives: ``<meta name="robots">``, the ``X-Robots-Tag`` header, ``rel=canonical``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scrapy.http import TextResponse

__all__ = ["PageDirectives", "page_directives"]


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


def page_directives(response: Any, agent: str = "crawler_ext") -> PageDirectives:
    """Directives of an HTML (or any) response; ``none`` means noindex and nofollow."""
    headers = [v.decode("latin-1") for v in response.headers.getlist("X-Robots-Tag")]
    metas: list[str] = []
    canonical = None
    if isinstance(response, TextResponse):
        for name in ("robots", agent):
            metas += response.xpath(
                f"//meta[translate(@name,'ABCDEFGHIJKLMNOPQRSTUVWXYZ','abcdefghijklmnopqrstuvwxyz')"
                f"='{name}']/@content").getall()
        href = response.xpath("//link[@rel='canonical']/@href").get()
        canonical = response.urljoin(href.strip()) if href else None
    tokens = _tokens(headers + metas, agent.lower())
    none = "none" in tokens
    return PageDirectives("noindex" in tokens or none, "nofollow" in tokens or none, canonical)
