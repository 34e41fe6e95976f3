"""The two-level (Mercator) frontier, written once over a :class:`FrontierStore`.

Front queues decide *what* to crawl next (priority bands, weighted selection); back queues
decide *when* each politeness key may be contacted (one queue per key, a ready heap of next
allowed times, at most ``max_in_flight`` requests in flight per key).  A key's back queue has
two lanes, discovery and refresh (a recrawl's revisits): when both wait, the refresh lane gets
``refresh_share`` of the key's turns (:class:`RefreshShare`), and a lane alone takes them all.
Nothing here knows Scrapy: time is passed in, so tests drive it with a fake clock.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from crawler_ext.frontier.bands import BestFirst, RefreshShare, WeightedBands
from crawler_ext.frontier.contract import FrontierStore, Gate
from crawler_ext.frontier.politeness import Outcome, PolitenessPolicy
from crawler_ext.frontier.storage import Entry, HostState
from crawler_ext.recent import RecentMap

__all__ = ["DROP", "BestFirst", "Frontier", "Gate", "RefreshShare", "WeightedBands"]

DROP = "drop"


_TRACKED = struct.Struct(">BQq?H")  # band, id, priority, refresh, len(key); then key, data


def _tracked(e: Entry) -> bytes:
    key = e.key.encode()
    return _TRACKED.pack(e.band, e.id, e.priority, e.refresh, len(key)) + key + e.data


def _untracked(fp: int, fields: bytes) -> Entry:
    band, entry_id, priority, refresh, n = _TRACKED.unpack_from(fields)
    start = _TRACKED.size
    return Entry(fields[start:start + n].decode(), band, fields[start + n:], fp, entry_id,
                 priority, refresh)


def key_report(store: FrontierStore, key: str, active: set[str],
               parked: dict[str, float]) -> dict[str, Any] | None:
    """A key's politeness state and queue as ``store`` holds them (None: not known)."""
    if not store.known_key(key):
        return None
    state = store.host(key)
    discovery, refresh = store.back_lanes(key)
    return {"queued": discovery + refresh, "queued_refresh": refresh,
            "in_flight": state.in_flight, "active": key in active, "delay": state.delay,
            "backoff": state.backoff, "crawl_delay": state.crawl_delay,
            "learned_floor": state.floor, "next_allowed": state.next_allowed or None,
            "parked_until": parked.get(key),
            "head_data": [entry.data for entry in store.back_head(key, 3)]}


#: how long a best-first crawl's key whose entries are worse than another's waits before it is
#: asked again (the better entry's key may be in its politeness pause, or in flight)
DEFER_SECONDS = 0.01
#: entries a refill moves from the front queues to back queues at most, in one ``next``
REFILL_BUDGET = 5_000
#: the latest queued entries tracked for promotion (by fingerprint)
MAX_TRACKED = 100_000


class StoreLifecycle:
    """A frontier's lifecycle and journal marks, forwarded to its store."""

    store: FrontierStore

    @property
    def durable(self) -> bool:
        return self.store.durable

    def open(self) -> None:
        self.store.open()

    def flush(self) -> None:
        self.store.flush()

    def close(self, commit: bool = True) -> None:
        self.store.close(commit=commit)

    def admitted_since(self, mark: int) -> tuple[list[int], int]:
        return self.store.admitted_since(mark)

    def admitted_mark(self) -> int:
        return self.store.admitted_mark()


