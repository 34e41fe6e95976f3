"""The crawl report's plots, drawn with matplotlib as SVG data URIs (no network needed to
view them)."""

from __future__ import annotations

import base64
import io
from typing import Any, Callable

from crawler_ext.report.runs import Run, prefix_sum, rates, ratio, series, stat

__all__ = ["Plots", "draw_bands", "draw_busiest", "draw_duplicates", "draw_hosts",
           "draw_robots", "draw_status", "draw_warc", "plot_lines"]

PLOT_SIZE = (9.0, 3.2)


class Plots:
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


def plot_lines(ax: Any, pairs: list[tuple[list[float], list[float]]], label: str,
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


def draw_bands(runs: list[Run]) -> Callable[[Any], bool]:
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
            # at most 16 layers (a focused crawl may keep 101 bands): neighbours drawn as one
            groups = [[b for b in range(width) if b * min(width, 16) // width == g]
                      for g in range(min(width, 16))]
            bands = [[sum((s["frontier"]["bands"] + [0] * width)[b] for b in group)
                      for s in samples] for group in groups]
            ax.stackplot(xs, *bands, alpha=0.6, labels=None if labelled else
                         [f"front queue, band {g[0]}" if len(g) == 1 else
                          f"front queue, bands {g[0]}-{g[-1]}" for g in groups])
            labelled = True
        drawn = plot_lines(ax, series(runs, lambda s: (s.get("frontier") or {}).get("queued")),
                       "queued (all bands, back queues included)", color="#1f4e79")
        plot_lines(ax, series(runs, lambda s: (s.get("frontier") or {}).get("delayed") or None),
               "delayed (due later)", color="grey")
        if drawn:
            ax.set_ylabel("URLs")
        return drawn or labelled
    return draw


def draw_hosts(runs: list[Run]) -> Callable[[Any], bool]:
    def draw(ax: Any) -> bool:
        a = plot_lines(ax, series(runs, lambda s: (s.get("frontier") or {}).get("active_hosts")),
                   "active hosts")
        b = plot_lines(ax, series(runs, lambda s: (s.get("frontier") or {}).get("in_flight")),
                   "requests in flight")
        return a or b
    return draw


def draw_busiest(hosts: list[dict[str, Any]]) -> Callable[[Any], bool]:
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


def draw_status(runs: list[Run]) -> Callable[[Any], bool]:
    def draw(ax: Any) -> bool:
        prefix = "downloader/response_status_count/"
        codes = sorted({k[len(prefix):] for run in runs for s in run.samples
                        for k in s["stats"] if k.startswith(prefix)})
        drawn = False
        for code in codes:
            drawn |= plot_lines(ax, rates(runs, stat(prefix + code)), f"HTTP {code}")
        errors = rates(runs, stat("downloader/exception_count"))
        if any(ys and max(ys) > 0 for _, ys in errors):
            drawn |= plot_lines(ax, errors, "errors", color="black")
        if drawn:
            ax.set_ylabel("responses per second")
        return drawn
    return draw


def draw_duplicates(runs: list[Run]) -> Callable[[Any], bool]:
    content_dups = (lambda s: float(s["stats"].get("dedup/exact", 0))
                    + float(s["stats"].get("dedup/near", 0)))
    judged = (lambda s: content_dups(s) + float(s["stats"].get("dedup/unique", 0)))

    def draw(ax: Any) -> bool:
        met = (lambda s: float(s["stats"].get("dupefilter/checks", 0))
               + float(s["stats"].get("frontier/known_links", 0)))
        a = plot_lines(ax, ratio(stat("dupefilter/filtered"), met)(runs),
                   "known URLs per link met")
        b = plot_lines(ax, ratio(content_dups, judged)(runs), "content duplicates per page")
        ax.set_ylabel("share")
        traps = rates(runs, prefix_sum("admission/rejected/"))
        if any(ys for _, ys in traps):
            twin = ax.twinx()
            plot_lines(twin, traps, "admission rejections /s", color="#b22222")
            twin.set_ylabel("rejections per second", color="#b22222")
            twin.legend(fontsize=8, loc="upper right", framealpha=0.7)
            return True
        return a or b
    return draw


def draw_robots(stats: dict[str, Any]) -> Callable[[Any], bool]:
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


def draw_warc(runs: list[Run]) -> Callable[[Any], bool]:
    def draw(ax: Any) -> bool:
        drawn = plot_lines(ax, series(runs, lambda s: s["stats"].get("warc/bytes", 0) / 1e6),
                       "WARC bytes written (MB)", axis_label="MB")
        return drawn and any(ys and max(ys) > 0 for _, ys in
                             series(runs, lambda s: s["stats"].get("warc/bytes")))
    return draw


def draw_harvest(runs: list[Run]) -> Callable[[Any], bool]:
    """A focused crawl's harvest rate (on-topic pages / fetched pages) over time."""
    def draw(ax: Any) -> bool:
        pairs = series(runs, lambda s: s["stats"].get("focus/harvest_rate"))
        return plot_lines(ax, pairs, "harvest rate", color="#2e7d32", axis_label="harvest rate")
    return draw


def draw_harvest_curve(runs: list[Run]) -> Callable[[Any], bool]:
    """A focused crawl's harvest curve: on-topic pages against pages fetched (the diagonal
    would be every page on topic), with the classifier's confidence beside it."""
    def draw(ax: Any) -> bool:
        drawn = False
        for run in runs:
            points = [(s["stats"].get("focus/fetched"), s["stats"].get("focus/relevant", 0),
                       s["stats"].get("focus/confidence")) for s in run.samples]
            points = [p for p in points if p[0]]
            if not points:
                continue
            ax.plot([p[0] for p in points], [p[1] for p in points], color="#2e7d32", lw=1.4,
                    label=None if drawn else "on-topic pages")
            if not drawn:
                top = points[-1][0]
                ax.plot([0, top], [0, top], color="#999999", lw=0.8, ls=":",
                        label="every page on topic")
                twin = ax.twinx()
                twin.set_ylim(0, 1)
                twin.set_ylabel("classifier confidence")
            twin.plot([p[0] for p in points], [p[2] or 0.0 for p in points], color="#8e24aa",
                      lw=1.0, ls="--")
            drawn = True
        if drawn:
            ax.set_xlabel("pages fetched")
            ax.set_ylabel("on-topic pages")
            ax.legend(loc="upper left", fontsize=7)
        return drawn
    return draw


def draw_relevance(stats: dict[str, Any]) -> Callable[[Any], bool]:
    """A focused crawl's fetched pages by relevance, in tenths."""
    def draw(ax: Any) -> bool:
        counts = [stats.get(f"focus/relevance/{tenth}", 0) for tenth in range(10)]
        if not any(counts):
            return False
        ax.bar([f"{t / 10:.1f}" for t in range(10)], counts, color="#2e7d32", align="edge")
        ax.set_xlabel("relevance (from)")
        ax.set_ylabel("pages")
        return True
    return draw
