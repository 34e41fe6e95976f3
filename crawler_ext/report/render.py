"""Draw a crawl's time series (:mod:`crawler_ext.report.timeseries`) as one HTML file.

``python -m crawler_ext.report JOBDIR -o report.html``: plots drawn with matplotlib as SVG,
embedded in the file (it needs no network to be viewed), and tables of the slowest and most
backed-off hosts and of the politeness check (each key's smallest gap between two requests
beside the delay its previous response asked for).  The WARC directory is found from the
crawl's recorded settings.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from crawler_ext.report.timeseries import REPORT_NAME

__all__ = ["Run", "ReportError", "find_series", "load", "render"]

#: a request earlier than its required delay by more than this (seconds) is a violation
SLACK_TOLERANCE = 0.001
PLOT_SIZE = (9.0, 3.2)


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
def _series(runs: list[Run], value: Callable[[dict[str, Any]], float | None]
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


def _rates(runs: list[Run], value: Callable[[dict[str, Any]], float]
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


def _stat(name: str) -> Callable[[dict[str, Any]], float]:
    return lambda sample: float(sample["stats"].get(name, 0))


def _prefix_sum(prefix: str) -> Callable[[dict[str, Any]], float]:
    return lambda sample: float(sum(v for k, v in sample["stats"].items()
                                    if k.startswith(prefix)))


def _ratio(num: Callable[[dict[str, Any]], float], den: Callable[[dict[str, Any]], float]
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


# -- plots -------------------------------------------------------------------------------
class _Plots:
    def __init__(self) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt = plt
        self.figures: list[tuple[str, str, str]] = []  # (name, title, data URI)

    def add(self, name: str, title: str, draw: Callable[[Any], bool]) -> None:
        fig, ax = self.plt.subplots(figsize=PLOT_SIZE)
        try:
            drawn = draw(ax)
            if not drawn:
                ax.text(0.5, 0.5, "no data in this crawl", ha="center", va="center",
                        transform=ax.transAxes, color="#888")
                ax.set_xticks([])
                ax.set_yticks([])
            ax.set_title(title, fontsize=11, loc="left")
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8, loc="upper left", framealpha=0.7)
            fig.tight_layout()
            buffer = io.BytesIO()
            fig.savefig(buffer, format="svg")
        finally:
            self.plt.close(fig)
        uri = "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode()
        self.figures.append((name, title, uri))


def _lines(ax: Any, pairs: list[tuple[list[float], list[float]]], label: str,
           color: str | None = None, axis_label: str = "") -> bool:
    drawn = False
    for i, (xs, ys) in enumerate(pairs):
        if xs:
            ax.plot(xs, ys, label=label if not drawn else None, color=color, lw=1.4)
            drawn = True
    if drawn:
        ax.set_xlabel("seconds since the crawl began")
        if axis_label:
            ax.set_ylabel(axis_label)
    return drawn


def _draw_bands(runs: list[Run]) -> Callable[[Any], bool]:
    """The frontier's queue, and under it the front queues by band (URLs not yet moved into
    a host's back queue); the delayed entries (due later) apart."""
    def draw(ax: Any) -> bool:
        origin = runs[0].start["time"]
        labelled = False
        for run in runs:
            samples = [s for s in run.samples if any((s.get("frontier") or {}).get("bands")
                                                     or ())]
            if not samples:
                continue
            xs = [s["time"] - origin for s in samples]
            width = max(len(s["frontier"]["bands"]) for s in samples)
            bands = [[(s["frontier"]["bands"] + [0] * width)[b] for s in samples]
                     for b in range(width)]
            ax.stackplot(xs, *bands, alpha=0.6, labels=None if labelled else
                         [f"front queue, band {b}" for b in range(width)])
            labelled = True
        drawn = _lines(ax, _series(runs, lambda s: (s.get("frontier") or {}).get("queued")),
                       "queued (all bands, back queues included)", color="#1f4e79")
        _lines(ax, _series(runs, lambda s: (s.get("frontier") or {}).get("delayed") or None),
               "delayed (due later)", color="grey")
        if drawn:
            ax.set_ylabel("URLs")
        return drawn or labelled
    return draw


def _draw_hosts(runs: list[Run]) -> Callable[[Any], bool]:
    def draw(ax: Any) -> bool:
        a = _lines(ax, _series(runs, lambda s: (s.get("frontier") or {}).get("active_hosts")),
                   "active hosts")
        b = _lines(ax, _series(runs, lambda s: (s.get("frontier") or {}).get("in_flight")),
                   "requests in flight")
        return a or b
    return draw


def _draw_busiest(hosts: list[dict[str, Any]]) -> Callable[[Any], bool]:
    def draw(ax: Any) -> bool:
        top = sorted(hosts, key=lambda h: -h["responses"])[:15][::-1]
        if not top:
            return False
        names = [h["key"] for h in top]
        ax.barh(names, [h["responses"] for h in top], color="#4a7ab5", label="pages")
        ax.set_xlabel("pages fetched")
        ax.tick_params(axis="y", labelsize=7)
        twin = ax.twiny()
        twin.plot([h["max_delay"] for h in top], names, "o", color="#d2691e",
                  label="largest delay (s)")
        twin.set_xlabel("largest delay, seconds", color="#d2691e")
        return True
    return draw


