"""The cost of the downstream outputs: the CPU-bound crawl of the real-site corpus with
everything off, with WET and WAT on, and with the link graph on, side by side, alternated,
median of three runs each; the cost per page of each."""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from benchmarks.harness import crawl, table
from testweb import read_log

__all__ = ["bench_outputs"]

MODES = {"off": {}, "WET + WAT": {"CRAWLER_EXT_WET_ENABLED": True,
                                  "CRAWLER_EXT_WAT_ENABLED": True},
         "link graph": {"CRAWLER_EXT_LINKGRAPH_DIR": "{work}/graph"}}


def bench_outputs(quick: bool) -> None:
    from benchmarks.cpu import PACK_CPU, _rate95
    from testweb.corpus import build_corpus
    from testweb.static import RealWebServer

    sites = build_corpus()
    runs = 1 if quick else 3
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for round_ in range(runs):
            for mode, extra in MODES.items():  # alternated: drift hits every mode alike
                run = work / f"{len(rates[mode])}-{mode.replace(' ', '')}"
                with RealWebServer(sites, workdir=run) as web:
                    seeds = ",".join(web.url(n) for n in web.sites)
                    settings = {**PACK_CPU, "CONCURRENT_REQUESTS": 64,
                                **{k: v.format(work=run) if isinstance(v, str) else v
                                   for k, v in extra.items()}}
                    stats = crawl(web, settings, seeds, run, "-a", "allowed_domains=real.test")
                    rates[mode].append(_rate95(read_log(web.log_path)))
                    sizes[mode] = int(stats.get("warc/bytes", 0)) + \
                        int(stats.get("linkgraph/bytes", 0))
    off = statistics.median(rates["off"])
    rows = []
    for mode in MODES:
        rate = statistics.median(rates[mode])
        cost = (1 / rate - 1 / off) * 1e3 if mode != "off" else 0.0
        rows.append([mode, rate, ", ".join(f"{r:.0f}" for r in rates[mode]), rate / off,
                     f"{cost:+.2f}", sizes[mode] / 1e6])
    table(f"CPU-bound crawl of the real-site corpus ({len(sites)} sites): outputs off and on "
          f"(median of {runs} each, alternated)",
          ["outputs", "pages/s (median)", "runs", "ratio to off", "ms a page", "MB written"],
          rows)
