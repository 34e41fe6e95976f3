"""The durable frontier backend: the in-memory structures plus a write-ahead table in SQLite.

Every admitted entry is inserted, and deleted only when ``complete()`` says its response was
processed (its links admitted), so after a kill -9 the table holds every URL that was queued
or in flight.  Writes are batched and committed by ``flush()`` (the scheduler calls it every
``CRAWLER_EXT_FRONTIER_FLUSH_INTERVAL`` seconds and at close); SQLite's WAL mode makes a
commit survive the process dying.  Learned host state (delays, backoff, Crawl-delay) is kept
in the same file.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

from crawler_ext.frontier.storage import Entry, HostState, MemoryStore
from crawler_ext.int64 import to_signed as _signed
from crawler_ext.int64 import to_unsigned as _unsigned

__all__ = ["SqliteStore"]


_Row = tuple[int, str, int, int, bytes, int, float | None, int]


def _row(e: Entry, due: float | None = None) -> _Row:
    return (e.id, e.key, e.band, _signed(e.fp), e.data, e.priority, due, int(e.refresh))


class SqliteStore(MemoryStore):
    durable = True

    def __init__(self, path: str | Path, bands: int) -> None:
        super().__init__(bands)
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._inserts: list[_Row] = []
        self._ready: list[tuple[int, int]] = []  # delayed entries now ready: (new id, old id)
        self._bands: dict[int, int] = {}
        self._deletes: list[tuple[int]] = []
        self._changed_hosts: set[str] = set()
        self._admitted: list[tuple[int]] = []
        self._mark = 0

    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, key TEXT NOT NULL,"
                   " band INTEGER NOT NULL, fp INTEGER NOT NULL, data BLOB NOT NULL,"
                   " priority INTEGER NOT NULL DEFAULT 0, due REAL,"
                   " refresh INTEGER NOT NULL DEFAULT 0)")
        columns = {row[1] for row in db.execute("PRAGMA table_info(entries)")}
        if "priority" not in columns:  # a frontier written before priorities were kept
            db.execute("ALTER TABLE entries ADD COLUMN priority INTEGER NOT NULL DEFAULT 0")
        if "due" not in columns:  # ... or before delayed entries
            db.execute("ALTER TABLE entries ADD COLUMN due REAL")
        if "refresh" not in columns:  # ... or before refreshes had a lane of their own
            db.execute("ALTER TABLE entries ADD COLUMN refresh INTEGER NOT NULL DEFAULT 0")
        db.execute("CREATE TABLE IF NOT EXISTS admitted (fp INTEGER NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS hosts (key TEXT PRIMARY KEY, delay REAL, "
                   "backoff REAL, crawl_delay REAL, next_allowed REAL, floor REAL)")
        self._db = db
        self._mark = db.execute("SELECT coalesce(max(rowid), 0) FROM admitted").fetchone()[0]

    def recover(self) -> int:
        assert self._db is not None
        for key, delay, backoff, crawl_delay, next_allowed, floor in self._db.execute(
                "SELECT key, delay, backoff, crawl_delay, next_allowed, floor FROM hosts"):
            self._hosts[key] = HostState(delay, backoff, crawl_delay, next_allowed, floor)
        entries, delayed = [], []
        for entry_id, key, band, fp, data, priority, due, refresh in self._db.execute(
                "SELECT id, key, band, fp, data, priority, due, refresh FROM entries "
                "ORDER BY id"):
            entry = Entry(key, min(band, self.bands - 1), data, _unsigned(fp), entry_id, priority,
                          bool(refresh))
            if due is None:
                entries.append(entry)
            else:
                delayed.append((due, entry))
        last = max([e.id for e in entries] + [e.id for _, e in delayed], default=0)
        if last:
            self._ids = itertools.count(last + 1)
        MemoryStore.front_push(self, entries)
        for due, entry in delayed:
            MemoryStore.delay_push(self, [entry], due)
        return len(entries) + len(delayed)

    def close(self, commit: bool = True) -> None:
        """Commit what is pending (unless ``commit`` is False: a disk filled up, and what is
        pending is dropped, so the journal calls nothing done that was not stored)."""
        if self._db is not None:
            try:
                if commit:
                    self.flush()
            finally:
                self._db.close()
                self._db = None

    def flush(self) -> None:
        if self._db is None or not (self._inserts or self._deletes or self._bands
                                    or self._changed_hosts or self._admitted
                                    or self._ready):
            return
        db = self._db
        db.execute("BEGIN")
        if self._admitted:
            db.executemany("INSERT INTO admitted (fp) VALUES (?)", self._admitted)
        if self._inserts:
            db.executemany("INSERT OR REPLACE INTO entries (id, key, band, fp, data, priority, "
                           "due, refresh) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._inserts)
        if self._ready:
            db.executemany("UPDATE entries SET id = ?, due = NULL WHERE id = ?", self._ready)
        if self._bands:
            db.executemany("UPDATE entries SET band = ? WHERE id = ?",
                           [(band, i) for i, band in self._bands.items()])
        if self._deletes:
            db.executemany("DELETE FROM entries WHERE id = ?", self._deletes)
        if self._changed_hosts:
            rows = []
            for key in self._changed_hosts:
                s = self._hosts[key]
                rows.append((key, s.delay, s.backoff, s.crawl_delay, s.next_allowed, s.floor))
            db.executemany("INSERT OR REPLACE INTO hosts VALUES (?, ?, ?, ?, ?, ?)", rows)
        db.execute("COMMIT")
        if self._admitted:
            self._mark = db.execute("SELECT max(rowid) FROM admitted").fetchone()[0]
            self._admitted.clear()
        self._inserts.clear()
        self._ready.clear()
        self._bands.clear()
        self._deletes.clear()
        self._changed_hosts.clear()

    def front_push(self, entries: list[Entry]) -> None:
        super().front_push(entries)
        self._inserts.extend(_row(e) for e in entries)
        self._admitted.extend((_signed(e.fp),) for e in entries if e.fp)

    def delay_push(self, entries: list[Entry], due: float) -> None:
        super().delay_push(entries, due)
        self._inserts.extend(_row(e, due) for e in entries)

    def _undelayed(self, old_ids: list[int], entries: list[Entry]) -> None:
        self._ready.extend((e.id, old) for old, e in zip(old_ids, entries))

    def admitted_since(self, mark: int) -> tuple[list[int], int]:
        assert self._db is not None
        rows = self._db.execute("SELECT rowid, fp FROM admitted WHERE rowid > ? ORDER BY rowid",
                                (mark,)).fetchall()
        return [_unsigned(fp) for _, fp in rows], (rows[-1][0] if rows else mark)

    def admitted_mark(self) -> int:
        return self._mark

    def back_push(self, entry: Entry) -> None:
        new = not entry.id
        super().back_push(entry)
        if new:  # entries normally come through the front queues and are journalled there
            self._inserts.append(_row(entry))

    def front_promote(self, entry: Entry, band: int) -> None:
        super().front_promote(entry, band)
        self._bands[entry.id] = band

    def back_promote(self, entry: Entry, band: int) -> bool:
        if not super().back_promote(entry, band):
            return False
        self._bands[entry.id] = band
        return True

    def complete(self, entry_ids: list[int]) -> None:
        super().complete(entry_ids)
        self._deletes.extend((i,) for i in entry_ids)

    def host_changed(self, key: str) -> None:
        self._changed_hosts.add(key)
