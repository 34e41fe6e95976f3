"""The CDXJ lines of the WARC file being written, kept on disk rather than in memory.

A 1 GB WARC file holds some 100,000 records; their index lines (about 340 bytes each) were
held in memory until the file closed, growing the crawl's memory with every page.  Here at
most ``RUN`` lines wait in memory: a full run is sorted and written beside the WARC files as
a hidden run file, and closing the WARC file merges the runs into its sorted ``.cdxj``
(``heapq.merge``: one line of each run in memory).  Run files a crash left behind are removed
by the recovery, which indexes the torn file again from its records.
"""

from __future__ import annotations

import heapq
import itertools
from contextlib import ExitStack
from pathlib import Path

__all__ = ["IndexSpool", "remove_runs"]

_RUN_GLOB = ".*.cdxj.run-*"


def remove_runs(directory: Path) -> None:
    """Delete the run files of a writer that did not close (a crash)."""
    for path in directory.glob(_RUN_GLOB):
        path.unlink(missing_ok=True)


class IndexSpool:
    """Index lines of one WARC file: ``add`` them in any order, ``write_sorted`` at close."""

    RUN = 10_000

    def __init__(self, directory: Path, name: str) -> None:
        self._base = directory / f".{name}.cdxj.run-"
        self._serial = itertools.count()
        self._runs: list[Path] = []
        self._lines: list[str] = []

    def add(self, line: str) -> None:
        self._lines.append(line)
        if len(self._lines) >= self.RUN:
            path = Path(f"{self._base}{next(self._serial)}")
            path.write_text("".join(sorted(line + "\n" for line in self._lines)))
            self._runs.append(path)
            self._lines = []

    def write_sorted(self, index: Path) -> None:
        """Write every line added, sorted, to ``index``; the run files go."""
        with ExitStack() as files, index.open("w") as out:
            runs = [files.enter_context(path.open()) for path in self._runs]
            out.writelines(heapq.merge(*runs, sorted(line + "\n" for line in self._lines)))
        self.discard()

    def discard(self) -> None:
        for path in self._runs:
            path.unlink(missing_ok=True)
        self._runs, self._lines = [], []
