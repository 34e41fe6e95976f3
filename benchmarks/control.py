"""The control API's cost: the CPU-bound crawl of the real-site corpus with the API off, and
on with a client asking ``GET /status`` and ``GET /keys`` once a second (what the live page
does every two), side by side, alternated, median of three runs each."""

from __future__ import annotations

import contextlib
import json
import socket
import statistics
import threading
import urllib.request
from collections.abc import Iterator

from benchmarks.harness import table

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
    from benchmarks.cpu import corpus_rates

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    modes = {"off": {}, "on, polled": {"CRAWLER_EXT_CONTROL_ENABLED": True,
                                       "CRAWLER_EXT_CONTROL_PORT": port,
                                       "CRAWLER_EXT_CONTROL_TOKEN": TOKEN}}
    polls: list[int] = []

    @contextlib.contextmanager
    def poller(mode: str) -> Iterator[None]:
        if mode == "off":
            yield
            return
        stop, answered = threading.Event(), [0]
        thread = threading.Thread(target=_poll, daemon=True,
                                  args=(f"http://127.0.0.1:{port}/", stop, answered))
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            polls.append(answered[0])

    runs = 1 if quick else 3
    sites, rates, _ = corpus_rates(modes, runs, poller)
    off, on = statistics.median(rates["off"]), statistics.median(rates["on, polled"])
    table(f"CPU-bound crawl of the real-site corpus ({sites} sites), the control API off, "
          f"and on and polled once a second (median of {runs} each, alternated)",
          ["control API", "pages/s (median)", "runs", "answers polled", "ratio to off"],
          [["off", off, ", ".join(f"{r:.0f}" for r in rates["off"]), "", 1.0],
           ["on, polled", on, ", ".join(f"{r:.0f}" for r in rates["on, polled"]),
            ", ".join(map(str, polls)), on / off]])
