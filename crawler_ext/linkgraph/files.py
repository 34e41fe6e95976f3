"""The link graph's files: written incrementally (gzip members), rotated, read back.

A graph directory holds, per rotation, three tab-separated files, gzip-compressed, written
as ``<kind>-<timestamp>-<serial>.tsv.gz`` (``.open`` while written):

* ``edges``: ``source<TAB>target<TAB>anchor`` -- one line per link of a fetched page, both
  ends as the URL's 64-bit fingerprint in 16 hex digits (the canonical URL's, as the seen set
  and the fetch events name it), the anchor text with whitespace collapsed (at most 200
  characters; empty where the format has none);
* ``nodes``: ``fingerprint<TAB>url`` -- the canonical URL of each fingerprint the edges name
  (a fingerprint may be listed more than once);
* ``hosts``: ``source host<TAB>target host<TAB>links`` -- per fetched page, the links it
  holds to each host (a consumer sums the lines of a host pair).

Each batch is one gzip member, so a file cut by a kill reads back up to its last complete
batch.  Pure: no Scrapy; :class:`GraphWriter` writes in a thread of its own.
"""

from __future__ import annotations

import gzip
import logging
import os
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from crawler_ext.runtime.worker import QueueThread

__all__ = ["KINDS", "GraphWriter", "edges", "host_edges", "nodes"]

logger = logging.getLogger(__name__)

KINDS = ("edges", "nodes", "hosts")


class GraphWriter:
    """Append batches of lines to the graph's files; rotate when the edges file passes
    ``max_size`` bytes (compressed).  ``write`` hands a batch to the writing thread (a full
    queue makes it wait: back-pressure, not memory)."""

    def __init__(self, directory: str | Path, max_size: int = 100 << 20,
                 max_queue: int = 64) -> None:
        self.directory = Path(directory)
        self.max_size = max_size
        self._thread = QueueThread("crawler_ext-linkgraph", self._write, max_queue,
                                   stopped=self._close_files)
        self._files: dict[str, tuple[Path, object]] = {}
        self._serial = 0
        self.bytes_written = 0
        self.error: OSError | None = None

    def open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in self.directory.glob("*.tsv.gz.open"):  # a crash's: keep what is whole
            os.replace(path, path.with_suffix(""))
        self._thread.start()

    def write(self, batch: dict[str, list[str]]) -> None:
        if not self._thread.running or self.error is not None:
            return
        self._thread.put(batch)

    def close(self) -> None:
        self._thread.stop()

    # -- the thread --------------------------------------------------------------------------
    def _write(self, batch: dict[str, list[str]]) -> None:
        if self.error is not None:
            return
        try:
            self._append(batch)
        except OSError as exc:
            self.error = exc
            logger.error("Link graph: writing under %s failed (%s); no more edges "
                         "written", self.directory, exc)

    def _append(self, batch: dict[str, list[str]]) -> None:
        if not self._files:
            stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
            for kind in KINDS:
                path = self.directory / f"{kind}-{stamp}-{self._serial:05d}.tsv.gz.open"
                self._files[kind] = (path, open(path, "ab"))  # noqa: SIM115
            self._serial += 1
        for kind, lines in batch.items():
            if not lines:
                continue
            compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS + 16)
            data = compressor.compress("".join(lines).encode("utf-8")) + compressor.flush()
            file = self._files[kind][1]
            file.write(data)  # type: ignore[attr-defined]
            file.flush()  # type: ignore[attr-defined]
            self.bytes_written += len(data)
        if self._files["edges"][1].tell() >= self.max_size:  # type: ignore[attr-defined]
            self._close_files()

    def _close_files(self) -> None:
        files, self._files = self._files, {}
        for path, file in files.values():
            file.close()  # type: ignore[attr-defined]
            os.replace(path, path.with_suffix(""))


# -- reading ---------------------------------------------------------------------------------
def _lines(directory: str | Path, kind: str) -> Iterator[list[str]]:
    """The lines of every file of ``kind``, oldest first, split at tabs (a torn last batch
    of a file cut by a kill is left out)."""
    paths = sorted(Path(directory).glob(f"{kind}-*.tsv.gz"),
                   key=lambda p: p.name) + sorted(Path(directory).glob(f"{kind}-*.tsv.gz.open"))
    for path in paths:
        with gzip.open(path, "rt", encoding="utf-8") as file:
            try:
                for line in file:
                    if line.endswith("\n"):
                        yield line[:-1].split("\t")
            except (EOFError, OSError, zlib.error):
                continue


def edges(directory: str | Path) -> Iterator[tuple[int, int, str]]:
    """(source, target, anchor) of every link, fingerprints as integers."""
    for source, target, anchor in _lines(directory, "edges"):
        yield int(source, 16), int(target, 16), anchor


def nodes(directory: str | Path) -> dict[int, str]:
    """Fingerprint -> canonical URL."""
    return {int(fp, 16): url for fp, url in _lines(directory, "nodes")}


def host_edges(directory: str | Path) -> dict[tuple[str, str], int]:
    """(source host, target host) -> links, summed over the pages."""
    out: dict[tuple[str, str], int] = {}
    for source, target, count in _lines(directory, "hosts"):
        out[(source, target)] = out.get((source, target), 0) + int(count)
    return out
