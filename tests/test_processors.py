"""Content processors: PDF, feeds, plain text and images get links, dedup and archiving.

The crawl test runs ``scrapy crawl web`` on a site of documents (``testweb.documents``):
pages reachable only through a PDF's links, a feed or a text file, two prints of one PDF, an
edited PDF, one picture in two encodings, and hostile files; the site's request log judges.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from crawler_ext.processors.contract import Document
from crawler_ext.processors.pool import ProcessorPool
from crawler_ext.processors.registry import build_table
from crawler_ext.processors.sniff import choose_mime
from crawler_ext.processors.work import Runner
from tests.conftest import archived_uris, run_crawl
from testweb.documents import DocumentSite, build_site, make_pdf
from testweb.requestlog import politeness_violations, read_log

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "crawler_ext" / "docs-1"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return build_site(tmp_path_factory.mktemp("docs"), CACHE)


def _run(site: dict, path: str) -> tuple:
    entry = site["manifest"][path]
    body = Path(entry["file"]).read_bytes()
    mime, how = choose_mime(entry["type"], body)
    processed, fingerprint = Runner(build_table({})).run(
        Document(f"http://docs.test{path}", mime, {}, body))
    return processed, fingerprint, how


def test_the_type_comes_from_the_bytes_where_the_header_is_missing_generic_or_lies() -> None:
    pdf = make_pdf(["hello"])
    assert choose_mime(None, pdf) == ("application/pdf", "sniffed")
    assert choose_mime(b"application/octet-stream", pdf) == ("application/pdf", "sniffed")
    assert choose_mime(b"text/html; charset=utf-8", pdf) == ("application/pdf", "overruled")
    page = b"<!DOCTYPE html><html><body><p>not found</p></body></html>"
    assert choose_mime(b"application/pdf", page) == ("text/html", "overruled")
    # text is never overruled by text: the server's word is the better guess
    assert choose_mime(b"text/plain", page) == ("text/plain", "header")
    atom = b'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
    assert choose_mime(b"text/xml", atom)[0] == "application/atom+xml"


def test_a_pdf_gives_text_links_and_metadata_and_its_prints_are_duplicates(site) -> None:
    pdf, first, _ = _run(site, "/docs/manual.pdf")
    assert pdf.content_kind == "pdf" and pdf.processor == "pdfium" and not pdf.refused
    assert [link.url for link in pdf.links] == ["http://docs.test/pdf-only-1.html",
                                                 "http://docs.test/pdf-only-2.html"]
    assert pdf.metadata["title"] == "Manual" and pdf.metadata["author"] == "Docs Team"
    assert pdf.metadata["pages"] == 8 and pdf.metadata["created"] == 1704110400.0
    assert "Abstract Base Classes" in pdf.text and pdf.text_length > 5000
    _, again, _ = _run(site, "/docs/manual-print2.pdf")
    assert Path(site["manifest"]["/docs/manual.pdf"]["file"]).read_bytes() != \
        Path(site["manifest"]["/docs/manual-print2.pdf"]["file"]).read_bytes()
    assert again == first  # byte-different, text-identical: one fingerprint
    _, edited, _ = _run(site, "/docs/manual-edited.pdf")
    assert edited.exact != first.exact
    assert bin(edited.simhash ^ first.simhash).count("1") <= 3  # a near-duplicate


def test_feeds_text_and_images(site) -> None:
    rss, _, _ = _run(site, "/news/rss.xml")
    assert [link.url for link in rss.links][:2] == ["http://docs.test/feed-only-1.html",
                                                    "http://docs.test/feed-only-2.html"]
    assert rss.links[0].text == "First"
    assert rss.metadata["dates"]["http://docs.test/feed-only-1.html"] == 1704103200.0
    atom, _, how = _run(site, "/news/atom.xml")  # served as text/xml
    assert atom.content_kind == "feed" and [link.url for link in atom.links] == [
        "http://docs.test/atom-only-1.html"]
    text, _, _ = _run(site, "/notes.txt")
    assert [link.url for link in text.links] == ["http://docs.test/text-only.html"]
    png, png_print, _ = _run(site, "/img/figure.png")
    jpg, jpg_print, _ = _run(site, "/img/figure.jpg")
    assert (png.metadata["format"], jpg.metadata["format"]) == ("PNG", "JPEG")
    assert png.metadata["width"] == 256 and not png.links
    assert bin(png_print.simhash ^ jpg_print.simhash).count("1") <= 3


@pytest.mark.slow
def test_hostile_documents_cost_one_worker_at_most(site) -> None:
    """Each hostile file in the real worker pool: refused and counted, or read within its
    caps; the pool answers every one, and the event loop is never held up."""
    paths = [p for p in site["manifest"] if p.startswith("/hostile/") and p != "/hostile/slow.pdf"]

    async def main() -> tuple[dict, float, Counter]:
        stats: Counter = Counter()

        class Stats:
            def inc_value(self, key: str, count: int = 1) -> None:
                stats[key] += count

        pool = ProcessorPool(1, build_table({}), timeout=8.0, memory_mb=400, stats=Stats())
        pool.start()
        lag = [0.0]

        async def beat() -> None:  # the event loop's longest stall while documents run
            while True:
                before = time.monotonic()
                await asyncio.sleep(0.05)
                lag[0] = max(lag[0], time.monotonic() - before - 0.05)

        beater = asyncio.ensure_future(beat())
        answers = {}
        try:
            for path in paths + ["/docs/manual.pdf"]:
                entry = site["manifest"][path]
                body = Path(entry["file"]).read_bytes()
                mime, _ = choose_mime(entry["type"], body)
                answers[path] = (await pool.process(Document(f"http://docs.test{path}",
                                                             mime, {}, body)))[0]
        finally:
            beater.cancel()
            pool.close()
        return answers, lag[0], stats

    started = time.monotonic()
    answers, lag, stats = asyncio.run(main())
    refused = {path: answer.refused for path, answer in answers.items()}
    assert refused["/hostile/truncated.pdf"] == "error"
    assert refused["/hostile/encrypted.pdf"] == "encrypted"
    assert refused["/hostile/laughs.xml"] == "hostile_xml"
    assert refused["/hostile/bomb.png"] == "bomb"
    assert refused["/hostile/cyclic.pdf"] in ("error", "")
    # the 1 GB inflation: out of memory, killed at its time cap, or read page by page
    assert refused["/hostile/inflate-1g.pdf"] in ("", "memory", "crashed", "timeout")
    many = answers["/hostile/annots-100k.pdf"]
    assert refused["/hostile/annots-100k.pdf"] == "" and 1000 <= len(many.links) <= 10_000
    assert refused["/docs/manual.pdf"] == "" and len(answers["/docs/manual.pdf"].links) == 2
    assert lag < 0.5, lag
    assert time.monotonic() - started < 60
    print(refused, dict(stats), f"loop lag {lag:.3f} s")


@pytest.mark.slow
def test_a_crawl_follows_links_from_every_kind_and_survives_hostile_files(tmp_path) -> None:
    with DocumentSite(CACHE, tmp_path / "web") as web:
        started = time.monotonic()
        result = run_crawl("-a", f"seeds={web.url()}", items_path=tmp_path / "items.jsonl",
                           settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                     "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05,
                                     "CRAWLER_EXT_PROCESSOR_TIMEOUT": 10,
                                     "CRAWLER_EXT_DEDUP_ACTION": "mark",
                                     "LOG_LEVEL": "INFO"}, timeout=180)
        took = time.monotonic() - started
    (tmp_path / "crawl.log").write_text(result.output)
    assert result.returncode == 0, result.output[-3000:]
    assert "Traceback" not in result.output, result.output[-3000:]
    log = read_log(web.log_path)
    fetched = {e.path for e in log}
    for kind, paths in web.truth["only"].items():
        assert set(paths) <= fetched, (kind, sorted(set(paths) - fetched))
    items = {urlsplit(i["url"]).path: i for i in result.items}
    for kind in ("exact", "near"):  # whichever of a pair came second is the copy
        for one, other in web.truth[kind]:
            verdicts = sorted((items[a]["dedup"]["verdict"], urlsplit(
                items[a]["dedup"]["original"] or "").path, b) for a, b in [(one, other),
                                                                          (other, one)])
            assert verdicts[0][0] == kind and verdicts[0][1] == verdicts[0][2], verdicts
    manual = items["/docs/manual.pdf"]
    assert (manual["content_kind"], manual["processor"], manual["outlinks"]) == ("pdf", "pdfium", 2)
    assert manual["text_length"] > 5000
    assert items["/news/rss.xml"]["content_kind"] == "feed"
    assert items["/img/figure.png"]["content_kind"] == "image"
    assert items["/docs/untyped"]["content_kind"] == "pdf"
    stats = result.stats
    assert result.stat("processor/pdf/too_large") == 1  # the slow 200 MB download, cut
    assert result.stat("processor/pdf/encrypted") == 1
    assert result.stat("processor/feed/hostile_xml") == 1
    assert result.stat("processor/image/bomb") == 1
    assert result.stat("processor/sniff/overruled") >= 1
    assert result.stat("processor/sniff/sniffed") >= 1
    assert result.stat("dedup/exact") >= 2 and result.stat("dedup/near") >= 1
    slow = [e for e in log if e.path == "/hostile/slow.pdf"]
    assert slow and slow[0].bytes < 40 * 1024 * 1024, slow
    assert politeness_violations(log, min_gap=0.05) == []
    assert result.stat("memusage/max", 0) < 1024 ** 3
    archived = archived_uris(tmp_path / "warcs")  # warcio check passes on each WARC
    assert web.url("/docs/manual.pdf") in archived
    print(f"crawl took {took:.1f} s;", json.dumps({k: v for k, v in stats.items()
                                                   if k.startswith("processor/")}))


@pytest.fixture(scope="module")
def real() -> list:
    from testweb.pdfcorpus import real_pdfs

    pdfs = real_pdfs()
    if not pdfs:
        pytest.skip("no real PDFs: apt-get download failed (offline?)")
    return pdfs


@pytest.mark.slow
def test_real_pdfs_manuals_and_chromium_prints(real) -> None:
    """Real manuals from Debian packages, and real documentation pages printed by Chromium:
    every one read; a print's links are its page's links; two prints are one document."""
    import lxml.html

    from testweb.corpus import build_corpus
    from testweb.pdfcorpus import PRINTED

    runner = Runner(build_table({}))
    fingerprints: dict[str, int] = {}
    kept = [0, 0]  # the pages' links found in their prints, of all
    for pdf in real:
        processed, page = runner.run(Document(f"http://pdfs.test/{pdf.name}", "application/pdf",
                                              {}, pdf.path.read_bytes()))
        words = len(processed.text.split())
        assert not processed.refused and processed.metadata["pages"] > 0, pdf.name
        assert words >= 100 * processed.metadata["pages"], (pdf.name, words)
        fingerprints[pdf.name] = page.exact
        if not pdf.source.startswith("chromium:"):
            continue
        site = pdf.source.split(":", 1)[1]
        root = next(s.root for s in build_corpus() if s.name == site)
        html = lxml.html.fromstring((root / dict(PRINTED)[site]).read_bytes())
        hrefs = {urlsplit(h).path.rsplit("/", 1)[-1] for h in html.xpath("//a/@href")
                 if not h.startswith(("#", "mailto:")) and urlsplit(h).path}
        found = {urlsplit(link.url).path.rsplit("/", 1)[-1] for link in processed.links}
        # a print keeps the visible links (Doxygen's hidden menus are not printed)
        assert len(hrefs & found) >= 0.5 * len(hrefs), (pdf.name, sorted(hrefs - found)[:5])
        kept[0] += len(hrefs & found)
        kept[1] += len(hrefs)
    assert kept[0] >= 0.85 * kept[1], kept
    manuals = [p for p in real if not p.source.startswith("chromium:")]
    assert sum(1 for p in manuals if fingerprints[p.name]) == len(manuals) >= 10
    assert len({fingerprints[p.name] for p in manuals}) == len(manuals)  # all different
    for site, _ in PRINTED:  # printed twice, at different times: byte-different, one text
        one, two = f"{site}-1.pdf", f"{site}-2.pdf"
        if one in fingerprints and two in fingerprints:
            assert fingerprints[one] == fingerprints[two], site


class SleepyProcessor:
    """A processor that never answers (a pathological document)."""

    name = "sleepy"
    content_kind = "text"

    def process(self, document: Document):
        time.sleep(600)


class CrashingProcessor:
    """A processor that dies in C code (as a parser's bug would)."""

    name = "crashing"
    content_kind = "text"

    def process(self, document: Document):
        import ctypes

        ctypes.string_at(0)  # SIGSEGV


def test_a_stuck_or_crashing_processor_costs_its_worker_and_no_other_document() -> None:
    table = build_table({"text/x-sleepy": "tests.test_processors.SleepyProcessor",
                         "text/x-crash": "tests.test_processors.CrashingProcessor"})
    pdf = make_pdf(["A document after the bad ones. " * 10], ["http://docs.test/after"])

    async def main() -> tuple[list, Counter]:
        stats: Counter = Counter()

        class Stats:
            def inc_value(self, key: str, count: int = 1) -> None:
                stats[key] += count

        pool = ProcessorPool(1, table, timeout=1.0, stats=Stats())
        pool.start()
        try:
            answers = [await pool.process(Document("http://docs.test/x", mime, {}, body))
                       for mime, body in (("text/x-sleepy", b"z"), ("text/x-crash", b"z"),
                                          ("application/pdf", pdf))]
        finally:
            pool.close()
        return answers, stats

    answers, stats = asyncio.run(main())
    assert [a[0].refused for a in answers] == ["timeout", "crashed", ""]
    assert [link.url for link in answers[2][0].links] == ["http://docs.test/after"]
    assert answers[2][1] is not None  # and its fingerprint
    assert stats["processor/workers/restarted"] == 2


def test_processors_registered_by_setting_and_entry_point(tmp_path: Path, monkeypatch) -> None:
    from crawler_ext.errors import ConfigError

    dist = tmp_path / "csvproc-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: csvproc\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[crawler_ext.processors]\ntext/csv = tests.test_processors:SleepyProcessor\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    table = build_table({})
    assert table["text/csv"] == "tests.test_processors.SleepyProcessor"
    table = build_table({"text/csv": None, "image/*": "None",
                         "application/pdf": "tests.test_processors.CrashingProcessor"})
    assert "text/csv" not in table and "image/*" not in table
    assert Runner(table).processor("application/pdf").name == "crashing"
    assert Runner(table).processor("image/png") is None
    with pytest.raises(ConfigError, match="cannot load 'no.such.Processor' for text/x-foo"):
        build_table({"text/x-foo": "no.such.Processor"})
    with pytest.raises(ConfigError, match="not a MIME type"):
        build_table({"pdf": "crawler_ext.processors.pdf.PdfProcessor"})


def test_a_processor_that_cannot_be_loaded_stops_the_crawl_with_one_line(tmp_path) -> None:
    result = run_crawl("-a", "seeds=http://docs.test:9/", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_PROCESSORS": '{"text/x-foo": "no.such.Processor"}'},
                       timeout=60)
    assert result.returncode == 2
    assert "error: CRAWLER_EXT_PROCESSORS: cannot load 'no.such.Processor' for text/x-foo" \
        in result.output
    assert "Traceback" not in result.output


def test_without_an_asyncio_loop_the_pool_answers_at_once_and_parses_nothing() -> None:
    """Under a reactor that is not asyncio's no worker can be watched: the pool gives up
    at once (the middleware then lets documents go on as with processors off)."""
    pool = ProcessorPool(1, build_table({}))
    pool.start(asyncio_loop=False)
    processed, fingerprint = asyncio.run(pool.process(Document("http://x.test/", "text/html",
                                                               {}, b"<p>hi</p>")))
    assert (processed.refused, fingerprint) == ("no_workers", None)
    assert "not asyncio" in pool.failed


def test_a_page_that_opens_as_html_skips_libmagic_with_the_same_verdict() -> None:
    from crawler_ext.processors import sniff
    from testweb.broad import BroadWeb

    web = BroadWeb(hosts=50)
    pages = [web.page(i, n, 80) for i in range(0, 50, 7) for n in range(2)]
    pages += [b"\xef\xbb\xbf\n  <!doctype HTML>\n<html><p>x</p></html>",
              b"<HTML LANG=en><body>y</body></HTML>", b"<html>\n<body>z</body></html>"]
    for declared in (b"text/html", b"application/xhtml+xml; charset=utf-8"):
        for body in pages:
            assert sniff._HTML_START.match(body, 0, 512), body[:40]
            fast = choose_mime(declared, body)
            magic = sniff.media_type(declared), "header"
            assert fast == magic
    # what only the bytes can tell still goes to libmagic: a picture or a PDF served as HTML
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>'
    assert choose_mime(b"text/html", svg) == ("image/svg+xml", "overruled")
    assert choose_mime(b"text/html", make_pdf(["x"]))[1] == "overruled"
    assert choose_mime(b"text/html", b"<htmlx>")[1] == "header"  # (libmagic's word)


def test_the_directives_the_html_processor_reads_are_the_pages_own() -> None:
    from scrapy.http import HtmlResponse

    from crawler_ext.hosts.directives import page_directives
    from crawler_ext.processors.html import HtmlProcessor

    pages = [
        b'<html><head><meta name="ROBOTS" content="NoIndex, follow">'
        b'<link rel="canonical" href=" /c?x=1 "></head><body>a</body></html>',
        b'<html><head><meta name="googlebot" content="noindex"><base href="http://o.test/d/">'
        b'</head><body><meta name="robots" content="nofollow">'
        b'<link rel="canonical" href="e.html"></body></html>',
        b'<html><head><meta name="crawler_ext" content="none"></head></html>',
        b'<html><head><meta name="robots" content="index"><meta name="description" '
        b'content="none of these"></head><body><p>plain</p></body></html>',
        b"<html><body>no directives</body></html>",
    ]
    for body in pages:
        response = HtmlResponse("http://s.test/a/b.html", body=body,
                                headers={"X-Robots-Tag": "unavailable_after: 2030"})
        processed = HtmlProcessor().process(Document(response.url, "text/html", {}, body))
        found = processed.metadata["directives"]
        assert page_directives(response, found=found) == page_directives(response), body


def test_the_links_fast_paths_resolve_as_urljoin_does(monkeypatch) -> None:
    """Links already in Scrapy's form and root-relative ones skip urljoin: on random hrefs
    (dot segments, ports, ';', '%', user info, upper case, white space...) and bases, the
    answers are those of the standard path alone."""
    import random

    from crawler_ext.processors import links

    pieces = list("ab/.?#;:@%20xX-_~!$&'()*+,=[]\\ \t") + [
        "//", "/./", "/../", "http://", "https://", "HTTP://", "h1.x", ":80", ":99999", "..",
        "%2e", "xn--a", "user@", "é", "%zz"]
    bases = ["http://h1.x:80/p/1?q=1", "https://a.b/c/d", "http://a.b", "http://A.b/x",
             "http://a.b/x#f", "http://u@a.b/x", "http://1.2.3.4/x", "http://a.b:99999/",
             "http://a.b/./x", "http://a.b/x;y?z"]
    rng = random.Random(7)
    cases = []
    for _ in range(20_000):
        href = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))
        href = ("/" if rng.random() < 0.5 else "") + href
        cases.append((rng.choice(bases), ("http://h2.y" if rng.random() < 0.2 else "") + href))
    # and every href of the real page layouts kept for the rendering tests (WordPress, Gatsby,
    # Next.js, Nuxt, app shells), on two bases
    import lxml.html

    for page in sorted((Path(__file__).parent / "data" / "render").glob("*.html")):
        for href in lxml.html.fromstring(page.read_bytes()).xpath("//@href | //@src"):
            cases += [("https://www.example.org/blog/2024/post.html", str(href)),
                      ("http://example.org:8080/", str(href))]
    fast = [links.extract_links(base, [href]) for base, href in cases]
    monkeypatch.setattr(links, "is_safe_url", lambda url: False)  # urljoin for every link
    assert fast == [links.extract_links(base, [href]) for base, href in cases]
    assert sum(1 for urls, _ in fast if urls) > 10_000
