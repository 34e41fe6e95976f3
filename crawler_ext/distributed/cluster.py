"""The Redis Cluster client of a distributed crawl (``CRAWLER_EXT_REDIS_CLUSTER = True``).

Every script of the pack touches the keys of one slot (a frontier shard's keys share its hash
tag, a Bloom block is one key, the seed claims carry the seeds list's tag), so each runs on
the node that owns its slot.  redis-py's cluster pipeline refuses ``EVALSHA``, so this
client's ``pipeline()`` sends each command at once to its slot's node (redis-py routes it,
follows MOVED/ASK after a failover and loads a script a node lacks) and hands the replies
back together, as a pipeline does.  The pack calls it from its exchange thread, never from
the reactor.
"""

from __future__ import annotations

import time
from typing import Any

from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError, RedisError

__all__ = ["ClusterClient", "DirectPipeline", "cluster_params"]

#: REDIS_PARAMS keys that are scrapy-redis's, not a client's
_NOT_CLIENT_PARAMS = {"redis_cls"}


class DirectPipeline:
    """The pipeline interface over a cluster client: each command runs when called (on its
    slot's node), ``execute`` returns the replies in order, a failed command's error in its
    place (``raise_on_error=False``, as a pipeline does) or raised.  Not atomic across
    commands.  Before handing the replies back it waits (``WAIT``, at most
    ``REPLICA_WAIT_MS``) until a replica of each node written holds the writes, so a primary
    that dies after answering does not take acknowledged work with it -- on nodes that have a
    replica connected only: ``WAIT 1`` on a primary without one always waits its full time
    (it measured 8x slower crawls on a 3-primary cluster without replicas) and protects
    nothing.  Whether a node has one is asked (``INFO replication``) at most every
    ``REPLICAS_TTL`` seconds.  A node whose replica did not acknowledge in time is named in
    ``lagging``: the frontier then holds back what depends on those writes (see
    ``RedisFrontier``) until a later ``WAIT`` succeeds."""

    REPLICA_WAIT_MS = 50

    def __init__(self, client: RedisCluster) -> None:
        self._client = client
        self._replies: list[Any] = []
        self._nodes: dict[str, Any] = {}
        #: after ``execute``: the nodes (host:port) whose writes, these or earlier ones, no
        #: replica has acknowledged yet (a replica cut off or slow); they are asked again
        #: with the next pipeline's
        self.lagging: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not callable(method):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            key = args[2] if name == "evalsha" and len(args) > 2 and args[1] else \
                (args[0] if args else None)
            try:
                reply = method(*args, **kwargs)
            except NoScriptError:
                raise  # redis-py's Script loads the script and calls again
            except RedisError as exc:
                reply = exc
            if key is not None and not isinstance(reply, RedisError):
                try:
                    node = self._client.get_node_from_key(key)
                    self._nodes[node.name] = node
                except (RedisError, AttributeError, TypeError):
                    pass
            self._replies.append(reply)
            return reply

        return call

    def script_load(self, script: str) -> Any:  # redis-py's Script retries NOSCRIPT with it
        return self._client.script_load(script)

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        replies, self._replies = self._replies, []
        nodes, self._nodes = self._nodes, {}
        # nodes whose earlier writes no replica had acknowledged: asked again
        lagging: dict[str, Any] = self._client.__dict__.setdefault("_lagging", {})
        if lagging:  # a node no longer a primary failed over: its writes are where they are
            # (and the frontier, finding another node serving its shards, lets go of them)
            try:
                primaries = {node.name for node in self._client.get_primaries()}
            except RedisError:
                primaries = set(lagging)
            nodes = {**{name: node for name, node in lagging.items() if name in primaries},
                     **nodes}
        lagging.clear()
        replicas = getattr(self._client, "replicas_connected", None)
        for node in nodes.values():
            if replicas is not None and not replicas(node):
                continue  # no replica to wait for: the write stands on its primary alone
            try:
                acknowledged = self._client.execute_command(
                    "WAIT", 1, self.REPLICA_WAIT_MS, target_nodes=node)
            except RedisError:
                acknowledged = 0
            if not isinstance(acknowledged, int) or acknowledged < 1:
                lagging[node.name] = node
        self.lagging = sorted(lagging)
        if raise_on_error:
            for reply in replies:
                if isinstance(reply, RedisError):
                    raise reply
        return replies

    def reset(self) -> None:
        self._replies = []
        self._nodes = {}

    def __enter__(self) -> DirectPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.reset()

    def __len__(self) -> int:
        return len(self._replies)


class ClusterClient(RedisCluster):
    """``RedisCluster`` whose pipelines are :class:`DirectPipeline` s."""

    REPLICAS_TTL = 10.0

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> DirectPipeline:
        return DirectPipeline(self)

    def replicas_connected(self, node: Any) -> int:
        """Replicas connected to ``node`` now (asked at most every REPLICAS_TTL seconds;
        a node that cannot say counts as having one: the wait is the safe side)."""
        known = self.__dict__.setdefault("_replicas", {})
        now = time.monotonic()
        cached = known.get(node.name)
        if cached is not None and now - cached[1] < self.REPLICAS_TTL:
            return int(cached[0])
        try:
            info = self.execute_command("INFO", "replication", target_nodes=node)
            if isinstance(info, dict) and node.name in info:  # (keyed by node, some versions)
                info = info[node.name]
            count = int(info.get("connected_slaves", 0)) if isinstance(info, dict) else \
                int(str(info).split("connected_slaves:", 1)[1].split()[0])
        except (RedisError, IndexError, ValueError):
            count = 1
        known[node.name] = (count, now)
        return count


def cluster_params(params: dict[str, Any]) -> dict[str, Any]:
    """A client's keyword arguments from scrapy-redis's ``REDIS_PARAMS``."""
    return {k: v for k, v in params.items() if k not in _NOT_CLIENT_PARAMS}
