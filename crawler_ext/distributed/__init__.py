"""Distributed mode on Redis: the shared frontier (``frontier``, its Lua scripts beside it), the
Redis Bloom filter (``bloom``), shared logs (``sharedlog``), outage reporting (``health``) and the
command line, ``python -m crawler_ext.distributed`` (``cli``)."""

from crawler_ext.distributed.cli import crawl_prefix, crawl_status, read_seeds, redis_from_settings

__all__ = ["crawl_prefix", "crawl_status", "read_seeds", "redis_from_settings"]
