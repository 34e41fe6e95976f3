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

import threading
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
    ``RedisFrontier``) until a later ``WAIT`` succeeds.

    ``WAIT`` counts the writes made before the last command of the connection it goes on,
    and the client's pool may hand the commands and the ``WAIT`` different connections (other
    threads use the client: the shared content index's log).  So each node's ``WAIT`` goes in one round trip behind a
    marker write on the same connection (a key of a slot written, expiring): the node's
    replication stream is ordered, so a replica that holds the marker holds every write the
    node acknowledged before it, from any connection."""

    REPLICA_WAIT_MS = 50
    MARKER_TTL_MS = 60_000

    def __init__(self, client: ClusterClient) -> None:
        self._client = client
        self._replies: list[Any] = []
        self._nodes: dict[str, tuple[Any, str]] = {}  # name -> node, a key written there
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
                    self._nodes[node.name] = (node, _text(key))
                except (RedisError, AttributeError, TypeError):
                    pass
            self._replies.append(reply)
            return reply

        return call

    def script_load(self, script: str) -> Any:  # redis-py's Script retries NOSCRIPT with it
        return self._client.script_load(script)

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        replies, self._replies = self._replies, []
        written, self._nodes = self._nodes, {}
        client = self._client
        # nodes whose earlier writes (this pipeline's or another's) no replica had
        # acknowledged: asked again; one no longer a primary failed over: its writes are
        # where they are (and the frontier, finding another node serving its shards, lets
        # go of them)
        earlier = client.lagging_since()
        if earlier:
            try:
                primaries = {node.name for node in client.get_primaries()}
            except RedisError:
                primaries = set(earlier)
            client.caught_up(set(earlier) - primaries, time.monotonic())
            earlier = {name: item for name, item in earlier.items() if name in primaries}
        nodes = {**earlier, **written}
        behind: dict[str, tuple[Any, str]] = {}
        for name, (node, key) in nodes.items():
            asked_at = time.monotonic()
            # (no replica connected: nothing to wait for, the writes stand on the primary)
            if not client.replicas_connected(node) or self._replicated(node, key):
                client.caught_up({name}, asked_at)
            else:
                behind[name] = (node, key)
        client.behind(behind)
        self.lagging = sorted(behind)
        if raise_on_error:
            for reply in replies:
                if isinstance(reply, RedisError):
                    raise reply
        return replies

    def _replicated(self, node: Any, key: str) -> bool:
        """A marker written to ``node`` (in ``key``'s slot), then ``WAIT``, on one
        connection: whether a replica acknowledged it in time."""
        try:
            pipe = self._client.get_redis_connection(node).pipeline(transaction=False)
            pipe.set(f"{{{_hash_tag(key)}}}:replicated", b"1", px=self.MARKER_TTL_MS)
            pipe.execute_command("WAIT", 1, self.REPLICA_WAIT_MS)
            _, acknowledged = pipe.execute()
        except RedisError:
            return False
        return isinstance(acknowledged, int) and acknowledged >= 1

    def reset(self) -> None:
        self._replies = []
        self._nodes = {}

    def __enter__(self) -> DirectPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.reset()

    def __len__(self) -> int:
        return len(self._replies)


def _text(key: Any) -> str:
    return key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else str(key)


def _hash_tag(key: str) -> str:
    """What Redis Cluster hashes of ``key``: its ``{tag}`` if it has a non-empty one."""
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            return key[start + 1:end]
    return key


class ClusterClient(RedisCluster):
    """``RedisCluster`` whose pipelines are :class:`DirectPipeline` s."""

    REPLICAS_TTL = 10.0

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> DirectPipeline:
        return DirectPipeline(self)

    # the nodes whose writes no replica has acknowledged yet, for every pipeline of the
    # client (threads included): node name -> (node, a key written there, when recorded)
    def _lagging(self) -> tuple[threading.Lock, dict[str, tuple[Any, str, float]]]:
        state = self.__dict__.get("_lagging_state")
        if state is None:
            state = self.__dict__.setdefault("_lagging_state", (threading.Lock(), {}))
        return state

    def lagging_since(self) -> dict[str, tuple[Any, str]]:
        lock, lagging = self._lagging()
        with lock:
            return {name: (node, key) for name, (node, key, _) in lagging.items()}

    def behind(self, nodes: dict[str, tuple[Any, str]]) -> None:
        """``nodes``' writes have not reached a replica (as of now)."""
        lock, lagging = self._lagging()
        now = time.monotonic()
        with lock:
            for name, (node, key) in nodes.items():
                lagging[name] = (node, key, now)

    def caught_up(self, names: set[str], marked_at: float) -> None:
        """A replica of each of ``names`` holds what the node acknowledged before
        ``marked_at`` (or the node is no longer a primary): its lag recorded before then is
        over; a lag recorded since (another thread's writes) stands."""
        lock, lagging = self._lagging()
        with lock:
            for name in names:
                item = lagging.get(name)
                if item is not None and item[2] < marked_at:
                    del lagging[name]

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
