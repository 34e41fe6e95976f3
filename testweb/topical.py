"""A topical test web built from real pages, for focused crawling.

Pages come from the real-site corpus (``testweb.corpus``; never the held-out packages): the
topic is the pages of a few sources (by default the flex and libgcrypt manuals), everything
else is off topic, and a page's label is its source, never a classifier's verdict.  The web
spreads them over ``hosts`` hosts with topical locality: a few *dense* hosts hold most of
the on-topic pages (about one page in ten is on topic in all), each host's home page is an
off-topic portal, so relevant pages sit behind off-topic ones, and links mostly stay on
their host, an on-topic page linking on-topic pages first.  Off-topic pages are unique
(a source page's text with another's paragraph), so content dedup drops none.

``informative=True`` (the benchmark): anchors are the target's title and URLs its source's
file name, as on real documentation sites.  ``informative=False`` (the crawl test): anchors
say "page" and URLs carry only a section name (``/kb/`` for on-topic pages), which no
keyword knows and only learning from outcomes can use.

Some examples of each kind are written to ``examples/relevant`` and
``examples/irrelevant`` and never served.  ``build`` is deterministic for a seed; its
parameters are recorded in ``web.json`` with the labels.  ``port``: the port the web will
be served on (links between hosts carry it).
"""

from __future__ import annotations

import html
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from testweb.corpus import Site, build_corpus

__all__ = ["TopicalWeb", "build"]

OFF_SECTIONS = ("news", "blog", "shop", "misc", "about", "forum")


@dataclass(frozen=True)
class TopicalWeb:
    root: Path  # served: one directory a host, <root>/sites/<host>/
    sites: list[Site]
    labels: dict[str, bool]  # "<host>/<path>" -> on topic
    relevant_examples: Path
    irrelevant_examples: Path
    keywords: list[str]

    @property
    def relevant(self) -> int:
        return sum(self.labels.values())


def _source_pages(site: Site) -> list[tuple[str, str, str]]:
    """(slug, title, text) of a corpus site's HTML pages, in path order."""
    from crawler_ext.focus.topic import page_text

    out = []
    for path in sorted(site.root.rglob("*.html")):
        data = path.read_bytes()
        text = page_text(data, True)
        title, _, body = text.partition("\n")
        words = body.split()
        if len(words) < 30:
            continue
        slug = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-") or "page"
        out.append((slug, " ".join(title.split()) or slug, " ".join(words[:600])))
    return out


def _page(title: str, text: str, links: list[tuple[str, str]]) -> str:
    items = "".join(f'<li><a href="{html.escape(u)}">{html.escape(a)}</a></li>'
                    for u, a in links)
    return (f"<!DOCTYPE html><html><head><title>{html.escape(title)}</title></head><body>"
            f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p><ul>{items}</ul>"
            "</body></html>")


def build(root: Path, seed: int = 40, hosts: int = 40, pages_per_host: int = 70,
          dense_hosts: int = 5, dense_share: float = 0.6, sparse_share: float = 0.03,
          links_per_page: int = 8, cross_host: float = 0.25, examples: int = 15, port: int = 80,
          topic: tuple[str, ...] = ("flex", "libgcrypt"), informative: bool = True,
          keywords: tuple[str, ...] = ("flex", "scanner", "lexical", "libgcrypt", "cipher",
                                       "cryptographic")) -> TopicalWeb:
    rng = random.Random(seed)
    corpus = build_corpus()
    by_name = {s.name: s for s in corpus}
    on_pool = [p for name in topic if name in by_name for p in _source_pages(by_name[name])]
    off_pool = [p for s in corpus if s.name not in topic for p in _source_pages(s)]
    rng.shuffle(on_pool)
    rng.shuffle(off_pool)
    ex_rel, on_pool = on_pool[:examples], on_pool[examples:]
    ex_irr, off_pool = off_pool[:2 * examples], off_pool[2 * examples:]
    for folder, pages in (("relevant", ex_rel), ("irrelevant", ex_irr)):
        (root / "examples" / folder).mkdir(parents=True, exist_ok=True)
        for slug, title, text in pages:
            (root / "examples" / folder / f"{slug}.html").write_text(_page(title, text, []))

    names = [f"t{i:02d}" for i in range(hosts)]
    dense = set(rng.sample(names, dense_hosts))
    # each host's pages: (path, title, text, on topic); page 0 the off-topic home page
    plan: dict[str, list[tuple[str, str, str, bool]]] = {}
    on_iter, off_index = iter(on_pool), 0
    for name in names:
        share = dense_share if name in dense else sparse_share
        pages = []
        for n in range(pages_per_host):
            on = n > 0 and rng.random() < share
            source = next(on_iter, None) if on else None
            if source is None:
                on = False
                slug, title, text = off_pool[off_index % len(off_pool)]
                other = off_pool[(off_index * 7 + 3) % len(off_pool)][2].split()[:40]
                text = f"{text} {' '.join(other)}"
                off_index += 1
            else:
                slug, title, text = source
            section = "kb" if on else rng.choice(OFF_SECTIONS)
            path = (f"/{slug}-{n}.html" if informative else f"/{section}/{n}.html")
            if n == 0:
                path, title = "/index.html", f"{name} home"
            pages.append((path, title, text, on))
        plan[name] = pages

    labels: dict[str, bool] = {}
    sites: list[Site] = []
    for name in names:
        pages = plan[name]
        on_pages = [p for p in pages[1:] if p[3]]
        folder = root / "sites" / name
        folder.mkdir(parents=True, exist_ok=True)
        for index, (path, title, text, on) in enumerate(pages):
            links: list[tuple[str, str]] = []
            if index == 0:  # the portal: every page of its host, off topic first
                targets = sorted(pages[1:], key=lambda p: (p[3], p[0]))
                links = [(p[0], p[1] if informative else "page") for p in targets]
            else:
                for _ in range(links_per_page):
                    if rng.random() < cross_host:
                        other = (rng.choice(sorted(dense)) if name in dense and rng.random() < .5
                                 else rng.choice(names))
                        target = rng.choice(plan[other])
                        url = f"http://{other}.real.test:{port}{target[0]}"
                    else:
                        pool = on_pages if on and on_pages and rng.random() < 0.7 else pages
                        target = rng.choice(pool)
                        url = target[0]
                    links.append((url, target[1] if informative else "page"))
            (folder / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            (folder / path.lstrip("/")).write_text(_page(title, text, links))
            labels[f"{name}.real.test{path}"] = on
        sites.append(Site(name, "topical", folder, "/index.html"))
    (root / "web.json").write_text(json.dumps(
        {"seed": seed, "hosts": hosts, "pages_per_host": pages_per_host, "dense": sorted(dense),
         "dense_share": dense_share, "sparse_share": sparse_share,
         "links_per_page": links_per_page, "cross_host": cross_host, "topic": topic,
         "informative": informative, "labels": labels}, indent=0))
    return TopicalWeb(root, sites, labels, root / "examples" / "relevant",
                      root / "examples" / "irrelevant", list(keywords))
