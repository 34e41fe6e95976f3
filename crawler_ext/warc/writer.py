"""WARC files on disk: rotation by size, IIPC-style names, ``.open`` while written, a CDXJ
index beside each file, and recovery of files left open by a crash.

Each record is one gzip member (compressed in one call at zlib level 6: warcio's own
wrapper compresses each header and body chunk separately at level 9, twice the time for
0.5 % smaller files on the real-site corpus).  Records are built and compressed in memory
and appended through a buffered file, flushed every second, before each frontier journal commit (the
``frontier_commit`` signal) and at close, so the reactor thread makes few write calls and a
request the frontier calls done has its records in the file; after a kill -9 the last,
possibly partial, member is cut off at restart (``recover``), and every complete record
reads back and is indexed.
"""

from __future__ import annotations

import io
import itertools
import logging
import os
import socket
import time
import zlib
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp
from warcio.warcwriter import WARCWriter

from crawler_ext.warc.cdxj import cdxj_line
from crawler_ext.warc.plans import RecordPlan, metadata_payload  # (its home; re-exported)
from crawler_ext.warc.spool import IndexSpool, remove_runs

__all__ = ["RecordStamps", "WarcFileWriter", "metadata_payload", "recover"]

logger = logging.getLogger(__name__)


class RecordStamps(NamedTuple):
    """The determinism seam for records (tests): each record's id and WARC date."""

    ids: Callable[[], str]
    dates: Callable[[], str]


INDEXED_TYPES = ("response", "revisit", "resource", "metadata")
GZIP_LEVEL = 6
#: derivative files written beside each WARC file (Common Crawl's suffixes, which the pack's
#: own ``*.warc.gz`` globs do not match): a record goes to one when its ``derivative``
#: attribute names it
DERIVATIVES = {"wet": ".warc.wet.gz", "wat": ".warc.wat.gz"}


def _timestamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S%f")[:17]


def _index_fields(record: Any, filename: str, offset: int, length: int) -> tuple[str, str, dict]:
    headers = record.rec_headers
    url = headers.get_header("WARC-Target-URI") or ""
    ts = iso_date_to_timestamp(headers.get_header("WARC-Date"))
    fields: dict[str, Any] = {"offset": str(offset), "length": str(length), "filename": filename}
    if record.rec_type in ("response", "revisit") and record.http_headers:
        fields["status"] = record.http_headers.get_statuscode()
        mime = record.http_headers.get_header("Content-Type") or ""
        fields["mime"] = mime.split(";")[0].strip() or "unk"
    else:
        fields["mime"] = headers.get_header("Content-Type") or "unk"
    if record.rec_type == "revisit":
        fields["mime"] = "warc/revisit"
    digest = headers.get_header("WARC-Payload-Digest")
    if digest:
        fields["digest"] = digest.split(":", 1)[-1]
    if record.rec_type == "metadata":
        fields["mime"] = "warc/metadata"
    return url, ts, fields


def complete_length(path: Path) -> int:
    """Bytes of ``path`` made of complete gzip members (a torn last member is not counted:
    its CRC and length trailer never reached the disk)."""
    good = consumed = 0
    member = zlib.decompressobj(31)
    pending = b""
    with open(path, "rb") as fh:
        while True:
            chunk = pending or fh.read(1 << 20)
            pending = b""
            if not chunk:
                return good
            try:
                member.decompress(chunk)
            except zlib.error:
                return good
            if member.eof:
                consumed += len(chunk) - len(member.unused_data)
                good = consumed
                pending = member.unused_data
                member = zlib.decompressobj(31)
            else:
                consumed += len(chunk)


def _cut_torn(path: Path) -> None:
    size, good_end = path.stat().st_size, complete_length(path)
    if good_end < size:
        logger.warning("WARC recovery: %s ends in a partial record; cutting %d bytes",
                       path.name, size - good_end)
        with open(path, "r+b") as fh:
            fh.truncate(good_end)


def recover(directory: Path) -> list[Path]:
    """Close WARC files a crash left ``.open``: cut off a partial last record, index the rest
    (derivative files, WET and WAT, are cut and closed too)."""
    closed = []
    remove_runs(directory)  # the torn file's index is built again from its records
    for suffix in DERIVATIVES.values():
        for path in sorted(directory.glob(f"*{suffix}.open")):
            _cut_torn(path)
            os.replace(path, path.with_suffix(""))
    for path in sorted(directory.glob("*.warc.gz.open")):
        final = path.with_suffix("")  # drops ".open"
        _cut_torn(path)
        lines = []
        with open(path, "rb") as fh:
            it = ArchiveIterator(fh)
            for record in it:
                it.read_to_end(record)
                if record.rec_type in INDEXED_TYPES:
                    url, ts, fields = _index_fields(record, final.name, it.get_record_offset(),
                                                    it.get_record_length())
                    lines.append(cdxj_line(url, ts, fields))
        os.replace(path, final)
        index = final.with_name(final.name[:-len(".warc.gz")] + ".cdxj")
        index.write_text("".join(sorted(line + "\n" for line in lines)))
        closed.append(final)
    return closed


