"""The frontier contract: what the scheduler asks of a frontier, whatever keeps it.

Three backends implement it: :class:`~crawler_ext.frontier.core.Frontier` over the memory or
the sqlite store (one process), and :class:`~crawler_ext.distributed.frontier.RedisFrontier` (many
workers).  The scheduler talks to this contract only; no code looks at which backend it has.
``tests/test_frontier_contract.py`` runs the same scenarios over all three.  Below it,
:class:`FrontierStore` is what ``Frontier`` asks of a store (memory, sqlite, disk).

The life of an entry::

    add / add_delayed ──▶ queued (delayed: from its due time on)
    next   ──▶ leased: its politeness key is taken too (no other entry of the key goes out,
               in this process or any other worker, until the key is released)
    done   ──▶ the key is released with its outcome (status, latency, Retry-After), which sets
               its next allowed time; ``release`` frees it unchanged (dropped before the network)
    complete ──▶ the entry is forgotten (its response was processed, its links admitted)

A durable backend keeps every entry not yet completed: after a crash ``recover`` (or, for
Redis, lease expiry: ``flush`` renews this worker's leases and reclaims those of dead workers)
hands in-flight entries out again.  Within one key, entries go out by ``Request.priority``,
then band, then arrival; across keys, the bands (weighted, none starves) decide.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, runtime_checkable

from crawler_ext.frontier.controls import KeyControls
from crawler_ext.frontier.politeness import Outcome, PolitenessPolicy
from crawler_ext.frontier.storage import Entry, HostState

__all__ = ["FrontierBackend", "FrontierControl", "FrontierHooks", "FrontierParts",
           "FrontierStore", "Gate", "JournaledFrontier", "SharedFrontier", "SharedLogPort"]

#: A gate looks at the entry about to be dispatched and answers: the entry itself (go), a
#: substitute entry to dispatch first (a prerequisite such as robots.txt; the entry waits),
#: a time to hold the entry's key until, or ``DROP``.
Gate = Callable[[Entry, float], "Entry | float | str"]


class FrontierHooks(Protocol):
    """What a shared frontier calls back in the scheduler (``frontier/hooks.py``; a local
    frontier never does)."""

    def wake(self) -> None: ...
    def seeds(self, urls: list[str]) -> None: ...
    def robots_import(self, origin: str, status: int | None, body: bytes,
                      fetched_at: float) -> None: ...
    def trap_pattern(self, url: str) -> tuple[str, bool]:
        """``url``'s host and URL pattern (one string), and whether this process' evidence
        says the pattern is a trap (the shared frontier holds trap patterns to their cap)."""
    def lost_writes(self) -> None:
        """The shared store restarted or failed over and may lack writes it acknowledged:
        forget what this process remembers of admitted links (the shared seen set decides)."""


class FrontierBackend(Protocol):
    #: requests in flight at once per key (one by default; a shared frontier: one)
    max_in_flight: int

    @property
    def durable(self) -> bool:
        """Entries outlive the process, so requests are stored serialised."""

    #: keys asked to wait past the backoff cap -> until when (they do not hold the crawl open)
    parked: dict[str, float]
    #: keys' own floors on their delay (a DOWNLOAD_SLOTS delay, an operator's: KeyControls)
    key_floors: dict[str, float]
    #: inspect_key reads a server (a shared frontier): call it from a thread
    inspect_blocks: bool
    policy: PolitenessPolicy  # how a key's delay follows its fetches

    # -- lifecycle --------------------------------------------------------------------------
    def open(self) -> None: ...
    def flush(self) -> None:
        """Commit what is pending (journal, shared store); renew and reclaim leases."""
    def close(self, commit: bool = True) -> None:
        """``commit=False``: a disk filled up; nothing pending is called done."""

    # -- entries ----------------------------------------------------------------------------
    def add(self, entries: list[Entry], check_seen: bool = True) -> None: ...
    def add_delayed(self, entries: list[Entry], due: float) -> None:
        """Queue entries that become ready at unix time ``due`` (a recrawl's revisit)."""
    def promote(self, fp: int, band: int) -> bool:
        """Move a URL still queued to a better band; False if not known here or not better."""

    # -- leases -----------------------------------------------------------------------------
    def next(self, now: float, gate: Gate | None = None) -> Entry | None:
        """Take ready work: the best entry of a key that may be contacted now, leased."""
    def next_ready_time(self) -> float | None:
        """When the next entry known here becomes ready (None: nothing known)."""
    def done(self, entry: Entry, outcome: Outcome, now: float) -> float:
        """Release the entry's key with its outcome; the key's delay, in seconds."""
    def release(self, entry: Entry, now: float) -> None: ...
    def complete(self, entry_ids: list[int]) -> None: ...

    # -- politeness state -------------------------------------------------------------------
    def set_crawl_delay(self, key: str, seconds: float | None) -> None: ...
    def robots_answered(self, key: str, origin: str, status: int | None, body: bytes,
                        now: float) -> None: ...

    # -- sizes ------------------------------------------------------------------------------
    def pending(self) -> int:
        """At least the entries queued or delayed and not yet taken (a shared frontier counts
        every entry not completed, anywhere); 0 once there is nothing left to hand out."""
    def delayed(self) -> int: ...
    def band_sizes(self) -> list[int] | None:
        """Queued entries per band (None: a shared frontier does not count them)."""
    def parked_pending(self, now: float) -> int: ...
    def park(self, key: str, until: float) -> None:
        """``key`` waits until ``until`` for a reason of its host's (its robots.txt failed):
        its entries are kept, but a crawl with nothing else to do need not wait for them."""
    def active_keys(self) -> int: ...
    def inspect_key(self, key: str, now: float) -> dict[str, Any] | None:
        """The key's politeness state and queue for an operator (None: not known to the
        crawl); a frontier whose ``inspect_blocks`` is true reads a server: call it from a
        thread."""
    def discovery_waiting(self, key: str) -> bool | None:
        """Whether newly found URLs of ``key`` wait in its back queue (a shared frontier: as
        of this worker's last lease of the key; None: not known): a recrawl plans the key's
        refreshes at the refresh share of its rate while they do, at the whole rate when
        they do not."""



class JournaledFrontier(Protocol):
    """A capability: a frontier kept in this process' job directory (the local backends)
    routes again what it held at the last stop, and journals its admissions, which are
    replayed into the seen set after the seen set's last snapshot."""

    def recover(self) -> int:
        """Route again what was held at the last stop; how many entries."""
    def admitted_since(self, mark: int) -> tuple[list[int], int]:
        """Fingerprints admitted after journal position ``mark``, and the last position."""
    def admitted_mark(self) -> int: ...


class SharedFrontier(Protocol):
    """A capability: a frontier shared with other workers (Redis) calls the scheduler back,
    keeps logs and counts every worker reads, and sums the workers' stats."""

    #: an idle crawl waits for seeds pushed from outside
    wait_for_seeds: bool

    def attach(self, hooks: FrontierHooks) -> None: ...
    def shared_log(self, name: str, on_stat: Callable[[str, float], None]) -> SharedLogPort:
        """A log every worker reads (learned rules, operator actions), read once started."""
    def shared_counts(self, name: str) -> SharedCountsPort:
        """Counts per key summed over the workers (requests)."""
    def publish_stats(self, stats: dict[str, Any]) -> None: ...


class FrontierParts(NamedTuple):
    """A frontier and its capabilities, chosen once, where it is built (the adapter's
    factory): the same object, or None where it lacks one."""

    frontier: FrontierBackend
    journal: JournaledFrontier | None = None
    shared: SharedFrontier | None = None


class SharedCountsPort(Protocol):
    """Counts per key over every worker of a shared frontier (blocking: from a thread)."""

    def add(self, increments: dict[str, int], wanted: list[str]) -> dict[str, int]:
        """Add this worker's counts since its last call; the crawl's totals of ``wanted``."""
    def top(self, n: int) -> list[tuple[str, int]]:
        """The ``n`` keys with the largest totals, largest first."""


class SharedLogPort(Protocol):
    """A log every worker of a shared frontier appends to and reads (learned rules)."""

    def publish(self, item: bytes) -> None: ...
    def start(self, on_items: Callable[[list[bytes]], None]) -> None:
        """Read what the other workers write, from the beginning: to ``on_items``."""
    def stop(self) -> None: ...


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
    def back_head(self, key: str, n: int) -> list[Entry]:
        """The first ``n`` entries of the key's back queue (not taken)."""
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
    def known_key(self, key: str) -> bool: ...
    def host_changed(self, key: str) -> None: ...

    def pending(self) -> int: ...

    def delay_push(self, entries: list[Entry], due: float) -> None: ...
    def release_due(self, now: float) -> list[Entry]: ...
    def next_due(self) -> float | None: ...
    def delayed(self) -> int: ...

    def admitted_since(self, mark: int) -> tuple[list[int], int]: ...
    def admitted_mark(self) -> int: ...


class FrontierControl(Protocol):
    """What the operator's tools may read and change of a running frontier: the control API,
    and the event stream (which must not resume a crawl the operator paused).  The scheduler's
    control book implements it; the ``frontier_opened`` signal hands it over (``control``)."""

    #: the operator paused the crawl
    paused: bool
    #: where key actions are kept across a restart (``JOBDIR/control-actions.jsonl``; None:
    #: not kept)
    journal: str | None
    #: requests per key over every worker of a shared frontier (None: a local crawl)
    counts: SharedCountsPort | None
    #: the operator's rules per key, checked by the dispatch gate
    controls: KeyControls
    #: the frontier itself, to read (``inspect_key``, ``parked``, ``durable``)
    frontier: FrontierBackend

    def figures(self) -> dict[str, Any]:
        """Queued, bands, delayed, active hosts, in flight: now."""
    def key_report(self, key: str, state: dict[str, Any] | None) -> dict[str, Any]:
        """A key's state (``inspect_key``'s answer) with its rules, robots.txt and the rule
        that set its delay."""
    def act(self, action: dict[str, Any], source: str = "api") -> None:
        """Apply a validated action, keep it, share it with the other workers, log it."""
    def seed(self, request: Any) -> bool:
        """Queue a request the operator gave (admission and the seen set decide)."""
    def wake(self) -> None:
        """Ask the engine for requests now."""
    def checkpoint(self) -> None:
        """Commit the journal and snapshot the seen set now."""
