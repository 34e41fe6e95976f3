"""Soak: a continuous crawl -- recrawl on, the disk frontier under JOBDIR, WARC on -- of a
changing test web for ``SOAK_MINUTES`` (60 by default: RocksDB's bounded memtables and block
cache fill during the first 30 to 40 minutes at this page rate; 3 with --quick), sampled every 10 s:
the crawl's RSS (its worker processes included), open file descriptors, threads, processes,
JOBDIR size, log volume and pages fetched.  Judged over the last 20 minutes (the last two
thirds of a shorter run), so that a longer run shows whether bounded memory has filled: RSS
growth in MB per hour (a least-squares slope), the spread of descriptors, threads and
processes, and JOBDIR bytes per page fetched in that window.  The samples go to ``SOAK_OUT``
(default benchmarks/soak.json) and a plot to benchmarks/soak.png; ``SOAK_SETTINGS`` adds
settings to the crawl (``NAME=value`` pairs, space-separated), for comparisons."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import ROOT, disk_usage, table
from testweb import TestWebServer, read_log


def _tree(pid: int) -> list:
    import psutil

    try:
        parent = psutil.Process(pid)
        return [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _sample(pid: int, jobdir: Path, log: Path, requests: Path, started: float) -> dict | None:
    import psutil

    procs = _tree(pid)
    if not procs:
        return None
    rss = fds = threads = 0
    for p in procs:
        try:
            rss += p.memory_info().rss
            fds += p.num_fds()
            threads += p.num_threads()
        except psutil.NoSuchProcess:
            continue
    pages = sum(1 for _ in requests.open()) if requests.exists() else 0
    return {"t": round(time.time() - started, 1), "rss_mb": round(rss / 2**20, 2), "fds": fds,
            "threads": threads, "processes": len(procs),
            "jobdir_mb": round(disk_usage(jobdir) / 2**20, 3) if jobdir.exists() else 0.0,
            "log_kb": round(log.stat().st_size / 1024, 1) if log.exists() else 0.0,
            "pages": pages}


def _slope_per_hour(xs: list[float], ys: list[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return 0.0 if not var else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var * 3600


def _plot(samples: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s["t"] / 60 for s in samples]
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    for ax, key, label in ((axes[0][0], "rss_mb", "RSS, MB (crawl + workers)"),
                           (axes[0][1], "jobdir_mb", "JOBDIR, MB"),
                           (axes[1][0], "fds", "open descriptors / threads / processes"),
                           (axes[1][1], "pages", "pages fetched")):
        ax.plot(t, [s[key] for s in samples])
        if key == "fds":
            ax.plot(t, [s["threads"] for s in samples])
            ax.plot(t, [s["processes"] for s in samples])
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("minutes")
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def bench_soak(quick: bool) -> None:
    minutes = 3.0 if quick else float(os.environ.get("SOAK_MINUTES", "60"))
    out = Path(os.environ.get("SOAK_OUT", ROOT / "benchmarks" / "soak.json"))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        jobdir, log = work / "job", work / "crawl.log"
        with TestWebServer(hosts=40, pages=25, hazards=False, latency=0.005,
                           workdir=work / "web", change_period=30.0) as web:
            cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a",
                   f"seeds={web.seeds_path}", "-s", f"CRAWLER_EXT_HOSTS={web.hosts_setting}",
                   "-s", "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.0/8", "-s", f"JOBDIR={jobdir}",
                   "-s", f"CRAWLER_EXT_WARC_DIR={work / 'warcs'}",
                   "-s", "CRAWLER_EXT_RECRAWL_ENABLED=True",
                   "-s", "CRAWLER_EXT_RECRAWL_MIN_INTERVAL=30",
                   "-s", "CRAWLER_EXT_RECRAWL_MAX_INTERVAL=600",
                   "-s", "CRAWLER_EXT_POLITENESS_MIN_DELAY=0.5", "-s", "LOG_LEVEL=INFO",
                   "-s", f"CLOSESPIDER_TIMEOUT={int(minutes * 60)}",
                   "-s", f"LOG_FILE={log}",
                   "-s", f"CRAWLER_EXT_STATS_FILE={work / 'stats.json'}"]
            # more settings, to compare (e.g. SOAK_SETTINGS=CRAWLER_EXT_FRONTIER_DISK_ENGINE=sqlite)
            for pair in os.environ.get("SOAK_SETTINGS", "").split():
                cmd += ["-s", pair]
            started = time.time()
            proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            samples = []
            while proc.poll() is None:
                sample = _sample(proc.pid, jobdir, log, web.log_path, started)
                if sample is not None and sample["t"] <= minutes * 60:
                    samples.append(sample)
                    if len(samples) % 30 == 0:
                        print(f"soak: {sample}", flush=True)
                time.sleep(10)
            warcs = disk_usage(work / "warcs")
            fetched = len(read_log(web.log_path))
            stats_path = work / "stats.json"
            stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    out.write_text(json.dumps({"minutes": minutes, "exit": proc.returncode, "samples": samples,
                               "fetched": fetched, "warc_mb": round(warcs / 2**20, 1),
                               "stats": stats}))
    _plot(samples, out.with_suffix(".png"))
    window = min(20.0, minutes * 2 / 3)
    tail = [s for s in samples if s["t"] >= (minutes - window) * 60]
    xs = [s["t"] for s in tail]
    pages = tail[-1]["pages"] - tail[0]["pages"]
    grown = tail[-1]["jobdir_mb"] - tail[0]["jobdir_mb"]
    rows = [["RSS growth, MB per hour", _slope_per_hour(xs, [s["rss_mb"] for s in tail])],
            ["RSS at the window's start / end, MB", f"{tail[0]['rss_mb']} / {tail[-1]['rss_mb']}"]]
    for key in ("fds", "threads", "processes"):
        values = [s[key] for s in tail]
        rows.append([f"{key}: min / max", f"{min(values)} / {max(values)}"])
    rows += [["pages fetched in the window", pages],
             ["JOBDIR growth in the window, MB", round(grown, 3)],
             ["JOBDIR bytes per page fetched in the window",
              round(grown * 2**20 / pages) if pages else "-"],
             ["log growth in the window, KB", round(tail[-1]["log_kb"] - tail[0]["log_kb"], 1)],
             ["crawl exit code", proc.returncode]]
    table(f"Soak: {minutes:g} minutes of continuous crawling (recrawl, disk frontier under JOBDIR, "
          f"WARC), judged over the last {window:g} minutes; samples every 10 s "
          f"({out.name}, plot {out.with_suffix('.png').name})", ["measure", "value"], rows)
