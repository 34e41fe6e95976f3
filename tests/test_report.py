"""The crawl report: the time series written while a crawl runs, and
``python -m crawler_ext.report JOBDIR -o report.html`` drawn from it and opened in a real
headless Chromium (Debian's ``chromium``), whose screenshot must show every plot."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_crawl

from crawler_ext.report.render import load, politeness_check, render
from crawler_ext.report.timeseries import REPORT_NAME, HostLedger
from testweb import politeness_violations, read_log

pytest.importorskip("matplotlib")

PLOTS = ["fetches", "bands", "hosts", "busiest", "status", "duplicates", "robots", "warc"]


def report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "crawler_ext.report", *args],
                          capture_output=True, text=True, timeout=120)


# -- pure logic ------------------------------------------------------------------------------
def test_the_ledger_measures_each_gap_against_the_delay_asked_before_it() -> None:
    ledger = HostLedger()
    ledger.released("a", 200, started=10.0, delay=1.0)
    ledger.released("a", 200, started=11.5, delay=2.0)   # gap 1.5 >= 1.0
    ledger.released("a", 503, started=13.6, delay=8.0)   # gap 2.1 >= 2.0: slack 0.1
    ledger.released("b", None, started=10.0, delay=4.0)
    (a,) = [row for row in ledger.rows() if row["key"] == "a"]
    assert (a["requests"], a["responses"], a["backoffs"]) == (3, 3, 1)
    assert a["min_gap"] == 1.5 and a["min_slack"] == pytest.approx(0.1)
    assert a["delay"] == 8.0 and a["max_delay"] == 8.0
    assert politeness_check(ledger.rows())[0] == 0
    ledger.released("a", 200, started=20.0, delay=1.0)   # 6.4 s after, but 8 s were asked
    violations, tightest = politeness_check(ledger.rows())
    assert violations == 1 and tightest[0]["key"] == "a"
    assert tightest[0]["min_slack"] == pytest.approx(-1.6)


def test_the_ledger_is_bounded() -> None:
    ledger = HostLedger(max_keys=2)
    for key in "abc":
        ledger.released(key, 200, 1.0, 1.0)
    assert [row["key"] for row in ledger.rows()] == ["a", "b"] and ledger.untracked == 1
    assert [row["key"] for row in ledger.rows(limit=1)] == ["a"]


def _series(path: Path) -> None:
    lines = [{"type": "start", "time": 100.0, "spider": "web", "cwd": str(path.parent),
              "settings": {"CRAWLER_EXT_WARC_DIR": "warcs"}}]
    for i in range(1, 4):
        lines.append({"type": "sample", "time": 100.0 + i, "hosts": [],
                      "frontier": {"queued": 10 - i, "bands": [i, 0], "delayed": 0,
                                   "active_hosts": 2, "in_flight": 1},
                      "stats": {"downloader/response_count": 5 * i,
                                "downloader/response_status_count/200": 5 * i}})
    path.write_text("\n".join(json.dumps(line) for line in lines) + '\n{"type": "sam')


def test_more_than_16_bands_are_drawn_in_16_layers() -> None:
    """A focused crawl may keep 101 bands: neighbours share a layer, no URL is lost."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from crawler_ext.report.plots import draw_bands
    from crawler_ext.report.runs import Run

    samples = [{"time": 100.0 + i, "frontier": {"bands": [1] * 101, "queued": 101}}
               for i in range(3)]
    figure, ax = plt.subplots()
    assert draw_bands([Run({"time": 100.0}, samples)])(ax)
    layers = ax.collections[:16]
    labels = [c.get_label() for c in layers]
    assert len([c for c in ax.collections if "front queue" in c.get_label()]) == 16
    assert labels[0] == "front queue, bands 0-6" and labels[-1] == "front queue, bands 95-100"
    top = max(path.vertices[:, 1].max() for c in layers for path in c.get_paths())
    assert top == 101  # every band counted once
    plt.close(figure)


def test_a_series_cut_by_a_kill_still_draws(tmp_path: Path) -> None:
    _series(tmp_path / REPORT_NAME)
    (run,) = load(tmp_path / REPORT_NAME)
    assert len(run.samples) == 3 and run.final is None
    page = render([run])
    assert page.count("<figure class='plot'") == len(PLOTS)
    assert "still running or killed" in page


def test_the_rendering_pool_gets_a_line_when_it_was_on(tmp_path: Path) -> None:
    _series(tmp_path / REPORT_NAME)
    (run,) = load(tmp_path / REPORT_NAME)
    assert "app shells" not in render([run])
    run.samples[-1]["stats"].update({"render/checked": 9, "render/detected": 4,
                                     "render/rendered": 3, "render/timeouts": 1,
                                     "render/subrequests_blocked": 7, "render/ms": 812.5})
    assert "<td>4 / 3 / 1 / 7 / 812.5</td>" in render([run])


