"""``python -m crawler_ext.distributed``: seed, watch and reset a distributed crawl in Redis.

    python -m crawler_ext.distributed push-seeds --redis-url redis://127.0.0.1:6379 seeds.txt URL...
    python -m crawler_ext.distributed status
    python -m crawler_ext.distributed reset --yes

Seeds go to scrapy-redis's start-URLs list (``<spider>:start_urls``); workers started with
``-s CRAWLER_EXT_FRONTIER_BACKEND=redis`` pop them and admit them like any link.
``redis-cli lpush web:start_urls URL`` does the same without the URL check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from crawler_ext.distributed.bloom import RedisBloom

__all__ = ["RedisUnreachable", "connect", "crawl_prefix", "crawl_status", "main", "read_seeds",
           "redis_from_settings"]

DEFAULT_URL = "redis://127.0.0.1:6379/0"


def redis_from_settings(settings: Any) -> Any:
    """The Redis client of a distributed crawl: scrapy-redis's connection settings
    (``REDIS_URL``, ``REDIS_HOST``/``REDIS_PORT``, ``REDIS_PARAMS``); a Redis Cluster client
    with ``CRAWLER_EXT_REDIS_CLUSTER`` (or ``REDIS_PARAMS``' ``redis_cls`` a cluster class)."""
    from scrapy_redis.connection import get_redis_from_settings

    from crawler_ext import config

    params = dict(settings.getdict("REDIS_PARAMS") or {}) if hasattr(settings, "getdict") \
        else dict(settings.get("REDIS_PARAMS") or {})
    redis_cls = params.get("redis_cls")
    cls_name = redis_cls if isinstance(redis_cls, str) else getattr(redis_cls, "__name__", "")
    if config.get(settings, "CRAWLER_EXT_REDIS_CLUSTER") or str(cls_name).endswith("RedisCluster"):
        return cluster_client(settings.get("REDIS_URL") or
                              f"redis://{settings.get('REDIS_HOST', '127.0.0.1')}:"
                              f"{settings.get('REDIS_PORT', 6379)}", params)
    return get_redis_from_settings(settings)


def cluster_client(url: str, params: dict[str, Any] | None = None) -> Any:
    from crawler_ext.distributed.cluster import ClusterClient, cluster_params

    return ClusterClient.from_url(url, **cluster_params(params or {}))


class RedisUnreachable(Exception):
    """Redis did not answer at the URL given (the message is one line, naming the URL)."""


def connect(url: str, cluster: bool = False) -> Any:
    """A client of the Redis at ``url`` (a Redis Cluster node with ``cluster``) that answered a
    ping; :class:`RedisUnreachable` if it did not."""
    import redis as redis_lib

    try:
        client = cluster_client(url) if cluster else redis_lib.Redis.from_url(url)
        client.ping()
    except (redis_lib.RedisError, ValueError) as exc:
        raise RedisUnreachable(f"Redis at {url}: {exc}") from None
    return client


def crawl_prefix(settings: Any, spider: str) -> str:
    """``CRAWLER_EXT_REDIS_KEY`` for this spider: the prefix of every key of the crawl."""
    from crawler_ext import config

    try:
        return config.get(settings, "CRAWLER_EXT_REDIS_KEY") % {"spider": spider, "name": spider}
    except (KeyError, ValueError, TypeError) as exc:
        raise config.ConfigError(f"CRAWLER_EXT_REDIS_KEY: {exc}") from None


def read_seeds(items: list[str]) -> list[str]:
    """URLs from arguments that are URLs or files of URLs (one per line, '#' comments)."""
    urls: list[str] = []
    for item in items:
        if "://" in item:
            candidates = [item]
        else:
            path = Path(item)
            if not path.is_file():
                raise ValueError(f"{item}: neither a URL nor a readable file")
            candidates = [line.split("#", 1)[0].strip()
                          for line in path.read_text(encoding="utf-8").splitlines()]
        for url in filter(None, candidates):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"{url}: not an http(s) URL")
            urls.append(url)
    return urls


def _keys(spider: str, prefix: str | None) -> tuple[str, str]:
    settings = {"CRAWLER_EXT_REDIS_KEY": prefix} if prefix else {}
    return crawl_prefix(settings, spider), f"{spider}:start_urls"


def crawl_status(redis: Any, prefix: str, seeds_key: str) -> dict[str, int]:
    """Entries queued or leased, keys leased, seeds waiting, seen-set size (one round trip)."""
    pipe = redis.pipeline(transaction=False)
    shards = [k.decode() if isinstance(k, bytes) else k
              for k in redis.scan_iter(match=f"{{{prefix}:s*}}:e", count=1000)]
    for key in shards:
        tag = key[:-2]
        pipe.hlen(key)
        pipe.zcard(tag + ":ls")
        pipe.zcard(tag + ":lk")
    pipe.llen(seeds_key)
    values = pipe.execute()
    entries = sum(values[0:-1:3])
    return {"entries": entries, "leased_entries": sum(values[1:-1:3]),
            "leased_hosts": sum(values[2:-1:3]), "seeds_waiting": values[-1],
            "bloom_bytes": RedisBloom(redis, prefix).memory_bytes()
            if redis.exists(f"{prefix}:bloom:meta") else 0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawler_ext.distributed",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", default=DEFAULT_URL)
    parser.add_argument("--cluster", action="store_true",
                        help="--redis-url names a node of a Redis Cluster")
    parser.add_argument("--spider", default="web", help="the spider's name (key prefix)")
    parser.add_argument("--key", default=None, help="CRAWLER_EXT_REDIS_KEY, if changed")
    sub = parser.add_subparsers(dest="command", required=True)
    push = sub.add_parser("push-seeds", help="add seed URLs (or files of URLs)")
    push.add_argument("seeds", nargs="+")
    sub.add_parser("status", help="entries queued and leased, seeds waiting")
    reset = sub.add_parser("reset", help="delete the crawl's frontier, seen set and seeds")
    reset.add_argument("--yes", action="store_true", help="really delete")
    args = parser.parse_args(argv)

    prefix, seeds_key = _keys(args.spider, args.key)
    try:
        client = connect(args.redis_url, args.cluster)
    except RedisUnreachable as exc:
        print(f"crawler_ext.distributed: {exc}", file=sys.stderr)
        return 2
    if args.command == "push-seeds":
        try:
            urls = read_seeds(args.seeds)
        except (ValueError, OSError) as exc:
            print(f"crawler_ext.distributed: {exc}", file=sys.stderr)
            return 2
        for start in range(0, len(urls), 10_000):
            client.rpush(seeds_key, *urls[start:start + 10_000])
        print(f"pushed {len(urls)} seeds to {seeds_key}")
    elif args.command == "status":
        for name, value in crawl_status(client, prefix, seeds_key).items():
            print(f"{name}: {value}")
    else:
        if not args.yes:
            print("crawler_ext.distributed: reset deletes the crawl; add --yes", file=sys.stderr)
            return 2
        doomed = [seeds_key, f"{args.spider}:stats"]
        for pattern in (f"{{{prefix}:*", f"{prefix}:*"):
            doomed += list(client.scan_iter(match=pattern, count=1000))
        deleted = sum(client.delete(*doomed[i:i + 1000]) for i in range(0, len(doomed), 1000))
        print(f"deleted {deleted} keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
