"""The real-site corpus: real documentation trees, each served as its own loopback host.

Two sources, both real generators and themes (the heuristics of a crawler must hold on them):

* Debian documentation packages, downloaded with ``apt-get download`` and unpacked with
  ``dpkg-deb -x`` into a cache (no root needed, nothing installed): DocBook (debian-faq,
  debian-reference), docutils, GNU Texinfo (flex, libgcrypt), Javadoc (JUnit 4), Doxygen
  (jsoncpp) and gtk-doc (libidn2).
* Documentation built here with Sphinx (Alabaster, Read the Docs, Furo, PyData themes) and
  MkDocs (mkdocs, readthedocs and Material themes), each site from prose no other site
  shares (standard-library docstrings: guides, and a release-notes series whose pages link
  previous/next, like Django's), and pydoc pages of standard-library modules.

Held out for acceptance and never used here: python3-doc, postgresql-doc-*, python-django-doc,
git-doc, python-scrapy-doc.

``reachable(root, start)`` is the ground truth: the files reachable by ``<a href>`` from the
start page, computed by a plain walk over the files, independently of the crawler.
"""

from __future__ import annotations

import importlib
import os
import pydoc
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import lxml.html

__all__ = ["Site", "build_corpus", "reachable", "resolve_path", "unpack_debian", "HELD_OUT"]

HELD_OUT = ("python3-doc", "postgresql-doc", "python-django-doc", "git-doc", "python-scrapy-doc")

# package -> (site name, generator, start page inside the unpacked package)
DEBIAN_SITES = {
    "debian-faq": ("debian-faq", "DocBook XSL", "usr/share/doc/debian/FAQ/index.en.html"),
    "debian-reference-en": ("debian-reference", "DocBook XSL",
                            "usr/share/debian-reference/index.en.html"),
    "docutils-doc": ("docutils", "docutils", "usr/share/doc/docutils-doc/docs/index.html"),
    "flex-doc": ("flex", "GNU Texinfo", "usr/share/doc/flex-doc/html/index.html"),
    "libgcrypt20-doc": ("libgcrypt", "GNU Texinfo",
                        "usr/share/doc/libgcrypt20-doc/html/index.html"),
    "junit4-doc": ("junit4", "Javadoc", "usr/share/doc/junit4/api/index.html"),
    "libjsoncpp-doc": ("jsoncpp", "Doxygen", "usr/share/doc/libjsoncpp-doc/index.html"),
    "libidn2-doc": ("libidn2", "gtk-doc", "usr/share/doc/libidn2-doc/gtk-doc/index.html"),
}
SPHINX_THEMES = {"alabaster": "alabaster", "sphinx_rtd_theme": "sphinx-rtd",
                 "furo": "furo", "pydata_sphinx_theme": "pydata"}
MKDOCS_THEMES = {"mkdocs": "mkdocs", "readthedocs": "mkdocs-rtd", "material": "mkdocs-material"}
RELEASES = 40  # pages in the release-notes series (a prev/next chain, like Django's)
CORPUS_VERSION = "3"


@dataclass(frozen=True)
class Site:
    name: str  # also the host name's first label: <name>.real.test
    generator: str
    root: Path  # the directory served at /
    start: str  # the start page's path, e.g. /index.html

    def host(self, domain: str = "real.test") -> str:
        return f"{self.name}.{domain}"


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "crawler_ext" / f"corpus-{CORPUS_VERSION}"


# -- ground truth ------------------------------------------------------------------------------
def resolve_path(root: Path, path: str) -> Path | None:
    """The file served for URL path ``path`` under ``root`` (``dir/`` -> ``dir/index.html``),
    or None; never a file outside ``root``."""
    rel = unquote(path).lstrip("/")
    target = (root / rel) if rel else root
    if target.is_dir():
        target = target / "index.html"
    try:
        real = target.resolve()
        if not real.is_file() or not real.is_relative_to(root.resolve()):
            return None
    except (OSError, ValueError):
        return None
    return real


def _hrefs(data: bytes) -> list[str]:
    try:
        tree = lxml.html.fromstring(data)
    except (ValueError, lxml.etree.ParserError):
        return []
    return [a.get("href", "") for a in tree.iter("a") if a.get("href")]


def reachable(root: Path, start: str) -> set[str]:
    """URL paths reachable by ``<a href>`` from ``start`` over same-site links to existing
    files; only HTML files are read for links."""
    seen = {start}
    todo = [start]
    while todo:
        path = todo.pop()
        file = resolve_path(root, path)
        if file is None or file.suffix.lower() not in (".html", ".htm", ".xhtml"):
            continue
        for href in _hrefs(file.read_bytes()):
            href = href.strip()
            parts = urlsplit(urljoin("http://site" + path, href))
            if parts.scheme != "http" or parts.netloc != "site":
                continue
            target = parts.path or "/"
            if target in seen or resolve_path(root, target) is None:
                continue
            seen.add(target)
            todo.append(target)
    return {p for p in seen if resolve_path(root, p) is not None}


