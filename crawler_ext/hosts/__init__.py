"""Host services: robots.txt (``robots``), page directives (``directives``), DNS (``dns``,
``hostsmap``), the SSRF guard (``netguard``) and the blocklist (``blocklist``)."""

from crawler_ext.hosts.hostsmap import HostsMap, HostsOverrideResolver

__all__ = ["HostsMap", "HostsOverrideResolver"]
