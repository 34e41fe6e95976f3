"""A worker's lease book for the shared frontier (:mod:`crawler_ext.distributed.frontier`):
the keys it leased from Redis with their politeness state, the entries it holds and has not
completed, the leased entries waiting in its buffer to be dispatched, and what the next
exchange sends back about them (releases, completions, renewals).  Reactor thread only.

Each lease comes with a fencing token (Redis counts them per shard); every release, renewal
and completion names the lease's token, and the exchange's script applies it only if that
lease is still the one in Redis: a worker whose lease expired (a stall, a partition) can never
complete or release another's, nor a newer lease of its own on the same key."""

from __future__ import annotations

import heapq
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from crawler_ext.distributed.shards import ShardOps, shard_of
from crawler_ext.distributed.records import entry_from, state_from, state_record
from crawler_ext.frontier.storage import Entry, HostState

__all__ = ["LeaseBook"]

#: key -> the lease's robots.txt answers (origin -> [status, fetched at, body])
Robots = dict[str, list]
#: a key to release at the next exchange: key, delay (None: unchanged), state record,
#: entries to put back ("id,id" in the shard), when the release was asked, the lease's token
Release = tuple[str, float | None, str, str, float, str]


class LeaseBook:
    """What this worker leased and owes Redis an answer for."""

    def __init__(self, shards: int, remember: int = 100_000) -> None:
        self.shards = shards
        self.remember = remember  # keys whose discovery lane is remembered (bounded)
        self._states: dict[str, tuple[HostState, Robots]] = {}  # keys we lease
        self._held: dict[int, str] = {}  # entry id -> key, leased by us and not completed
        self._ready: list[tuple[float, int, Entry]] = []  # leased, not yet dispatched
        self._seq = itertools.count()
        self._robots_wait: dict[str, Entry] = {}  # waiting for their robots.txt fetch
        self._release: list[Release] = []
        self._done: list[tuple[int, str]] = []  # completed, not yet sent: id, "token#key"
        self._tokens: dict[str, str] = {}  # key -> the fencing token of our lease of it
        self._entry_tokens: dict[int, str] = {}  # entry id -> the token it was leased under
        # in flight when their key's lease was lost (gone, or a restart): their end frees
        # nothing, even once this worker leases the key again
        self._orphans: set[int] = set()
        self.parked: dict[str, float] = {}  # keys this worker parked -> until (for reports)
        self._parking: set[str] = set()  # parked, their release not yet sent
        # key -> whether new URLs of it waited in Redis when this worker last leased it
        self._discovery: OrderedDict[str, bool] = OrderedDict()

    # -- what is held -------------------------------------------------------------------------
    def holds(self, key: str) -> bool:
        return key in self._states

    def ours(self, entry: Entry) -> bool:
        """Whether the end of ``entry``'s fetch frees its key: the key is leased and the
        entry was leased under that lease (asked once, when the fetch ends)."""
        if entry.id in self._orphans:
            self._orphans.discard(entry.id)
            return False
        return entry.key in self._states

    def state(self, key: str) -> HostState | None:
        held = self._states.get(key)
        return held[0] if held is not None else None

    def keys(self) -> set[str]:
        """The keys leased now."""
        return set(self._states)

    def held(self) -> int:
        """Entries leased and not completed (waiting or in flight)."""
        return len(self._held)

    def waiting(self) -> int:
        """Leased entries not dispatched yet."""
        return len(self._ready) + len(self._robots_wait)

    def buffered(self) -> list[Entry]:
        """The leased entries in the buffer, in the order they go."""
        return [entry for _, _, entry in sorted(self._ready)]

    def occupying(self, now: float) -> int:
        """Leased keys that fill a place of the worker's concurrency now: fetches in flight
        (robots.txt included) and entries due to go; an entry that waits out its key's delay
        after robots.txt does not (counted in, it kept half the places empty)."""
        later = sum(1 for at, _, _ in self._ready if at > now)
        return len(self._states) - later

    def unsent(self) -> bool:
        return bool(self._release or self._done)

    def discovery_waiting(self, key: str) -> bool | None:
        return self._discovery.get(key)

    # -- leasing and dispatch -----------------------------------------------------------------
    def leased(self, key: str, entry_id: int, record: bytes, state: bytes, discovery: int,
               now: float, token: str = "") -> tuple[Entry, Robots]:
        """An entry leased with its key by the last exchange, under the lease's fencing
        ``token``: it waits in the buffer."""
        self._discovery[key] = discovery > 0
        self._discovery.move_to_end(key)
        if len(self._discovery) > self.remember:
            self._discovery.popitem(last=False)
        entry = entry_from(key, entry_id, record)
        host, robots = state_from(state)
        self._states[key] = (host, robots)
        self._tokens[key] = token
        self._held[entry_id] = key
        self._entry_tokens[entry_id] = token
        heapq.heappush(self._ready, (now, next(self._seq), entry))
        return entry, robots

    def next_due(self, now: float) -> Entry | None:
        if self._ready and self._ready[0][0] <= now:
            return heapq.heappop(self._ready)[2]
        return None

    def defer(self, entry: Entry, at: float) -> None:
        """A leased entry taken from the buffer goes back to it, due at ``at``."""
        heapq.heappush(self._ready, (at, next(self._seq), entry))

    def ready_time(self) -> float | None:
        return self._ready[0][0] if self._ready else None

    def wait_for_robots(self, entry: Entry) -> None:
        """The entry waits with its key for the robots.txt fetch dispatched instead."""
        self._robots_wait[entry.key] = entry

    def robots_fetched(self, key: str, at: float) -> bool:
        """The key's robots.txt answer came: its waiting entry goes at ``at`` (False: none)."""
        entry = self._robots_wait.pop(key, None)
        if entry is None:
            return False
        heapq.heappush(self._ready, (at, next(self._seq), entry))
        return True

    def robots_answered(self, key: str, origin: str, answer: list) -> None:
        self._states[key][1][origin] = answer

    def set_crawl_delay(self, key: str, seconds: float | None) -> None:
        if key in self._states:
            self._states[key][0].crawl_delay = seconds

    # -- letting go ---------------------------------------------------------------------------
    def let_go(self, entry: Entry) -> None:
        """Forget the entry and its key, unfetched: the lease expires in Redis and the entry
        returns to its queue."""
        self._held.pop(entry.id, None)
        self._entry_tokens.pop(entry.id, None)
        self._states.pop(entry.key, None)
        self._tokens.pop(entry.key, None)
        waiting = self._robots_wait.pop(entry.key, None)
        if waiting is not None:
            self._held.pop(waiting.id, None)
            self._entry_tokens.pop(waiting.id, None)

    def gone(self, keys: set[str]) -> tuple[int, int]:
        """Keys whose lease expired in Redis while this worker held them: their entries not
        yet dispatched are let go, those in flight free nothing when done, and their
        releases not yet sent are dropped (each would free a lease of the key that this
        worker takes again, by its name).  Returns the entries let go and the releases
        dropped."""
        kept = [item for item in self._release if item[0] not in keys]
        dropped = len(self._release) - len(kept)
        self._release = kept
        self._parking.difference_update(keys)
        waiting = [entry for _, _, entry in self._ready if entry.key in keys]
        if waiting:
            self._ready = [item for item in self._ready if item[2].key not in keys]
            heapq.heapify(self._ready)
        for entry in waiting:
            self.let_go(entry)
        let_go = len(waiting)
        self._orphans.update(entry_id for entry_id, key in self._held.items() if key in keys)
        for key in keys.difference(entry.key for entry in waiting):
            self._states.pop(key, None)  # (its entry in flight: done() frees nothing)
            self._tokens.pop(key, None)
            robots_first = self._robots_wait.pop(key, None)  # waiting for its robots.txt
            if robots_first is not None:
                self.let_go(robots_first)
                let_go += 1
        return let_go, dropped

    def forget(self) -> tuple[int, int]:
        """Redis lost writes (a restart or failover): every lease and release is let go.
        Returns the entries that were waiting, and those in flight."""
        waiting = self.waiting()
        in_flight = len(self._held) - waiting
        self._orphans.update(self._held)  # (those waiting are never fetched: dropped below)
        self._orphans.difference_update(entry.id for _, _, entry in self._ready)
        self._orphans.difference_update(entry.id for entry in self._robots_wait.values())
        self._release.clear()  # keys (and entries to requeue) leased from before: not ours
        self._ready.clear()
        self._robots_wait.clear()
        self._states.clear()
        self._tokens.clear()
        self._held.clear()
        self._entry_tokens.clear()
        return waiting, in_flight

    def give_back(self) -> None:
        """At close: every key still leased is released, its entries not fetched put back
        (entries fetched whose processing did not finish expire with their lease)."""
        held: dict[str, list[int]] = {}
        for entry_id, key in self._held.items():
            held.setdefault(key, []).append(entry_id)
        for key in list(self._states):
            self.release(key, None, requeue=held.get(key, []))
        self._ready.clear()
        self._robots_wait.clear()

    # -- what the next exchange sends ---------------------------------------------------------
    def complete(self, entry_id: int) -> None:
        key = self._held.pop(entry_id, None)
        token = self._entry_tokens.pop(entry_id, "")
        if key is not None:
            self._done.append((entry_id, f"{token}#{key}"))

    def release(self, key: str, delay: float | None, requeue: Sequence[int] | int = (),
                waiting: bool = False) -> None:
        """Unlock ``key`` at the next exchange; its next fetch ``delay`` seconds after now
        (None: next allowed time unchanged); ``requeue``: leased entries to put back;
        ``waiting``: the entry waiting for the key's robots.txt goes back too."""
        if waiting:
            entry = self._robots_wait.pop(key, None)
            requeue = entry.id if entry is not None else 0
        held = self._states.pop(key, None)
        token = self._tokens.pop(key, "")
        record = state_record(*held) if held is not None else ""
        ids = [requeue] if isinstance(requeue, int) else list(requeue)
        for entry_id in ids:
            self._held.pop(entry_id, None)
            self._entry_tokens.pop(entry_id, None)
        back = ",".join(str(i // self.shards) for i in ids if i)
        self._release.append((key, delay, record, back, time.time(), token))

    def park(self, key: str, until: float) -> None:
        if until > self.parked.get(key, 0.0):
            self.parked[key] = until
        self._parking.add(key)

    def unpark_due(self, now: float) -> None:
        for key, until in list(self.parked.items()):
            if until <= now:
                del self.parked[key]

    def collect(self, shard: Callable[[str], ShardOps], now: float) -> None:
        """Releases, completions and renewals into their shards' operations."""
        for key, delay, record, back, since, token in self._release:
            # the delay counts from the response; what is left of it from now on
            left = "" if delay is None else repr(round(max(0.0, delay - (now - since)), 3))
            if key in self._parking:
                self._parking.discard(key)
                left = "P" + left if left else left  # parked in Redis until then
            shard(key).release += [key, left, record, back, token]
        self._release = []
        for entry_id, fenced in self._done:
            token, _, key = fenced.partition("#")
            shard(key).done.append(f"{token}#{entry_id // self.shards}|{key}")
        self._done = []
        for entry_id, key in self._held.items():
            shard(key).renew.append(f"{entry_id // self.shards}|{key}")
        for key in self._states:
            shard(key).renew_keys.append(f"{self._tokens.get(key, '')}#{key}")

    def requeue(self, op: ShardOps) -> None:
        """A failed shard's releases and completions, back for the next exchange."""
        now = time.time()
        for i in range(0, len(op.release), 5):
            key, left, record, back, token = op.release[i:i + 5]
            if left.startswith("P"):
                self._parking.add(key)
                left = left[1:]
            self._release.append((key, float(left) if left else None, record, back, now,
                                  token))
        self.completions_back(op.done)

    def completions_back(self, members: list[str]) -> None:
        """Completions an exchange could not send ("token#id in the shard|key"): sent
        again."""
        for member in members:
            token, _, rest = member.partition("#")
            rid, _, key = rest.partition("|")
            self._done.append((int(rid) * self.shards + shard_of(key, self.shards),
                               f"{token}#{key}"))