class Frontier(StoreLifecycle):
    """The frontier contract (``contract.FrontierBackend``) in one process, over a store; over a
    durable store, journaled too (``contract.JournaledFrontier``)."""

    inspect_blocks = False

    def __init__(self, store: FrontierStore, policy: PolitenessPolicy,
                 weights: Sequence[float], max_active_keys: int = 10_000,
                 max_in_flight: int = 1,
                 on_stat: Callable[[str, float], None] | None = None,
                 refresh_share: float = 0.5, best_first: BestFirst | None = None) -> None:
        if len(weights) != getattr(store, "bands", len(weights)):
            raise ValueError(f"{len(weights)} band weights for {store.bands} bands")  # type: ignore[attr-defined]
        self.store = store
        self.policy = policy
        self.selector = WeightedBands(weights)
        self.max_active_keys = max_active_keys
        self.max_in_flight = max_in_flight
        self.refill_budget = REFILL_BUDGET
        self.best_first = best_first  # (the focus strategy's routing: see _refill)
        self.lanes = RefreshShare(refresh_share)
        self._stat = on_stat or (lambda name, value: None)
        self._active: set[str] = set()  # keys with a back queue or requests in flight
        self._in_heap: set[str] = set()
        # the latest entries queued, for promotion (see _TRACKED), and those in a back queue
        self._in_back: set[int] = set()
        self._queued_by_fp = RecentMap(MAX_TRACKED, self._in_back.difference_update)
        self.parked: dict[str, float] = {}  # keys asked to wait past the cap -> until when
        self.key_floors: dict[str, float] = {}  # keys' own floors (see KeyControls)
        # drops in one next() (a trap's URLs go in bulk); the last stopped there with more?
        self.drop_budget = 20_000
        self._more_to_drop = False

    # -- admission -------------------------------------------------------------------------
    def add_delayed(self, entries: list[Entry], due: float) -> None:
        """Entries that join the front queues at unix time ``due``."""
        self.store.delay_push(entries, due)

    def add(self, entries: list[Entry], check_seen: bool = True) -> None:
        """Queue admitted entries (``check_seen`` matters to the shared seen set only)."""
        self.store.front_push(entries)
        self._track(entries)

    def _track(self, entries: list[Entry]) -> None:
        tracked, in_back = self._queued_by_fp, self._in_back
        for e in entries:
            if e.fp:
                tracked[e.fp] = _tracked(e)
                in_back.discard(e.fp)

    def promote(self, fp: int, band: int) -> bool:
        """Move a still-queued URL to a better band (its importance grew): in its front
        queue, or within its key's back queue (where the band ranks it after its priority)."""
        fields = self._queued_by_fp.get(fp)
        if fields is None or band >= fields[0]:
            return False
        entry = _untracked(fp, fields)  # (stores match by id)
        if fp in self._in_back:
            if not self.store.back_promote(entry, band):
                return False
        else:
            self.store.front_promote(entry, band)
        entry.band = band
        self._queued_by_fp[fp] = _tracked(entry)
        self._stat("frontier/promoted", 1)
        return True

    def recover(self) -> int:
        """Route again what a durable store held at the last stop (in flight ones included);
        how many entries.  Back queues kept on disk make their keys active again."""
        count = self.store.recover()
        for key in self.store.back_keys():
            self._active.add(key)
            self._schedule(key, 0.0)
        return count

    # -- routing front -> back -------------------------------------------------------------
    def _refill(self, now: float) -> int:
        """Mercator's router: move entries to back queues while fewer than the bound of
        politeness keys are active; entries of already active keys join their back queue.
        How many it moved."""
        moved = 0
        best_first = self.best_first
        selector = best_first if best_first is not None else self.selector
        bound = min(self.max_active_keys, best_first.max_active) if best_first is not None \
            else self.max_active_keys
        while len(self._active) < bound and moved < self.refill_budget:
            sizes = self.store.front_sizes()
            best = selector.pick(sizes)
            if best < 0:
                return moved
            routed = self.store.route(best)
            if routed is None:  # (a counter ahead of its queue) the other bands, in order
                for band, size in enumerate(sizes):
                    if size > 0 and band != best:
                        routed = self.store.route(band)
                        if routed is not None:
                            break
            if routed is None:
                return moved
            moved += 1
            key, fp = routed
            if fp and fp in self._queued_by_fp:
                self._in_back.add(fp)
            self._active.add(key)
            self._schedule(key, now)
            if best_first is not None and self.store.back_size(key) > 1:
                break  # best-first: keys made active in band order, one entry at a time
        if best_first is not None and best_first.explored:
            explored = best_first.take_explored()
            if explored:
                self._stat("frontier/explored", explored)
        return moved

    def _schedule(self, key: str, now: float, state: HostState | None = None) -> None:
        if key in self._in_heap:
            return
        if state is None:
            state = self.store.host(key)
        if state.in_flight >= self.max_in_flight or not self.store.back_size(key):
            return
        self._in_heap.add(key)
        self.store.heap_push(key, max(now, state.next_allowed))

    # -- dispatch ------------------------------------------------------------------------------
    def next(self, now: float, gate: Gate | None = None) -> Entry | None:
        """The next entry whose key may be contacted now, or None."""
        due = self.store.release_due(now)
        if due:
            self._track(due)
        self._refill(now)
        self._more_to_drop = False
        dropped = 0
        # best-first: the best band an active key holds; a worse entry waits for it
        store = self.store
        floor = self.best_first.floor(head[0].band for head in (
            store.back_head(key, 1) for key in self._active) if head) \
            if self.best_first is not None else None
        deferred: list[str] = []
        while True:
            key = self.store.heap_pop_ready(now)
            if key is None:
                self._defer(deferred, now)
                if dropped:  # drops emptied back queues: route more now, within the bound
                    if dropped >= self.drop_budget:
                        self._more_to_drop = True
                    elif self._refill(now):
                        continue
                return None
            self._in_heap.discard(key)
            discovery, refresh = self.store.back_lanes(key)
            entry = self.store.back_pop(key, self.lanes.refresh_next(key, discovery, refresh))
            if entry is None:
                self._deactivate(key)
                continue
            if floor is not None and entry.band > floor and \
                    not self.best_first.explores():  # type: ignore[union-attr]
                self.store.back_push(entry)  # a better entry waits for its key's turn
                deferred.append(key)
                continue
            # its promotion index entry, if that is this entry (tracked when it was routed;
            # one look at the set, not two at the index, for the many that are not)
            if entry.fp and entry.fp in self._in_back:
                self._in_back.discard(entry.fp)
                self._queued_by_fp.pop(entry.fp, None)
            verdict = gate(entry, now) if gate is not None else entry
            if isinstance(verdict, str) and verdict == DROP:
                self.store.complete([entry.id])
                self._stat("frontier/dropped", 1)
                dropped += 1
                if self.store.back_size(key) or self.store.host(key).in_flight:
                    self._schedule(key, now)
                else:
                    self._deactivate(key)
                continue
            if isinstance(verdict, float):  # hold the key until then
                self.store.back_push(entry)
                self._in_heap.add(key)
                self.store.heap_push(key, verdict)
                continue
            if verdict is not entry:  # a prerequisite goes first; the entry waits its turn
                self.store.back_push(entry)
                entry = verdict  # type: ignore[assignment]
            state = self.store.host(key)
            if state.in_flight == 0 and now < state.next_allowed - 1e-3:
                # cannot happen by construction; counted so that a monitor would see it
                self._stat("frontier/politeness_violations", 1)
            state.in_flight += 1
            if entry.id:
                self.store.lease(entry)
            self._schedule(key, now, state)  # more in flight allowed for this key?
            self._defer(deferred, now)
            return entry

    def _defer(self, keys: list[str], now: float) -> None:
        """Keys whose entries wait for a better one: asked again a moment later."""
        for key in keys:
            self._in_heap.add(key)
            self.store.heap_push(key, now + DEFER_SECONDS)
        if keys:
            self._stat("frontier/deferred", len(keys))
        keys.clear()

    def next_ready_time(self) -> float | None:
        if self._more_to_drop:
            return 0.0  # the last next() stopped dropping at its bound: more at once
        top = self.store.heap_peek()
        due = self.store.next_due()
        if top is None:
            return due
        return top[0] if due is None or top[0] < due else due

    def done(self, entry: Entry, outcome: Outcome, now: float) -> float:
        """A request left the downloader: free its key and set its next allowed time."""
        state = self.store.host(entry.key)
        state.in_flight = max(0, state.in_flight - 1)
        floor = self.key_floors.get(entry.key, 0.0) if self.key_floors else 0.0
        delay = self.policy.update(state, outcome, now, floor)
        if self.policy.parks(delay):
            self.parked[entry.key] = now + delay
        else:
            self.parked.pop(entry.key, None)
        self.store.host_changed(entry.key)
        if self.store.back_size(entry.key):
            self._schedule(entry.key, now, state)
        elif state.in_flight == 0:  # (what _deactivate checks, known here)
            self._retire(entry.key)
        return delay

    def release(self, entry: Entry, now: float) -> None:
        """A dispatched request never reached the network (a middleware dropped it):
        free its key without touching its politeness state."""
        state = self.store.host(entry.key)
        state.in_flight = max(0, state.in_flight - 1)
        if self.store.back_size(entry.key):
            self._schedule(entry.key, now)
        else:
            self._deactivate(entry.key)

    def _deactivate(self, key: str) -> None:
        if self.store.back_size(key) == 0 and self.store.host(key).in_flight == 0:
            self._retire(key)

    def _retire(self, key: str) -> None:
        """The key has nothing queued and nothing in flight: it is not active any more."""
        self._active.discard(key)
        self.lanes.forget(key)

    def complete(self, entry_ids: list[int]) -> None:
        """The requests' responses were processed (their links admitted): forget them."""
        ids = [i for i in entry_ids if i]  # 0: a prerequisite, never stored
        if ids:
            self.store.complete(ids)

    def set_crawl_delay(self, key: str, seconds: float | None) -> None:
        """robots.txt Crawl-delay: a floor on the key's delay from its next fetch on."""
        state = self.store.host(key)
        state.crawl_delay = seconds
        self.store.host_changed(key)

    def robots_answered(self, key: str, origin: str, status: int | None, body: bytes,
                        now: float) -> None:
        """A robots.txt answer arrived (shared by the Redis frontier; nothing to do here)."""

    # -- introspection ---------------------------------------------------------------------
    def pending(self) -> int:
        return self.store.pending()

    def delayed(self) -> int:
        return self.store.delayed()

    def band_sizes(self) -> list[int] | None:
        return self.store.front_sizes()

    def park(self, key: str, until: float) -> None:
        if until > self.parked.get(key, 0.0):
            self.parked[key] = until

    def parked_pending(self, now: float) -> int:
        """Queued entries of parked keys whose time has not come: they are kept, but a crawl
        with nothing else to do finishes without them."""
        for key, until in list(self.parked.items()):
            if until <= now:
                del self.parked[key]
        return sum(self.store.back_size(key) for key in self.parked)

    def active_keys(self) -> int:
        return len(self._active)

    def inspect_key(self, key: str, now: float) -> dict[str, Any] | None:
        return key_report(self.store, key, self._active, self.parked)

    def discovery_waiting(self, key: str) -> bool | None:
        return self.store.back_lanes(key)[0] > 0
