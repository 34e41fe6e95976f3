"""The operator blocklist: hosts (and their subdomains) or URL prefixes never to fetch.

One entry per line in ``CRAWLER_EXT_BLOCKLIST``; ``#`` starts a comment.  A line with
``://`` is a URL prefix, anything else a host.  The file is re-read when it changes while the
crawl runs; queued URLs it now blocks are dropped when their turn comes.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["Blocklist"]

logger = logging.getLogger(__name__)


class Blocklist:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else None
        self.hosts: set[str] = set()
        self.prefixes: tuple[str, ...] = ()
        self._mtime: float | None = None
        self.refresh()

    def refresh(self) -> bool:
        """Re-read the file if it changed; True if it did."""
        if self.path is None:
            return False
        try:
            mtime = os.stat(self.path).st_mtime
        except OSError:
            mtime = None
        if mtime == self._mtime:
            return False
        self._mtime = mtime
        hosts, prefixes = set(), []
        if mtime is not None:
            for line in self.path.read_text(encoding="utf-8").splitlines():
                line = line.split("#", 1)[0].strip()
                if "://" in line:
                    prefixes.append(line)
                elif line:
                    hosts.add(line.lower().rstrip("."))
        self.hosts, self.prefixes = hosts, tuple(prefixes)
        logger.info("Blocklist: %d hosts and %d URL prefixes from %s", len(hosts),
                    len(prefixes), self.path)
        return True

    def blocked(self, url: str) -> bool:
        if not (self.hosts or self.prefixes):
            return False
        if self.prefixes and url.startswith(self.prefixes):
            return True
        host = (urlsplit(url).hostname or "").lower()
        while host:
            if host in self.hosts:
                return True
            host = host.partition(".")[2]
        return False
