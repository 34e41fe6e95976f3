"""``python -m testweb.demo``: crawl the test web with the reference project and summarise.

Starts the test web on loopback, runs ``scrapy crawl web`` over it (from the checkout's
project, with every crawler_ext component on), then prints pages, hosts, statuses, what
admission rejected, duplicates, the WARC files written, and the politeness check of the
server's request log.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from testweb import TestWebServer, politeness_violations

PROJECT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testweb.demo", description=__doc__)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=5, help="pages per host")
    parser.add_argument("--min-delay", type=float, default=0.25)
    parser.add_argument("--max-delay", type=float, default=1.0)
    parser.add_argument("--out", help="directory for items, stats and the request log")
    args = parser.parse_args(argv)
    if not (PROJECT / "scrapy.cfg").exists():
        print("demo: run it from a checkout of crawler_ext (pip install -e .)", file=sys.stderr)
        return 2
    out = Path(args.out or tempfile.mkdtemp(prefix="crawler-ext-demo-"))
    out.mkdir(parents=True, exist_ok=True)
    with TestWebServer(hosts=args.hosts, pages=args.pages, workdir=out / "web") as web:
        print(f"Test web: {args.hosts} hosts x {args.pages} pages on 127.0.0.1:{web.port}; "
              f"crawling (min delay {args.min_delay} s per host)...", flush=True)
        cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={web.seeds_path}",
               "-O", f"{out / 'items.jsonl'}:jsonlines", "-s", "LOG_LEVEL=ERROR",
               "-s", f"CRAWLER_EXT_HOSTS={web.hosts_setting}",
               "-s", "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.0/8",
               "-s", f"CRAWLER_EXT_POLITENESS_MIN_DELAY={args.min_delay}",
               "-s", f"CRAWLER_EXT_POLITENESS_MAX_DELAY={args.max_delay}",
               "-s", "CRAWLER_EXT_POLITENESS_BACKOFF_MAX=4",
               "-s", "CRAWLER_EXT_ROBOTS_RETRY_BASE=1",
               "-s", f"CRAWLER_EXT_STATS_FILE={out / 'stats.json'}",
               "-s", f"CRAWLER_EXT_WARC_DIR={out / 'warcs'}"]
        started = time.time()
        proc = subprocess.run(cmd, cwd=PROJECT, env=dict(os.environ, PYTHONPATH=str(PROJECT)))
        elapsed = time.time() - started
        log = web.log()
    if proc.returncode != 0:
        print(f"demo: the crawl failed (exit {proc.returncode})", file=sys.stderr)
        return proc.returncode
    stats = json.loads((out / "stats.json").read_text())
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines() if line]
    statuses = Counter(e.status for e in log)
    rejected = {k.split("/", 2)[2]: v for k, v in stats.items() if k.startswith("admission/rejected/")}
    violations = politeness_violations([e for e in log if e.path != "/robots.txt"],
                                       args.min_delay)
    print(f"\nCrawled in {elapsed:.1f} s")
    print(f"  pages (items):        {len(items)}")
    print(f"  requests served:      {len(log)} ({len(log) / max(elapsed, 1e-9):.0f}/s)")
    print(f"  hosts:                {len({e.host for e in log})}")
    print(f"  statuses:             {', '.join(f'{s}: {n}' for s, n in sorted(statuses.items()))}")
    print(f"  admission rejected:   {', '.join(f'{k}: {v}' for k, v in sorted(rejected.items())) or 'none'}")
    print(f"  duplicate URLs seen:  {stats.get('dupefilter/filtered', 0)}")
    print(f"  duplicate content:    {stats.get('dedup/exact', 0)} exact, "
          f"{stats.get('dedup/near', 0)} near (of {stats.get('dedup/unique', 0)} unique pages)")
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    print(f"  WARC files:           {len(warcs)} ({stats.get('warc/bytes', 0) / 1e6:.1f} MB, "
          f"{stats.get('warc/records/revisit', 0)} revisit records)")
    print(f"  politeness violations (request log): {len(violations)}")
    print(f"\nItems, stats and the request log are in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
