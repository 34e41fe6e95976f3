"""Politeness keys: the unit that one request at a time and the delays apply to.

A URL's key is its host name (``CRAWLER_EXT_POLITENESS_KEY = "host"``), or the host's address
(``"ip"``, so that many names on one server share its politeness; the scheduler resolves the
name first: ``crawler_ext.frontier.adapter.keys``).
"""

from __future__ import annotations

import ipaddress
from sys import intern
from urllib.parse import urlsplit

from crawler_ext.admission.urls import host_of

__all__ = ["address_literal", "canonical_key", "politeness_key"]


def canonical_key(canonical_url: str) -> str:
    """:func:`politeness_key` of a canonical URL (admission's output), without parsing it
    again: its host, less the port (the hot path: every admitted link).  Interned: the
    frontier's, the DNS cache's, the address pins' and the literals' tables of a host share one
    string (a broad crawl keeps a few of them for each of its many hosts)."""
    netloc = host_of(canonical_url)
    if "@" in netloc or "[" in netloc or not netloc.isascii():
        return politeness_key(canonical_url)
    return intern(netloc.partition(":")[0].lower())


def politeness_key(url: str) -> str:
    """The URL's host name: the unit of politeness unless CRAWLER_EXT_POLITENESS_KEY is "ip"."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def address_literal(host: str) -> str | None:
    """The host as an IP address literal (brackets of IPv6 taken off), or None for a name."""
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None
