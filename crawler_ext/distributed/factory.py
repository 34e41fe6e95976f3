"""Building the Redis frontier from Scrapy settings (``CRAWLER_EXT_FRONTIER_BACKEND =
"redis"``): the frontier adapter's factory names :func:`make_redis_frontier` by its path."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler_ext import config
from crawler_ext.distributed.bloom import RedisBloom
from crawler_ext.distributed.cli import crawl_prefix, redis_from_settings
from crawler_ext.distributed.frontier import RedisFrontier
from crawler_ext.distributed.shards import ShardLayout
from crawler_ext.frontier.politeness import PolitenessPolicy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["make_redis_frontier"]


def make_redis_frontier(crawler: Crawler, policy: PolitenessPolicy, weights: list[float],
                        refresh_share: float) -> RedisFrontier:
    """The shared frontier: connection from scrapy-redis's settings (REDIS_URL, REDIS_PARAMS),
    seeds from its start-URLs key, the seen set as a Redis Bloom filter."""
    from scrapy_redis.defaults import START_URLS_KEY, STATS_KEY

    s = crawler.settings
    get = lambda name: config.get(s, name)
    name = crawler.spidercls.name
    redis = redis_from_settings(s)
    prefix = crawl_prefix(s, name)
    seeds_key = s.get("REDIS_START_URLS_KEY", START_URLS_KEY) % {"name": name, "spider": name}
    bloom = RedisBloom(redis, prefix, get("CRAWLER_EXT_BLOOM_CAPACITY"),
                       get("CRAWLER_EXT_BLOOM_ERROR_RATE"))
    stats: Any = crawler.stats
    layout = ShardLayout(
        prefix, shards=get("CRAWLER_EXT_REDIS_SHARDS"),
        lease_ttl=get("CRAWLER_EXT_REDIS_LEASE_TTL"),
        host_budget=get("CRAWLER_EXT_HOST_PAGE_BUDGET"),
        pattern_cap=get("CRAWLER_EXT_HOST_PATTERN_CAP"), refresh_share=refresh_share,
        seeds_key=seeds_key, stats_key=s.get("STATS_KEY", STATS_KEY) % {"spider": name},
        wait_for_seeds=get("CRAWLER_EXT_REDIS_WAIT_FOR_SEEDS"))
    return RedisFrontier(redis, layout, policy, weights, bloom,
                         buffer=s.getint("CONCURRENT_REQUESTS"),
                         on_stat=lambda key, value: stats.inc_value(key, value))