# -- Debian documentation packages -------------------------------------------------------------
def unpack_debian(packages: list[str], cache: Path) -> Path:
    """Download the Debian ``packages`` not yet unpacked (``apt-get download``, nothing
    installed) and unpack each into ``cache/debian/<package>`` (``dpkg-deb -x``), marked
    done by a ``.done`` file; return ``cache/debian``.  Offline, what is missing stays so."""
    debs = cache / "debs"
    unpacked = cache / "debian"
    missing = [p for p in packages if not (unpacked / p / ".done").exists()]
    if missing and shutil.which("apt-get"):
        debs.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", *missing], cwd=debs, capture_output=True,
                       timeout=600, check=False)
        for package in missing:
            found = sorted(debs.glob(f"{package}_*.deb"))
            if not found:
                continue
            dest = unpacked / package
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            subprocess.run(["dpkg-deb", "-x", str(found[-1]), str(dest)], check=True,
                           timeout=300)
            (dest / ".done").write_text("")
    return unpacked


def _debian_sites(cache: Path) -> list[Site]:
    unpacked = unpack_debian(list(DEBIAN_SITES), cache)
    sites = []
    for package, (name, generator, start) in DEBIAN_SITES.items():
        dest = unpacked / package
        if (dest / ".done").exists() and (dest / start).is_file():
            root = (dest / start).parent
            sites.append(Site(name, generator, root, "/" + (dest / start).name))
    return sites


# -- documentation built here ------------------------------------------------------------------
_STDLIB = ("abc", "argparse", "array", "ast", "asyncio", "base64", "bisect", "calendar", "cmd",
           "codecs", "collections", "colorsys", "contextlib", "copy", "csv", "dataclasses",
           "datetime", "decimal", "difflib", "doctest", "email", "enum", "fnmatch", "fractions",
           "functools", "getopt", "gettext", "glob", "gzip", "hashlib", "heapq", "hmac", "html",
           "http", "imaplib", "inspect", "io", "ipaddress", "itertools", "json", "logging",
           "mailbox", "mimetypes", "numbers", "operator", "optparse", "pathlib", "pickle",
           "pprint", "queue", "random", "re", "sched", "secrets", "shelve", "shlex", "smtplib",
           "socket", "sqlite3", "statistics", "string", "struct", "subprocess", "tarfile",
           "tempfile", "textwrap", "threading", "timeit", "tokenize", "traceback", "typing",
           "unittest", "uuid", "warnings", "weakref", "zipfile", "zlib")
GUIDES = 8
PER_SITE = GUIDES + RELEASES


def _texts() -> list[tuple[str, str]]:
    """(name, docstring) of standard-library modules, classes and functions with at least 40
    words, each docstring once, in a fixed order: real prose, a different text per page."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for module in _STDLIB:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        members = [(module, mod)] + [(f"{module}.{n}", getattr(mod, n)) for n in sorted(dir(mod))
                                     if not n.startswith("_")]
        for name, obj in members:
            doc = getattr(obj, "__doc__", None)
            if not isinstance(doc, str) or len(doc.split()) < 40 or doc in seen:
                continue
            if name != module and getattr(obj, "__module__", module).split(".")[0] != module:
                continue  # re-exported from elsewhere
            seen.add(doc)
            out.append((name, doc.strip()))
    return out


def _site_texts(index: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Site ``index``'s guides and releases (version, notes): slices no other site shares, so
    no two built sites mirror each other."""
    texts = _texts()[index * PER_SITE:(index + 1) * PER_SITE]
    guides = [(name.replace(".", "-").lower(), doc) for name, doc in texts[:GUIDES]]
    releases = [(f"{index + 1}.{i // 10}.{i % 10}", f"Changes in {name}.\n\n{doc}")
                for i, (name, doc) in enumerate(texts[GUIDES:])]
    return guides, releases


def _rst_escape(text: str) -> str:
    return re.sub(r"([\\`*_|\[\]<>:])", r"\\\1", text)


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def _write_sphinx_source(src: Path, index: int, theme: str) -> None:
    (src / "releases").mkdir(parents=True, exist_ok=True)
    guides, releases = _site_texts(index)
    for slug, text in guides:
        title = f"Guide to {slug}"
        body = "\n\n".join(_rst_escape(p) for p in _paragraphs(text))
        (src / f"{slug}.rst").write_text(f"{title}\n{'=' * len(title)}\n\n{body}\n")
    for version, notes in releases:
        title = f"Release {version}"
        body = "\n\n".join(_rst_escape(p) for p in _paragraphs(notes))
        (src / "releases" / f"{version}.rst").write_text(f"{title}\n{'=' * len(title)}\n\n{body}\n")
    (src / "releases" / "index.rst").write_text(
        "Release notes\n=============\n\n.. toctree::\n   :maxdepth: 1\n\n"
        + "".join(f"   {v}\n" for v, _ in reversed(releases)))
    (src / "index.rst").write_text(
        f"Documentation {index}\n================\n\nGuides and release notes.\n\n"
        ".. toctree::\n   :maxdepth: 2\n\n" + "".join(f"   {g}\n" for g, _ in guides)
        + "   releases/index\n")
    (src / "conf.py").write_text(f"project = 'corpus'\nextensions = []\nhtml_theme = {theme!r}\n")


