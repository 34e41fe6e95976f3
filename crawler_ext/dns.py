"""Public path of the DNS resolver (``TWISTED_DNS_RESOLVER = "crawler_ext.dns.CachingResolver"``);
it lives in :mod:`crawler_ext.hosts.dns`."""

from crawler_ext.hosts.dns import CachingResolver

__all__ = ["CachingResolver"]