class WarcFileWriter:
    """Append WARC records to rotating files in ``directory``."""

    def __init__(
        self, directory: str | Path, prefix: str = "crawler_ext", max_size: int = 10**9,
        info: dict[str, str] | None = None, clock: Callable[[], str] = _timestamp,
        stamps: RecordStamps | None = None, locate: bool = False, gzip_level: int = GZIP_LEVEL,
    ) -> None:
        self.directory = Path(directory)
        self.gzip_level = gzip_level  # zlib's 1 (fastest) to 9 (smallest)
        self.prefix = prefix
        self.max_size = max_size
        self.info = info or {}
        self.clock = clock  # the determinism seam: fixed names, dates and ids in tests
        self._siblings: dict[str, tuple[Path, BinaryIO]] = {}  # derivative -> its open file
        self.stamps = stamps
        self.hostname = socket.gethostname().split(".")[0] or "host"
        self._serial = itertools.count()
        self._file: BinaryIO | None = None
        self._path: Path | None = None
        self._size = 0
        self._index: IndexSpool | None = None  # the open file's index lines
        self._buffer = io.BytesIO()
        # records are serialised uncompressed into the buffer, then gzipped as one member
        self._builder = WARCWriter(self._buffer, gzip=False, warc_version="1.1")
        self.records = 0
        self.bytes_written = 0
        self.files: list[Path] = []
        self._last_flush = time.monotonic()
        self.broken: OSError | None = None  # a failed write (disk full): nothing more goes out
        # with ``locate``: (record id, path of its file, offset) of each response and revisit
        # record written, until taken (``take_located``; the event stream reports them)
        self.locate = locate
        self.located: deque[tuple[str, str, int]] = deque()

    def take_located(self) -> list[tuple[str, str, int]]:
        """The places of the response and revisit records written since the last call."""
        located = self.located
        return [located.popleft() for _ in range(len(located))]

    def config(self) -> dict[str, Any]:
        """The arguments that build this writer in another process (the writer process);
        the id and date seams stay with the caller, who applies them (``prepare``)."""
        return {"directory": self.directory, "prefix": self.prefix, "max_size": self.max_size,
                "info": self.info, "clock": self.clock, "locate": self.locate,
                "gzip_level": self.gzip_level}

    @property
    def builder(self) -> WARCWriter:
        """warcio's record builder (``create_warc_record``, ``create_revisit_record``...)."""
        return self._builder

    def open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        recovered = recover(self.directory)
        if recovered:
            logger.info("WARC: closed %d file(s) left open by an earlier crash: %s",
                        len(recovered), ", ".join(p.name for p in recovered))

    def _new_file(self) -> None:
        name = f"{self.prefix}-{self.clock()}-{next(self._serial):05d}-{self.hostname}.warc.gz"
        self._path = self.directory / (name + ".open")
        self._file = open(self._path, "wb", buffering=1 << 20)  # noqa: SIM115
        self._index = IndexSpool(self.directory, name)
        self._size = 0
        info = {"software": "crawler_ext (Scrapy)", "format": "WARC File Format 1.1",
                "hostname": self.hostname, **self.info}
        self.write(self._builder.create_warcinfo_record(name, info))

    def write(self, record: Any) -> tuple[str, int, int]:
        """Write one record; return (file name, offset, length).  After a failed write every
        write raises that error again: the file keeps its ``.open`` name, and the next start
        cuts the torn record off (``recover``)."""
        self.prepare(record)
        return self.write_prepared(record)

    def prepare(self, record: Any) -> None:
        """Give the record its id and date from the test seams (if set): the part of a write
        that must happen in the caller's order (see ``BackgroundWriter``)."""
        if self.stamps is not None:
            record.rec_headers.replace_header("WARC-Record-ID", self.stamps.ids())
            record.rec_headers.replace_header("WARC-Date", self.stamps.dates())

    def new_id(self) -> str:
        """A record id for a plan (``crawler_ext.warc.plans``): the test seam's, if set."""
        return self.stamps.ids() if self.stamps is not None else self._builder._make_warc_id()

    def new_date(self, same_as: str | None = None) -> str:
        """A WARC date for a plan: the test seam's, if set; else ``same_as`` or now."""
        if self.stamps is not None:
            return self.stamps.dates()
        return same_as or self._builder.curr_warc_date()

    def write_plan(self, plan: RecordPlan) -> None:
        """Build the plan's records and write them, in order (their ids and dates are in
        the plan already: nothing to prepare)."""
        if self.broken is not None:
            raise self.broken
        try:
            for record in plan.build(self._builder):
                self._write(record)
        except OSError as exc:
            self.broken = exc
            raise

    def write_prepared(self, record: Any) -> tuple[str, int, int]:
        """Serialise, compress and append a prepared record (see :meth:`write`)."""
        if self.broken is not None:
            raise self.broken
        try:
            return self._write(record)
        except OSError as exc:
            self.broken = exc
            raise

    def _serialise(self, record: Any) -> bytes:
        self._buffer.seek(0)
        self._buffer.truncate()
        self._builder.write_record(record)
        gzip = zlib.compressobj(self.gzip_level, zlib.DEFLATED, zlib.MAX_WBITS + 16)
        return gzip.compress(self._buffer.getvalue()) + gzip.flush()

    def _write_derivative(self, record: Any, kind: str) -> tuple[str, int, int]:
        """A WET or WAT record, into the file of that kind beside the open WARC file."""
        if self._file is None:
            self._new_file()
        assert self._path is not None
        sibling = self._siblings.get(kind)
        if sibling is None:
            name = self._path.name[:-len(".warc.gz.open")] + DERIVATIVES[kind]
            path = self.directory / (name + ".open")
            file = open(path, "wb", buffering=1 << 20)  # noqa: SIM115
            sibling = self._siblings[kind] = (path, file)
            info = {"software": "crawler_ext (Scrapy)", "format": "WARC File Format 1.1",
                    "hostname": self.hostname, "description": f"{kind.upper()} of "
                    f"{self._path.name[:-len('.open')]}", **self.info}
            sibling[1].write(self._serialise(self._builder.create_warcinfo_record(name, info)))
        data = self._serialise(record)
        offset = sibling[1].tell()
        sibling[1].write(data)
        self.records += 1
        self.bytes_written += len(data)
        return sibling[0].name[:-len(".open")], offset, len(data)

    def _write(self, record: Any) -> tuple[str, int, int]:
        derivative = getattr(record, "derivative", None)
        if derivative is not None:
            return self._write_derivative(record, derivative)
        if self._file is None:
            self._new_file()
        data = self._serialise(record)
        assert self._file is not None and self._path is not None
        offset = self._size
        self._file.write(data)
        self._size += len(data)
        self.records += 1
        self.bytes_written += len(data)
        filename = self._path.name[:-len(".open")]
        if self.locate and record.rec_type in ("response", "revisit"):
            self.located.append((record.rec_headers.get_header("WARC-Record-ID"),
                                 str(self.directory / filename), offset))
        if record.rec_type in INDEXED_TYPES:
            url, ts, fields = _index_fields(record, filename, offset, len(data))
            assert self._index is not None
            self._index.add(cdxj_line(url, ts, fields))
        if self._size >= self.max_size:
            self.close_file()
        elif time.monotonic() - self._last_flush > 1.0:
            self._flush()
        return filename, offset, len(data)

    def flush(self, wait: bool = True, **_: Any) -> None:
        if self.broken is not None:
            raise self.broken
        try:
            self._flush()
        except OSError as exc:
            self.broken = exc
            raise

    def _flush(self) -> None:
        if self._file is not None:
            self._file.flush()
        for _, file in self._siblings.values():
            file.flush()
        self._last_flush = time.monotonic()

    def close_file(self) -> None:
        if self._file is None or self._path is None:
            return
        siblings, self._siblings = self._siblings, {}
        if self.broken is not None:  # leave it .open: the next start recovers it
            for file in [self._file, *(f for _, f in siblings.values())]:
                try:
                    file.close()
                except OSError:
                    pass
            self._file, self._path = None, None
            return
        try:
            self._file.close()
            for path, file in siblings.values():
                file.close()
                os.replace(path, path.with_suffix(""))
        except OSError as exc:
            self.broken = exc
            self._file, self._path = None, None
            raise
        final = self._path.with_suffix("")
        os.replace(self._path, final)
        index = final.with_name(final.name[:-len(".warc.gz")] + ".cdxj")
        assert self._index is not None
        self._index.write_sorted(index)
        self.files.append(final)
        self._file, self._path, self._index = None, None, None

    def close(self) -> None:
        self.close_file()


