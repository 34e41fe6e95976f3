"""The frontier's storage contract, and the in-memory backend.

The frontier logic (``core.Frontier``) is written once against :class:`FrontierStore`;
backends hold data only.  A backend keeps:

* front queues: one FIFO per priority band (0 = highest);
* back queues: per politeness key two lanes, discovery and refresh (a recrawl's revisits),
  each ordered by (``Request.priority`` descending, band, arrival): within a lane the user's
  priorities decide, between the lanes the frontier's refresh share, across keys the bands;
* the ready heap: (next allowed time, key) for keys that may be scheduled;
* leases: entries handed to the downloader and not yet completed;
* host state: learned per-key politeness (delay, backoff, Crawl-delay);
* the admission journal: fingerprints admitted, in order, so that the seen set can be
  rebuilt from its last snapshot plus what came after it (``admitted_since``);
* delayed entries: due time -> entry, moved to the front queues when due (``release_due``).

Durable backends make every admitted entry survive a crash until ``complete()`` is
called for it; ``recover()`` queues them again after a restart.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

__all__ = ["BACK_PROMOTE_MAX", "Entry", "HostState", "FrontierStore", "MemoryStore", "KeyState"]

#: a promotion within a back queue is done in queues up to this long (as in Redis)
BACK_PROMOTE_MAX = 512


@dataclass(slots=True)
class Entry:
    """One queued request: its politeness key, band and serialised form."""

    key: str
    band: int
    data: bytes
    fp: int = 0
    id: int = 0  # assigned by the store on push
    priority: int = 0  # Request.priority: orders the entries of one key (higher first)
    refresh: bool = False  # a recrawl's revisit: it waits in its key's refresh lane


@dataclass(slots=True)
class HostState:
    delay: float = 0.0  # the last computed delay, seconds
    backoff: float = 1.0  # multiplier after 429/503/errors; 1 = none
    crawl_delay: float | None = None  # robots.txt floor
    next_allowed: float = 0.0  # unix time
    floor: float = 0.0  # learned: gaps shorter than this drew a 429/503; decays on success
    in_flight: int = field(default=0, compare=False)


@runtime_checkable
class FrontierStore(Protocol):
    """What the frontier needs from a backend.  All methods are non-blocking."""

    #: whether entries outlive the process (then requests must be serialisable)
    durable: bool

    def open(self) -> None: ...
    def close(self, commit: bool = True) -> None: ...
    def flush(self) -> None: ...
    def recover(self) -> int:
        """Queue again what the store held at its last stop; how many entries."""
    def back_keys(self) -> list[str]:
        """Keys whose back queue holds entries (after ``recover``: to make active again)."""

    def front_push(self, entries: list[Entry]) -> None: ...
    def route(self, band: int) -> tuple[str, int] | None:
        """Move the first entry of a band's front queue to its key's back queue: its key and
        fingerprint, or None if the band is empty."""
    def front_sizes(self) -> list[int]: ...
    def front_promote(self, entry: Entry, band: int) -> None: ...

    def back_push(self, entry: Entry) -> None:
        """Into the key's refresh lane if ``entry.refresh``, else its discovery lane."""
    def back_pop(self, key: str, refresh: bool = False) -> Entry | None:
        """The best entry of one lane of the key's back queue."""
    def back_size(self, key: str) -> int:
        """Entries in the key's back queue, both lanes."""
    def back_lanes(self, key: str) -> tuple[int, int]:
        """Entries in the key's discovery lane and in its refresh lane."""
    def back_promote(self, entry: Entry, band: int) -> bool:
        """Rank a queued entry of a back queue by a better band; False if it is not there
        (a store that must search the whole queue looks in queues up to
        :data:`BACK_PROMOTE_MAX` long only)."""

    def heap_push(self, key: str, when: float) -> None: ...
    def heap_peek(self) -> tuple[float, str] | None: ...
    def heap_pop_ready(self, now: float) -> str | None:
        """The key at the top of the heap if its time has come (taken off), else None."""

    def lease(self, entry: Entry) -> None: ...
    def complete(self, entry_ids: list[int]) -> None: ...

    def host(self, key: str) -> HostState: ...
    def host_changed(self, key: str) -> None: ...

    def pending(self) -> int: ...

    def delay_push(self, entries: list[Entry], due: float) -> None: ...
    def release_due(self, now: float) -> list[Entry]: ...
    def next_due(self) -> float | None: ...
    def delayed(self) -> int: ...

    def admitted_since(self, mark: int) -> tuple[list[int], int]: ...
    def admitted_mark(self) -> int: ...


