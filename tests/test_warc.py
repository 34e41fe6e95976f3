"""WARC writing: byte-exact with the determinism seam, crash recovery, and a real crawl whose
files pass `warcio check` and hold the bytes as transferred, revisits and a CDXJ index."""

from __future__ import annotations

import gzip
import io
import itertools
import subprocess
from pathlib import Path

import pytest

from conftest import WARCIO, run_crawl
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders

from crawler_ext.warc import WarcFileWriter, lookup, recover
from crawler_ext.warc.cdxj import read_index, surt
from crawler_ext.warc.writer import RecordStamps


def fixed_writer(directory: Path, max_size: int = 10**9) -> WarcFileWriter:
    ids = (f"<urn:uuid:00000000-0000-0000-0000-{i:012d}>" for i in itertools.count())
    return WarcFileWriter(directory, prefix="test", max_size=max_size,
                          clock=lambda: "20260101000000000",
                          stamps=RecordStamps(lambda: next(ids),
                                              lambda: "2026-01-01T00:00:00.000000Z"))


def write_pages(writer: WarcFileWriter, n: int) -> None:
    b = writer.builder
    for i in range(n):
        body = f"<html>page {i}</html>".encode()
        head = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write(b.create_warc_record(
            f"http://e.com/{i}", "response", payload=io.BytesIO(body), length=len(body),
            http_headers=head, warc_headers_dict={"WARC-Date": "2026-01-01T00:00:00.000000Z"}))


def test_fixed_ids_and_dates_give_byte_identical_files(tmp_path: Path) -> None:
    outputs = []
    for run in ("a", "b"):
        w = fixed_writer(tmp_path / run)
        w.open()
        write_pages(w, 5)
        w.close()
        outputs.append([p.read_bytes() for p in sorted((tmp_path / run).glob("*.warc.gz"))])
    assert outputs[0] == outputs[1] and len(outputs[0]) == 1


def test_rotation_by_size_and_names(tmp_path: Path) -> None:
    w = fixed_writer(tmp_path, max_size=2000)
    w.open()
    write_pages(w, 30)
    w.close()
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert len(files) > 3
    assert all(p.name.startswith("test-20260101000000000-") for p in files)
    assert not list(tmp_path.glob("*.open"))
    assert lookup(tmp_path, "http://e.com/7")[0][0] in {p.name for p in files}


