"""A disk that fills up mid-crawl (a small tmpfs the test mounts; CI runs as root): the crawl
stops cleanly with one clear error, leaves nothing torn unrecovered, and the same command
resumes it after space is freed with no page lost."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import archived_uris, run_crawl

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=250k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill_when(web, fetched: int, filler: Path, seconds: float = 60.0) -> None:
    """Fill the file system of ``filler`` once the web has served ``fetched`` requests."""
    deadline = time.time() + seconds
    while len(web.log()) < fetched and time.time() < deadline:
        time.sleep(0.01)
    try:  # (the file system may be full already: then even the open fails)
        with open(filler, "wb") as fh:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
    except OSError:
        pass


@pytest.mark.parametrize("full", ["warc", "jobdir"])
def test_a_full_disk_stops_the_crawl_and_the_same_command_resumes_it(
        testweb_factory, tmp_path: Path, small_disk: Path, full: str) -> None:
    web = testweb_factory(hosts=20, pages=10, hazards=False)
    warcs = small_disk / "warcs" if full == "warc" else tmp_path / "warcs"
    jobdir = small_disk / "job" if full == "jobdir" else tmp_path / "job"
    settings = {"CRAWLER_EXT_HOSTS": web.hosts_setting, "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.1,
                "ROBOTSTXT_OBEY": False, "CRAWLER_EXT_WARC_DIR": str(warcs),
                "JOBDIR": str(jobdir), "CRAWLER_EXT_BLOOM_CAPACITY": 1000,
                "CRAWLER_EXT_BLOOM_SNAPSHOT_INTERVAL": 1}
    filler = small_disk / "filler"
    if full == "jobdir":
        # the frontier's engine (RocksDB) writes a log that grows slowly: fill the disk once
        # the crawl is under way, so that its next commit fails
        subprocess.run(["mount", "-o", "remount,size=50m", str(small_disk)], check=True)
        threading.Thread(target=fill_when, args=(web, 50, filler), daemon=True).start()
    first = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "a.jsonl",
                      settings=settings)
    assert first.returncode == 0, first.output[-3000:]
    assert first.stats.get("finish_reason") == "disk_full", first.output[-3000:]
    assert first.stat(f"disk_full/{full}") == 1
    # (Scrapy's own SpiderState extension may fail to save its JOBDIR file too)
    errors = [line for line in first.output.splitlines()
              if " ERROR: " in line and "SpiderState" not in line]
    assert len(errors) == 1 and "is full" in errors[0], "\n".join(errors)
    assert len(web.log()) < 200  # it stopped mid-crawl

    filler.unlink(missing_ok=True)
    subprocess.run(["mount", "-o", "remount,size=50m", str(small_disk)], check=True)
    second = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "b.jsonl",
                       settings=settings)
    assert second.returncode == 0, second.output[-3000:]
    assert second.stats.get("finish_reason") == "finished"
    pages = {(e.host, e.path) for e in web.log()}
    assert len(pages) == 200, "a page admitted before the disk filled up was lost"
    assert not list(warcs.glob("*.open"))
    assert len(archived_uris(warcs)) >= 200
