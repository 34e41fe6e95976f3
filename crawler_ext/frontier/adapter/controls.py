"""The operator's actions on a running crawl, applied in one place: the control API and the
command line hand them here.

Key actions (``KEY_OPS``: a key's delay, block, pause, budget, deleted queue) go to the
gate's rules (:class:`~crawler_ext.frontier.controls.KeyControls`); ``pause`` and ``resume``
pause Scrapy's engine (requests in flight finish; none starts); ``robots_refresh`` expires the
key's robots.txt answers, fetched again before its next URL.  Every action is logged and
counted (``control/actions/<op>``).  What a restart keeps: with JOBDIR the key actions but a
deleted queue (``KEPT_OPS``) are appended to ``JOBDIR/control-actions.jsonl`` and replayed at
start; on a shared frontier every action goes on the crawl's ``control`` log, which every
worker applies and a worker that starts later replays from its beginning (a crawl paused
there stays paused for a new worker).  A ``DOWNLOAD_SLOTS`` slot's delay becomes its key's
floor here (a request with ``meta["download_slot"]`` is queued under its slot's key).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from scrapy.utils.asyncio import create_looping_call
from twisted.internet import threads

from crawler_ext.frontier.adapter.durability import Durability
from crawler_ext.frontier.adapter.engine import EngineHandle, engine_of
from crawler_ext.frontier.adapter.intake import Intake
from crawler_ext.frontier.adapter.progress import Progress
from crawler_ext.frontier.adapter.robotsgate import RobotsGate
from crawler_ext.frontier.adapter.roles import Gates, Stores
from crawler_ext.frontier.contract import (FrontierBackend, SharedCountsPort, SharedFrontier,
                                           SharedLogPort)
from crawler_ext.frontier.controls import KEPT_OPS, KEY_OPS, KeyControls
from crawler_ext.frontier.politeness import delay_rule

__all__ = ["JOURNAL_NAME", "ControlBook"]

logger = logging.getLogger(__name__)

JOURNAL_NAME = "control-actions.jsonl"
SHARE_INTERVAL = 1.0  # seconds between two syncs of a shared crawl's requests per key


class ControlBook:
    """The operator's actions, and what the operator's tools read of the running frontier: the
    :class:`~crawler_ext.frontier.contract.FrontierControl` the ``frontier_opened`` signal
    hands over (``control``)."""

    def __init__(self, gates: Gates, stores: Stores, engine: EngineHandle, intake: Intake,
                 durability: Durability, progress: Progress, inc: Callable[..., None],
                 jobdir: str | None = None) -> None:
        self.controls: KeyControls = gates.controls
        self.frontier: FrontierBackend = stores.frontier
        self.shared: SharedFrontier | None = stores.shared  # when shared with other workers
        self.engine = engine
        self.robots: RobotsGate | None = gates.robots
        self.intake = intake  # (seeds; the queue head's URLs)
        self.durability = durability
        self.progress = progress
        self._inc = inc
        self.journal = os.path.join(jobdir, JOURNAL_NAME) if jobdir else None
        self.paused = False
        self.log: SharedLogPort | None = None
        self.counts: SharedCountsPort | None = None
        self._loop: Any = None
        self._sharing = False

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, delays: dict[str, float]) -> None:
        """Slot delays (``DOWNLOAD_SLOTS``' by key), then the kept actions (the journal; a
        shared crawl's log)."""
        if delays:
            # (Scrapy's slot keeps its delay too: it counts from the previous request's
            # start, as the gate's floor does, so it adds nothing to the frontier's)
            self.controls.slot_delays(delays)
            logger.info("Frontier: DOWNLOAD_SLOTS delays are their keys' floors: %s",
                        ", ".join(f"{key} {delay:g} s" for key, delay in sorted(delays.items())))
        replayed = self._replay()
        if replayed:
            logger.info("Control: %d operator actions replayed from %s", replayed,
                        self.journal)
        if self.shared is None:
            return
        self.log = self.shared.shared_log("control", self._stat)
        self.log.start(self.from_others)
        self.counts = self.shared.shared_counts("requests")
        self.controls.shared = {}  # requests per key over the workers: budgets, the API
        self._loop = create_looping_call(self._share)
        self._loop.start(SHARE_INTERVAL, now=False)

    def close(self) -> None:
        if self.log is not None:
            self.log.stop()
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self.counts is not None and self.controls.unshared:
            try:  # the last counts, at once: the crawl is closing
                self.counts.add(self.controls.take_unshared(), [])
            except Exception as exc:  # noqa: BLE001 -- a lost count is not worth a failed close
                logger.warning("Control: the last requests per key not shared (%s)", exc)

    def _share(self) -> None:
        """Add this worker's requests per key to the crawl's, read the budgeted keys' totals
        (in a thread); what fails goes with the next turn."""
        if self._sharing or self.counts is None or not self.controls.counting:
            return
        increments, wanted = self.controls.take_unshared(), list(self.controls.budgets)
        self._sharing = True
        d = threads.deferToThread(self.counts.add, increments, wanted)
        d.addCallbacks(self._shared, self._not_shared, errbackArgs=(increments,))

    def _shared(self, totals: dict[str, int]) -> None:
        self._sharing = False
        if self.controls.shared is not None:
            self.controls.shared.update(totals)

    def _not_shared(self, failure: Any, increments: dict[str, int]) -> None:
        self._sharing = False
        for key, n in increments.items():
            self.controls.unshared[key] = self.controls.unshared.get(key, 0) + n
        self._inc("control/redis/errors")

    # -- actions -----------------------------------------------------------------------------
    def act(self, action: dict[str, Any], source: str = "api") -> None:
        """Apply an action (validated by the caller), keep it, share it, log and count it."""
        self.apply(action)
        op = action["op"]
        if self.journal is not None and op in KEPT_OPS:
            try:  # one short line per operator action, rare: written at once
                with open(self.journal, "a", encoding="utf-8") as file:
                    file.write(json.dumps(action, separators=(",", ":")) + "\n")
            except OSError as exc:
                logger.warning("Control: %s not kept in %s (%s)", op, self.journal, exc)
                self._inc("control/journal_errors")
        if self.log is not None:
            self.log.publish(json.dumps(action, separators=(",", ":")).encode())
        logger.info("Control (%s): %s", source, _describe(action))
        self._inc(f"control/actions/{op}")

    def apply(self, action: dict[str, Any]) -> None:
        op = action["op"]
        if op in KEY_OPS:
            self.controls.apply(action, time.time())
        elif op == "pause":
            self.paused = True
            engine = engine_of(self.engine.crawler)
            if engine is not None:
                engine.pause()
        elif op == "resume":
            self.paused = False
            engine = engine_of(self.engine.crawler)
            if engine is not None:
                engine.unpause()
        elif op == "robots_refresh":
            if self.robots is not None:
                for origin in self.robots.cache.of_host(action["key"]):
                    self.robots.cache.expire(origin)
        else:
            raise ValueError(f"unknown action {op!r}")
        self.engine.wake()  # a key let go, a crawl resumed: the engine asks now

    def from_others(self, items: list[bytes]) -> None:
        """Actions taken through another worker (a shared crawl's control log)."""
        for item in items:
            try:
                action = json.loads(item)
                self.apply(action)
            except (ValueError, KeyError, TypeError) as exc:
                logger.warning("Control: an action from another worker ignored (%s)", exc)
                self._inc("control/refused/shared")

    # -- reading -----------------------------------------------------------------------------
    def key_report(self, key: str, state: dict[str, Any] | None) -> dict[str, Any]:
        """A key's state (from the frontier's ``inspect_key``) with its rules and the rule
        that set its delay."""
        state = dict(state or {})
        head = state.pop("head_data", None)
        out: dict[str, Any] = {"key": key, **state, **self.controls.rules(key)}
        if head is not None:
            out["queue_head"] = [url for url in map(self._url, head) if url]
        floor, floor_rule = self.controls.floor_of(key)
        if state:
            out["delay_rule"] = delay_rule(self.frontier.policy, state["delay"], state["backoff"],
                                           state["crawl_delay"], state["learned_floor"],
                                           floor, floor_rule)
            nxt = state.get("next_allowed")
            if floor and floor > 0:
                last = self.controls.last_start.get(key)
                if last is not None:
                    nxt = max(nxt or 0.0, last + floor)
            out["next_allowed"] = nxt
        if self.robots is not None:
            now = time.time()
            out["robots"] = {origin: _robots_status(s, now)
                             for origin, s in self.robots.cache.of_host(key).items()}
        return out

    def figures(self) -> dict[str, Any]:
        """The frontier's figures now (queued, bands, delayed, active hosts, in flight)."""
        return self.progress.now()

    def seed(self, request: Any) -> bool:
        """Queue a seed the operator gave (the seen set and admission decide; the engine is
        woken by :meth:`wake`): whether it was queued."""
        return self.intake.enqueue(request)

    def wake(self) -> None:
        self.engine.wake()

    def checkpoint(self) -> None:
        """Commit the journal and snapshot the seen set, now."""
        self.durability.flush()
        self.durability.snapshot()

    def _url(self, data: bytes) -> str | None:
        try:
            return self.intake.requests.url(data)
        except (ValueError, KeyError, IndexError):  # (a robots.txt hop, not a stored request)
            return None

    def _stat(self, name: str, value: float) -> None:
        self._inc(name, int(value))

    def _replay(self) -> int:
        if self.journal is None or not os.path.exists(self.journal):
            return 0
        n = 0
        with open(self.journal, encoding="utf-8") as file:
            for line in file:
                try:
                    self.apply(json.loads(line))
                    n += 1
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a kill
        return n


def _describe(action: dict[str, Any]) -> str:
    rest = ", ".join(f"{k}={v}" for k, v in action.items() if k not in ("op", "key"))
    return f"{action['op']}" + (f" {action['key']}" if "key" in action else "") + \
        (f" ({rest})" if rest else "")


def _robots_status(state: Any, now: float) -> dict[str, Any]:
    if state.fetching:
        status = "fetching"
    elif state.disallow_all:
        status = "unavailable"  # 5xx or unreachable: everything disallowed until the retry
    elif state.allow_all:
        status = "allow_all"
    elif state.parser is not None:
        status = "parsed"
    else:
        status = "unknown"
    return {"status": status, "failures": state.failures, "crawl_delay": state.crawl_delay,
            "expires_in": round(state.expires - now, 1) if state.expires else None}
