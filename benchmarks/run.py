"""Benchmarks: crawler_ext against stock Scrapy and scrapy-redis on the same crawls, in one run.

    python benchmarks/run.py [politeness] [priority] [priority_real] [scale] [seen] [dedup]
                             [warc] [distributed] [realsites] [hostile] [engines] [scale50] [cpu]
                             [distributed_scale] [recrawl] [render] [dispatch] [outlinks]
                             [soak] [fuzz] [processors] [focus] [control] [outputs]
                             [nemesis] [broad] [broad_workers] [broad_memory] [capacity] [--quick]

Every figure is measured here, side by side, and printed as a table of ratios; the machine's
noise affects all rows of one table alike.  Crawls run the reference `web` spider in a
subprocess against the test web on loopback and are judged by the server's request log.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # the checkout, not this folder: benchmark modules by package name

#: each benchmark: the module of benchmarks/ that holds it, and its function there
BENCHES = {
    "politeness": ("politeness", "bench_politeness"),
    "priority": ("priority", "bench_priority"),
    "priority_real": ("priority", "bench_priority_real"),
    "scale": ("scale", "bench_scale"),
    "seen": ("seen", "bench_seen"),
    "dedup": ("dedup", "bench_dedup"),
    "warc": ("warc", "bench_warc"),
    "distributed": ("distributed", "bench_distributed"),
    "realsites": ("realsites", "bench_realsites"),
    "hostile": ("hostile", "bench_hostile"),
    "engines": ("engines", "bench_engines"),
    "scale50": ("scale", "bench_scale50"),
    "cpu": ("cpu", "bench_cpu"),
    "distributed_scale": ("distributed", "bench_distributed_scale"),
    "outlinks": ("outlinks", "bench_outlinks"),
    "soak": ("soak", "bench_soak"),
    "fuzz": ("fuzz", "bench_fuzz"),
    "recrawl": ("recrawl", "bench_recrawl"),
    "render": ("render", "bench_render"),
    "dispatch": ("scale", "bench_dispatch"),
    "processors": ("processors", "bench_processors"),
    "focus": ("focus", "bench_focus"),
    "control": ("control", "bench_control"),
    "outputs": ("outputs", "bench_outputs"),
    "nemesis": ("nemesis", "bench_nemesis"),
    "broad": ("broad", "bench_broad"),
    "broad_workers": ("broad", "bench_broad_workers"),
    "broad_memory": ("broadmem", "bench_broad_memory"),
    "capacity": ("capacity", "bench_capacity"),
}
#: measurements run in a process of their own (``harness.in_child``): module, function
CHILDREN = {
    "scale": ("scale", "scale_run"),
    "disk-frontier": ("engines", "disk_frontier_run"),
    "engine-feed": ("cpu", "engine_feed"),
    "pdf-library": ("processors", "pdf_library_run"),
    "capacity": ("capacity", "simulate"),
}


def _function(module: str, name: str):
    return getattr(importlib.import_module(f"benchmarks.{module}"), name)


def _child(kind: str, *args: str) -> None:
    """Run one measurement in this process (a clean RSS) and print it as JSON: numbers as
    numbers, words as words."""
    values = [int(a) if a.lstrip("-").isdigit() else a for a in args]
    print(json.dumps(_function(*CHILDREN[kind])(*values)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help=f"any of: {', '.join(BENCHES)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHES)}")
    for name in args.names or list(BENCHES):
        started = time.time()
        _function(*BENCHES[name])(args.quick)
        print(f"\n({name}: {time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
