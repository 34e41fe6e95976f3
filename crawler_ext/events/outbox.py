"""Where events wait between the crawl and the broker: in memory, or in files under JOBDIR.

The crawl's thread ``append``s encoded events and ``commit``s (before the frontier commits
its journal); the sender's thread ``read``s a batch from the oldest event not yet acknowledged,
sends it, and calls ``acked`` with the position the batch ended at.  What was read but not
acknowledged is read again: delivery is at least once.

:class:`FileOutbox` keeps the events in append-only segment files, ``outbox-<serial>.jsonl``,
and the acknowledged position in ``acked`` (``<serial> <offset>``, replaced atomically): a
``commit`` flushes the open segment to the operating system, so after a kill -9 every event
committed is there, and the next start sends those not yet acknowledged.  Segments wholly
acknowledged are deleted.  :class:`MemoryOutbox` keeps them in a list (a crawl without JOBDIR
resumes nothing, so keeps nothing past its process).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Protocol

__all__ = ["FileOutbox", "MemoryOutbox", "Outbox"]

#: a segment is closed and the next one begun past this many bytes
SEGMENT_SIZE = 16 << 20


class Outbox(Protocol):
    durable: bool  # what it holds outlives the process

    def append(self, line: bytes) -> None: ...

    def commit(self) -> None: ...

    def read(self, limit: int) -> tuple[list[bytes], object]: ...

    def acked(self, position: object, count: int) -> None: ...

    def backlog(self) -> int: ...

    def close(self) -> None: ...


class MemoryOutbox:
    durable = False

    def __init__(self) -> None:
        self._lines: list[bytes] = []
        self._lock = threading.Lock()

    def append(self, line: bytes) -> None:
        with self._lock:
            self._lines.append(line)

    def commit(self) -> None:
        pass

    def read(self, limit: int) -> tuple[list[bytes], object]:
        with self._lock:
            batch = self._lines[:limit]
        return batch, len(batch)

    def acked(self, position: object, count: int) -> None:
        with self._lock:
            del self._lines[:count]

    def backlog(self) -> int:
        return len(self._lines)

    def close(self) -> None:
        pass


class FileOutbox:
    durable = True

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._appended = self._acked_count = 0
        self._acked = self._read_acked()
        serials = self._serials()
        # what the last run left unacknowledged is sent first; new events go to a new segment
        self._serial = (serials[-1] + 1) if serials else max(self._acked[0], 0)
        self._appended = self._count_pending(serials)
        self._file = open(self._path(self._serial), "ab")  # noqa: SIM115
        self._size = 0

    # -- the crawl's side ---------------------------------------------------------------------
    def append(self, line: bytes) -> None:
        self._file.write(line)
        self._size += len(line)
        with self._lock:
            self._appended += 1
        if self._size >= SEGMENT_SIZE:
            self._file.close()
            self._serial += 1
            self._file = open(self._path(self._serial), "ab")  # noqa: SIM115
            self._size = 0

    def commit(self) -> None:
        self._file.flush()

    def backlog(self) -> int:
        with self._lock:
            return self._appended - self._acked_count

    def close(self) -> None:
        self._file.close()

    # -- the sender's side --------------------------------------------------------------------
    def read(self, limit: int) -> tuple[list[bytes], object]:
        """Up to ``limit`` whole lines from the oldest unacknowledged one, and the position
        after them (a line the crawl has not flushed whole yet is left for the next read)."""
        serial, offset = self._acked
        lines: list[bytes] = []
        for current in self._serials():
            if current < serial:
                continue
            start = offset if current == serial else 0
            try:
                with open(self._path(current), "rb") as fh:
                    fh.seek(start)
                    data = fh.read(1 << 20)
            except FileNotFoundError:
                continue
            end = data.rfind(b"\n") + 1
            chunk = data[:end].splitlines(keepends=True)[:limit - len(lines)]
            lines += chunk
            position = (current, start + sum(len(x) for x in chunk))
            if len(lines) >= limit or len(data) == 1 << 20 or end < len(data) or \
                    current == self._serial:
                return lines, position
            serial, offset = current, start + sum(len(x) for x in chunk)
        return lines, (serial, offset)

    def acked(self, position: object, count: int) -> None:
        assert isinstance(position, tuple)
        serial, offset = position
        tmp = self.directory / "acked.tmp"
        tmp.write_text(f"{serial} {offset}\n")
        os.replace(tmp, self.directory / "acked")
        self._acked = (serial, offset)
        with self._lock:
            self._acked_count += count
        for old in self._serials():
            if old < serial:
                self._path(old).unlink(missing_ok=True)

    # -- files --------------------------------------------------------------------------------
    def _path(self, serial: int) -> Path:
        return self.directory / f"outbox-{serial:08d}.jsonl"

    def _serials(self) -> list[int]:
        return sorted(int(p.name[7:15]) for p in self.directory.glob("outbox-*.jsonl"))

    def _read_acked(self) -> tuple[int, int]:
        try:
            serial, offset = (self.directory / "acked").read_text().split()
            return int(serial), int(offset)
        except (FileNotFoundError, ValueError):
            return -1, 0

    def _count_pending(self, serials: list[int]) -> int:
        """Events left unacknowledged by the last run (whole lines after the position)."""
        pending = 0
        for serial in serials:
            if serial < self._acked[0]:
                continue
            with open(self._path(serial), "rb") as fh:
                if serial == self._acked[0]:
                    fh.seek(self._acked[1])
                data = fh.read()
            pending += data.count(b"\n")
            if not data.endswith(b"\n") and data:  # a line cut by a kill: never whole
                with open(self._path(serial), "r+b") as fh:
                    fh.truncate(len(data[:data.rfind(b"\n") + 1]) +
                                (self._acked[1] if serial == self._acked[0] else 0))
        return pending