class KeyState:
    """What every store keeps in memory per politeness key: the ready heap of (next allowed
    time, key) -- bounded by the active keys -- and each key's host state."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str]] = []
        self._heap_seq = itertools.count()
        self._hosts: dict[str, HostState] = {}

    def host(self, key: str) -> HostState:
        state = self._hosts.get(key)
        if state is None:
            state = self._hosts[key] = HostState()
        return state

    def heap_push(self, key: str, when: float) -> None:
        heapq.heappush(self._heap, (when, next(self._heap_seq), key))

    def heap_peek(self) -> tuple[float, str] | None:
        return (self._heap[0][0], self._heap[0][2]) if self._heap else None

    def heap_pop_ready(self, now: float) -> str | None:
        heap = self._heap
        if not heap or heap[0][0] > now:
            return None
        return heapq.heappop(heap)[2]


class MemoryStore(KeyState):
    """Everything in process memory: fast, and lost when the process ends."""

    durable = False

    def __init__(self, bands: int) -> None:
        self.bands = bands
        self._ids = itertools.count(1)
        self._front: list[deque[Entry]] = [deque() for _ in range(bands)]
        self._front_len = [0] * bands
        self._stale: set[tuple[int, int]] = set()  # (entry id, band) copies left by promotion
        # the back queues' lanes: discovery, refresh
        self._lanes: tuple[dict[str, list[tuple[int, int, int, Entry]]], ...] = ({}, {})
        self._back_total = 0
        KeyState.__init__(self)
        self._leased: dict[int, Entry] = {}
        self._delayed: list[tuple[float, int, Entry]] = []

    # lifecycle
    def open(self) -> None:
        pass

    def close(self, commit: bool = True) -> None:
        pass

    def flush(self) -> None:
        pass

    def recover(self) -> int:
        return 0

    def back_keys(self) -> list[str]:
        return list(self._lanes[0].keys() | self._lanes[1].keys())

    def admitted_since(self, mark: int) -> tuple[list[int], int]:
        """Fingerprints admitted after journal position ``mark`` (none: nothing is journalled)."""
        return [], mark

    def admitted_mark(self) -> int:
        return 0

    def _assign_id(self, entry: Entry) -> None:
        if not entry.id:
            entry.id = next(self._ids)

    # front queues
    def front_push(self, entries: list[Entry]) -> None:
        for entry in entries:
            self._assign_id(entry)
            self._front[entry.band].append(entry)
            self._front_len[entry.band] += 1

    def route(self, band: int) -> tuple[str, int] | None:
        entry = self._front_pop(band)
        if entry is None:
            return None
        self.back_push(entry)
        return entry.key, entry.fp

    def _front_pop(self, band: int) -> Entry | None:
        queue = self._front[band]
        while queue:
            entry = queue.popleft()
            if self._stale and (entry.id, band) in self._stale:
                self._stale.discard((entry.id, band))
                continue  # the entry was promoted; its copy in the higher band counts
            self._front_len[band] -= 1
            return entry
        return None

    def front_sizes(self) -> list[int]:
        return list(self._front_len)

    def front_promote(self, entry: Entry, band: int) -> None:
        self._stale.add((entry.id, entry.band))
        self._front_len[entry.band] -= 1
        self._front_len[band] += 1
        entry.band = band
        self._front[band].append(entry)

    # back queues
    def back_push(self, entry: Entry) -> None:
        self._assign_id(entry)
        queue = self._lanes[entry.refresh].setdefault(entry.key, [])
        heapq.heappush(queue, (-entry.priority, entry.band, entry.id, entry))
        self._back_total += 1

    def back_pop(self, key: str, refresh: bool = False) -> Entry | None:
        lane = self._lanes[refresh]
        queue = lane.get(key)
        if not queue:
            return None
        entry = heapq.heappop(queue)[3]
        if not queue:
            del lane[key]
        self._back_total -= 1
        return entry

    def back_size(self, key: str) -> int:
        return sum(self.back_lanes(key))

    def back_lanes(self, key: str) -> tuple[int, int]:
        return len(self._lanes[0].get(key, ())), len(self._lanes[1].get(key, ()))

    def back_promote(self, entry: Entry, band: int) -> bool:
        queue = self._lanes[entry.refresh].get(entry.key)
        if not queue or len(queue) > BACK_PROMOTE_MAX:
            return False
        for i, item in enumerate(queue):
            if item[2] == entry.id:
                entry.band = band
                queue[i] = (item[0], band, item[2], entry)
                heapq.heapify(queue)
                return True
        return False

    # leases
    def lease(self, entry: Entry) -> None:
        self._leased[entry.id] = entry

    def complete(self, entry_ids: list[int]) -> None:
        for entry_id in entry_ids:
            self._leased.pop(entry_id, None)

    # host state (``host()``: KeyState)
    def host_changed(self, key: str) -> None:
        pass

    def pending(self) -> int:
        return sum(self._front_len) + self._back_total + len(self._delayed)

    # delayed entries
    def delay_push(self, entries: list[Entry], due: float) -> None:
        for entry in entries:
            self._assign_id(entry)
            heapq.heappush(self._delayed, (due, entry.id, entry))

    def release_due(self, now: float) -> list[Entry]:
        """Move the entries due by ``now`` to the front queues; those entries."""
        due: list[Entry] = []
        old_ids: list[int] = []
        while self._delayed and self._delayed[0][0] <= now:
            entry = heapq.heappop(self._delayed)[2]
            old_ids.append(entry.id)
            entry.id = 0  # a new id: it joins its band's queue, and its key's, at the end
            due.append(entry)
        if due:
            MemoryStore.front_push(self, due)
            self._undelayed(old_ids, due)
        return due

    def _undelayed(self, old_ids: list[int], entries: list[Entry]) -> None:
        """Delayed entries (by their old ids) became ready under new ids."""

    def next_due(self) -> float | None:
        return self._delayed[0][0] if self._delayed else None

    def delayed(self) -> int:
        return len(self._delayed)