def test_a_focused_crawl_gets_its_harvest_curve_and_the_classifiers_confidence(
        tmp_path: Path) -> None:
    _series(tmp_path / REPORT_NAME)
    (run,) = load(tmp_path / REPORT_NAME)
    assert "harvest curve" not in render([run])
    for i, sample in enumerate(run.samples, 1):
        sample["stats"].update({"focus/fetched": 10 * i, "focus/relevant": 4 * i,
                                "focus/harvest_rate": 0.4, "focus/confidence": 0.6,
                                "focus/relevance/7": 4 * i})
    page = render([run])
    assert "harvest curve (on-topic pages against pages fetched)" in page
    assert page.count("<figure class='plot'") == len(PLOTS) + 3  # and harvest, relevance


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = report(str(tmp_path / "nothing"), "-o", str(tmp_path / "r.html"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "no crawl report" in result.stderr and not (tmp_path / "r.html").exists()
    (tmp_path / REPORT_NAME).write_text("not json\n")
    result = report(str(tmp_path), "-o", str(tmp_path / "r.html"))
    assert result.returncode == 2 and "holds no crawl report records" in result.stderr


# -- a real crawl, and the report in a real browser --------------------------------------------
@pytest.fixture(scope="module")
def crawled(tmp_path_factory) -> dict:
    """A crawl of the test web with its hazards (503 robots.txt, 429s, mirrors, traps) under
    JOBDIR, sampled every second, and its report."""
    from testweb import TestWebServer

    tmp = tmp_path_factory.mktemp("report")
    web = TestWebServer(workdir=tmp / "web", hosts=10, pages=8, hazards=True).start()
    try:
        result = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp / "items.jsonl",
                           settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                     "JOBDIR": str(tmp / "job"),
                                     "CRAWLER_EXT_REPORT_INTERVAL": 1,
                                     "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.2,
                                     "CLOSESPIDER_TIMEOUT": 20})
    finally:
        web.stop()
    assert result.returncode == 0, result.output[-3000:]
    out = report(str(tmp / "job"), "-o", str(tmp / "report.html"))
    assert out.returncode == 0, out.stderr
    return {"tmp": tmp, "web": web, "result": result, "html": tmp / "report.html"}


@pytest.mark.slow
def test_the_time_series_records_the_crawl_and_agrees_with_the_server(crawled) -> None:
    (run,) = load(crawled["tmp"] / "job" / REPORT_NAME)
    assert run.start["settings"]["JOBDIR"] == str(crawled["tmp"] / "job")
    assert run.start["settings"]["CRAWLER_EXT_WARC_DIR"] == str(crawled["tmp"] / "warcs")
    assert len(run.samples) >= 10 and run.final is not None
    assert run.final["stats"]["downloader/response_count"] == \
        crawled["result"].stat("downloader/response_count")
    assert any(s["frontier"]["queued"] > 0 for s in run.samples)
    # every request the server saw is in the ledger of its key (the host), and no more
    log = read_log(crawled["web"].log_path)
    served = Counter(e.host for e in log)
    ledger = {row["key"]: row["requests"] for row in run.final["hosts"]}
    assert ledger == dict(served)
    # the report's politeness check, and the server's own log, find no violation
    assert politeness_check(run.final["hosts"])[0] == 0
    assert politeness_violations(log, min_gap=0.2) == []
    assert sum(row["backoffs"] for row in run.final["hosts"]) > 0  # the 429/503 hosts


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")


def _browser(html: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", "--window-size=1280,900", *args,
                           html.as_uri()], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_the_report_renders_every_plot_in_a_real_browser(crawled) -> None:
    from PIL import Image

    html = crawled["html"]
    dom = _browser(html, "--dump-dom")
    if dom.returncode != 0 or "render-check" not in dom.stdout:
        pytest.skip(f"Chromium did not start: {dom.stderr.strip()[-300:]}")
    text = dom.stdout.split('<pre id="render-check">', 1)[1].split("</pre>", 1)[0]
    layout = json.loads(text.replace("&quot;", '"'))
    plots = {p["plot"]: p for p in layout["plots"]}
    assert list(plots) == PLOTS
    assert all(p["loaded"] and p["w"] > 800 and p["h"] > 300 for p in plots.values()), plots
    shot = crawled["tmp"] / "report.png"
    height = int(layout["height"]) + 10
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--window-size=1280,{height}",
                    f"--screenshot={shot}", html.as_uri()], capture_output=True, timeout=120)
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, height)
    for name, p in plots.items():
        box = image.crop((int(p["x"]), int(p["y"]), int(p["x"] + p["w"]), int(p["y"] + p["h"])))
        counts = box.getcolors(maxcolors=1 << 24)
        inked = sum(n for n, (r, g, b) in counts if r + g + b < 600) / (box.width * box.height)
        colours = [c for _, c in counts if len(set(c)) > 1]  # not grey: data drawn in colour
        # measured: a plot with data 0.03-0.25 inked and 39-1,779 colours; an empty one
        # ("no data in this crawl") 0.019 and none
        assert inked > 0.025, (name, inked)
        assert len(colours) > 20, (name, len(colours))
    # the tables
    page = html.read_text()
    assert "every key&#x27;s requests kept the delay" in page
    assert "h0001.web.test" in page  # the robots.txt-503 host among the backed-off
