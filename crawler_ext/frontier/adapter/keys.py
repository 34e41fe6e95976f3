"""Politeness keys by address: a host's URLs wait for its name to be resolved
(``CRAWLER_EXT_POLITENESS_KEY = "ip"``), and new hosts' addresses are prefetched.

The key functions themselves are pure: ``crawler_ext.frontier.keys``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy.utils.reactor import is_reactor_installed

from crawler_ext.frontier.keys import address_literal
from crawler_ext.hosts.dns import resolve

__all__ = ["PolitenessKeys"]


class PolitenessKeys:
    """Which politeness key a host's URLs go to.

    By host (the default) a host is its own key; with ``by_ip`` a host's key is
    ``ip:<address>``, so its URL is admitted only once the name is resolved: :meth:`key` returns
    None and keeps the caller's item, which the caller's ``on_resolved(items)`` gets back when
    the address is known (a name that cannot be resolved is its own key; its fetches fail in the downloader
    as usual).  ``prefetch`` resolves a new host at admission, by host too, so its address is
    in the resolver's cache when its first request goes out.
    """

    MAX_PREFETCHED = 1_000_000  # bounded: a host asked again hits the resolver's cache

    def __init__(self, by_ip: bool, prefetch: bool,
                 inc: Callable[[str, int], None] = lambda name, n: None) -> None:
        self.by_ip = by_ip
        self.prefetch = prefetch
        self._inc = inc
        self._keys: dict[str, str] = {}  # host -> "ip:ADDRESS" (or the host if unresolvable)
        # host -> (the items waiting for its address, whom to hand them to)
        self._waiting: dict[str, tuple[list[Any], Callable[[list[Any]], None]]] = {}
        self._prefetched: set[str] = set()

    def key(self, host: str, item: Any,
            on_resolved: Callable[[list[Any]], None]) -> str | None:
        """The host's key, or None: ``item`` waits for the host's address, then goes to
        ``on_resolved`` with the others that waited for it."""
        if not self.by_ip:
            if self.prefetch and host not in self._prefetched:
                self._prefetch(host)
            return host
        key = self._keys.get(host)
        if key is None:
            self._await(host, item, on_resolved)
        return key

    def known(self, host: str) -> str:
        """The key of a host whose URLs were admitted (the host itself until resolved)."""
        return self._keys.get(host, host) if self.by_ip else host

    def waiting(self) -> bool:
        """Whether URLs wait for an address (the journal must not call anything done)."""
        return bool(self._waiting)

    def _await(self, host: str, item: Any, on_resolved: Callable[[list[Any]], None]) -> None:
        waiting = self._waiting.get(host)
        if waiting is not None:
            waiting[0].append(item)
            return
        self._waiting[host] = ([item], on_resolved)
        literal = address_literal(host)
        if literal is not None:
            self.resolved(host, f"ip:{literal}")
            return
        if not is_reactor_installed():  # reactorless mode: no Twisted resolver to ask
            self.resolved(host, host)
            return
        resolve(host).addCallbacks(lambda address: self.resolved(host, f"ip:{address}"),
                                           lambda failure: self.resolved(host, host))

    def _prefetch(self, host: str) -> None:
        if len(self._prefetched) >= self.MAX_PREFETCHED:
            self._prefetched.clear()
        self._prefetched.add(host)
        if address_literal(host) is not None or not is_reactor_installed():
            return
        self._inc("dns/prefetched", 1)
        resolve(host).addErrback(lambda failure: None)  # the fetch reports failures

    def resolved(self, host: str, key: str) -> None:
        self._keys[host] = key
        waiting = self._waiting.pop(host, None)
        if waiting is not None:
            items, on_resolved = waiting
            on_resolved(items)
