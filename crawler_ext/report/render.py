"""Draw a crawl's time series (:mod:`crawler_ext.report.timeseries`) as one HTML file.

``python -m crawler_ext.report JOBDIR -o report.html``: plots drawn with matplotlib as SVG,
embedded in the file (it needs no network to be viewed), and tables of the slowest and most
backed-off hosts and of the politeness check (each key's smallest gap between two requests
beside the delay its previous response asked for).  The WARC directory is found from the
crawl's recorded settings.
"""

from __future__ import annotations

import html
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from crawler_ext.report.plots import (
    Plots,
    draw_bands,
    draw_busiest,
    draw_duplicates,
    draw_harvest,
    draw_hosts,
    draw_harvest_curve,
    draw_relevance,
    draw_robots,
    draw_status,
    draw_warc,
    plot_lines,
)
from crawler_ext.report.runs import ReportError, Run, find_series, load, rates, stat

__all__ = ["Run", "ReportError", "find_series", "load", "render"]

#: a request earlier than its required delay by more than this (seconds) is a violation
SLACK_TOLERANCE = 0.001

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


def content_kinds(stats: dict[str, Any]) -> str:
    """``html 1,204 · pdf 12 (3 refused)``: the content processors' documents by kind."""
    read: dict[str, int] = {}
    refused: dict[str, int] = {}
    for key, value in stats.items():
        parts = key.split("/")
        if len(parts) != 3 or parts[0] != "processor" or parts[1] in ("sniff", "workers"):
            continue
        target = read if parts[2] == "processed" else refused
        target[parts[1]] = target.get(parts[1], 0) + int(value)
    return " · ".join(f"{kind} {read.get(kind, 0):,}" + (f" ({refused[kind]:,} refused)"
                                                         if refused.get(kind) else "")
                      for kind in sorted(set(read) | set(refused)))


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def render(runs: list[Run]) -> str:
    """The report as one HTML document."""
    last = runs[-1]
    stats = last.last_stats
    hosts = last.hosts
    plots = Plots()
    plots.add("fetches", "Fetches per second",
              lambda ax: plot_lines(ax, rates(runs, stat("downloader/response_count")),
                                "responses/s", axis_label="per second"))
    plots.add("bands", "Frontier queue, and its front queues by band", draw_bands(runs))
    plots.add("hosts", "Active hosts and requests in flight", draw_hosts(runs))
    plots.add("busiest", "Busiest hosts: pages and largest delay", draw_busiest(hosts))
    plots.add("status", "Response status mix", draw_status(runs))
    plots.add("duplicates", "Duplicate rates (URL and content) and admission rejections",
              draw_duplicates(runs))
    plots.add("robots", "robots.txt outcomes", draw_robots(stats))
    plots.add("warc", "WARC bytes", draw_warc(runs))
    if stats.get("focus/fetched"):  # a focused crawl
        plots.add("harvest", "Focused crawl: harvest rate (on-topic pages / fetched)",
                  draw_harvest(runs))
        plots.add("harvest_curve", "Focused crawl: harvest curve (on-topic pages against "
                  "pages fetched) and the classifier's confidence", draw_harvest_curve(runs))
        plots.add("relevance", "Focused crawl: fetched pages by relevance",
                  draw_relevance(stats))

    end = last.final["time"] if last.final else (last.samples[-1]["time"] if last.samples
                                                 else last.start["time"])
    settings = last.start.get("settings", {})
    warc_dir, warc_files = _warc_files(last)
    violations, tightest = politeness_check(hosts)
    in_flight = settings.get("CRAWLER_EXT_POLITENESS_MAX_IN_FLIGHT", 1) or 1
    summary: list[list[Any]] = [
        ["spider", last.start.get("spider")],
        ["runs (a resumed crawl has several)", len(runs)],
        ["began", _when(runs[0].start["time"])],
        ["last sample", _when(end)],
        ["finish reason", last.final["reason"] if last.final else "(still running or killed)"],
        ["pages fetched (this run)", stats.get("downloader/response_count", 0)],
        ["items scraped (this run)", stats.get("item_scraped_count", 0)],
        ["politeness violations (frontier)", stats.get("frontier/politeness_violations", 0)],
        ["hosts parked: at close / for errors / their queued URLs",
         f"{stats.get('frontier/parked', 0)} / {stats.get('frontier/hosts_failing', 0)} / "
         f"{stats.get('frontier/parked_pending', 0)}"],
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
    kinds = content_kinds(stats)
    if kinds:
        summary.append(["documents by content kind: read (refused)", kinds])
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
