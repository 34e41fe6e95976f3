"""pywb replays the crawled pages with their original bodies.

pywb pins redis<3, which conflicts with scrapy-redis, so it gets a virtual environment of its
own (built once per machine under ~/.cache/crawler_ext; the test is skipped if pip cannot
install it, e.g. with no package index reachable).
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import free_port, run_crawl

from testweb import TestWeb

PYWB_ENV = Path(os.environ.get("CRAWLER_EXT_PYWB_VENV",
                               Path.home() / ".cache" / "crawler_ext" / "pywb-venv"))


def pywb_bin() -> Path:
    bindir = PYWB_ENV / "bin"
    if not (bindir / "wayback").exists():
        try:
            subprocess.run([sys.executable, "-m", "venv", str(PYWB_ENV)], check=True,
                           capture_output=True, timeout=120)
            subprocess.run([str(bindir / "pip"), "install", "-q", "pywb>=2.7"], check=True,
                           capture_output=True, timeout=600)
        except (subprocess.SubprocessError, OSError) as exc:
            pytest.skip(f"pywb could not be installed: {exc}")
    return bindir


@pytest.mark.slow
def test_pywb_replays_original_bodies(testweb_factory, tmp_path: Path) -> None:
    bindir = pywb_bin()
    web = testweb_factory(hosts=7, pages=3)  # host 6 serves gzip
    warcs = tmp_path / "warcs"
    seeds = f"{web.url(0)},{web.url(6)}"
    result = run_crawl("-a", f"seeds={seeds}", "-a", "allowed_domains=h0000.web.test,h0006.web.test",
                       items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.02,
                                 "CRAWLER_EXT_WARC_DIR": str(warcs)})
    assert result.returncode == 0, result.output[-2000:]
    root = tmp_path / "pywb"
    root.mkdir()
    subprocess.run([str(bindir / "wb-manager"), "init", "crawl"], cwd=root, check=True,
                   capture_output=True)
    subprocess.run([str(bindir / "wb-manager"), "add", "crawl",
                    *map(str, sorted(warcs.glob("*.warc.gz")))], cwd=root, check=True,
                   capture_output=True)
    port = free_port()
    server = subprocess.Popen([str(bindir / "wayback"), "-b", "127.0.0.1", "-p", str(port)],
                              cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        model = TestWeb(seed=1, hosts=7, pages=3)
        for host, path in ((0, "/p/1.html"), (6, "/p/2.html"), (0, "/")):
            url = web.url(host, path)
            replay = f"http://127.0.0.1:{port}/crawl/2030id_/{url}"
            deadline = time.time() + 30
            while True:
                try:
                    with urllib.request.urlopen(replay, timeout=10) as resp:
                        body = resp.read()
                        encoding = resp.headers.get("Content-Encoding")
                    break
                except OSError:
                    if time.time() > deadline:
                        raise
                    time.sleep(0.3)
            if encoding == "gzip":
                body = gzip.decompress(body)
            original = model.respond(f"h{host:04d}.web.test", path, web.port, time.time()).body
            assert body == original, url
    finally:
        server.terminate()
        server.wait(10)