def _draw_status(runs: list[Run]) -> Callable[[Any], bool]:
    def draw(ax: Any) -> bool:
        prefix = "downloader/response_status_count/"
        codes = sorted({k[len(prefix):] for run in runs for s in run.samples
                        for k in s["stats"] if k.startswith(prefix)})
        drawn = False
        for code in codes:
            drawn |= _lines(ax, _rates(runs, _stat(prefix + code)), f"HTTP {code}")
        errors = _rates(runs, _stat("downloader/exception_count"))
        if any(ys and max(ys) > 0 for _, ys in errors):
            drawn |= _lines(ax, errors, "errors", color="black")
        if drawn:
            ax.set_ylabel("responses per second")
        return drawn
    return draw


def _draw_duplicates(runs: list[Run]) -> Callable[[Any], bool]:
    content_dups = (lambda s: float(s["stats"].get("dedup/exact", 0))
                    + float(s["stats"].get("dedup/near", 0)))
    judged = (lambda s: content_dups(s) + float(s["stats"].get("dedup/unique", 0)))

    def draw(ax: Any) -> bool:
        met = (lambda s: float(s["stats"].get("dupefilter/checks", 0))
               + float(s["stats"].get("frontier/known_links", 0)))
        a = _lines(ax, _ratio(_stat("dupefilter/filtered"), met)(runs),
                   "known URLs per link met")
        b = _lines(ax, _ratio(content_dups, judged)(runs), "content duplicates per page")
        ax.set_ylabel("share")
        traps = _rates(runs, _prefix_sum("admission/rejected/"))
        if any(ys for _, ys in traps):
            twin = ax.twinx()
            _lines(twin, traps, "admission rejections /s", color="#b22222")
            twin.set_ylabel("rejections per second", color="#b22222")
            twin.legend(fontsize=8, loc="upper right", framealpha=0.7)
            return True
        return a or b
    return draw


def _draw_robots(stats: dict[str, Any]) -> Callable[[Any], bool]:
    def draw(ax: Any) -> bool:
        rows = sorted((k[len("robots/"):], v) for k, v in stats.items()
                      if k.startswith("robots/") and isinstance(v, (int, float)))
        if not rows:
            return False
        ax.bar([name for name, _ in rows], [v for _, v in rows], color="#6b8e23")
        ax.tick_params(axis="x", labelsize=8, rotation=30)
        ax.set_ylabel("count")
        return True
    return draw


def _draw_warc(runs: list[Run]) -> Callable[[Any], bool]:
    def draw(ax: Any) -> bool:
        drawn = _lines(ax, _series(runs, lambda s: s["stats"].get("warc/bytes", 0) / 1e6),
                       "WARC bytes written (MB)", axis_label="MB")
        return drawn and any(ys and max(ys) > 0 for _, ys in
                             _series(runs, lambda s: s["stats"].get("warc/bytes")))
    return draw


