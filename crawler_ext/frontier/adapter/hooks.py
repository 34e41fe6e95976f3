"""The scheduler's side of a shared frontier (:class:`~crawler_ext.frontier.contract.
FrontierHooks`): what the Redis frontier calls back with after an exchange.  A local frontier
never calls it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy import Request
from scrapy.exceptions import DontCloseSpider

from crawler_ext.frontier.adapter.engine import EngineHandle
from crawler_ext.frontier.adapter.intake import Intake
from crawler_ext.frontier.adapter.robotsgate import RobotsGate

__all__ = ["SharedHooks"]


class SharedHooks:
    def __init__(self, intake: Intake, robots: RobotsGate | None, engine: EngineHandle,
                 inc: Callable[..., None]) -> None:
        self.intake = intake
        self.robots = robots
        self.engine = engine
        self._inc = inc

    def wake(self) -> None:
        """Entries became ready in Redis: the engine asks for them now."""
        self.engine.wake_now()

    def seeds(self, urls: list[str]) -> None:
        """Seeds popped from the Redis seeds key: admitted like any link (the shared seen set
        drops those another worker admitted already)."""
        for url in urls:
            url = url.strip()
            if not url:
                continue
            try:
                request = Request(url)
            except ValueError:
                self._inc("admission/rejected/bad_seed")
                continue
            self.intake.enqueue(request)
        self._inc("frontier/redis/seeds", len(urls))

    def robots_import(self, origin: str, status: int | None, body: bytes,
                      fetched_at: float) -> None:
        """A robots.txt answer another worker fetched, leased with its key."""
        if self.robots is not None:
            self.robots.adopt(origin, status, body, fetched_at)

    def trap_pattern(self, url: str) -> tuple[str, bool]:
        return self.intake.trap_pattern(url)

    def lost_writes(self) -> None:
        """Redis restarted or failed over: links remembered here as admitted may be lost
        there; they are checked against the shared seen set again."""
        self.intake.forget_seen()

    def keep_waiting(self, spider: Any = None) -> None:
        """``spider_idle`` of a crawl that waits for seeds pushed from outside."""
        raise DontCloseSpider("CRAWLER_EXT_REDIS_WAIT_FOR_SEEDS: waiting for new seeds")
