"""One voice for a worker's Redis outages.

Several components of a distributed worker talk to one Redis (the frontier's exchange, the
shared rule log, the shared content index).  When Redis goes away they all fail at once; the
user should read one line, not one per component, and one line when Redis answers again.
Every component reports its failures and successes to the :class:`RedisHealth` of its Redis
server (one per server and process, :func:`health_of`) and counts its failures in its own
stats.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

__all__ = ["RedisHealth", "health_of"]

logger = logging.getLogger(__name__)

_REGISTRY: dict[str, RedisHealth] = {}
_REGISTRY_LOCK = threading.Lock()


def server_name(redis: Any) -> str:
    """host:port/db (or the socket path) of a redis-py client."""
    try:
        kwargs = redis.connection_pool.connection_kwargs
    except AttributeError:
        return repr(redis)
    where = kwargs.get("path") or f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
    return f"{where}/{kwargs.get('db', 0)}"


def health_of(redis: Any) -> RedisHealth:
    """The process's reporter for ``redis``'s server."""
    name = server_name(redis)
    with _REGISTRY_LOCK:
        health = _REGISTRY.get(name)
        if health is None:
            health = _REGISTRY[name] = RedisHealth(name)
        return health


class RedisHealth:
    def __init__(self, name: str, clock: Any = time.monotonic) -> None:
        self.name = name
        self._clock = clock
        self._lock = threading.Lock()
        self.down_since: float | None = None
        self.failures = 0  # failed exchanges of all components in this outage
        self.outages = 0

    def failed(self, component: str, message: str) -> None:
        """A component's exchange with Redis failed; the first of an outage is logged."""
        with self._lock:
            self.failures += 1
            if self.down_since is not None:
                return
            self.down_since = self._clock()
            self.outages += 1
        logger.error("Redis %s is unreachable (%s: %s); the worker keeps its work and retries "
                     "(failures are counted in the components' .../redis/errors stats)",
                     self.name, component, message)

    def answered(self) -> None:
        """A component's exchange succeeded; ends an outage, with one line."""
        with self._lock:
            if self.down_since is None:
                return
            down = self._clock() - self.down_since
            failures, self.down_since, self.failures = self.failures, None, 0
        logger.info("Redis %s answers again after %.0f s (%d failed exchanges); resuming",
                    self.name, down, failures)
