"""``python -m crawler_ext.workers -n N -- ARGS...``: every core on one crawl, one command.

Real processes, the machine's Redis (database 8, this file's own) and the test web; the
server's request log judges: every page once, no host faster than its delay.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT, local_redis

from crawler_ext.workers.merge import merge_stats
from testweb import politeness_violations, read_log

REDIS_URL = "redis://127.0.0.1:6379/8"


@pytest.fixture
def redis():
    yield from local_redis(REDIS_URL)


def workers_command(web, tmp_path: Path, n: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "crawler_ext.workers", "-n", str(n), "--redis-url",
            REDIS_URL, "--log-dir", str(tmp_path / "logs"), "--progress", "1", *extra, "--",
            "crawl", "web", "-a", f"seeds={web.seeds_path}",
            "-s", f"CRAWLER_EXT_HOSTS={web.hosts_setting}",
            "-s", "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.0/8",
            "-s", f"CRAWLER_EXT_WARC_DIR={tmp_path / 'warcs'}",
            "-s", "CRAWLER_EXT_POLITENESS_MIN_DELAY=0.5",
            "-s", "CRAWLER_EXT_POLITENESS_MAX_DELAY=0.5", "-s", "CONCURRENT_REQUESTS=8"]


def test_the_workers_stats_merge_into_the_crawls() -> None:
    merged = merge_stats([
        {"response_received_count": 10, "memusage/max": 5, "frontier/delay_max": 1.5,
         "start_time": "2026-12-05 10:00:01", "finish_time": "2026-12-05 10:05:00",
         "elapsed_time_seconds": 299.0, "finish_reason": "finished"},
        {"response_received_count": 7, "memusage/max": 9, "frontier/delay_max": 0.5,
         "start_time": "2026-12-05 10:00:00", "finish_time": "2026-12-05 10:06:00",
         "elapsed_time_seconds": 360.0, "finish_reason": "shutdown"}])
    assert merged["response_received_count"] == 17
    assert merged["memusage/max"] == 9 and merged["frontier/delay_max"] == 1.5
    assert merged["start_time"] == "2026-12-05 10:00:00"
    assert merged["finish_time"] == "2026-12-05 10:06:00"
    assert merged["elapsed_time_seconds"] == 360.0
    assert merged["finish_reason"] == "finished,shutdown" and merged["workers/count"] == 2
    # a figure one worker could not measure (None: a worker stopped before its first
    # sample) and another did: the measured one
    merged = merge_stats([{"report/seconds": None}, {"report/seconds": 0.25},
                          {"report/seconds": 0.5}])
    assert merged["report/seconds"] == 0.75


def test_a_redis_that_does_not_answer_stops_it_with_one_line(tmp_path: Path) -> None:
    from conftest import free_port

    url = f"redis://127.0.0.1:{free_port()}"
    proc = subprocess.run([sys.executable, "-m", "crawler_ext.workers", "-n", "2",
                           "--redis-url", url, "--log-dir", str(tmp_path / "logs"), "--",
                           "crawl", "web"], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"crawler_ext.workers: Redis at {url}")
    assert not (tmp_path / "logs").exists()  # nothing started
    bad = subprocess.run([sys.executable, "-m", "crawler_ext.workers", "-n", "0", "--",
                          "crawl", "web"], capture_output=True, text=True, cwd=ROOT,
                         timeout=60)
    assert bad.returncode == 2 and "at least one worker" in bad.stderr


@pytest.mark.slow
def test_two_workers_fetch_every_page_once_and_stay_polite(redis, testweb_factory,
                                                            tmp_path: Path) -> None:
    web = testweb_factory(hosts=12, pages=8, hazards=False)
    proc = subprocess.run(workers_command(web, tmp_path, 2), capture_output=True, text=True,
                          cwd=ROOT, timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    log = read_log(web.log_path)
    fetched = Counter((e.host, e.path) for e in log)
    pages = {(url.split("//", 1)[1].split(":")[0], "/" + url.split("/", 3)[3])
             for url in web.truth()["pages"]}
    assert pages <= set(fetched), sorted(pages - set(fetched))[:10]
    assert {k: v for k, v in fetched.items() if v > 1} == {}
    assert politeness_violations(log, 0.5) == []
    logs = tmp_path / "logs"
    stats = [json.loads((logs / f"stats-{n}.json").read_text()) for n in range(2)]
    assert all(s.get("response_received_count", 0) > 0 for s in stats)  # both worked
    merged = json.loads((logs / "stats.json").read_text())
    assert merged["workers/count"] == 2 and merged["finish_reason"] == "finished"
    assert merged["response_received_count"] == sum(s["response_received_count"]
                                                    for s in stats)
    assert "crawler_ext.workers: 2 of 2 running" in proc.stdout  # the merged progress line
    assert redis.keys("web:frontier*") or redis.keys("{web:frontier*")  # the crawl's keys


def _interrupted(web, tmp_path: Path, ready: Callable[[str], bool],
                 sigint_ignored: bool = False) -> tuple[int, str, dict, str]:
    """Run the command on ``web`` with two workers, send it SIGINT at the first line of its
    output that is ``ready``; its exit code, output, merged stats and, for a failure's
    message, each worker's start, signal and close as its log says."""
    # (a process started with SIGINT ignored passes that on)
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if sigint_ignored else None
    try:
        proc = subprocess.Popen(workers_command(web, tmp_path, 2), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if ready(line):
                break
        else:
            pytest.fail("the command ended before the line to interrupt it at")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    logs = tmp_path / "logs"
    merged = json.loads((logs / "stats.json").read_text())
    story = "\n".join(line for log in sorted(logs.glob("worker-*.log"))
                      for line in [log.name, *log.read_text().splitlines()]
                      if line.startswith("worker-") or re.search(
                          r"Spider opened|Received SIG|Closing spider|Crawled \d+ pages", line))
    return proc.returncode, out, merged, story


@pytest.mark.slow
def test_sigint_before_the_workers_run_still_stops_them_cleanly(redis, testweb_factory,
                                                                tmp_path: Path) -> None:
    """Ctrl-C at once: a worker still importing or opening its spider would drop the signal
    (started with SIGINT ignored, as a shell starts a background job), die of the
    interpreter's KeyboardInterrupt or end with no finish reason; the command holds the
    signal until each worker's crawl runs (its stats file's ``.running`` marker)."""
    web = testweb_factory(hosts=40, pages=30, hazards=False)
    code, out, merged, story = _interrupted(
        web, tmp_path, lambda line: "2 workers of" in line,  # started, nothing crawled yet
        sigint_ignored=True)
    assert code == 0, out[-3000:]
    assert merged["workers/count"] == 2 and merged["finish_reason"] == "shutdown", story
    assert not list((tmp_path / "logs").glob("*.running"))
    assert len(read_log(web.log_path)) < 40 * 31  # stopped before the end


def _crawling(line: str) -> bool:
    """A progress line with pages fetched: the workers crawl."""
    match = re.search(r"running, ([\d,]+) pages", line)
    return bool(match) and int(match.group(1).replace(",", "")) > 0


@pytest.mark.slow
def test_sigint_stops_every_worker_cleanly(redis, testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=40, pages=30, hazards=False)
    code, out, merged, story = _interrupted(web, tmp_path, _crawling)
    assert code == 0, out[-3000:]
    assert "SIGINT: stopping the workers" in out
    assert merged["workers/count"] == 2 and merged["finish_reason"] == "shutdown", story
    assert len(read_log(web.log_path)) < 40 * 31  # stopped before the end
