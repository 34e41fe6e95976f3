"""The recrawl histories on disk: ``JOBDIR/recrawl_history.jsonl``.

One JSON line per fetch observed (``o``: url, host, time, content hash, validators), appended
and flushed when the frontier commits its journal, so a kill -9 loses at most the fetches of
the last commit -- which the frontier fetches again anyway.  A resumed crawl replays the file
into the :class:`~crawler_ext.recrawl.policy.RefreshPolicy`.  At open and at close the file is
rewritten as one ``s`` (state) line per page -- the compact form of its history -- through a
temporary file and an atomic rename.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import IO, Any

from crawler_ext.recrawl.estimate import ChangeHistory
from crawler_ext.recrawl.policy import RefreshPolicy

__all__ = ["from_snapshot", "snapshot", "HISTORY_NAME", "HistoryLog"]

logger = logging.getLogger(__name__)

HISTORY_NAME = "recrawl_history.jsonl"


class HistoryLog:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None
        self._pending: list[str] = []

    def load(self, policy: RefreshPolicy) -> int:
        """Replay the file into ``policy``; the number of pages it knows afterwards."""
        if not self.path.exists():
            return 0
        with open(self.path, encoding="utf-8") as lines:
            for line in lines:
                try:
                    record = json.loads(line)
                    if record["k"] == "s":
                        policy.restore(record["u"], record["h"], from_snapshot(record))
                    else:
                        policy.observe(record["u"], record["h"], record["t"], record.get("x"),
                                       etag=record.get("e"), last_modified=record.get("m"),
                                       not_modified=bool(record.get("n")),
                                       weight=record.get("w"))
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short by a kill
        return len(policy.pages)

    def open(self, policy: RefreshPolicy) -> None:
        """Compact what is there and append from now on."""
        self.compact(policy)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def append(self, url: str, host: str, when: float, exact: int | None, etag: str | None,
               last_modified: float | None, not_modified: bool,
               weight: float | None = None) -> None:
        record = {"k": "o", "u": url, "h": host, "t": round(when, 3), "x": exact, "e": etag,
                  "m": last_modified, "n": int(not_modified)}
        if weight is not None:
            record["w"] = round(weight, 3)
        self._pending.append(json.dumps(record, separators=(",", ":")))

    def flush(self) -> None:
        if self._file is None or not self._pending:
            return
        lines, self._pending = self._pending, []
        self._file.write("\n".join(lines) + "\n")
        self._file.flush()

    def close(self, policy: RefreshPolicy) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None
        self.compact(policy)

    def compact(self, policy: RefreshPolicy) -> None:
        temp = self.path.with_name(self.path.name + ".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(temp, "w", encoding="utf-8") as out:
            for url, (host, h) in policy.pages.items():
                out.write(json.dumps({"k": "s", "u": url, "h": host, **snapshot(h)},
                                     separators=(",", ":")) + "\n")
        os.replace(temp, self.path)


def snapshot(h: ChangeHistory) -> dict[str, Any]:
    """A history as plain data (the log's compacted form; a shared frontier's refresh entry
    carries it, so whichever worker fetches the refresh has it)."""
    return {"f": h.last_fetch, "e": h.etag, "m": h.last_modified, "x": h.exact,
            "c": h.checks, "g": h.changes, "r": [[round(t, 3), int(c)] for t, c in h.recent],
            "w": round(h.weight, 3)}


def from_snapshot(record: dict[str, Any]) -> ChangeHistory:
    return ChangeHistory(last_fetch=record["f"], etag=record.get("e"),
                         last_modified=record.get("m"), exact=record.get("x"),
                         checks=record.get("c", 0), changes=record.get("g", 0),
                         recent=[(float(t), bool(c)) for t, c in record.get("r", [])],
                         weight=float(record.get("w", 1.0)))
