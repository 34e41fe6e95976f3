"""What every benchmark shares: the rows' settings (stock Scrapy, scrapy-redis), a table
printer, one `scrapy crawl` against the test web, a measurement in a process of its own, and
the process's memory and a directory's disk use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from testweb import TestWebServer  # noqa: E402

__all__ = ["REDIS", "ROOT", "STOCK", "crawl", "disk_usage", "fmt", "in_child", "rss_bytes",
           "table"]

#: the reference project uses the add-on, which refuses another SCHEDULER: a row that swaps the
#: scheduler turns the add-on off and keeps the pack's other components by hand, so the rows of
#: one table differ in the scheduler (and its dupefilter) only
_PACK_BUT_SCHEDULER = {
    "ADDONS": '{"crawler_ext.Addon": null}',
    "TWISTED_DNS_RESOLVER": "crawler_ext.dns.CachingResolver",
    "EXTENSIONS": '{"crawler_ext.statsfile.StatsFile": 0}',
    "DOWNLOADER_MIDDLEWARES": '{"crawler_ext.netguard.NetworkGuardMiddleware": 10, '
                              '"crawler_ext.middlewares.ContentDedupMiddleware": 450}',
    "ITEM_PIPELINES": '{"crawler_ext.pipelines.WarcPipeline": 800}',
}
STOCK = {**_PACK_BUT_SCHEDULER, "SCHEDULER": "scrapy.core.scheduler.Scheduler",
         "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter"}
REDIS = {**_PACK_BUT_SCHEDULER, "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
         "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
         "REDIS_URL": "redis://127.0.0.1:6379/15", "SCHEDULER_FLUSH_ON_START": True}


def table(title: str, header: list[str], rows: list[list]) -> None:
    print(f"\n## {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(fmt(v) for v in row) + " |")
    sys.stdout.flush()


def fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def crawl(web: TestWebServer, settings: dict, seeds: str, workdir: Path, *spider_args: str,
          timeout: float = 900, env: dict | None = None) -> dict:
    """Run `scrapy crawl web` once; return its final stats."""
    stats_file = workdir / f"stats-{time.monotonic_ns()}.json"
    settings = {"CRAWLER_EXT_WARC_DIR": str(workdir / "warcs"),
                "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8", **settings}
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={seeds}", *spider_args,
           "-s", f"CRAWLER_EXT_HOSTS={web.hosts_setting}", "-s", "LOG_LEVEL=WARNING",
           "-s", f"CRAWLER_EXT_STATS_FILE={stats_file}"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))
    if proc.returncode != 0 or not stats_file.exists():
        raise RuntimeError(f"crawl failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(stats_file.read_text())


def in_child(kind: str, *args: object, timeout: float = 7200, python: bool = False) -> dict:
    """``python``: the modules setup.py compiles imported as Python (CRAWLER_EXT_PURE_PYTHON)."""
    env = {**os.environ, "CRAWLER_EXT_PURE_PYTHON": "1"} if python else None
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--child", kind, *map(str, args)],
                          stdout=subprocess.PIPE, text=True, timeout=timeout, cwd=ROOT, env=env)
    if proc.returncode:
        raise RuntimeError(f"{kind} {args}: exit {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def disk_usage(path: Path) -> int:
    """Bytes the directory takes on disk (allocated blocks: sparse files count as written)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())
