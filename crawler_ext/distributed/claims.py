"""A worker's open claims in the shared frontier (:mod:`crawler_ext.distributed.frontier`):
the seeds it popped and has not pushed yet, the admissions it made in the shared seen set
whose push is not confirmed, and the URLs it found claimed by another worker, looked at again
later (see :class:`~crawler_ext.distributed.bloom.RedisBloom`).  Reactor thread only."""

from __future__ import annotations

from crawler_ext.distributed.shards import Claim
from crawler_ext.frontier.storage import Entry

__all__ = ["Claims"]


class Claims:
    def __init__(self, ttl: float) -> None:
        self.ttl = ttl  # a claim's time (the lease time)
        self._confirm: list[Claim] = []  # admissions pushed: their claims end next time
        self._sent: list[Claim] = []  # ... sent with the running exchange
        self._look_again: list[tuple[float, Entry]] = []  # due, entry: seen, claim open
        self._seeds_open = False  # seeds claimed, admitted, to be released after their push
        self.seeds_waiting = 0  # seeds in the start-URLs list or claimed (all workers')

    def unconfirmed(self) -> int:
        """Admissions whose claim's end is still to send."""
        return len(self._confirm)

    def looking_again(self) -> int:
        return len(self._look_again)

    def pending(self) -> int:
        return len(self._look_again) + self.seeds_waiting

    def quiet(self, now: float) -> bool:
        """Nothing for the next exchange to send."""
        return not (self._confirm or self._seeds_open or
                    (self._look_again and self._look_again[0][0] <= now))

    # -- into an exchange ---------------------------------------------------------------------
    def due(self, now: float) -> list[Entry]:
        """The second looks due now, in the order they came."""
        if not (self._look_again and self._look_again[0][0] <= now):
            return []
        looks = [entry for at, entry in self._look_again if at <= now]
        self._look_again = self._look_again[len(looks):]
        return looks

    def to_send(self) -> tuple[list[Claim], bool]:
        """The claims' ends to send, and whether the seeds' claim ends (their push is in the
        same exchange)."""
        self._sent, self._confirm = self._confirm, []
        seeds, self._seeds_open = self._seeds_open, False
        return self._sent, seeds

    # -- out of an exchange -------------------------------------------------------------------
    def settle(self, again: list[Claim] | None) -> None:
        """The exchange answered (``again``: the ends to send once more) or failed whole
        (None: every end sent goes again)."""
        self._confirm += self._sent if again is None else again
        self._sent = []

    def seeds_taken(self) -> None:
        self._seeds_open = True  # released by the exchange that pushes them

    def wait(self, found: list[tuple[Entry, bool]], now: float) -> None:
        """URLs seen while another worker's claim was open (entry, looked at before): the
        second look a second later (its worker confirms its push by then, even one back
        from an outage), then every quarter of the claim's time until it is stale."""
        self._look_again += [(now + min(1.0, self.ttl), entry) for entry, looks in found
                             if not looks]
        self._look_again += [(now + max(1.0, self.ttl / 4), entry) for entry, looks in found
                             if looks]
        self._look_again.sort(key=lambda item: item[0])

    def unchecked(self) -> list[Entry]:
        """At close: the URLs waiting for a second look, to push unchecked (fetched twice if
        the other worker lives and pushed them, rather than lost if it died)."""
        entries = [entry for _, entry in self._look_again]
        self._look_again = []
        return entries
