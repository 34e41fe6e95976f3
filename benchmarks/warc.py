"""WARC writing, and the WARC pipeline's cost on a CPU-bound crawl."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from benchmarks.harness import crawl, table
from testweb import TestWebServer, read_log


def bench_warc(quick: bool) -> None:
    import io

    from warcio.statusandheaders import StatusAndHeaders

    from crawler_ext.warc import WarcFileWriter

    n = 2_000 if quick else 20_000
    body = (b"<html><body>" + os.urandom(3000).hex().encode() + b"</body></html>")[:10_240]
    with tempfile.TemporaryDirectory() as tmp:
        writer = WarcFileWriter(tmp, max_size=100_000_000)
        writer.open()
        head = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        t0 = time.perf_counter()
        for i in range(n):
            writer.write(writer.builder.create_warc_record(
                f"http://e.com/{i}", "response", payload=io.BytesIO(body), length=len(body),
                http_headers=head))
        writer.close()
        dt = time.perf_counter() - t0
        rows = [["response records of 10 KB", n, n * len(body) / dt / 1e6,
                 writer.bytes_written / dt / 1e6, n / dt]]
    table("WARC writing (build + gzip + append, one process)",
          ["records", "count", "MB/s of payload", "MB/s written (compressed)", "records/s"], rows)

    hosts, pages = (50, 10) if quick else (100, 20)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with TestWebServer(hosts=hosts, pages=pages, hazards=False, latency=0.0,
                           workdir=Path(tmp) / "web") as web:
            common = {"ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 32,
                      "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0,
                      "CRAWLER_EXT_POLITENESS_LATENCY_FACTOR": 0}
            for name, warc_dir in (("without WARC", ""), ("with WarcPipeline", str(Path(tmp) / "w"))):
                best = 0.0
                for _ in range(2):
                    web.clear_log()
                    crawl(web, {**common, "CRAWLER_EXT_WARC_DIR": warc_dir}, str(web.seeds_path),
                          Path(tmp))
                    log = read_log(web.log_path)
                    span = max(e.end for e in log) - min(e.start for e in log)
                    best = max(best, len(log) / span)
                rows.append([name, len(log), best])
    rows = [r + [r[2] / rows[0][2]] for r in rows]
    table(f"WARC pipeline overhead on a CPU-bound crawl ({hosts * pages} pages, no delays; "
          f"best of 2)", ["crawl", "fetches", "pages/s", "ratio"], rows)
