"""``python -m crawler_ext.workers -n N -- ARGS...``: N processes of ``scrapy ARGS...`` on one
shared frontier.

    python -m crawler_ext.workers -n auto -- crawl web -a seeds=seeds.txt

Each worker is ``scrapy ARGS...`` with the Redis frontier switched on
(``CRAWLER_EXT_FRONTIER_BACKEND=redis``) at ``REDIS_URL`` (``--redis-url``, else the
environment's ``REDIS_URL``, else ``redis://127.0.0.1:6379``), its keys named after the crawl
(``CRAWLER_EXT_REDIS_KEY=<crawl>:frontier``; ``--crawl``, by default the spider's name): the
workers share one seen set and one politeness, a host leased by one worker at a time.  A
worker's log goes to ``<log dir>/worker-<n>.log``; the terminal shows one merged progress
line every ``--progress`` seconds.  SIGINT or SIGTERM is forwarded to every worker once, to
a worker still starting as soon as its crawl runs (a second one forces them all at once, as
Scrapy's own second Ctrl-C does); when they are all done their
stats are merged into ``<log dir>/stats.json``.  Exit status: 0 when every worker exited 0;
1 when one failed (named, with its log); 2 for bad arguments or a Redis that does not answer
(one line, nothing started).  Run it again with the same ``--crawl`` to resume the crawl from
Redis; ``python -m crawler_ext.distributed reset --yes --key <crawl>:frontier`` starts over.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from crawler_ext.workers.merge import merge_stats

__all__ = ["main", "worker_command"]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379"
#: Scrapy's LogStats line: the pages a worker fetched so far
_CRAWLED = re.compile(rb"Crawled (\d+) pages")


def _count(value: str) -> int:
    if value == "auto":
        return os.cpu_count() or 1
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: a number of workers or 'auto'") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: at least one worker")
    return n


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m crawler_ext.workers",
        description="Run N Scrapy processes on one shared frontier in Redis (one politeness).",
        epilog="example: python -m crawler_ext.workers -n auto -- crawl web -a seeds=seeds.txt")
    parser.add_argument("-n", "--workers", type=_count, default="auto",
                        help="processes to start: a number, or 'auto' (one per core; default)")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL,
                        help="the shared frontier's Redis (default: $REDIS_URL, else "
                             f"{DEFAULT_REDIS_URL})")
    parser.add_argument("--cluster", action="store_true", help="--redis-url is a cluster node")
    parser.add_argument("--crawl", help="the crawl's name: its Redis keys are <crawl>:frontier "
                                        "(default: the spider's name)")
    parser.add_argument("--log-dir", type=Path,
                        help="the workers' logs and stats (default: crawler_ext-workers/<crawl>)")
    parser.add_argument("--progress", type=float, default=10.0,
                        help="seconds between two progress lines (default 10)")
    parser.add_argument("args", nargs=argparse.REMAINDER,
                        help="-- then the scrapy command each worker runs (crawl SPIDER ...)")
    return parser


def worker_command(args: list[str], n: int, redis_url: str, crawl: str, log_dir: Path,
                   cluster: bool = False, progress: float = 10.0) -> list[str]:
    """The command line of worker ``n``: ``scrapy ARGS...`` on the shared frontier."""
    settings = {"CRAWLER_EXT_FRONTIER_BACKEND": "redis", "REDIS_URL": redis_url,
                "CRAWLER_EXT_REDIS_KEY": f"{crawl}:frontier",
                "CRAWLER_EXT_STATS_FILE": str(log_dir / f"stats-{n}.json"),
                "LOGSTATS_INTERVAL": max(1.0, progress)}
    if cluster:
        settings["CRAWLER_EXT_REDIS_CLUSTER"] = True
    command = [sys.executable, "-m", "scrapy", *args]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return command


class _Worker:
    def __init__(self, n: int, command: list[str], log: Path, stats: Path) -> None:
        self.n, self.log, self.stats = n, log, stats
        with log.open("ab") as out:  # (the child keeps its own descriptor)
            # a session of its own: a terminal's Ctrl-C reaches this process only, which
            # forwards it once (twice would force the worker to stop at once)
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        self._read = 0
        self.pages = 0
        self.held: int | None = None  # a signal to send once it is up
        self.told = False  # a signal was sent or held for it
        self._up = False

    @property
    def up(self) -> bool:
        """Whether its crawl's engine runs (its stats file's ``.running`` marker, or the stats
        themselves).  A shutdown signal sent before then is lost or half-handled: dropped when
        SIGINT came ignored from the parent (a background job), else the interpreter's
        KeyboardInterrupt while it starts, or Scrapy's stop of a crawl whose engine is not
        running yet, which ends the process with no finish reason."""
        if not self._up:
            self._up = self.stats.with_name(self.stats.name + ".running").exists() or \
                self.stats.exists()
        return self._up

    def signal(self, signum: int, force: bool) -> None:
        """Send ``signum`` now if it is up (or ``force``), else once it is."""
        if self.process.poll() is not None:
            return
        self.told = True
        if force or self.up:
            self.held = None
            self.process.send_signal(signum)
        else:
            self.held = signum

    def send_held(self) -> None:
        """The signal held for it, if it is up now."""
        if self.held is not None and self.process.poll() is None and self.up:
            self.signal(self.held, True)

    def poll_pages(self) -> int:
        """The pages its log says it fetched so far (its latest LogStats line)."""
        try:
            with self.log.open("rb") as file:
                file.seek(self._read)
                text = file.read()
        except OSError:
            return self.pages
        cut = text.rfind(b"\n") + 1  # (a line being written is read next time)
        self._read += cut
        found = _CRAWLED.findall(text[:cut])
        if found:
            self.pages = int(found[-1])
        return self.pages


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    opts = parser.parse_args(argv)
    args = opts.args[1:] if opts.args[:1] == ["--"] else opts.args
    if not args:
        parser.error("no scrapy command: add -- crawl SPIDER ...")
    crawl = opts.crawl or (args[1] if args[0] == "crawl" and len(args) > 1 else "crawl")
    from crawler_ext.distributed.cli import RedisUnreachable, connect, crawl_status

    try:
        redis = connect(opts.redis_url, opts.cluster)
    except RedisUnreachable as exc:
        print(f"crawler_ext.workers: {exc}", file=sys.stderr)
        return 2
    log_dir = opts.log_dir or Path("crawler_ext-workers") / crawl
    log_dir.mkdir(parents=True, exist_ok=True)
    for old in log_dir.glob("stats-*.json*"):  # (a run before this one, and its markers)
        old.unlink()
    workers: list[_Worker] = []
    stopping: list[int] = []

    def forward(signum: int, frame: Any) -> None:
        stopping.append(signum)
        print(f"crawler_ext.workers: {signal.Signals(signum).name}: stopping the workers"
              f"{' at once' if len(stopping) > 1 else ''}", flush=True)
        for worker in workers:  # (the second one forces them, up or not)
            worker.signal(signum, force=len(stopping) > 1)

    # (before the first worker starts: a signal from then on is never lost, nor the
    # interpreter's KeyboardInterrupt here)
    old_handlers = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    for n in range(opts.workers):
        workers.append(_Worker(n, worker_command(args, n, opts.redis_url, crawl, log_dir,
                                                 opts.cluster, opts.progress),
                               log_dir / f"worker-{n}.log", log_dir / f"stats-{n}.json"))
        if stopping and not workers[-1].told:  # (a signal came while the others started)
            workers[-1].signal(stopping[-1], force=len(stopping) > 1)
    print(f"crawler_ext.workers: {len(workers)} workers of `scrapy {' '.join(args)}` on "
          f"{opts.redis_url} (keys {crawl}:frontier); logs in {log_dir}", flush=True)
    started = last = time.monotonic()
    last_pages = 0
    try:
        while any(w.process.poll() is None for w in workers):
            time.sleep(0.2)
            for worker in workers:
                worker.send_held()
            now = time.monotonic()
            if now - last >= opts.progress:
                pages = sum(w.poll_pages() for w in workers)
                print(_progress(workers, pages, (pages - last_pages) / (now - last),
                                _queued(redis, crawl, crawl_status)), flush=True)
                last, last_pages = now, pages
    finally:
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
    return _finish(workers, log_dir, time.monotonic() - started)


def _queued(redis: Any, crawl: str, status: Any) -> str:
    try:
        figures = status(redis, f"{crawl}:frontier", f"{crawl}:start_urls")
    except Exception:  # noqa: BLE001 -- a progress line is not worth a failed crawl
        return "Redis not answering"
    return f"{figures['entries']:,} queued, {figures['leased_hosts']:,} hosts leased"


def _progress(workers: list[_Worker], pages: int, rate: float, queued: str) -> str:
    running = sum(1 for w in workers if w.process.poll() is None)
    return (f"crawler_ext.workers: {running} of {len(workers)} running, {pages:,} pages "
            f"({rate:.1f}/s), {queued}")


def _finish(workers: list[_Worker], log_dir: Path, elapsed: float) -> int:
    stats = []
    for worker in workers:
        path = log_dir / f"stats-{worker.n}.json"
        if path.exists():
            try:
                stats.append(json.loads(path.read_text()))
            except ValueError:
                pass
    merged = merge_stats(stats)
    merged["workers/elapsed_seconds"] = round(elapsed, 3)
    (log_dir / "stats.json").write_text(json.dumps(merged, indent=1, sort_keys=True,
                                                   default=str))
    failed = [w for w in workers if w.process.returncode != 0]
    pages = int(merged.get("response_received_count", 0))
    print(f"crawler_ext.workers: done in {elapsed:.0f} s: {pages:,} pages "
          f"({pages / elapsed if elapsed else 0:.1f}/s), finish reason "
          f"{merged.get('finish_reason', 'unknown')}; stats in {log_dir / 'stats.json'}",
          flush=True)
    if failed:
        print("crawler_ext.workers: " + "; ".join(
            f"worker {w.n} exited {w.process.returncode} (see {w.log})" for w in failed),
            file=sys.stderr)
        return 1
    return 0
