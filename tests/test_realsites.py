"""Real documentation sites (``testweb.corpus``), each its own loopback host,
crawled with the reference project's defaults and judged by the server's request log.

The corpus: Debian documentation packages (DocBook, docutils, Texinfo, Javadoc, Doxygen,
gtk-doc) that `.ci/run` lets `apt-get download` fetch, and documentation built here with
Sphinx (four themes), MkDocs (three themes) and pydoc.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import lxml.html
import pytest
from conftest import run_crawl
from warcio.archiveiterator import ArchiveIterator

from testweb import politeness_violations, read_log
from testweb.corpus import build_corpus, resolve_path
from testweb.static import SPHINX_ROBOTS, RealWebServer, robots_for

pytestmark = pytest.mark.slow

MIN_GENERATORS = 12
TRAP_RULES = ("pattern_chain", "id_chain", "pattern_cap")


@pytest.fixture(scope="module")
def corpus() -> list:
    sites = build_corpus()
    generators = {s.generator for s in sites}
    if len(generators) < MIN_GENERATORS:
        pytest.skip(f"only {len(generators)} generators of the real-site corpus here (apt-get "
                    f"download of Debian docs, or sphinx/mkdocs, missing): {sorted(generators)}")
    return sites


def visible_words(file: Path) -> list[str]:
    """The page's visible text, as words: an independent judge (lxml, no main-content
    extraction) of whether two pages really are the same."""
    tree = lxml.html.fromstring(file.read_bytes())
    for bad in tree.xpath("//script|//style|//head"):
        bad.drop_tree()
    return re.findall(r"\w+", tree.text_content().lower())


def flagged_pairs(warc_dir: Path) -> list[tuple[str, str, str]]:
    pairs = []
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "metadata":
                    continue
                data = json.loads(record.content_stream().read())
                dedup = data.get("dedup") or {}
                if dedup.get("verdict") in ("exact", "near"):
                    pairs.append((data["url"], dedup["original"], dedup["verdict"]))
    return pairs


def test_every_real_site_is_crawled_whole(corpus, tmp_path: Path) -> None:
    with RealWebServer(corpus, workdir=tmp_path / "web") as web:
        seeds = ",".join(web.url(name) for name in web.sites)
        result = run_crawl("-a", f"seeds={seeds}", "-a", "allowed_domains=real.test",
                           items_path=tmp_path / "items.jsonl",
                           settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                     "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.02,
                                     "LOG_LEVEL": "INFO"}, timeout=600)
    assert result.returncode == 0, result.output[-3000:]
    log = read_log(web.log_path)
    fetched: dict[str, set[str]] = defaultdict(set)
    for e in log:
        fetched[e.host].add(e.path)
    report = []
    for name, site in web.sites.items():
        truth = web.truth(name)
        got = fetched[site.host()] & truth
        report.append((name, site.generator, len(got), len(truth)))
        assert len(got) >= 0.99 * len(truth), (name, sorted(truth - got)[:10], report)
    print("\n".join(f"{n:18} {g:28} {a}/{b}" for n, g, a, b in report))

    # no page dropped as a duplicate unless its visible text really is its original's
    pairs = flagged_pairs(tmp_path / "warcs")
    for url, original, verdict in pairs:
        texts = []
        for u in (url, original):
            parts = urlsplit(u)
            site = web.sites[parts.hostname.split(".")[0]]
            texts.append(visible_words(resolve_path(site.root, parts.path)))
        ratio = difflib.SequenceMatcher(None, *texts, autojunk=False).ratio()
        assert ratio >= 0.9, (url, original, verdict, ratio)
    assert result.stat("dedup/unique") > 1000

    # trap rules cut nothing on real sites
    for rule in TRAP_RULES:
        assert result.stat(f"admission/rejected/{rule}") == 0, rule

    # politeness and robots.txt, from the server's log; loopback hosts answer in well under
    # 10 ms, so the delays (10 x the response time) stay short however busy the crawler's own
    # reactor was (counting its lag, they reached 1.2-1.5 s; now the longest is a host's
    # first page, served while the one server process answered all 16 hosts' first pages:
    # up to 0.57 s seen on a busy CI machine)
    assert politeness_violations(log, min_gap=0.02) == []
    assert result.stat("frontier/delay_max") <= 1.0, result.stat("frontier/delay_max")
    for name, site in web.sites.items():
        entries = [e for e in log if e.host == site.host()]
        assert entries[0].path == "/robots.txt", name  # robots.txt before anything else
        if robots_for(site) == SPHINX_ROBOTS:
            assert not [e for e in entries if e.path.startswith("/_sources/")], name
