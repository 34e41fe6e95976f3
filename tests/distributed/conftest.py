"""The Redis and Redis Cluster fixtures of the distributed tests."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import local_redis

from crawler_ext.distributed.cli import cluster_client
from testweb.rediscluster import RedisClusterServer, cluster_available

redis_lib = pytest.importorskip("redis")
#: a database of its own per pytest-xdist worker, 9 or 10: two of this package's files may
#: run at once (tests/conftest.py)
REDIS_URL = f"redis://127.0.0.1:6379/{9 + int(os.environ.get('PYTEST_XDIST_WORKER', 'gw0')[2:] or 0) % 2}"


@dataclass
class Target:
    """A Redis to crawl against: the single server (database 9) or the Redis Cluster."""

    client: Any
    url: str
    cluster: bool
    server: Any = None  # the RedisClusterServer

    def keys_per_primary(self) -> list[int]:
        return [redis_lib.Redis(port=p).dbsize() for p in self.server.primary_ports()]

    def settings(self) -> dict:
        return {"REDIS_URL": self.url, **({"CRAWLER_EXT_REDIS_CLUSTER": True}
                                          if self.cluster else {})}

    def cli(self) -> list[str]:
        return ["--redis-url", self.url, *(["--cluster"] if self.cluster else [])]


@pytest.fixture(scope="package")
def cluster(tmp_path_factory):
    """A real Redis Cluster, 3 primaries + 3 replicas on loopback ports."""
    if not cluster_available():
        pytest.skip("redis-server/redis-cli not installed")
    with RedisClusterServer(tmp_path_factory.mktemp("cluster")) as server:
        yield server


@pytest.fixture(params=["single", "cluster"])
def target(request) -> Target:
    if request.param == "single":
        client = redis_lib.Redis.from_url(REDIS_URL)
        try:
            client.ping()
        except redis_lib.ConnectionError:
            pytest.fail("Redis does not answer on 127.0.0.1:6379 (.ci/run starts one)")
        result = Target(client, REDIS_URL, False)
    else:
        server = request.getfixturevalue("cluster")
        result = Target(cluster_client(server.url), server.url, True, server)
    result.client.flushdb()
    yield result
    result.client.flushdb()


@pytest.fixture
def single_redis():
    """The single Redis (this worker's database), flushed, for the tests that do not run on
    the cluster."""
    yield from local_redis(REDIS_URL)


@pytest.fixture
def redis(target: Target):
    """The client of ``target``: every script must keep its keys in one slot (a CROSSSLOT
    error fails the cluster's run)."""
    return target.client

