"""Public path of the SSRF guard middleware (``crawler_ext.netguard.NetworkGuardMiddleware``);
it lives in :mod:`crawler_ext.hosts.netguard`."""

from crawler_ext.hosts.netguard import NetworkGuard, NetworkGuardMiddleware

__all__ = ["NetworkGuard", "NetworkGuardMiddleware"]
