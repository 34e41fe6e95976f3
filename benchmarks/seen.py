"""The seen set: memory per URL and checks per second, against Scrapy's and scrapy-redis's."""

from __future__ import annotations

import sys
import time

from benchmarks.harness import table


def bench_seen(quick: bool) -> None:
    import redis
    from scrapy import Request
    from scrapy.dupefilters import RFPDupeFilter

    from crawler_ext.admission import Admission
    from crawler_ext.admission.urls import fingerprint
    from crawler_ext.dupefilter import BloomDupeFilter

    n = 200_000 if quick else 10_000_000
    urls = [f"http://h{i % 5000}.example.com/a/{i}.html?x={i % 7}" for i in range(n)]
    rows = []

    bloom = BloomDupeFilter(capacity=n)
    t0 = time.perf_counter()
    for u in urls:
        bloom.seen_fingerprint(fingerprint(u))
    dt = time.perf_counter() - t0
    rows.append(["crawler_ext BloomDupeFilter", n, bloom.size_bytes() / n, n / dt,
                 bloom.estimated_fp_rate()])
    del bloom

    rfp = RFPDupeFilter()
    reqs = (Request(u) for u in urls)
    t0 = time.perf_counter()
    for r in reqs:
        rfp.request_seen(r)
    dt = time.perf_counter() - t0
    fps = rfp._fingerprints if hasattr(rfp, "_fingerprints") else rfp.fingerprints
    size = sys.getsizeof(fps) + sum(map(sys.getsizeof, fps))
    rows.append(["Scrapy RFPDupeFilter (set of SHA-1 hex)", n, size / n, n / dt, 0.0])
    del rfp

    client = redis.Redis.from_url("redis://127.0.0.1:6379/15")
    client.delete("bench:seen")
    mem0 = client.info("memory")["used_memory"]
    t0 = time.perf_counter()
    pipe = client.pipeline(transaction=False)
    for i, u in enumerate(urls):
        pipe.sadd("bench:seen", f"{fingerprint(u):016x}")
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    dt = time.perf_counter() - t0
    mem = client.info("memory")["used_memory"] - mem0
    client.delete("bench:seen")
    rows.append(["Redis set (scrapy-redis style, pipelined 1000)", n, mem / n, n / dt, 0.0])

    adm = Admission()
    links = [f"http://H{i % 5000}.Example.com/a/./{i}.html?utm_source=x#f" for i in range(100_000)]
    t0 = time.perf_counter()
    for u in links:
        c = adm.check(u)
        if c:
            fingerprint(c)
    per_link = (time.perf_counter() - t0) / len(links)
    table(f"Seen set: {n:,} URLs",
          ["seen set", "URLs", "bytes per URL", "checks/s", "estimated FP rate"], rows)
    print(f"\nAdmission cost per extracted link (canonicalise + trap filters + fingerprint): "
          f"{per_link * 1e6:.1f} us")
