"""Read the test web's request log and judge a crawl by it: politeness, duplicates, robots."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["LogEntry", "read_log", "politeness_violations", "write_entry"]


@dataclass(frozen=True)
class LogEntry:
    host: str
    path: str
    start: float
    end: float
    client: str
    status: int
    bytes: int
    ip: str = ""  # the address the request came to (the broad web's shared hosting)


def write_entry(log: IO[str], request: Any, host: str, path: str, start: float, status: int,
                size: int) -> None:
    """Append one served request (a Twisted web request) to a request log, as it ends."""
    log.write(json.dumps({"host": host, "path": path, "start": round(start, 6),
                          "end": round(time.time(), 6), "client": request.getClientAddress().host,
                          "status": status, "bytes": size}) + "\n")
    log.flush()


def read_log(path: str | Path) -> list[LogEntry]:
    entries = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            # a line without its newline is still being written (the log is read live)
            if line.strip() and line.endswith("\n"):
                entries.append(LogEntry(**json.loads(line)))
    return sorted(entries, key=lambda e: e.start)


def politeness_violations(
    entries: Iterable[LogEntry], min_gap: float, key: str = "host", tolerance: float = 0.02
) -> list[tuple[LogEntry, LogEntry]]:
    """Pairs of consecutive requests to one politeness key that overlap or come too close.

    The gap is measured from the end of one response to the start of the next request,
    as the server saw them; ``tolerance`` absorbs timer granularity.
    """
    by_key: dict[str, list[LogEntry]] = defaultdict(list)
    for e in entries:
        by_key[getattr(e, key)].append(e)
    bad = []
    for items in by_key.values():
        items.sort(key=lambda e: e.start)
        for prev, cur in zip(items, items[1:]):
            if cur.start < prev.end or cur.start - prev.end < min_gap - tolerance:
                bad.append((prev, cur))
    return bad
