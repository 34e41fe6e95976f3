"""The cost of the downstream outputs: the CPU-bound crawl of the real-site corpus with
everything off, with WET and WAT on, with the link graph on, with the fetch-event stream on
(to the machine's Redis, db 13, a stream trimmed to 100,000 entries) and with all of them,
side by side, alternated, median of three runs each; the cost per page of each."""

from __future__ import annotations

import statistics

from benchmarks.harness import table

__all__ = ["bench_outputs"]

MODES = {"off": {}, "WET + WAT": {"CRAWLER_EXT_WET_ENABLED": True,
                                  "CRAWLER_EXT_WAT_ENABLED": True},
         "link graph": {"CRAWLER_EXT_LINKGRAPH_DIR": "{work}/graph"},
         "events": {"CRAWLER_EXT_EVENTS_URL": "redis://127.0.0.1:6379/13",
                    "CRAWLER_EXT_EVENTS_STREAM": "crawler_ext.bench.events",
                    "CRAWLER_EXT_EVENTS_MAXLEN": 100_000},
         "events + WET + WAT": {"CRAWLER_EXT_EVENTS_URL": "redis://127.0.0.1:6379/13",
                                "CRAWLER_EXT_EVENTS_STREAM": "crawler_ext.bench.events",
                                "CRAWLER_EXT_EVENTS_MAXLEN": 100_000,
                                "CRAWLER_EXT_WET_ENABLED": True,
                                "CRAWLER_EXT_WAT_ENABLED": True}}


def bench_outputs(quick: bool) -> None:
    from benchmarks.cpu import corpus_rates

    runs = 1 if quick else 3
    sites, rates, last = corpus_rates(MODES, runs)
    off = statistics.median(rates["off"])
    rows = []
    for mode in MODES:
        rate = statistics.median(rates[mode])
        written = int(last[mode].get("warc/bytes", 0)) + int(last[mode].get("linkgraph/bytes", 0))
        rows.append([mode, rate, ", ".join(f"{r:.0f}" for r in rates[mode]), rate / off,
                     f"{(1 / rate - 1 / off) * 1e3:+.2f}", written / 1e6])
    table(f"CPU-bound crawl of the real-site corpus ({sites} sites): outputs off and on "
          f"(median of {runs} each, alternated)",
          ["outputs", "pages/s (median)", "runs", "ratio to off", "ms a page", "MB written"],
          rows)
