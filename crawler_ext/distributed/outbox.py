"""What a worker sends the shared frontier (:mod:`crawler_ext.distributed.frontier`) with its
next exchange: the entries it admitted or delayed, and the promotions of URLs it admitted
(their band improved).  Reactor thread only."""

from __future__ import annotations

import pickle
from collections import OrderedDict
from collections.abc import Callable

from crawler_ext.admission.urls import host_of
from crawler_ext.distributed.shards import Push, ShardOps
from crawler_ext.distributed.records import entry_record, fp_bytes, fp_from
from crawler_ext.frontier.entries import entry_url
from crawler_ext.frontier.storage import Entry

__all__ = ["Outbox"]

#: a URL pattern's trap verdict by this worker's evidence: url -> (pattern, a trap?)
TrapPattern = Callable[[str], tuple[str, bool]]


class Outbox:
    def __init__(self, host_budget: int = 0, remember: int = 100_000) -> None:
        self.host_budget = host_budget  # counted per host in Redis: the pushes name the host
        self.remember = remember  # URLs admitted here remembered for promotion (bounded)
        # entry, check, due, the exchange it was first sent in (0: none)
        self._entries: list[tuple[Entry, bool | int, float | None, int]] = []
        self._admitted: OrderedDict[int, list] = OrderedDict()  # fp -> [key, band]
        self._promotions: list[tuple[str, int, int]] = []  # key, fingerprint, better band

    def __len__(self) -> int:
        return len(self._entries)

    def quiet(self) -> bool:
        return not (self._entries or self._promotions)

    def add(self, entries: list[Entry], check: bool | int, admitted_here: bool = True) -> None:
        """``check``: True (meets the seen set), False (none), or a push kind of
        :mod:`~crawler_ext.distributed.exchange` (a second look); ``admitted_here``: the
        entries are remembered for promotion."""
        admitted = self._admitted
        for entry in entries:
            self._entries.append((entry, check, None, 0))
            if entry.fp and admitted_here:
                admitted[entry.fp] = [entry.key, entry.band]
        while len(admitted) > self.remember:
            admitted.popitem(last=False)

    def add_delayed(self, entries: list[Entry], due: float) -> None:
        for entry in entries:
            self._entries.append((entry, False, due, 0))

    def delayed(self) -> int:
        return sum(1 for _, _, due, _ in self._entries if due is not None)

    def promote(self, fp: int, band: int) -> bool:
        record = self._admitted.get(fp)
        if record is None or band >= record[1]:
            return False
        record[1] = band
        self._admitted.move_to_end(fp)
        self._promotions.append((record[0], fp, band))
        return True

    def collect(self, shard: Callable[[str], ShardOps], trap_pattern: TrapPattern | None) -> None:
        """The pushes and promotions into their shards' operations.  A new URL (not a
        delayed refresh) counts against its host's budget and its pattern's cap; whether the
        pattern is a trap is this worker's evidence (its fetched pages of the pattern),
        asked here, on the reactor thread."""
        entries, self._entries = self._entries, []
        for entry, check, due, sent in entries:
            host, pattern, trap = "", "", False
            if due is None and (self.host_budget or trap_pattern is not None):
                try:
                    url = entry_url(entry.data)
                    host = host_of(url) if self.host_budget else ""
                    if trap_pattern is not None:
                        pattern, trap = trap_pattern(url)
                except (ValueError, KeyError, pickle.UnpicklingError):
                    pass
            shard(entry.key).push.append(Push(entry, check, entry_record(entry), due, host,
                                              pattern, "1" if trap else "", sent=sent))
        for key, fp, band in self._promotions:
            shard(key).promote.append((key, fp_bytes(fp), band))
        self._promotions = []

    def requeue(self, op: ShardOps) -> None:
        """A failed shard's pushes and promotions, back for the next exchange (each push
        names the exchange it was first sent in: if that one's answer was lost after the
        script ran, Redis knows, and does not queue it again)."""
        for push in op.push:
            self._entries.append((push.entry, push.check, push.due, push.sent))
        for key, fp, band in op.promote:
            self._promotions.append((key, fp_from(fp), band))
