"""Content processors: PDF libraries and MIME sniffers chosen by measurement, the cost of
processors on an HTML crawl, and a crawl of a site of documents against stock Scrapy's
``CrawlSpider``."""

from __future__ import annotations

import ctypes
import io
import json
import os
import resource
import statistics
from collections import Counter
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import ROOT, crawl, table
from testweb import read_log

LIBRARIES = ("pypdfium2", "pypdf", "pdfminer.six")


# -- the three PDF libraries, each as a user would call it -------------------------------------
def _pdfium(data: bytes) -> tuple[int, int, int]:
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    doc = pdfium.PdfDocument(data)
    words = links = 0
    for number in range(len(doc)):
        page = doc[number]
        textpage = page.get_textpage()
        words += len(textpage.get_text_bounded().split())
        position, link = ctypes.c_int(0), raw.FPDF_LINK()
        while raw.FPDFLink_Enumerate(page.raw, ctypes.byref(position), ctypes.byref(link)):
            action = raw.FPDFLink_GetAction(link)
            links += bool(action and raw.FPDFAction_GetType(action) == raw.PDFACTION_URI)
        textpage.close()
        page.close()
    pages = len(doc)
    doc.close()
    return pages, words, links


def _pypdf(data: bytes) -> tuple[int, int, int]:
    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    words = links = 0
    for page in reader.pages:
        words += len((page.extract_text() or "").split())
        for annotation in page.get("/Annots") or []:
            action = annotation.get_object().get("/A")
            links += bool(action and action.get_object().get("/URI"))
    return len(reader.pages), words, links


def _pdfminer(data: bytes) -> tuple[int, int, int]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdftypes import resolve1

    pages = words = links = 0
    for layout in extract_pages(io.BytesIO(data)):
        pages += 1
        words += sum(len(e.get_text().split()) for e in layout if isinstance(e, LTTextContainer))
    for page in PDFPage.get_pages(io.BytesIO(data)):
        for annotation in resolve1(page.annots) or []:
            action = resolve1(resolve1(annotation).get("A"))
            links += bool(action and resolve1(action).get("URI"))
    return pages, words, links


READERS = {"pypdfium2": _pdfium, "pypdf": _pypdf, "pdfminer.six": _pdfminer}


def pdf_library_run(library: str, path: str, cap_mb: int = 2048) -> dict:
    """One library on one file, in this (child) process under an address-space cap: the
    outcome, the time, and what it read."""
    resource.setrlimit(resource.RLIMIT_AS, (cap_mb << 20, cap_mb << 20))
    data = Path(path).read_bytes()
    start = time.perf_counter()
    try:
        pages, words, links = READERS[library](data)
        outcome = "read"
    except MemoryError:
        pages = words = links = 0
        outcome = "MemoryError"
    except Exception as exc:  # noqa: BLE001 -- the outcome is what is measured
        pages = words = links = 0
        outcome = type(exc).__name__
    return {"outcome": outcome, "seconds": time.perf_counter() - start, "pages": pages,
            "words": words, "links": links}


