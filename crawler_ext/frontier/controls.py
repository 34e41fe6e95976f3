"""An operator's rules for politeness keys, set while the crawl runs (the control API, the
command line, a ``DOWNLOAD_SLOTS`` delay) and checked when a key's turn comes.

Per key: a floor on its delay (an operator's, or a ``DOWNLOAD_SLOTS`` slot's: the larger
wins and the frontier's politeness rule goes no lower, see ``PolitenessPolicy.update``), a
block until a time (or for good), a pause, a page budget.  A blocked key is *parked*: its URLs
are kept but do not hold the crawl open; a paused key's do.  A block or pause holds the key
in slices of ``HOLD_SLICE`` seconds, so that lifting it takes effect within one, whatever
the backend.  A new floor applies from the key's next request on: the gate holds the key
until its last request's start plus the floor.

An action is a flat dict (``{"op": "block", "key": "example.org", "until": null}``), the
same in the JOBDIR journal, on a distributed crawl's shared log and from the API: ``apply``
replays it.  Pure: no Scrapy, no clock of its own.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["HOLD_SLICE", "KEPT_OPS", "KEY_OPS", "KeyControls"]

HOLD_SLICE = 1.0  # seconds a blocked or paused key is held before it is looked at again
#: the key actions ``apply`` knows, each with the fields it needs
KEY_OPS = {"delay": ("seconds",), "block": ("until",), "unblock": (), "pause_key": (),
           "resume_key": (), "budget": ("pages",), "delete_queue": ()}
#: key actions a restart keeps (a deleted queue is not: what it had not dropped comes back)
KEPT_OPS = frozenset(KEY_OPS) - {"delete_queue"}
_MEMORY = 100_000  # keys whose last start is kept for their floor (the latest)


class KeyControls:
    def __init__(self, floors: dict[str, float] | None = None) -> None:
        # the frontier's own dict of floors (its ``key_floors``): kept up to date here
        self.floors: dict[str, float] = floors if floors is not None else {}
        self.slot_floors: dict[str, float] = {}  # DOWNLOAD_SLOTS delays
        self.operator_floors: dict[str, float] = {}
        self.blocked: dict[str, float] = {}  # key -> until (inf: for good)
        self.paused: set[str] = set()
        self.budgets: dict[str, int] = {}
        self.fetched: dict[str, int] = {}  # requests dispatched per key, while counting
        self.counting = False  # (on while a budget may be asked: the control API, a budget)
        # a shared frontier's: counted here and not yet added to the crawl's totals; the
        # totals of the keys with a budget, as last read (this worker's part included)
        self.unshared: dict[str, int] = {}
        self.shared: dict[str, int] | None = None  # None: a local crawl, ``fetched`` is all
        self.last_start: dict[str, float] = {}  # keys with a floor: their last request
        # keys whose queue was deleted -> the URLs admitted since (they stay)
        self.cleared: dict[str, set[int]] = {}
        self.active = False  # any rule at all (the gate's fast path)

    # -- rules -------------------------------------------------------------------------------
    def slot_delays(self, delays: dict[str, float]) -> None:
        """``DOWNLOAD_SLOTS`` delays, each its slot's (its host's key) floor."""
        self.slot_floors.update({key: float(d) for key, d in delays.items() if d and d > 0})
        for key in delays:
            self._floor_changed(key)

    def floor_of(self, key: str) -> tuple[float, str]:
        """The key's own floor and the rule that set it (``operator``, ``download_slots``;
        0 and "" without one)."""
        slot = self.slot_floors.get(key, 0.0)
        operator = self.operator_floors.get(key, 0.0)
        if operator and operator >= slot:
            return operator, "operator"
        return (slot, "download_slots") if slot else (0.0, "")

    def apply(self, action: dict[str, Any], now: float) -> None:
        """One key action (see ``KEY_OPS``), validated by the caller, taken at ``now``."""
        op, key = action["op"], action["key"]
        if op == "delay":
            seconds = float(action["seconds"])
            if seconds > 0:
                self.operator_floors[key] = seconds
                # the key's last request started before now: the next waits the new floor
                self.last_start[key] = now
            else:
                self.operator_floors.pop(key, None)
            self._floor_changed(key)
        elif op == "block":
            until = action.get("until")
            self.blocked[key] = math.inf if until is None else float(until)
        elif op == "unblock":
            self.blocked.pop(key, None)
        elif op == "pause_key":
            self.paused.add(key)
        elif op == "resume_key":
            self.paused.discard(key)
        elif op == "budget":
            self.budgets[key] = int(action["pages"])
            self.counting = True
        elif op == "delete_queue":
            self.cleared[key] = set()
        else:
            raise ValueError(f"unknown key action {op!r}")
        self._refresh()

    def rules(self, key: str) -> dict[str, Any]:
        """The key's rules, for a report."""
        floor, rule = self.floor_of(key)
        until = self.blocked.get(key)
        return {"floor": floor or None, "floor_rule": rule or None,
                "blocked_until": None if until is None else
                ("forever" if until == math.inf else until),
                "paused": key in self.paused, "budget": self.budgets.get(key),
                "fetched": self.requests(key) if self.counting else None}

    def keys(self) -> set[str]:
        """Keys with a rule of their own."""
        return (set(self.floors) | set(self.blocked) | self.paused | set(self.budgets) |
                set(self.cleared))

    # -- the gate ----------------------------------------------------------------------------
    def verdict(self, key: str, fp: int, now: float) -> float | str | None:
        """None: go; a time: hold the key until then; a reason: drop the entry (``budget``,
        ``deleted``).  ``parks`` says whether a held key's URLs may be left behind by a
        finishing crawl."""
        cleared = self.cleared.get(key)
        if cleared is not None and fp not in cleared:
            return "deleted"
        until = self.blocked.get(key)
        if until is not None:
            if until > now:
                return min(until, now + HOLD_SLICE)
            del self.blocked[key]  # its time came
            self._refresh()
        if key in self.paused:
            return now + HOLD_SLICE
        budget = self.budgets.get(key)
        if budget is not None and self.requests(key) >= budget:
            return "budget"
        floor = self.floors.get(key)
        if floor:
            last = self.last_start.get(key)
            if last is not None and now < last + floor - 1e-3:
                return last + floor
        return None

    def admitted(self, key: str, fp: int) -> None:
        """A URL of ``key`` was queued (only called while some queue is deleted): it is not
        one of those the deletion drops."""
        cleared = self.cleared.get(key)
        if cleared is not None:
            cleared.add(fp)
            if len(cleared) > _MEMORY:  # the deleted ones are long gone: the rule ends
                del self.cleared[key]
                self._refresh()

    def parks(self, key: str) -> bool:
        return key in self.blocked

    def requests(self, key: str) -> int:
        """Requests to ``key`` so far: the crawl's (every worker's, as of the last sync, and
        this worker's since), or this process's."""
        if self.shared is None:
            return self.fetched.get(key, 0)
        return self.shared.get(key, 0) + self.unshared.get(key, 0)

    def take_unshared(self) -> dict[str, int]:
        """The counts not yet added to the crawl's totals (handed over: now shared)."""
        out, self.unshared = self.unshared, {}
        return out

    def dispatched(self, key: str, now: float) -> None:
        """A request of ``key`` leaves now (only called while ``active`` or ``counting``)."""
        if self.counting:
            self.fetched[key] = self.fetched.get(key, 0) + 1
            if self.shared is not None:
                self.unshared[key] = self.unshared.get(key, 0) + 1
        if key in self.floors:
            self.last_start[key] = now
            if len(self.last_start) > _MEMORY:
                del self.last_start[next(iter(self.last_start))]

    # -- internals ---------------------------------------------------------------------------
    def _floor_changed(self, key: str) -> None:
        floor, _ = self.floor_of(key)
        if floor:
            self.floors[key] = floor
        else:
            self.floors.pop(key, None)
        self._refresh()

    def _refresh(self) -> None:
        self.active = bool(self.floors or self.blocked or self.paused or self.budgets or
                           self.cleared)
