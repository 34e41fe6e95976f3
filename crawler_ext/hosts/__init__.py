"""Host services: robots.txt (``robots``), page directives (``directives``), DNS (``dns``,
``hostsmap``), IP addresses (``addresses``), the SSRF guard (``guard``; its downloader
middleware ``netguard``) and the blocklist (``blocklist``)."""

from __future__ import annotations

from typing import Any

__all__ = ["HostsMap", "HostsOverrideResolver"]


def __getattr__(name: str) -> Any:
    # the resolver (``DNS_RESOLVER = "crawler_ext.hosts.HostsOverrideResolver"``) is Twisted's:
    # imported on first use, so that the pure host services import no Scrapy or Twisted
    if name in __all__:
        from crawler_ext.hosts import hostsmap

        return getattr(hostsmap, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