# -- tables ------------------------------------------------------------------------------
def _table(head: list[str], rows: list[list[Any]], cls: str = "") -> str:
    if not rows:
        return "<p class='none'>none</p>"
    out = [f"<table class='{cls}'><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head)
           + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>")
    return "\n".join(out) + "</table>"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def politeness_check(hosts: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """Keys whose smallest gap fell short of the delay asked for, and the 20 tightest keys."""
    judged = [h for h in hosts if h.get("min_slack") is not None]
    violations = sum(1 for h in judged if h["min_slack"] < -SLACK_TOLERANCE)
    return violations, sorted(judged, key=lambda h: h["min_slack"])[:20]


def _warc_files(run: Run) -> tuple[str | None, list[tuple[str, int]]]:
    settings = run.start.get("settings", {})
    directory = settings.get("CRAWLER_EXT_WARC_DIR")
    if not directory:
        return None, []
    path = Path(run.start.get("cwd") or ".") / directory
    if not path.is_dir():
        return str(path), []
    files = sorted(p for p in path.iterdir() if p.name.endswith((".warc", ".warc.gz")))
    return str(path), [(p.name, p.stat().st_size) for p in files]


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def render(runs: list[Run]) -> str:
    """The report as one HTML document."""
    last = runs[-1]
    stats = last.last_stats
    hosts = last.hosts
    plots = _Plots()
    plots.add("fetches", "Fetches per second",
              lambda ax: _lines(ax, _rates(runs, _stat("downloader/response_count")),
                                "responses/s", axis_label="per second"))
    plots.add("bands", "Frontier queue, and its front queues by band", _draw_bands(runs))
    plots.add("hosts", "Active hosts and requests in flight", _draw_hosts(runs))
    plots.add("busiest", "Busiest hosts: pages and largest delay", _draw_busiest(hosts))
    plots.add("status", "Response status mix", _draw_status(runs))
    plots.add("duplicates", "Duplicate rates (URL and content) and admission rejections",
              _draw_duplicates(runs))
    plots.add("robots", "robots.txt outcomes", _draw_robots(stats))
    plots.add("warc", "WARC bytes", _draw_warc(runs))

    end = last.final["time"] if last.final else (last.samples[-1]["time"] if last.samples
                                                 else last.start["time"])
    settings = last.start.get("settings", {})
    warc_dir, warc_files = _warc_files(last)
    violations, tightest = politeness_check(hosts)
    in_flight = settings.get("CRAWLER_EXT_POLITENESS_MAX_IN_FLIGHT", 1) or 1
    summary = [
        ["spider", last.start.get("spider")],
        ["runs (a resumed crawl has several)", len(runs)],
        ["began", _when(runs[0].start["time"])],
        ["last sample", _when(end)],
        ["finish reason", last.final["reason"] if last.final else "(still running or killed)"],
        ["pages fetched (this run)", stats.get("downloader/response_count", 0)],
        ["items scraped (this run)", stats.get("item_scraped_count", 0)],
        ["politeness violations (frontier)", stats.get("frontier/politeness_violations", 0)],
        ["WARC directory", warc_dir or "(archiving off)"],
        ["WARC files / bytes", f"{len(warc_files)} / {sum(s for _, s in warc_files):,}"],
    ]
    if stats.get("render/checked"):  # the rendering pool was on
        failed = stats.get("render/timeouts", 0) + stats.get("render/failed", 0)
        summary.append(["app shells: detected / rendered / failed / sub-requests blocked / "
                        "mean render ms",
                        f"{stats.get('render/detected', 0)} / {stats.get('render/rendered', 0)}"
                        f" / {failed} / {stats.get('render/subrequests_blocked', 0)} / "
                        f"{stats.get('render/ms', '-')}"])
    slow = sorted(hosts, key=lambda h: (-h["backoffs"], -h["max_delay"]))[:15]
    figures = "\n".join(
        f"<figure class='plot' id='plot-{name}'><img alt='{html.escape(title)}' "
        f"data-plot='{name}' src='{uri}'><figcaption>{html.escape(title)}</figcaption></figure>"
        for name, title, uri in plots.figures)
    verdict = (f"{violations} politeness key(s) got a request before the delay their previous "
               f"response asked for" if violations else
               "every key's requests kept the delay its previous response asked for")
    if in_flight > 1:
        verdict += (f" (CRAWLER_EXT_POLITENESS_MAX_IN_FLIGHT={in_flight}: requests in flight "
                    "together are not a violation)")
    return _PAGE.format(
        title=html.escape(f"Crawl report: {last.start.get('spider')}"),
        summary=_table(["", ""], summary, "summary"),
        figures=figures,
        slow=_table(["key", "requests", "pages", "backoffs", "delay now (s)",
                     "largest delay (s)"],
                    [[h["key"], h["requests"], h["responses"], h["backoffs"], h["delay"],
                      h["max_delay"]] for h in slow]),
        verdict=html.escape(verdict), verdict_class="bad" if violations else "good",
        tight=_table(["key", "requests", "smallest gap (s)", "gap minus required delay (s)"],
                     [[h["key"], h["requests"], h["min_gap"], h["min_slack"]]
                      for h in tightest]),
        warcs=_table(["file", "bytes"], [[n, f"{s:,}"] for n, s in warc_files]),
        settings=_table(["setting", "value"], [[k, json.dumps(v, default=str)]
                                               for k, v in sorted(settings.items())]),
    )


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 960px;
       color: #222; }}
figure.plot {{ margin: 1em 0; }} figure.plot img {{ width: 900px; height: 320px; }}
figcaption {{ display: none; }}
table {{ border-collapse: collapse; margin: .5em 0 1.5em; font-size: 13px; }}
td, th {{ border: 1px solid #ccc; padding: 2px 8px; text-align: left; }}
.good {{ color: #1a7f37; }} .bad {{ color: #b22222; font-weight: bold; }}
#render-check {{ display: none; }}
</style></head>
<body>
<h1>{title}</h1>
{summary}
<h2>Over time</h2>
{figures}
<h2>Slowest and most backed-off hosts</h2>
{slow}
<h2>Politeness check</h2>
<p class="{verdict_class}">{verdict}.</p>
<p>Smallest gap between two successive requests of a key, beside the delay its previous
response asked for; the tightest keys:</p>
{tight}
<h2>WARC files</h2>
{warcs}
<h2>Settings of the crawl</h2>
{settings}
<pre id="render-check"></pre>
<script>
// a record of how the browser laid the plots out (read by the report's own test)
window.addEventListener("load", function () {{
  var out = [];
  document.querySelectorAll("figure.plot img").forEach(function (img) {{
    var r = img.getBoundingClientRect();
    out.push({{plot: img.dataset.plot, loaded: img.complete && img.naturalWidth > 0,
              x: r.left + window.scrollX, y: r.top + window.scrollY,
              w: r.width, h: r.height}});
  }});
  document.getElementById("render-check").textContent = JSON.stringify(
      {{plots: out, height: document.documentElement.scrollHeight}});
}});
</script>
</body></html>
"""
