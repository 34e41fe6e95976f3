"""Out-links per page on the real-site corpus: the evidence for the default of
``CRAWLER_EXT_MAX_OUTLINKS_PER_PAGE`` (the cap must never cut a real page), beside the caps the
peers ship (Nutch's ``db.max.outlinks.per.page`` 100, Heritrix's 6,000) and the hostile web's
budget sinks."""

from __future__ import annotations

from urllib.parse import urljoin, urldefrag

from benchmarks.harness import table


def bench_outlinks(quick: bool) -> None:
    import lxml.html

    from crawler_ext import config
    from testweb.corpus import build_corpus
    from testweb.hostile import SINK_LINKS

    cap = config.SETTINGS["CRAWLER_EXT_MAX_OUTLINKS_PER_PAGE"].default
    rows, every = [], []
    for site in build_corpus():
        counts = []
        for path in sorted(site.root.rglob("*.htm*")):
            try:
                doc = lxml.html.fromstring(path.read_bytes())
            except (ValueError, lxml.etree.ParserError):
                continue
            base = "http://site/" + str(path.relative_to(site.root))
            hrefs = [a.get("href") for a in doc.iter("a") if a.get("href")]
            distinct = {urldefrag(urljoin(base, h))[0] for h in hrefs}
            counts.append((len(hrefs), len(distinct)))
        if not counts:
            continue
        every += counts
        rows.append([site.name, len(counts), max(c[0] for c in counts),
                     max(c[1] for c in counts)])
    distinct = sorted(c[1] for c in every)
    n = len(distinct)

    def cut(limit: int) -> int:
        return sum(1 for d in distinct if d > limit)

    rows.append(["all", n, max(c[0] for c in every), distinct[-1]])
    table("Links per page on the real-site corpus", ["site", "pages", "most links",
                                                     "most distinct links"], rows)
    table("Pages a cap would cut (distinct links above it)",
          ["cap", "real pages cut", "of", "median page", "p99 page", "hostile sink page"],
          [[f"Nutch {100}", cut(100), n, distinct[n // 2], distinct[int(n * 0.99)], SINK_LINKS],
           [f"Heritrix {6000}", cut(6000), n, distinct[n // 2], distinct[int(n * 0.99)],
            SINK_LINKS],
           [f"crawler_ext {cap}", cut(cap), n, distinct[n // 2], distinct[int(n * 0.99)],
            SINK_LINKS]])
