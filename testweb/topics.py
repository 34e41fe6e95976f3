"""Topical webs of real documentation sections, for the focus benchmark (issue: focused
crawling that holds on webs it has never seen).

Each topic is one Debian documentation package (never one of the held-out five): SQLite
(``sqlite3-doc``), the Apache HTTP Server (``apache2-doc``, English) and SQLAlchemy
(``python-sqlalchemy-doc``).  Pages are cut into their sections (a heading and the text up
to the next one, 40 words or more), so a manual gives thousands of pages.  **The label
rule:** a page is on topic if and only if its section comes from the topic's package;
everything else -- the other two topics, and GNU plot, Flask, Werkzeug, Jinja, Requests,
BIND and the corpus's Debian manuals -- is off topic.  No classifier ever labels a page.

The web (``build``): ``hosts`` hosts of ``pages_per_host`` pages.  A few *topic hosts*
hold about half their pages on topic; the rest hold a little.  On-topic pages sit in
*islands* (8 to 30 pages linking mostly each other) that are reached only through a chain
of one to three off-topic pages from a host's section page, so a crawl that will not cross
off-topic pages misses them.  Every host's home page is an off-topic portal of section
pages; five of them, the *hubs*, also link every other host's home, and are the seeds.
Anchors are the target's title and URLs ``/<area>/<slug>-<n>.html`` (the area a word shared
by an island and its chain, never the topic's name), as on real documentation sites.
20 relevant and 40 irrelevant sections are written to ``examples/`` and never served.

``web.json`` holds the parameters, the labels and the graph (each page's title, text, label
and links) for the simulator, ``benchmarks/focus_sim.py``.  ``build`` is deterministic for a
seed.  Sections are cut once per package and cached beside the corpus.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from testweb.corpus import DEBIAN_SITES, HELD_OUT, Site, cache_dir, unpack_debian
from testweb.topical import _page

__all__ = ["TOPICS", "TopicWeb", "build", "sections_of"]

#: topic -> (package, folder of its HTML inside the package, the keywords a user would type)
TOPICS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "sqlite": ("sqlite3-doc", "usr/share/doc/sqlite3",
               ("sqlite", "sql", "database", "table", "query", "index")),
    "apache": ("apache2-doc", "usr/share/doc/apache2-doc/manual/en",
               ("apache", "httpd", "web server", "module", "directive", "virtual host")),
    "sqlalchemy": ("python-sqlalchemy-doc", "usr/share/doc/python-sqlalchemy-doc/html",
                   ("sqlalchemy", "orm", "session", "engine", "mapper", "query")),
}
#: off-topic fill: documentation packages of other subjects (plus the other topics)
FILL = {"gnuplot-doc": "usr/share/doc/gnuplot", "python-flask-doc": "usr/share/doc",
        "python-werkzeug-doc": "usr/share/doc", "python-jinja2-doc": "usr/share/doc",
        "python-requests-doc": "usr/share/doc", "bind9-doc": "usr/share/doc"}
AREAS = ("docs", "manual", "guide", "reference", "help", "kb", "lib", "notes", "wiki", "faq",
         "howto", "pages", "articles", "learn", "topics", "library")
MIN_WORDS = 40
MAX_WORDS = 400
_MARK = "\u00a7\u00a7"
_SECTION_VERSION = "1"

assert not any(p.startswith(h) for p, _, _ in TOPICS.values() for h in HELD_OUT)


def _cut(data: bytes, fallback: str) -> list[tuple[str, str]]:
    """(title, text) of each section of an HTML page: a heading (h1 to h3) and the text up to
    the next one, navigation left out; sections under ``MIN_WORDS`` words are dropped."""
    import lxml.html

    try:
        doc = lxml.html.fromstring(data)
    except (ValueError, lxml.etree.ParserError):
        return []
    for bad in doc.xpath("//script|//style|//nav|//*[@role='navigation']|"
                         "//*[contains(@class,'sphinxsidebar')]|//*[@id='quickview']"):
        bad.drop_tree()
    page_title = " ".join((doc.findtext(".//title") or fallback).split())
    for heading in doc.xpath("//h1|//h2|//h3"):
        text = " ".join(heading.text_content().split())
        for child in list(heading):
            heading.remove(child)
        heading.text = f"\n{_MARK}{text}{_MARK}\n"
    body = doc.find("body")
    parts = re.split(f"{_MARK}(.*?){_MARK}", (body if body is not None else doc).text_content())
    chunks = [(page_title, parts[0])] + [(parts[i], parts[i + 1])
                                         for i in range(1, len(parts) - 1, 2)]
    out = []
    for title, text in chunks:
        words = text.split()
        if len(words) >= MIN_WORDS:
            out.append((title or page_title, " ".join(words[:MAX_WORDS])))
    return out


def sections_of(package: str, folder: str) -> list[tuple[str, str]]:
    """The sections of a Debian documentation package's HTML under ``folder`` (downloaded
    and cut once, then read from the cache); [] when the package cannot be had."""
    cache = cache_dir()
    cached = cache / "sections" / f"{package}-{_SECTION_VERSION}.json"
    if cached.exists():
        return [tuple(s) for s in json.loads(cached.read_text())]  # type: ignore[misc]
    unpacked = unpack_debian([package], cache) / package
    if not (unpacked / ".done").exists():
        return []
    out = []
    for path in sorted((unpacked / folder).rglob("*.html")):
        out += _cut(path.read_bytes(), path.stem)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(out))
    return out


@dataclass(frozen=True)
class TopicWeb:
    topic: str
    root: Path
    sites: list[Site]
    labels: dict[str, bool]  # "<host>/<path>" -> on topic
    relevant_examples: Path
    irrelevant_examples: Path
    keywords: list[str]
    seeds: list[str]  # "<host>/<path>" of the hubs' home pages

    @property
    def relevant(self) -> int:
        return sum(self.labels.values())


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "page"


def _pools(topic: str, rng: random.Random) -> tuple[list, list]:
    package, folder, _ = TOPICS[topic]
    on = sections_of(package, folder)
    off = [s for other, (p, f, _) in TOPICS.items() if other != topic for s in sections_of(p, f)]
    for p, f in FILL.items():
        off += sections_of(p, f)
    for p, (_, _, start) in DEBIAN_SITES.items():
        off += sections_of(p, str(Path(start).parent))
    if not on or not off:
        raise RuntimeError(f"the documentation of topic {topic!r} ({package}) cannot be had")
    rng.shuffle(on)
    rng.shuffle(off)
    return on, off


def build(root: Path, topic: str = "sqlite", seed: int = 54, hosts: int = 60,
          pages_per_host: int = 100, topic_hosts: int = 8, topic_share: float = 0.5,
          island_share: float = 0.06, links_per_page: int = 8, cross_host: float = 0.15,
          examples: tuple[int, int] = (20, 40), port: int = 80) -> TopicWeb:
    rng = random.Random(f"{seed}-{topic}")
    on_pool, off_pool = _pools(topic, rng)
    ex_rel, on_pool = on_pool[:examples[0]], on_pool[examples[0]:]
    ex_irr, off_pool = off_pool[:examples[1]], off_pool[examples[1]:]
    for folder, pages in (("relevant", ex_rel), ("irrelevant", ex_irr)):
        (root / "examples" / folder).mkdir(parents=True, exist_ok=True)
        for n, (title, text) in enumerate(pages):
            (root / "examples" / folder / f"{n:03d}-{_slug(title)}.html").write_text(
                _page(title, text, []))

    names = [f"h{i:02d}" for i in range(hosts)]
    topical = set(rng.sample(names, topic_hosts))
    hubs = sorted(rng.sample(sorted(topical), 2) +
                  rng.sample(sorted(set(names) - topical), 3))
    on_iter = iter(on_pool)
    off_index = 0

    def off_section() -> tuple[str, str]:
        nonlocal off_index
        title, text = off_pool[off_index % len(off_pool)]
        if off_index >= len(off_pool):  # reused: made unique with another's words
            other = off_pool[(off_index * 7 + 3) % len(off_pool)][1].split()[:40]
            text = f"{text} {' '.join(other)}"
        off_index += 1
        return title, text

    # each host: pages (path, title, text, on topic, group); group -1 the host's open pages,
    # g >= 0 island g (its chain pages too); page 0 the home portal, 1..5 its section pages
    pages: dict[str, list[tuple[str, str, str, bool, int]]] = {}
    for name in names:
        share = topic_share if name in topical else island_share
        host_pages: list[tuple[str, str, str, bool, int]] = []
        target_on = round(share * (pages_per_host - 6))
        group = 0
        open_area = rng.choice(AREAS)
        for n in range(6):
            title, text = off_section()
            if n == 0:
                title = f"{name} home"
            path = "/index.html" if n == 0 else f"/{open_area}/{_slug(title)}-{n}.html"
            host_pages.append((path, title, text, False, -1))
        made_on = 0
        while len(host_pages) < pages_per_host:
            room = pages_per_host - len(host_pages)
            if made_on < target_on and room > 4:
                area = rng.choice(AREAS)
                for _ in range(rng.randint(1, 3)):  # the chain in
                    title, text = off_section()
                    host_pages.append((f"/{area}/{_slug(title)}-{len(host_pages)}.html",
                                       title, text, False, group))
                size = min(rng.randint(8, 30), target_on - made_on,
                           pages_per_host - len(host_pages))
                for _ in range(size):
                    source = next(on_iter, None)
                    if source is None:
                        break
                    title, text = source
                    host_pages.append((f"/{area}/{_slug(title)}-{len(host_pages)}.html",
                                       title, text, True, group))
                    made_on += 1
                group += 1
            else:
                title, text = off_section()
                host_pages.append((f"/{open_area}/{_slug(title)}-{len(host_pages)}.html",
                                   title, text, False, -1))
        pages[name] = host_pages

    labels: dict[str, bool] = {}
    graph: dict[str, dict] = {}
    sites: list[Site] = []
    for name in names:
        host_pages = pages[name]
        open_pages = [i for i, p in enumerate(host_pages) if p[4] == -1 and i > 0]
        groups: dict[int, list[int]] = {}
        for i, p in enumerate(host_pages):
            if p[4] >= 0:
                groups.setdefault(p[4], []).append(i)
        folder = root / "sites" / name
        for index, (path, title, text, on, group) in enumerate(host_pages):
            targets: list[tuple[str, int]] = []  # (host, page index)
            if index == 0:
                targets = [(name, i) for i in range(1, 6)]
                if name in hubs:
                    targets += [(other, 0) for other in names if other != name]
            elif group >= 0:
                members = groups[group]
                island = [i for i in members if host_pages[i][3]]
                if not on:  # a chain page leads on: the next chain page, or the island
                    after = [i for i in members if i > index]
                    targets.append((name, after[0]))
                else:
                    targets += [(name, rng.choice(island)) for _ in range(links_per_page - 3)]
                targets.append((name, rng.choice(open_pages)))
            else:
                targets += [(name, rng.choice(open_pages)) for _ in range(links_per_page - 2)]
                if index < 6:  # a section page opens the chains of some islands
                    for g in sorted(groups):
                        if g % 5 == index - 1:
                            targets.append((name, groups[g][0]))
            while len(targets) < links_per_page:
                if rng.random() < cross_host * 4:
                    other = rng.choice(names)
                    pool = pages[other]
                    targets.append((other, rng.randrange(len(pool)) if rng.random() < 0.5
                                    else 0))
                else:
                    targets.append((name, rng.choice(open_pages)))
            links = []
            for host, i in dict.fromkeys(targets):
                target = pages[host][i]
                url = target[0] if host == name else f"http://{host}.real.test:{port}{target[0]}"
                links.append((url, target[1]))
            file = folder / path.lstrip("/")
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(_page(title, text, links))
            key = f"{name}.real.test{path}"
            labels[key] = on
            graph[key] = {"title": title, "text": text, "on": on,
                          "links": [(u if u.startswith("http") else
                                     f"http://{name}.real.test:{port}{u}", a) for u, a in links]}
        sites.append(Site(name, "topics", folder, "/index.html"))
    seeds = [f"{h}.real.test/index.html" for h in hubs]
    keywords = list(TOPICS[topic][2])
    (root / "web.json").write_text(json.dumps(
        {"topic": topic, "seed": seed, "hosts": hosts, "pages_per_host": pages_per_host,
         "topic_hosts": sorted(topical), "hubs": hubs, "port": port, "keywords": keywords,
         "labels": labels, "graph": graph}))
    return TopicWeb(topic, root, sites, labels, root / "examples" / "relevant",
                    root / "examples" / "irrelevant", keywords, seeds)
