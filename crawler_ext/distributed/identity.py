"""Which Redis server instance holds a crawl's shards: a restart or a failover changes it.

A Redis that restarts from its append-only file, or a replica promoted in place of a failed
primary, may lack writes that it had acknowledged: with ``appendfsync everysec`` a crash of
the machine loses up to the last second, and a failover loses what was not yet replicated.
A worker that goes on trusting what it was told before -- leases taken, pushes and
completions acknowledged, links admitted and remembered locally -- could then fetch an entry
that another worker holds, or drop a link whose push was lost.  The identity is compared at
every exchange; when it changes, the worker lets go of what it held (see ``RedisFrontier``).

The identity is the server's ``run_id`` (new at every start), for each shard the node that
serves it on a Redis Cluster (a failover moves the shard to another node).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["server_identity"]


def _run_id(info: Any) -> str:
    if isinstance(info, dict):
        if "run_id" in info:
            return str(info["run_id"])
        if len(info) == 1:  # (a cluster client's reply keyed by node)
            return _run_id(next(iter(info.values())))
        return ""
    text = info.decode() if isinstance(info, bytes) else str(info)
    return text.split("run_id:", 1)[1].split()[0] if "run_id:" in text else ""


def server_identity(redis: Any, tags: Sequence[str]) -> tuple[str, ...]:
    """The run id of the server of each shard (by its hash tag).
    Raises the client's error when a server does not answer."""
    node_of = getattr(redis, "get_node_from_key", None)
    if node_of is None:  # a single server
        return (_run_id(redis.info("server")),) * len(tags)
    ids: dict[str, str] = {}
    out = []
    for tag in tags:
        node = node_of(tag)
        if node.name not in ids:
            ids[node.name] = node.name + "/" + _run_id(
                redis.execute_command("INFO", "server", target_nodes=node))
        out.append(ids[node.name])
    return tuple(out)
