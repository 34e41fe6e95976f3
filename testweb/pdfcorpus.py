"""The real-PDF corpus: manuals from Debian packages, and real documentation pages printed
to PDF by Chromium.

* Debian packages' PDF manuals, fetched like the real-site corpus (``apt-get download``,
  ``dpkg-deb -x`` into a cache, nothing installed): Asymptote's (pdfTeX), Bash's and the GNU
  coding standards (Texinfo), gnuplot's, and R's manuals.
* Pages of the real-site corpus (``testweb.corpus``) printed by Debian's headless Chromium
  (``--print-to-pdf`` keeps hyperlinks as link annotations), each printed twice: two prints
  of one document, byte-different.

Held out, as for the real sites: python3-doc, postgresql-doc-*, python-django-doc, git-doc,
python-scrapy-doc.  ``real_pdfs()`` returns what could be built (an empty list offline).
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RealPdf", "chromium", "print_to_pdf", "real_pdfs"]

CORPUS_VERSION = "2"
#: package -> its PDF manuals (paths inside the package; ``.gz`` ones are unpacked)
DEBIAN_PDFS = {
    "asymptote-doc": ["usr/share/doc/asymptote/asymptote.pdf",
                      "usr/share/doc/asymptote/asy-latex.pdf",
                      "usr/share/doc/asymptote/CAD.pdf"],
    "bash-doc": ["usr/share/doc/bash/bashref.pdf", "usr/share/doc/bash/bash.pdf"],
    "gnu-standards": ["usr/share/doc/gnu-standards/standards.pdf.gz",
                      "usr/share/doc/gnu-standards/maintain.pdf.gz"],
    "gnuplot-doc": ["usr/share/doc/gnuplot/gnuplot.pdf"],
    "r-doc-pdf": [f"usr/share/R/doc/manual/R-{name}.pdf"
                  for name in ("FAQ", "admin", "data", "exts", "intro", "ints", "lang")],
}
#: pages of the real-site corpus printed by Chromium, served over loopback HTTP: (site, path)
PRINTED = [("debian-faq", "index.en.html"), ("docutils", "index.html"),
           ("flex", "index.html"), ("libgcrypt", "index.html"), ("jsoncpp", "index.html")]


@dataclass(frozen=True)
class RealPdf:
    name: str
    source: str  # the Debian package, or "chromium:<site>"
    path: Path


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "crawler_ext" / f"pdfs-{CORPUS_VERSION}"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def print_to_pdf(url: str, out: Path, hosts: str = "", timeout: float = 60) -> bool:
    """Print ``url`` with headless Chromium (``hosts``: its ``--host-resolver-rules``, e.g.
    ``MAP *.real.test 127.0.0.1``); True if it wrote ``out``."""
    binary = chromium()
    if binary is None:
        return False
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu",
                        f"--user-data-dir={profile}", "--no-pdf-header-footer",
                        *([f"--host-resolver-rules={hosts}"] if hosts else []),
                        f"--print-to-pdf={out}", url],
                       capture_output=True, timeout=timeout, check=False)
    return out.is_file() and out.stat().st_size > 0


def _debian(cache: Path) -> list[RealPdf]:
    from testweb.corpus import unpack_debian

    unpacked = unpack_debian(list(DEBIAN_PDFS), cache)
    pdfs = []
    for package, inners in DEBIAN_PDFS.items():
        for inner in inners:
            packed, path = unpacked / package / inner, unpacked / package / inner.removesuffix(".gz")
            if packed != path and packed.is_file() and not path.is_file():
                path.write_bytes(gzip.decompress(packed.read_bytes()))
            if path.is_file():
                pdfs.append(RealPdf(path.name, package, path))
    return pdfs


def _printed(cache: Path) -> list[RealPdf]:
    from testweb.corpus import build_corpus

    out = cache / "printed"
    out.mkdir(parents=True, exist_ok=True)
    wanted = [(site, page, copy) for site, page in PRINTED for copy in (1, 2)]
    if chromium() is not None and not all(
            (out / f"{site}-{copy}.pdf").exists() for site, _, copy in wanted):
        from testweb.static import RealWebServer

        sites = [s for s in build_corpus() if s.name in {site for site, _ in PRINTED}]
        with tempfile.TemporaryDirectory() as tmp, RealWebServer(sites, workdir=tmp) as web:
            for site, page, copy in wanted:  # served over HTTP: the links stay http links
                target = out / f"{site}-{copy}.pdf"
                if site in web.sites and not target.exists():
                    print_to_pdf(web.url(site, "/" + page), target,
                                 "MAP *.real.test 127.0.0.1")
    return [RealPdf(f"{site}-{copy}.pdf", f"chromium:{site}", out / f"{site}-{copy}.pdf")
            for site, _, copy in wanted if (out / f"{site}-{copy}.pdf").exists()]


def real_pdfs(printed: bool = True) -> list[RealPdf]:
    """The corpus, built once into the cache (downloads and prints only what is missing)."""
    cache = cache_dir()
    return _debian(cache) + (_printed(cache) if printed else [])
