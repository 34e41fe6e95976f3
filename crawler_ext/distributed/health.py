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
    """host:port/db (or the socket path) of a redis-py client; "cluster host:port" of a
    Redis Cluster client (the node it was given)."""
    try:
        kwargs = redis.connection_pool.connection_kwargs
    except AttributeError:
        node = getattr(redis, "get_default_node", lambda: None)()
        return f"cluster {node.host}:{node.port}" if node is not None else repr(redis)
    where = kwargs.get("path") or f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
    return f"{where}/{kwargs.get('db', 0)}"


def health_of(redis: Any) -> RedisHealth:
    """The process's reporter for ``redis``'s server."""
    name = server_name(redis)
    with _REGISTRY_LOCK:
        health = _REGISTRY.get(name)
        if health is None:
            # a cluster fails over node by node: its outage ends after 5 s of calm
            health = _REGISTRY[name] = RedisHealth(
                name, settle=5.0 if name.startswith("cluster ") else 0.0)
        return health


class RedisHealth:
    """One outage, one ERROR line (its first failure) and one INFO line (when it is over),
    for every component of the worker.  An outage is over when every component that failed
    has answered since and ``settle`` seconds passed without a failure: a Redis Cluster failing
    over answers some components (other nodes) before others, and a node may refuse again
    while its replica is promoted; that is still the same outage."""

    def __init__(self, name: str, clock: Any = time.monotonic, settle: float = 5.0) -> None:
        self.name = name
        self._clock = clock
        self.settle = settle
        self._lock = threading.Lock()
        self.down_since: float | None = None
        self._failing: set[str] = set()
        self._calm_since: float | None = None  # no component failing since then
        self.failures = 0  # failed exchanges of all components in this outage
        self.outages = 0

    def failed(self, component: str, message: str) -> None:
        """A component's exchange with Redis failed; the first of an outage is logged."""
        with self._lock:
            self.failures += 1
            self._failing.add(component)
            self._calm_since = None
            if self.down_since is not None:
                return
            self.down_since = self._clock()
            self.outages += 1
        logger.error("Redis %s is unreachable (%s: %s); the worker keeps its work and retries "
                     "(failures are counted in the components' .../redis/errors stats)",
                     self.name, component, message)

    def answered(self, component: str | None = None) -> None:
        """A component's exchange succeeded (``None``: every component); ends an outage, with
        one line, once nothing has failed for ``settle`` seconds."""
        with self._lock:
            if self.down_since is None:
                return
            if component is None:
                self._failing.clear()
            else:
                self._failing.discard(component)
            if self._failing:
                return
            now = self._clock()
            if self._calm_since is None:
                self._calm_since = now
            if now - self._calm_since < self.settle:
                return
            down = self._calm_since - self.down_since
            failures, self.down_since, self.failures = self.failures, None, 0
            self._calm_since = None
        logger.info("Redis %s answers again after %.0f s (%d failed exchanges); resuming",
                    self.name, down, failures)
