"""Distributed crawling: the Redis frontier and seen set, with real Redis and real workers.

Redis must answer on 127.0.0.1:6379 (``.ci/run`` starts it); these tests use database 9 or
10, one per pytest-xdist worker (``conftest.py``); the Redis Cluster is a real 3+3 cluster on
loopback ports, started once per worker for the package.
"""
