"""A crawl's runs as its time series recorded them (:mod:`crawler_ext.report.timeseries`):
found, loaded, and read as series of samples for the report's plots and tables."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from crawler_ext.report.timeseries import REPORT_NAME

__all__ = ["ReportError", "Run", "find_series", "load", "prefix_sum", "rates", "ratio",
           "series", "stat"]


class ReportError(ValueError):
    """The input is not a crawl report (one line for the command line)."""


@dataclass
class Run:
    """One run of the crawl (a resumed JOBDIR holds several): start, samples, final."""

    start: dict[str, Any]
    samples: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, Any] | None = None

    @property
    def last_stats(self) -> dict[str, Any]:
        if self.final is not None:
            return self.final["stats"]
        return self.samples[-1]["stats"] if self.samples else {}

    @property
    def hosts(self) -> list[dict[str, Any]]:
        if self.final is not None:
            return self.final["hosts"]
        return self.samples[-1].get("hosts", []) if self.samples else []


def find_series(target: str | os.PathLike[str]) -> Path:
    path = Path(target)
    if path.is_dir():
        path = path / REPORT_NAME
    if not path.is_file():
        raise ReportError(f"no crawl report at {path} (crawl with JOBDIR set, or "
                          f"CRAWLER_EXT_REPORT_FILE, and CRAWLER_EXT_REPORT_INTERVAL > 0)")
    return path


def load(path: Path) -> list[Run]:
    """The runs of a time series; a line cut short by a kill is skipped."""
    runs: list[Run] = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            kind = record.get("type") if isinstance(record, dict) else None
            if kind == "start":
                runs.append(Run(record))
            elif runs and kind == "sample":
                runs[-1].samples.append(record)
            elif runs and kind == "final":
                runs[-1].final = record
    if not runs:
        raise ReportError(f"{path} holds no crawl report records")
    return runs


# -- series ------------------------------------------------------------------------------
def series(runs: list[Run], value: Callable[[dict[str, Any]], float | None]
            ) -> list[tuple[list[float], list[float]]]:
    """One (times, values) pair per run; times in seconds since the first run began."""
    origin = runs[0].start["time"]
    out = []
    for run in runs:
        xs, ys = [], []
        for sample in run.samples:
            y = value(sample)
            if y is not None:
                xs.append(sample["time"] - origin)
                ys.append(y)
        out.append((xs, ys))
    return out


def rates(runs: list[Run], value: Callable[[dict[str, Any]], float]
           ) -> list[tuple[list[float], list[float]]]:
    """Per-second rate of a cumulative figure between successive samples of each run."""
    origin = runs[0].start["time"]
    out = []
    for run in runs:
        xs, ys = [], []
        previous = (run.start["time"], 0.0)
        for sample in run.samples:
            t, v = sample["time"], value(sample)
            if t > previous[0]:
                xs.append(t - origin)
                ys.append((v - previous[1]) / (t - previous[0]))
            previous = (t, v)
        out.append((xs, ys))
    return out


def stat(name: str) -> Callable[[dict[str, Any]], float]:
    return lambda sample: float(sample["stats"].get(name, 0))


def prefix_sum(prefix: str) -> Callable[[dict[str, Any]], float]:
    return lambda sample: float(sum(v for k, v in sample["stats"].items()
                                    if k.startswith(prefix)))


def ratio(num: Callable[[dict[str, Any]], float], den: Callable[[dict[str, Any]], float]
           ) -> Callable[[list[Run]], list[tuple[list[float], list[float]]]]:
    """Interval ratio of two cumulative figures (e.g. duplicates per check), per run."""
    def series(runs: list[Run]) -> list[tuple[list[float], list[float]]]:
        origin = runs[0].start["time"]
        out = []
        for run in runs:
            xs, ys, prev = [], [], (0.0, 0.0)
            for sample in run.samples:
                n, d = num(sample), den(sample)
                if d > prev[1]:
                    xs.append(sample["time"] - origin)
                    ys.append((n - prev[0]) / (d - prev[1]))
                prev = (n, d)
            out.append((xs, ys))
        return out
    return series
