"""Real sites: text extraction on the real-site corpus, and a politeness-bound crawl of real-site
hosts."""

from __future__ import annotations

import re
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.harness import STOCK, crawl, table
from testweb import politeness_violations, read_log

REAL_POLITE_SITES = ("flex", "libgcrypt", "jsoncpp", "docutils", "sphinx-rtd", "furo",
                     "mkdocs-material", "pydoc")


def _extractors() -> dict:
    """Candidate main-text extractors, each (html bytes) -> text; missing ones are skipped."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    out = {"resiliparse (main content)": lambda b: extract_plain_text(
               HTMLTree.parse_from_bytes(b), main_content=True),
           "resiliparse (all visible text)": lambda b: extract_plain_text(
               HTMLTree.parse_from_bytes(b))}
    try:
        import trafilatura
        out["trafilatura"] = lambda b: trafilatura.extract(b.decode("utf-8", "replace"),
                                                           favor_recall=True) or ""
    except ImportError:
        pass
    try:
        import justext
        stop = justext.get_stoplist("English")
        out["jusText"] = lambda b: " ".join(p.text for p in justext.justext(b, stop)
                                            if not p.is_boilerplate)
    except ImportError:
        pass
    try:
        import html_text
        out["html-text (all visible text)"] = lambda b: html_text.extract_text(
            b.decode("utf-8", "replace"))
    except ImportError:
        pass
    return out


def bench_realsites(quick: bool) -> None:
    from crawler_ext.dedup.extract import fingerprint_text
    from crawler_ext.dedup.index import ContentIndex
    from testweb.corpus import build_corpus, reachable, resolve_path
    from testweb.static import RealWebServer

    sites = build_corpus()
    pages = []
    for site in sites:
        for path in sorted(reachable(site.root, site.start)):
            file = resolve_path(site.root, path)
            if file is not None and file.suffix in (".html", ".htm"):
                pages.append((site.name, f"http://{site.host()}{path}", file.read_bytes()))
    if quick:
        pages = pages[::4]
    rows = []
    for name, extract in _extractors().items():
        started = time.perf_counter()
        words = []
        for _, _, body in pages:
            try:
                words.append(len(extract(body).split()))
            except Exception:  # noqa: BLE001 - a crash counts as an empty page
                words.append(0)
        elapsed = time.perf_counter() - started
        rows.append([name, len(pages) / elapsed, sum(w < 20 for w in words),
                     sum(w == 0 for w in words), sum(words) / len(words)])
    started = time.perf_counter()
    bases = Counter(fingerprint_text(body).basis for _, _, body in pages)
    rows.append(["crawler_ext.dedup.extract (main, fallbacks)", len(pages) / (time.perf_counter() -
                                                                         started),
                 f"{bases['full']} full text, {bases['body']} body hash", 0, ""])
    index = ContentIndex()
    started = time.perf_counter()
    verdicts = Counter(index.check(url, body).kind for _, url, body in pages)
    rows.append(["content index check (extract + exact hash + SimHash + index)",
                 len(pages) / (time.perf_counter() - started),
                 f"{verdicts['exact']} exact, {verdicts['near']} near", "", ""])
    table(f"Text extraction on the real-site corpus: {len(pages)} HTML pages of {len(sites)} "
          f"sites ({len({s.generator for s in sites})} generators/themes)",
          ["extractor", "pages/s", "pages < 20 words", "empty pages", "words per page"], rows)

    floor = 0.1
    chosen = [s for s in sites if s.name in REAL_POLITE_SITES]
    configs = [("crawler_ext frontier (latency factor 10, default)",
                {"CRAWLER_EXT_POLITENESS_MIN_DELAY": floor}),
               ("crawler_ext frontier (latency factor 0)",
                {"CRAWLER_EXT_POLITENESS_MIN_DELAY": floor,
                 "CRAWLER_EXT_POLITENESS_LATENCY_FACTOR": 0}),
               ("stock Scrapy, DOWNLOAD_DELAY", {**STOCK, "DOWNLOAD_DELAY": floor,
                                                 "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
                                                 "RANDOMIZE_DOWNLOAD_DELAY": False})]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings in configs:
            with RealWebServer(chosen, workdir=Path(tmp) / re.sub(r"\W+", "_", name)) as web:
                seeds = ",".join(web.url(n) for n in web.sites)
                crawl(web, settings, seeds, Path(tmp), "-a", "allowed_domains=real.test")
                log = read_log(web.log_path)
            by_host: dict[str, list] = defaultdict(list)
            for e in log:
                by_host[e.host].append(e)
            busiest = max(by_host, key=lambda h: len(by_host[h]))
            entries = by_host[busiest]
            span = entries[-1].start - entries[0].start
            ideal = (len(entries) - 1) * floor
            gaps = sorted(b.start - a.start for es in by_host.values() for a, b in zip(es, es[1:]))
            rows.append([name, len(log), busiest.split(".")[0], len(entries), round(span, 2),
                         round(ideal, 2), ideal / span, gaps[len(gaps) // 2],
                         gaps[int(0.9 * len(gaps))],
                         len(politeness_violations(log, floor))])
    table(f"Politeness-bound crawl of {len(chosen)} real-site hosts, floor {floor} s "
          "(ideal: the busiest host's pages x the floor)",
          ["scheduler", "fetches", "busiest host", "its pages", "its span s", "ideal s",
           "ratio to ideal", "median gap s", "p90 gap s", "violations"], rows)