def _build_sphinx(cache: Path) -> list[Site]:
    if not _importable("sphinx"):
        return []
    sites = []
    for index, (theme, name) in enumerate(SPHINX_THEMES.items()):
        out = cache / "built" / name
        if not (out / "index.html").exists():
            src = cache / "src" / name
            _write_sphinx_source(src, index, theme)
            proc = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html",
                                   "-d", str(cache / "doctrees" / name), str(src), str(out)],
                                  capture_output=True, text=True, timeout=600, check=False)
            if proc.returncode != 0:
                continue
        sites.append(Site(name, f"Sphinx ({theme})", out, "/index.html"))
    return sites


def _write_mkdocs_source(src: Path, index: int, theme: str) -> None:
    docs = src / "docs"
    (docs / "releases").mkdir(parents=True, exist_ok=True)
    guides, releases = _site_texts(index)
    for slug, text in guides:
        (docs / f"{slug}.md").write_text(f"# Guide to {slug}\n\n" + "\n\n".join(_paragraphs(text)))
    for version, notes in releases:
        (docs / "releases" / f"{version}.md").write_text(
            f"# Release {version}\n\n" + "\n\n".join(_paragraphs(notes)) + "\n")
    (docs / "releases" / "index.md").write_text(
        "# Release notes\n\n" + "".join(f"* [{v}]({v}.md)\n" for v, _ in reversed(releases)))
    (docs / "index.md").write_text(f"# Documentation {index}\n\nGuides and release notes.\n\n"
                                   + "".join(f"* [{g}]({g}.md)\n" for g, _ in guides)
                                   + "* [Release notes](releases/index.md)\n")
    nav = "".join(f"  - {g}: {g}.md\n" for g, _ in guides)
    nav += "  - Releases:\n    - releases/index.md\n" + "".join(
        f"    - {v}: releases/{v}.md\n" for v, _ in releases)
    (src / "mkdocs.yml").write_text(f"site_name: corpus {index}\nuse_directory_urls: true\n"
                                    f"theme:\n  name: {theme}\nnav:\n  - index.md\n{nav}")


def _build_mkdocs(cache: Path) -> list[Site]:
    if not _importable("mkdocs"):
        return []
    sites = []
    for index, (theme, name) in enumerate(MKDOCS_THEMES.items(), start=len(SPHINX_THEMES)):
        out = cache / "built" / name
        if not (out / "index.html").exists():
            src = cache / "src" / name
            _write_mkdocs_source(src, index, theme)
            proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f",
                                   str(src / "mkdocs.yml"), "-d", str(out)],
                                  capture_output=True, text=True, timeout=600, check=False)
            if proc.returncode != 0:
                continue
        sites.append(Site(name, f"MkDocs ({theme})", out, "/index.html"))
    return sites


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _build_pydoc(cache: Path) -> list[Site]:
    out = cache / "built" / "pydoc"
    if not (out / "index.html").exists():
        tmp = Path(tempfile.mkdtemp(dir=cache))
        names = []
        for module in _STDLIB[:40]:
            try:
                obj = importlib.import_module(module)
                page = pydoc.html.page(pydoc.describe(obj), pydoc.html.document(obj, module))
            except Exception:  # noqa: BLE001 - a module pydoc cannot document is left out
                continue
            (tmp / f"{module}.html").write_text(page, encoding="utf-8")
            names.append(module)
        (tmp / "index.html").write_text(
            "<html><head><title>pydoc</title></head><body><h1>Modules</h1><ul>"
            + "".join(f'<li><a href="{m}.html">{m}</a></li>' for m in names)
            + "</ul></body></html>", encoding="utf-8")
        shutil.rmtree(out, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.rename(out)
    return [Site("pydoc", "pydoc", out, "/index.html")]


def build_corpus(cache: Path | None = None) -> list[Site]:
    """Every site of the corpus that can be had here (downloaded or built once, then cached)."""
    import fcntl

    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    # one process builds at a time (the tests run on two workers): the other waits, then
    # finds the sites built
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return (_debian_sites(cache) + _build_sphinx(cache) + _build_mkdocs(cache)
                + _build_pydoc(cache))


if __name__ == "__main__":
    for site in build_corpus():
        print(f"{site.name:18} {site.generator:24} {len(reachable(site.root, site.start)):5} "
              f"{site.root}")
