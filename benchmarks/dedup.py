"""Content dedup: SimHash speed and index, and duplicate detection against the test web's ground
truth."""

from __future__ import annotations

import time
from collections import Counter

from benchmarks.harness import table


def bench_dedup(quick: bool) -> None:
    import random

    import numpy as np
    import simhash as simhash_pkg

    from crawler_ext.dedup.extract import main_text
    from crawler_ext.dedup.index import ContentIndex
    from crawler_ext.dedup.simhash import SimHashIndex, simhash
    from testweb import TestWeb

    rng = random.Random(4)
    vocab = [f"w{i}" for i in range(3000)] + ["the"] * 200  # a common word, as real text has
    pages = []
    for i in range(100 if quick else 300):
        words = " ".join(rng.choice(vocab) for _ in range(1800))
        if i % 3 == 0:  # a repeated run (table filler, "n/a n/a ..."): one shingle > 50 times
            words += " n a" * 60
        pages.append(f"<html><body><div class=nav><a href=/>home</a></div><p>{words}</p>"
                     f"</body></html>".encode())
    size = sum(map(len, pages)) / len(pages)
    t0 = time.perf_counter()
    for page in pages:
        simhash(main_text(page))
    t_full = time.perf_counter() - t0
    texts = [main_text(p) for p in pages]
    t0 = time.perf_counter()
    for text in texts:
        simhash(text)
    t_ours = time.perf_counter() - t0
    failures = 0
    t0 = time.perf_counter()
    for text in texts:
        words = text.split()
        try:  # TF-weighted, as ours: {shingle: count}
            simhash_pkg.Simhash(dict(Counter(" ".join(words[i:i + 3])
                                             for i in range(len(words) - 2))))
        except OverflowError:
            failures += 1
    t_pkg = time.perf_counter() - t0
    table(f"SimHash of {len(pages)} pages of {size / 1024:.1f} KB (3-word shingles, TF weights)",
          ["implementation", "pages/s (hash only)", "pages/s (text extraction + hash)",
           "pages failing with OverflowError"],
          [["crawler_ext.dedup.simhash (numpy, int64 weights)", len(pages) / t_ours,
            len(pages) / t_full, 0],
           ["simhash 2.1.2 package", len(pages) / t_pkg if failures < len(pages) else "fails",
            "", failures]])

    rows = []
    for n in ((100_000, 1_000_000) if quick else (1_000_000, 10_000_000)):
        fps = np.frombuffer(np.random.default_rng(1).bytes(8 * n), dtype=np.uint64)
        index = SimHashIndex(k=3)
        t0 = time.perf_counter()
        index.bulk_load(fps, np.arange(n, dtype=np.uint32))
        build = time.perf_counter() - t0
        queries = [int(fps[i]) ^ (1 << 5) ^ (1 << 50) for i in range(0, n, n // 1000)]
        t0 = time.perf_counter()
        hits = sum(index.nearest(q) is not None for q in queries)
        per_hit = (time.perf_counter() - t0) / len(queries)
        misses = [rng.getrandbits(64) for _ in range(1000)]
        t0 = time.perf_counter()
        for q in misses:
            index.nearest(q)
        per_miss = (time.perf_counter() - t0) / len(misses)
        rows.append([n, index.nbytes() / n, build, per_hit * 1e6, per_miss * 1e6,
                     hits / len(queries)])
        del index, fps
    table("SimHash index (4 permuted 16-bit block tables, k = 3)",
          ["fingerprints", "bytes each", "build s", "query us (near hit)", "query us (miss)",
           "share of near hits found"], rows)

    web = TestWeb(seed=1, hosts=200 if quick else 500, pages=12)
    truth: set[str] = set()
    for spec in web.hosts:
        if spec.mirror_of is not None:
            truth.update(f"{spec.name}{web.page_path(n)}" for n in range(web.n_pages))
        truth.update(f"{spec.name}/print/{n}.html" for n in range(1, web.n_pages, 4))
    results = []
    for label, near in (("exact hash only", False), ("exact + SimHash k=3", True)):
        index = ContentIndex(distance=3)
        flagged: set[str] = set()
        for spec in web.hosts:  # a mirror (index + 8) comes after its original
            paths = [web.page_path(n) for n in range(web.n_pages)]
            paths += [f"/print/{n}.html" for n in range(1, web.n_pages, 4)]
            for path in paths:
                reply = web.respond(spec.name, path, 80, 0.0)
                if reply.status != 200:
                    continue
                verdict = index.check(spec.name + path, reply.body)
                if verdict.kind == "exact" or (near and verdict.kind == "near"):
                    flagged.add(spec.name + path)
        hits = len(flagged & truth)
        results.append([label, len(truth), len(flagged), hits / len(flagged) if flagged else 1.0,
                        hits / len(truth)])
    table("Duplicate detection against the test web's ground truth (exact mirrors and "
          "print versions)", ["method", "true duplicates", "flagged", "precision", "recall"],
          results)
