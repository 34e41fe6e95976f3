"""Public path of the known-links spider middleware (``crawler_ext.frontier.knownlinks.
KnownLinksMiddleware``, as the add-on and the docs name it) and of the reference spider's
``KnownLinkFilter``; they live in the adapter."""

from __future__ import annotations

from crawler_ext.frontier.adapter.knownlinks import KnownLinkFilter, KnownLinksMiddleware

__all__ = ["KnownLinkFilter", "KnownLinksMiddleware"]
