"""The control API's cost: the CPU-bound crawl of the real-site corpus with the API off, and
on with a client asking ``GET /status`` and ``GET /keys`` once a second (what the live page
does every two), side by side, alternated, median of three runs each."""

from __future__ import annotations

import json
import socket
import statistics
import tempfile
import threading
import urllib.request
from pathlib import Path

from benchmarks.harness import crawl, table
from testweb import read_log

__all__ = ["bench_control"]

TOKEN = "benchmark-token"


def _poll(url: str, stop: threading.Event, answered: list[int]) -> None:
    """``GET /status`` and ``GET /keys`` once a second until ``stop``."""
    while not stop.wait(1.0):
        for path in ("status", "keys?limit=100"):
            request = urllib.request.Request(url + path)
            request.add_header("Authorization", f"Bearer {TOKEN}")
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    json.loads(response.read())
                    answered[0] += 1
            except OSError:
                pass  # (not listening yet, or closed)


def bench_control(quick: bool) -> None:
    from benchmarks.cpu import PACK_CPU, _rate95
    from testweb.corpus import build_corpus
    from testweb.static import RealWebServer

    sites = build_corpus()
    runs = 1 if quick else 3
    rates: dict[str, list[float]] = {"off": [], "on": []}
    polls: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for round_ in range(runs):
            for mode in ("off", "on"):  # alternated: the machine's drift hits both alike
                with RealWebServer(sites, workdir=work / f"{mode}{round_}") as web:
                    seeds = ",".join(web.url(n) for n in web.sites)
                    settings = {**PACK_CPU, "CONCURRENT_REQUESTS": 64}
                    stop, answered = threading.Event(), [0]
                    poller = None
                    if mode == "on":
                        with socket.socket() as s:
                            s.bind(("127.0.0.1", 0))
                            port = s.getsockname()[1]
                        settings.update(CRAWLER_EXT_CONTROL_ENABLED=True,
                                        CRAWLER_EXT_CONTROL_PORT=port,
                                        CRAWLER_EXT_CONTROL_TOKEN=TOKEN)
                        poller = threading.Thread(target=_poll, daemon=True, args=(
                            f"http://127.0.0.1:{port}/", stop, answered))
                        poller.start()
                    try:
                        crawl(web, settings, seeds, work, "-a", "allowed_domains=real.test")
                    finally:
                        stop.set()
                    if poller is not None:
                        poller.join()
                        polls.append(answered[0])
                    rates[mode].append(_rate95(read_log(web.log_path)))
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    table(f"CPU-bound crawl of the real-site corpus ({len(sites)} sites), the control API off, "
          f"and on and polled once a second (median of {runs} each, alternated)",
          ["control API", "pages/s (median)", "runs", "answers polled", "ratio to off"],
          [["off", off, ", ".join(f"{r:.0f}" for r in rates["off"]), "", 1.0],
           ["on, polled", on, ", ".join(f"{r:.0f}" for r in rates["on"]),
            ", ".join(map(str, polls)), on / off]])
