"""The rendering pool: app shells rendered, paced and guarded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import ROOT, table
from testweb import read_log


def _precision_recall(pairs: list[tuple[bool, bool]]) -> tuple[float, float, int, int]:
    """(label, predicted) pairs -> precision, recall, false positives, false negatives."""
    tp = sum(1 for label, pred in pairs if label and pred)
    fp = sum(1 for label, pred in pairs if pred and not label)
    fn = sum(1 for label, pred in pairs if label and not pred)
    return (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0), fp, fn


def bench_render(quick: bool) -> None:
    """Rendering app shells in headless Chromium against fetching the same pages plainly, and
    the app-shell detection's precision and recall on labelled pages."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_render import DATA, Apps

    from crawler_ext.render.detect import ShellDetector
    from testweb.apps import truth as app_truth
    from testweb.corpus import build_corpus, reachable, resolve_path

    copies = 3 if quick else 12
    rows = []
    detection = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        server = Apps(tmp_path)
        labels = app_truth(server.port)["pages"]
        urls = []  # every page of `copies` copies of the two shell apps
        for url in labels:
            kind = url.split("//")[1].split(".")[0]
            if kind in ("vanilla", "jsonapp"):
                urls += [url.replace(f"//{kind}.", f"//{kind}-{i}.") for i in range(copies)]
        (tmp_path / "seeds.txt").write_text("\n".join(urls) + "\n")
        common = {"CRAWLER_EXT_HOSTS": "*.apps.test=127.0.0.1",
                  "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.1/32",
                  "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05, "LOG_LEVEL": "WARNING"}
        for name, extra in (("plain fetches (rendering off)", {}),
                            ("rendering pool, 2 pages at once", {"CRAWLER_EXT_RENDER_ENABLED":
                                                                 True}),
                            ("rendering pool, 4 pages at once", {"CRAWLER_EXT_RENDER_ENABLED":
                                                                 True,
                                                                 "CRAWLER_EXT_RENDER_CONCURRENCY":
                                                                 4})):
            stats_file = tmp_path / f"stats-{len(rows)}.json"
            server.log_path.write_text("")
            cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a",
                   f"seeds={tmp_path / 'seeds.txt'}", "-s", f"CRAWLER_EXT_STATS_FILE={stats_file}",
                   "-s", f"CRAWLER_EXT_WARC_DIR={tmp_path / 'warcs'}"]
            for key, value in {**common, **extra}.items():
                cmd += ["-s", f"{key}={value}"]
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800,
                                  env=dict(os.environ, PYTHONPATH=str(ROOT)))
            if proc.returncode != 0:
                raise RuntimeError(f"crawl failed: {proc.stderr[-2000:]}")
            stats = json.loads(stats_file.read_text())
            seconds = stats["elapsed_time_seconds"]
            # pages the server served (the plain crawl's shells are near-duplicates of each
            # other, so its items would undercount them)
            wanted = {url.split("//", 1)[1].split(":", 1)[0] + "/" + url.split("/", 3)[3]
                      for url in urls}
            pages = len({f"{e.host}{e.path}" for e in read_log(server.log_path)} & wanted)
            rows.append([name, pages, stats.get("render/rendered", 0), round(seconds, 1),
                         pages / seconds, stats.get("render/ms", "")])
        base = rows[0][4]
        for row in rows:
            row.append(row[4] / base)
        # detection on the app web's labelled pages, as the crawl judged them
        server.log_path.write_text("")
        items_path = tmp_path / "items.jsonl"
        seeds = ",".join(f"http://{k}.apps.test:{server.port}/"
                         for k in ("vanilla", "jsonapp", "nosy", "ssr", "noscript", "tiny"))
        cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={seeds}",
               "-o", str(items_path), "-s", "CRAWLER_EXT_RENDER_ENABLED=True",
               "-s", f"CRAWLER_EXT_WARC_DIR={tmp_path / 'warcs'}"]
        for key, value in common.items():
            cmd += ["-s", f"{key}={value}"]
        subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
        items = [json.loads(line) for line in items_path.read_text().splitlines() if line]
        pairs = [(labels[i["url"]]["shell"], bool(i["render"] and i["render"]["shell"]))
                 for i in items if i["url"] in labels]
        detection.append(["app web (crawled, labelled pages)", len(pairs),
                          *_precision_recall(pairs)])
        server.stop()
    detector = ShellDetector()
    pairs = [(f.name.startswith("shell-"), detector.judge(f.read_bytes()).shell)
             for f in sorted(DATA.glob("*.html"))]
    detection.append(["framework build output (tests/data/render)", len(pairs),
                      *_precision_recall(pairs)])
    pairs = []
    for site in build_corpus():
        for path in sorted(reachable(site.root, site.start)):
            file = resolve_path(site.root, path)
            if file is not None and file.suffix in (".html", ".htm"):
                pairs.append((False, detector.judge(file.read_bytes()).shell))
    detection.append(["real-site corpus (no shells: false positives only)", len(pairs),
                      *_precision_recall(pairs)])
    table(f"Rendering pool vs plain fetches: the same {len(urls)} pages of {2 * copies} app-shell "
          "hosts (every page a seed), 0.05 s per-host delay", ["crawl", "pages", "rendered",
                                                              "seconds", "pages/s",
                                                              "mean render ms", "vs plain"], rows)
    table("App-shell detection", ["pages", "judged", "precision", "recall", "false positives",
                                  "false negatives"], detection)