def test_a_torn_last_record_is_cut_and_the_rest_indexed(tmp_path: Path) -> None:
    w = fixed_writer(tmp_path)
    w.open()
    write_pages(w, 10)
    w.flush()
    open_file = next(tmp_path.glob("*.open"))
    data = open_file.read_bytes()
    open_file.write_bytes(data[:-25])  # kill -9 in the middle of the last gzip member
    w._file = None  # the process is gone
    recovered = recover(tmp_path)
    assert len(recovered) == 1
    with open(recovered[0], "rb") as fh:
        uris = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh)
                if r.rec_type == "response"]
    assert uris == [f"http://e.com/{i}" for i in range(9)]
    check = subprocess.run([*WARCIO, "check", str(recovered[0])], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    index = recovered[0].with_name(recovered[0].name.replace(".warc.gz", ".cdxj"))
    assert [d["url"] for _, _, d in read_index(index)] == sorted(uris, key=surt)


@pytest.mark.slow
def test_crawl_archives_bytes_as_transferred_with_revisits(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=9, pages=4)  # host 6 gzips, host 8 mirrors host 0
    warcs = tmp_path / "warcs"
    result = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.02,
                                 "CRAWLER_EXT_POLITENESS_MAX_DELAY": 0.5,
                                 "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 1,
                                 "CRAWLER_EXT_WARC_DIR": str(warcs)})
    assert result.returncode == 0, result.output[-3000:]
    files = sorted(warcs.glob("*.warc.gz"))
    assert files and not list(warcs.glob("*.open"))
    records = []
    for path in files:
        check = subprocess.run([*WARCIO, "check", str(path)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout
        index = subprocess.run([*WARCIO, "index", str(path)], capture_output=True, text=True)
        assert index.returncode == 0 and index.stdout
        with open(path, "rb") as fh:
            for r in ArchiveIterator(fh, no_record_parse=False):
                records.append((r.rec_type, r.rec_headers, r.http_headers,
                                r.raw_stream.read() if r.rec_type == "response" else b""))
    by_id = {h.get_header("WARC-Record-ID"): (t, h) for t, h, _, _ in records}
    requests = [h for t, h, _, _ in records if t == "request"]
    assert requests and all(by_id[h.get_header("WARC-Concurrent-To")][0] in ("response", "revisit")
                            for h in requests)
    gz = [(hh, body) for t, h, hh, body in records if t == "response"
          and "h0006" in h.get_header("WARC-Target-URI") and hh.get_header("Content-Encoding")]
    assert gz and all(body[:2] == b"\x1f\x8b" for _, body in gz)  # as transferred
    pages = [body for hh, body in gz if b"html" in hh.get_header("Content-Type").encode()]
    assert pages and gzip.decompress(pages[0]).startswith(b"<!DOCTYPE html>")
    responses = [h for t, h, _, _ in records if t == "response"]
    assert all(h.get_header("WARC-IP-Address") == "127.0.0.1" for h in responses)
    assert all(h.get_header("WARC-Payload-Digest") and h.get_header("WARC-Block-Digest")
               for h in responses)
    revisits = [h for t, h, _, _ in records if t == "revisit"]
    # host 8 mirrors host 0: whichever copy of a page came second is a revisit of the first
    # (the frontier's order decides which)
    twin = {"h0000": "h0008", "h0008": "h0000"}
    mirrored = [h for h in revisits if "/p/" in h.get_header("WARC-Target-URI")
                and h.get_header("WARC-Target-URI").split("//")[1][:5] in twin]
    assert mirrored and all(
        h.get_header("WARC-Refers-To-Target-URI") == h.get_header("WARC-Target-URI").replace(
            (host := h.get_header("WARC-Target-URI").split("//")[1][:5]), twin[host])
        for h in mirrored)
    assert all(h.get_header("WARC-Profile").endswith("identical-payload-digest")
               for h in revisits)
    metadata = [h for t, h, _, _ in records if t == "metadata"]
    assert len(metadata) >= len(result.items)
    page = web.url(3, "/p/1.html")
    (name, offset, length), = lookup(warcs, page)
    with open(warcs / name, "rb") as fh:
        fh.seek(offset)
        record = next(iter(ArchiveIterator(io.BytesIO(fh.read(length)))))
        assert record.rec_headers.get_header("WARC-Target-URI") == page


def _records(directory: Path) -> list[tuple]:
    out = []
    for path in sorted(directory.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            out += [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"),
                     r.content_stream().read()) for r in ArchiveIterator(fh)]
    return out


def test_the_writer_thread_keeps_order_and_content(tmp_path: Path) -> None:
    """The crawl writes through BackgroundWriter (gzip and appends off the reactor thread):
    the same records in the same order as the direct writer, rotation included."""
    from crawler_ext.warc.background import BackgroundWriter

    direct = fixed_writer(tmp_path / "direct", max_size=3000)
    direct.open()
    write_pages(direct, 30)
    write_pages(direct, 30)
    direct.close()
    threaded = BackgroundWriter(fixed_writer(tmp_path / "thread", max_size=3000), max_queue=4)
    threaded.open()
    write_pages(threaded, 30)  # type: ignore[arg-type]
    threaded.flush()  # waits: everything handed over is in the files, the open one flushed
    on_disk = 0
    for path in (tmp_path / "thread").glob("*.warc.gz*"):
        with open(path, "rb") as fh:
            on_disk += sum(r.rec_type == "response" for r in ArchiveIterator(fh))
    assert on_disk == 30
    write_pages(threaded, 30)  # type: ignore[arg-type]
    threaded.close()
    assert _records(tmp_path / "thread") == _records(tmp_path / "direct")
    assert len(list((tmp_path / "thread").glob("*.warc.gz"))) > 3
    assert not list((tmp_path / "thread").glob("*.open"))


def test_the_writer_process_keeps_order_content_and_counters(tmp_path: Path) -> None:
    """The crawl writes through ProcessWriter (serialisation and gzip in a child process): the
    same records in the same order as the direct writer; a waiting flush means on disk; the
    counters come back from the process; files rotate by size."""
    import functools

    from crawler_ext.warc.process import ProcessWriter

    def writer(directory: Path, max_size: int) -> WarcFileWriter:  # a picklable clock
        ids = (f"<urn:uuid:00000000-0000-0000-0000-{i:012d}>" for i in itertools.count())
        return WarcFileWriter(directory, prefix="test", max_size=max_size,
                              clock=functools.partial(str, "20260101000000000"),
                              stamps=RecordStamps(lambda: next(ids),
                                                  lambda: "2026-01-01T00:00:00.000000Z"))

    direct = writer(tmp_path / "direct", 10**9)
    direct.open()
    write_pages(direct, 30)
    write_pages(direct, 30)
    direct.close()
    child = ProcessWriter(writer(tmp_path / "process", 10**9))
    child.open()
    assert child._remote  # the process, not the thread
    write_pages(child, 30)  # type: ignore[arg-type]
    child.flush()
    on_disk = 0
    for path in (tmp_path / "process").glob("*.warc.gz*"):
        with open(path, "rb") as fh:
            on_disk += sum(r.rec_type == "response" for r in ArchiveIterator(fh))
    assert on_disk == 30 and child.records == 31  # (and the file's warcinfo)
    write_pages(child, 30)  # type: ignore[arg-type]
    child.close()
    assert _records(tmp_path / "process") == _records(tmp_path / "direct")
    assert [p.name for p in child.files] == [p.name for p in direct.files]
    assert child.records == direct.records == 61
    # (the warcinfo record's id and date are the process's own: sizes differ by a few bytes)
    assert abs(child.bytes_written - direct.bytes_written) < 100
    rotating = ProcessWriter(writer(tmp_path / "rotating", 3000))
    rotating.open()
    write_pages(rotating, 60)  # type: ignore[arg-type]
    rotating.close()
    assert len(rotating.files) > 3 and not list((tmp_path / "rotating").glob("*.open"))
    assert [r[1] for r in _records(tmp_path / "rotating") if r[0] == "response"] == \
        [f"http://e.com/{i}" for i in range(60)]


def test_a_write_error_in_the_writer_process_reaches_the_caller(tmp_path: Path) -> None:
    import pytest

    from crawler_ext.warc.process import ProcessWriter

    directory = tmp_path / "gone"
    child = ProcessWriter(WarcFileWriter(directory, prefix="t"))
    child.open()
    directory.rmdir()
    directory.write_text("a file where the WARC directory was")  # (fails as root too)
    write_pages(child, 2)  # type: ignore[arg-type]
    with pytest.raises(OSError):
        child.flush()
    with pytest.raises(OSError):
        write_pages(child, 1)  # type: ignore[arg-type]
    child.close()  # already told: close does not raise it again


def test_a_flush_without_a_durable_journal_does_not_wait(tmp_path: Path) -> None:
    """Without JOBDIR the frontier's commit asks the writer thread to flush and goes on: the
    caller never waits for the queue, and the records still reach the file, in order."""
    import threading
    import time

    from crawler_ext.warc.background import BackgroundWriter

    gate = threading.Event()

    class Slow(WarcFileWriter):
        def write_prepared(self, record):  # held until the caller has returned
            gate.wait(10)
            return super().write_prepared(record)

    writer = BackgroundWriter(Slow(tmp_path / "slow", prefix="t"))
    writer.open()
    write_pages(writer, 3)  # type: ignore[arg-type]
    started = time.monotonic()
    writer.flush(wait=False)
    assert time.monotonic() - started < 5.0  # (a waiting flush would block 10 s, at the gate)
    gate.set()
    deadline = time.monotonic() + 10
    found: list[str] = []
    while time.monotonic() < deadline and len(found) < 3:
        for path in (tmp_path / "slow").glob("*.warc.gz.open"):
            with open(path, "rb") as fh:
                found = [r.rec_headers.get_header("WARC-Target-URI")
                         for r in ArchiveIterator(fh) if r.rec_type == "response"]
        time.sleep(0.05)
    assert found == ["http://e.com/0", "http://e.com/1", "http://e.com/2"]  # flushed, in order
    writer.close()


def test_a_write_error_in_the_thread_reaches_the_caller_once(tmp_path: Path) -> None:
    import errno

    import pytest

    from crawler_ext.warc.background import BackgroundWriter

    class Full(WarcFileWriter):
        def write_prepared(self, record):  # the third record finds the disk full
            if self.records >= 3:
                self.broken = OSError(errno.ENOSPC, "No space left on device")
                raise self.broken
            return super().write_prepared(record)

    for check in ("flush", "close"):
        writer = BackgroundWriter(Full(tmp_path / check, prefix="t"))
        writer.open()
        try:  # (a thread faster than this loop tells it at one of the writes already)
            write_pages(writer, 5)  # type: ignore[arg-type]
            told = False
        except OSError as exc:
            assert "No space" in str(exc)
            told = True
        if check == "flush":
            if not told:
                with pytest.raises(OSError, match="No space"):
                    writer.flush()
            with pytest.raises(OSError, match="No space"):
                write_pages(writer, 1)  # type: ignore[arg-type]
            writer.close()  # already told: close does not raise it again
        elif told:
            writer.close()  # already told: close does not raise it again
        else:  # never flushed: close must still tell the caller
            with pytest.raises(OSError, match="No space"):
                writer.close()
        assert list((tmp_path / check).glob("*.open"))  # left for the next start to recover


def test_the_index_of_an_open_warc_file_waits_on_disk_and_closes_sorted(tmp_path: Path,
                                                                        monkeypatch) -> None:
    """The open file's CDXJ lines go to sorted run files (here every 3 lines), merged into
    the file's index at close; a crash's run files are removed by the recovery."""
    import random

    from crawler_ext.warc.spool import IndexSpool, remove_runs

    monkeypatch.setattr(IndexSpool, "RUN", 3)
    lines = [f"com,example)/p{n:03d} 20260101000000 {{}}" for n in range(20)]
    shuffled = lines[:]
    random.Random(7).shuffle(shuffled)
    spool = IndexSpool(tmp_path, "a.warc.gz")
    for line in shuffled:
        spool.add(line)
    assert len(list(tmp_path.glob(".a.warc.gz.cdxj.run-*"))) == 6  # 18 lines on disk
    spool.write_sorted(tmp_path / "a.cdxj")
    assert (tmp_path / "a.cdxj").read_text().splitlines() == lines
    assert list(tmp_path.glob(".*run-*")) == []
    left = IndexSpool(tmp_path, "b.warc.gz")  # a crash before close
    for line in shuffled:
        left.add(line)
    remove_runs(tmp_path)
    assert list(tmp_path.glob(".*run-*")) == []


def test_revisits_remember_each_urls_latest_payload_not_every_version(tmp_path: Path) -> None:
    """A continuous crawl: a page that changes at every fetch leaves one payload remembered,
    not one per version; an unchanged page and a mirror of it are still revisits."""
    from scrapy import Request
    from scrapy.http import HtmlResponse

    from crawler_ext.warc.pipeline import WarcPipeline

    pipeline = WarcPipeline(fixed_writer(tmp_path))
    pipeline.open_spider()

    def fetch(url: str, body: bytes) -> None:
        request = Request(url)
        pipeline.response_downloaded(HtmlResponse(url, body=body, request=request), request)

    for version in range(200):  # a page that changes every time
        fetch("http://e.com/news", b"<html>news %d</html>" % version)
    fetch("http://e.com/about", b"<html>about</html>")
    fetch("http://e.com/about", b"<html>about</html>")  # unchanged: a revisit
    fetch("http://mirror.e.com/about", b"<html>about</html>")  # a copy: a revisit
    pipeline.close_spider()
    assert len(pipeline._first_capture) == 2  # news' latest version, and about
    kinds = [(r.rec_headers.get_header("WARC-Target-URI"), r.rec_type)
             for path in sorted(tmp_path.glob("*.warc.gz"))
             for r in ArchiveIterator(path.open("rb")) if r.rec_type in ("response", "revisit")]
    assert kinds[-3:] == [("http://e.com/about", "response"), ("http://e.com/about", "revisit"),
                          ("http://mirror.e.com/about", "revisit")]
    assert sum(1 for _, kind in kinds if kind == "response") == 201


def test_the_gzip_level_reaches_the_writer_process_and_keeps_the_records(tmp_path: Path
                                                                       ) -> None:
    """CRAWLER_EXT_WARC_GZIP_LEVEL: the writer process compresses at the level it is given;
    the records read back the same, only the bytes on disk differ."""
    from crawler_ext.warc.process import ProcessWriter

    sizes = {}
    for level in (1, 9):
        child = ProcessWriter(WarcFileWriter(tmp_path / str(level), prefix="test",
                                             gzip_level=level))
        child.open()
        assert child._remote
        b = child.builder
        for i in range(20):
            body = (" ".join(f"word{(i * j) % 97}" for j in range(2000))).encode()
            child.write(b.create_warc_record(f"http://e.com/{i}", "resource",
                                             payload=io.BytesIO(body), length=len(body)))
        child.close()
        sizes[level] = child.bytes_written
    assert [r[1:] for r in _records(tmp_path / "1")] == [r[1:] for r in _records(tmp_path / "9")]
    assert sizes[1] > sizes[9] * 1.05