def _child(library: str, path: Path, timeout: float) -> dict:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--child", "pdf-library",
           library, str(path)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"outcome": f"no answer in {timeout:.0f} s", "seconds": timeout}
    if proc.returncode:
        return {"outcome": f"died (exit {proc.returncode})",
                "seconds": time.perf_counter() - start}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _libraries(quick: bool) -> None:
    from testweb.documents import hostile_files
    from testweb.pdfcorpus import real_pdfs

    pdfs = real_pdfs()
    if quick:
        pdfs = [p for p in pdfs if p.path.stat().st_size < 500_000]
    rows = []
    for library in LIBRARIES:
        pages = words = links = 0
        seconds = 0.0
        for pdf in pdfs:
            answer = pdf_library_run(library, str(pdf.path), cap_mb=1 << 16)
            pages += answer["pages"]
            words += answer["words"]
            links += answer["links"]
            seconds += answer["seconds"]
        rows.append([library, len(pdfs), pages, pages / seconds, words, links])
    best = max(r[4] for r in rows)
    rows = [r[:5] + [r[4] / best, r[5]] for r in rows]
    table(f"PDF libraries on the real-PDF corpus ({len(pdfs)} files: Debian manuals, "
          "documentation pages printed by Chromium)",
          ["library", "files", "pages", "pages/s", "words", "words of the most", "URI links"],
          rows)

    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "crawler_ext"
    hostile = {n: d for n, d in hostile_files(cache / "docs-1").items() if n.endswith(".pdf")}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in hostile.items():
            path = Path(tmp) / name
            path.write_bytes(data)
            row = [name]
            for library in LIBRARIES:
                answer = _child(library, path, timeout=60)
                row.append(f"{answer['outcome']}, {answer['seconds']:.1f} s"
                           + (f", {answer.get('links', 0):,} links" if answer.get("links") else ""))
            rows.append(row)
    table("PDF libraries on hostile files (each in a process of its own, 2 GiB address space, "
          "60 s)", ["file", *LIBRARIES], rows)


# -- MIME sniffers --------------------------------------------------------------------------
def _samples() -> list[tuple[str, bytes]]:
    from testweb.corpus import build_corpus
    from testweb.documents import _image, make_pdf
    from testweb.pdfcorpus import real_pdfs

    samples: list[tuple[str, bytes]] = []
    for pdf in real_pdfs()[:10]:
        samples.append(("application/pdf", pdf.path.read_bytes()[:4096]))
    samples.append(("application/pdf", make_pdf(["x"])))
    for fmt, mime in (("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"),
                      ("WEBP", "image/webp")):
        samples.append((mime, _image(fmt)))
    for site in build_corpus()[:10]:
        samples.append(("text/html", (site.root / site.start.lstrip("/")).read_bytes()[:4096]))
    samples.append(("text/html", b"\n\n  <html><body><p>hello</p></body></html>"))
    samples.append(("text/xml", b'<?xml version="1.0"?><rss version="2.0"><channel>'
                                b"<title>t</title></channel></rss>"))
    samples.append(("text/xml", b'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/'
                                b'Atom"><title>t</title></feed>'))
    samples.append(("text/plain", b"Release notes.\nSee http://example.com/ for more.\n"))
    samples.append(("text/plain", Path(sys.modules["json"].__file__).read_bytes()[:4096]))
    return samples


def _sniffers() -> None:
    import filetype
    import magic
    import puremagic

    def _pure(data: bytes) -> str | None:
        try:
            return puremagic.from_string(data, mime=True)
        except puremagic.PureError:
            return None

    handle = magic.Magic(mime=True)
    sniffers = {"python-magic (libmagic)": handle.from_buffer, "puremagic": _pure,
                "filetype": filetype.guess_mime}
    same = {"application/xml": "text/xml", "application/x-gzip": "application/gzip"}
    samples = _samples()
    rows = []
    for name, sniff in sniffers.items():
        right = 0
        start = time.perf_counter()
        for _ in range(20):
            answers = [sniff(data) for _, data in samples]
        per = (time.perf_counter() - start) / (20 * len(samples))
        for (truth, _), answer in zip(samples, answers, strict=True):
            right += same.get(answer or "", answer) == truth
        binary = sum(same.get(a or "", a) == t for (t, _), a in zip(samples, answers, strict=True)
                     if not t.startswith("text/"))
        missed = Counter(f"{t} as {same.get(a or '', a)}" for (t, _), a in
                         zip(samples, answers, strict=True) if same.get(a or "", a) != t)
        rows.append([name, f"{right}/{len(samples)}",
                     f"{binary}/{sum(not t.startswith('text/') for t, _ in samples)}",
                     per * 1e6, ", ".join(f"{n}x {m}" for m, n in missed.most_common())])
    table("MIME sniffers on real and generated documents (PDF, PNG, JPEG, GIF, WebP, HTML, "
          "XML feeds, plain text)", ["sniffer", "right", "right on binary", "µs a document",
                                     "missed"], rows)


# -- HTML crawl: processors on vs off -------------------------------------------------------
def _html_cost(quick: bool) -> None:
    from benchmarks.cpu import corpus_rates

    runs = 1 if quick else 3
    sites, rates, _ = corpus_rates({"off": {"CRAWLER_EXT_PROCESSORS_ENABLED": False},
                                    "on": {"CRAWLER_EXT_PROCESSORS_ENABLED": True}}, runs)
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    table(f"CPU-bound HTML crawl of the real-site corpus ({sites} sites), processors off "
          f"and on (median of {runs} each, alternated)",
          ["processors", "pages/s (median)", "runs", "ratio to off"],
          [["off (dedup's own fingerprint worker)", off, ", ".join(f"{r:.0f}" for r in
                                                                  rates["off"]), 1.0],
           ["on (HTML through its processor)", on, ", ".join(f"{r:.0f}" for r in rates["on"]),
            on / off]])


# -- the document site: the pack against stock CrawlSpider ----------------------------------
STOCK_SPIDER = '''
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class Stock(CrawlSpider):
    name = "stock"
    rules = [Rule(LinkExtractor(), callback="parse_item", follow=True)]

    def __init__(self, start="", *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.start_urls = [start]

    def parse_item(self, response):
        yield {"url": response.url, "status": response.status}
'''


def _stock_crawl(web, work: Path) -> tuple[dict, float, int]:
    spider = work / "stock_spider.py"
    spider.write_text(STOCK_SPIDER)
    stats_file = work / "stock.stats.json"
    start = time.monotonic()
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(spider), "-a",
           f"start={web.url()}", "-s", "ADDONS={}", "-s", "LOG_LEVEL=WARNING",
           "-s", "SCHEDULER=scrapy.core.scheduler.Scheduler",
           "-s", "DUPEFILTER_CLASS=scrapy.dupefilters.RFPDupeFilter",
           "-s", "TWISTED_DNS_RESOLVER=crawler_ext.hosts.HostsOverrideResolver",
           "-s", f"CRAWLER_EXT_HOSTS={web.hosts_setting}", "-s", "DOWNLOAD_DELAY=0.05",
           "-s", "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.0/8",
           "-s", 'EXTENSIONS={"crawler_ext.statsfile.StatsFile": 0}',
           "-s", f"CRAWLER_EXT_STATS_FILE={stats_file}", "-s", "ROBOTSTXT_OBEY=False",
           "-o", str(work / "stock.jsonl")]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    took = time.monotonic() - start
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    return stats, took, proc.returncode


def _documents() -> None:
    from testweb.documents import DocumentSite

    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "crawler_ext"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("stock Scrapy CrawlSpider", "crawler_ext web spider, add-on"):
            with DocumentSite(cache / "docs-1", work / name.split()[0]) as web:
                if name.startswith("stock"):
                    stats, took, code = _stock_crawl(web, work)
                else:
                    start = time.monotonic()
                    stats = crawl(web, {"CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05,
                                        "CRAWLER_EXT_DEDUP_ACTION": "mark"}, web.url(), work)
                    took, code = time.monotonic() - start, 0
                log = read_log(web.log_path)
            fetched = {e.path for e in log}
            only = web.truth["only"]
            reached = {kind: f"{len(set(p) & fetched)}/{len(p)}" for kind, p in only.items()}
            rows.append([name, code, len(log), reached["pdf"], reached["feed"], reached["text"],
                         reached["sniffed"], stats.get("dedup/exact", 0) + stats.get(
                             "dedup/near", 0), stats.get("memusage/max", 0) / 2 ** 20, took])
    table("A site of documents (PDFs, RSS and Atom feeds, plain text, images, hostile files, "
          "a slow 200 MB download): pages reachable only through each kind",
          ["crawl", "exit", "fetches", "via PDF", "via feed", "via text",
           "via a PDF with a wrong or no type", "duplicates flagged", "peak RSS MiB", "s"], rows)


def bench_processors(quick: bool) -> None:
    _libraries(quick)
    _sniffers()
    _documents()
    _html_cost(quick)
