"""The hostile web (``testweb.hostile``): SSRF through redirects in every
spelling, robots.txt redirects paced, hosts that ask to wait for days, cookies without a
Public Suffix List download.  Real `scrapy crawl` runs; the servers' logs are the judge."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_crawl

from testweb import politeness_violations, read_log
from testweb.process import ServerProcess

HOSTS = "*.hostile.test=127.0.0.1"


class Hostile(ServerProcess):
    def __init__(self, workdir: Path) -> None:
        self.log_path = workdir / "requests.jsonl"
        self.forbidden_path = workdir / "forbidden.jsonl"
        ready = self._launch([sys.executable, "-m", "testweb.hostile", "--log",
                              str(self.log_path), "--forbidden-log", str(self.forbidden_path)])
        self.port = int(ready["port"])
        self.forbidden_port = int(ready["forbidden"])

    def url(self, kind: str, path: str = "/") -> str:
        return f"http://{kind}.hostile.test:{self.port}{path}"

    def forbidden_connections(self) -> list[dict]:
        if not self.forbidden_path.exists():
            return []
        return [json.loads(x) for x in self.forbidden_path.read_text().splitlines() if x]


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[Hostile]:
    server = Hostile(tmp_path)
    yield server
    server.stop()


def crawl(hostile: Hostile, tmp_path: Path, kinds: list[str], *args: str, **settings):
    seeds = ",".join(hostile.url(k) for k in kinds)
    base = {"CRAWLER_EXT_HOSTS": HOSTS, "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.1/32",
            "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.2, "LOG_LEVEL": "INFO"}
    base.update(settings)
    return run_crawl("-a", f"seeds={seeds}", *args, items_path=tmp_path / "items.jsonl",
                     settings=base, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("allowed_domains", [False, True])
def test_no_redirect_reaches_a_forbidden_address(hostile, tmp_path: Path,
                                                 allowed_domains: bool) -> None:
    args = ("-a", "allowed_domains=hostile.test") if allowed_domains else ()
    result = crawl(hostile, tmp_path, ["robots", "redirects"], *args)
    assert result.returncode == 0, result.output[-3000:]
    assert hostile.forbidden_connections() == []
    log = read_log(hostile.log_path)
    fetched = {(e.host.split(".")[0], e.path) for e in log}
    # every redirect form was asked for, every normal page of both hosts fetched
    assert {("redirects", f"/to/{f}") for f in ("plain", "decimal", "hex", "octal", "short",
                                                "mapped", "compat", "v6loop", "zero")} <= fetched
    assert {("redirects", f"/ok/{i}") for i in range(5)} <= fetched
    assert ("robots", "/robots.txt") in fetched
    if not allowed_domains:  # with allowed_domains Scrapy's offsite check stops most first
        # IP-literal redirect targets are refused at admission, the robots.txt redirect (which
        # skips admission) by the guard in the download path
        assert result.stat("admission/rejected/private_address") == 9
        assert result.stat("netguard/refused") >= 1  # (robots.txt is tried again)


@pytest.mark.slow
def test_robots_txt_redirects_are_paced_on_their_host(hostile, tmp_path: Path) -> None:
    result = crawl(hostile, tmp_path, ["hops"])
    assert result.returncode == 0, result.output[-3000:]
    log = [e for e in read_log(hostile.log_path) if e.host.startswith("hops.")]
    robots = [e for e in log if e.path.startswith("/robots")]
    assert [e.path for e in robots] == ["/robots.txt"] + [f"/robots{i}.txt" for i in range(1, 6)]
    assert politeness_violations(log, min_gap=0.2) == []
    # REDIRECT_MAX_TIMES (5) ends the chain: RFC 9309 lets a crawler take robots.txt as
    # unavailable (allow all) after five redirects; the pages come only after that
    pages = [e for e in log if e.path.startswith("/ok/")]
    assert len(pages) == 5 and min(e.start for e in pages) > max(e.end for e in robots)


@pytest.mark.slow
def test_hosts_asking_to_wait_for_days_are_parked_and_the_crawl_ends(
        hostile, tmp_path: Path) -> None:
    result = crawl(hostile, tmp_path, ["retryafter", "retrydate", "crawldelay", "normal"],
                   CRAWLER_EXT_POLITENESS_BACKOFF_MAX=5, RETRY_TIMES=1)
    assert result.returncode == 0, result.output[-3000:]
    assert "finished" in result.output
    log = read_log(hostile.log_path)
    fetched = {(e.host.split(".")[0], e.path) for e in log}
    assert {("normal", f"/ok/{i}") for i in range(5)} <= fetched
    assert result.stat("frontier/parked") == 3
    assert result.stat("frontier/parked_pending") >= 3
    assert result.stat("frontier/delay_max") <= 5
    # the crawl-delay host: robots.txt, then nothing (it asked for a day between fetches)
    assert [e.path for e in log if e.host.startswith("crawldelay.")] == ["/robots.txt"]
    assert "parked" in result.output


@pytest.mark.slow
def test_a_page_of_200000_links_to_404s_does_not_keep_the_crawl_busy(
        hostile, tmp_path: Path) -> None:
    """A budget sink: one page links 200,000 URLs that all answer 404.  Its URLs are all
    queued before any is fetched; the 404s are trap evidence for their pattern, and once it is a
    trap the rest are dropped at their turn: the crawl ends by itself."""
    from testweb.hostile import SINK_LINKS

    result = crawl(hostile, tmp_path, ["sink", "normal"], LOG_LEVEL="INFO",
                   CRAWLER_EXT_MAX_OUTLINKS_PER_PAGE=SINK_LINKS + 1,
                   CRAWLER_EXT_POLITENESS_MIN_DELAY=0.1, CLOSESPIDER_TIMEOUT=240)
    assert result.returncode == 0, result.output[-3000:]
    assert result.stat("finish_reason") == "finished", result.stats
    assert "Traceback" not in result.output
    log = read_log(hostile.log_path)
    gone = [e for e in log if e.host.startswith("sink.") and e.path.startswith("/gone/")]
    assert 1 <= len(gone) <= 1000
    assert {("normal", f"/ok/{i}") for i in range(5)} <= {
        (e.host.split(".")[0], e.path) for e in log}
    assert result.stat("admission/error_answers") >= len(gone)
    # the trap rule says why the rest were not fetched
    assert result.stat("admission/rejected/pattern_cap") >= SINK_LINKS - 1000
    assert "Trap defence: pattern_cap stops following" in result.output


@pytest.mark.slow
def test_a_host_whose_robots_txt_answers_503_does_not_hold_a_finished_crawl(
        hostile, tmp_path: Path) -> None:
    """Its URLs wait for the robots.txt retry (a minute off): parked, kept under JOBDIR,
    not waited for."""
    result = crawl(hostile, tmp_path, ["robots503", "normal"], CRAWLER_EXT_ROBOTS_RETRY_BASE=60,
                   JOBDIR=str(tmp_path / "job"))
    assert result.returncode == 0, result.output[-3000:]
    assert result.stat("finish_reason") == "finished"
    assert result.stat("elapsed_time_seconds") < 30
    log = read_log(hostile.log_path)
    assert [e.path for e in log if e.host.startswith("robots503.")] == ["/robots.txt"]
    assert result.stat("robots/parked") >= 1
    assert result.stat("frontier/parked_pending") >= 1  # its home page, kept
    # resumed: robots.txt is asked again, and the kept URL is still there
    again = crawl(hostile, tmp_path, ["robots503"], CRAWLER_EXT_ROBOTS_RETRY_BASE=60,
                  JOBDIR=str(tmp_path / "job"))
    assert again.returncode == 0, again.output[-3000:]
    assert [e.path for e in read_log(hostile.log_path)
            if e.host.startswith("robots503.")] == ["/robots.txt", "/robots.txt"]
    assert again.stat("frontier/parked_pending") >= 1


@pytest.mark.slow
def test_a_robots_txt_that_never_answers_frees_its_slot_after_the_robots_timeout(
        hostile, tmp_path: Path) -> None:
    """CRAWLER_EXT_ROBOTS_TIMEOUT: the robots.txt fetch fails after 1 s, not DOWNLOAD_TIMEOUT's
    60 (RFC 9309: unreachable, disallow all; given up after one failure here)."""
    result = crawl(hostile, tmp_path, ["robotsslow", "normal"], DOWNLOAD_TIMEOUT=60,
                   CRAWLER_EXT_ROBOTS_TIMEOUT=1, CRAWLER_EXT_ROBOTS_MAX_FAILURES=1)
    assert result.returncode == 0, result.output[-3000:]
    assert result.stat("finish_reason") == "finished"
    assert result.stat("elapsed_time_seconds") < 30
    assert result.stat("robots/status/unreachable") == 1 and result.stat("robots/gave_up") >= 1
    fetched = {(e.host.split(".")[0], e.path) for e in read_log(hostile.log_path)}
    assert [p for k, p in fetched if k == "robotsslow"] == ["/robots.txt"]
    assert {("normal", f"/ok/{i}") for i in range(5)} <= fetched


@pytest.mark.slow
def test_a_parked_host_does_not_hold_a_redis_crawl_either(hostile, tmp_path: Path) -> None:
    """The same with the Redis frontier: the key waits in Redis, parked, for every worker;
    the crawl finishes without it and its URL stays queued there."""
    redis_lib = pytest.importorskip("redis")
    client = redis_lib.Redis.from_url("redis://127.0.0.1:6379/15")
    client.flushdb()
    try:
        result = crawl(hostile, tmp_path, ["robots503", "normal"],
                       CRAWLER_EXT_ROBOTS_RETRY_BASE=60, CRAWLER_EXT_FRONTIER_BACKEND="redis",
                       REDIS_URL="redis://127.0.0.1:6379/15")
        assert result.returncode == 0, result.output[-3000:]
        assert result.stat("finish_reason") == "finished"
        assert result.stat("elapsed_time_seconds") < 30
        assert [e.path for e in read_log(hostile.log_path)
                if e.host.startswith("robots503.")] == ["/robots.txt"]
        assert result.stat("robots/parked") >= 1
        assert result.stat("frontier/parked_pending") >= 1
        queued = [k for k in client.scan_iter(match="*:q:robots503*")]
        assert queued and all(client.zcard(k) >= 1 for k in queued)  # kept for a next run
    finally:
        client.flushdb()


@pytest.mark.slow
def test_cookies_use_the_bundled_public_suffix_list(hostile, tmp_path: Path) -> None:
    # outbound connections to anything but loopback are recorded by a sitecustomize hook;
    # tldextract would try to download the Public Suffix List on the first cookie
    hook = tmp_path / "hook"
    hook.mkdir()
    attempts = tmp_path / "attempts.txt"
    (hook / "sitecustomize.py").write_text(f'''
import socket
_connect = socket.socket.connect
_getaddrinfo = socket.getaddrinfo
def _record(host):
    if not str(host).startswith(("127.", "localhost", "::1")) and not str(host).endswith(".test"):
        with open({str(attempts)!r}, "a") as fh:
            fh.write(str(host) + "\\n")
def connect(self, address):
    if isinstance(address, tuple):
        _record(address[0])
    return _connect(self, address)
def getaddrinfo(host, *args, **kwargs):
    _record(host)
    return _getaddrinfo(host, *args, **kwargs)
socket.socket.connect = connect
socket.getaddrinfo = getaddrinfo
''')
    import os

    from conftest import ROOT

    env = {"PYTHONPATH": f"{hook}{os.pathsep}{ROOT}", "TLDEXTRACT_CACHE": str(tmp_path / "tld")}
    result = run_crawl("-a", f"seeds={hostile.url('cookies')}", items_path=tmp_path / "i.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": HOSTS,
                                 "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.1/32",
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05}, env=env)
    assert result.returncode == 0, result.output[-3000:]
    assert len(result.items) == 6
    assert not attempts.exists() or attempts.read_text() == "", attempts.read_text()
    assert "publicsuffix" not in result.output.lower()


@pytest.mark.slow
def test_hostile_servers_do_not_stop_the_crawl_or_cost_other_pages(hostile, tmp_path: Path) -> None:
    from conftest import ROOT, archived_uris

    kinds = ["hazards", "robots5mb", "robotsbinary", "robotshtml", "robotsslow", "normal",
             "cookiebomb"]
    # (no error budget: every hazard is fetched, however many fail in a row)
    result = crawl(hostile, tmp_path, kinds, DOWNLOAD_TIMEOUT=5, RETRY_TIMES=1,
                   CRAWLER_EXT_POLITENESS_MIN_DELAY=0.05, CRAWLER_EXT_HOST_PAGE_BUDGET=100,
                   CRAWLER_EXT_ROBOTS_MAX_FAILURES=2, CRAWLER_EXT_POLITENESS_BACKOFF_MAX=1,
                   CRAWLER_EXT_HOST_ERROR_BUDGET=0)
    assert result.returncode == 0, result.output[-3000:]
    # failed downloads are logged by Scrapy as usual; nothing of the pack's raised
    assert 'File "' + str(ROOT / "crawler_ext") not in result.output, result.output[-5000:]
    assert "Spider error processing" not in result.output
    log = read_log(hostile.log_path)
    fetched = {(e.host.split(".")[0], e.path) for e in log}
    from testweb.hostile import HAZARDS

    for kind in ("hazards", "robots5mb", "robotsbinary", "robotshtml", "normal"):
        assert {(kind, f"/ok/{i}") for i in range(5)} <= fetched, kind
    assert {("hazards", f"/h/{name}") for name in HAZARDS} <= fetched
    assert ("cookiebomb", "/h/cookies") in fetched
    # a robots.txt that never answers is unreachable: RFC 9309 says disallow all, and the
    # pack gives the origin up after CRAWLER_EXT_ROBOTS_MAX_FAILURES
    assert not [p for k, p in fetched if k == "robotsslow" and p != "/robots.txt"]
    assert result.stat("robots/gave_up") >= 1
    # the hazards show in stats; memory stays bounded (a 100 MB gzip bomb, a 50 MB page)
    assert result.stat("downloader/exception_count") >= 4
    assert result.stat("memusage/max") < 1_500_000_000
    # the 50,000-link page: 10,000 followed (CRAWLER_EXT_MAX_OUTLINKS_PER_PAGE), then the
    # host's budget
    assert result.stat("admission/rejected/max_outlinks") == 40_000
    assert result.output.count("Out-links cap:") == 1  # logged once for the host
    assert result.stat("admission/rejected/host_budget") > 9_000
    assert archived_uris(tmp_path / "warcs")  # every WARC file passes warcio check



@pytest.mark.slow
@pytest.mark.parametrize("budget", [5, 0])
def test_a_host_whose_fetches_keep_failing_is_parked_and_the_crawl_ends(
        hostile, tmp_path: Path, budget: int) -> None:
    """12 pages that always answer 503 (half with Retry-After: 1) and one that never answers,
    beside a normal host: after CRAWLER_EXT_HOST_ERROR_BUDGET failures in a row the failing
    host is parked, its URLs kept and reported, and the crawl ends by itself; without the
    budget (0) it is still retrying when CLOSESPIDER_TIMEOUT stops it."""
    result = crawl(hostile, tmp_path, ["failing", "normal"], DOWNLOAD_TIMEOUT=3,
                   CLOSESPIDER_TIMEOUT=60, CRAWLER_EXT_POLITENESS_BACKOFF_MAX=5,
                   CRAWLER_EXT_HOST_ERROR_BUDGET=budget)
    assert result.returncode == 0, result.output[-3000:]
    fetched = {(e.host.split(".")[0], e.path) for e in read_log(hostile.log_path)}
    assert {("normal", f"/ok/{i}") for i in range(5)} <= fetched
    if budget == 0:  # broken once: the failing host holds the crawl open to the timeout
        assert result.stat("finish_reason") == "closespider_timeout", result.stats
        return
    assert result.stat("finish_reason") == "finished", result.stats
    assert result.stat("elapsed_time_seconds") < 45
    assert result.stat("frontier/hosts_failing") == 1
    assert result.stat("frontier/parked") == 1 and result.stat("frontier/parked_pending") > 0
    failing = [e for e in read_log(hostile.log_path) if e.host.startswith("failing.")
               and (e.path.startswith("/f/") or e.path == "/never")]
    assert len(failing) == budget  # the budget's failures, then nothing more
    assert "failed CRAWLER_EXT_HOST_ERROR_BUDGET fetches in a row" in result.output

SPIDER = '''
import threading

import scrapy

class CompatSpider(scrapy.Spider):
    name = "compat"
    base = "BASE"
    sent = False

    async def start(self):
        yield scrapy.Request("data:,hello%20world", callback=self.got)
        yield scrapy.Request("file:///etc/hostname", callback=self.got, errback=self.failed)
        yield scrapy.Request(self.base + "/ok/0", callback=self.got)
        # a callback that is not a spider method, and meta that cannot be pickled
        yield scrapy.Request(self.base + "/ok/1", callback=lambda r: [{"lambda": r.url}],
                             meta={"lock": threading.Lock()})

    def got(self, response):
        yield {"url": response.url, "body": response.text[:40]}
        if response.url.endswith("/ok/0") and not self.sent:
            self.sent = True  # the user asks again, through a redirect, on purpose
            yield scrapy.Request(self.base + "/go/ok/0", callback=self.got, dont_filter=True)

    def failed(self, failure):
        yield {"error": failure.type.__name__, "url": failure.request.url}
'''


@pytest.mark.parametrize("durable", [False, True])
def test_schemes_callbacks_and_a_users_dont_filter(hostile, tmp_path: Path,
                                                     durable: bool) -> None:
    from conftest import ROOT

    spider = tmp_path / "compat_spider.py"
    spider.write_text(SPIDER.replace("BASE", hostile.url("normal", "").rstrip("/")))
    out = tmp_path / "items.jsonl"
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(spider), "-O", f"{out}:jsonlines",
           "-s", f"CRAWLER_EXT_HOSTS={HOSTS}", "-s", "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.1/32",
           "-s", "CRAWLER_EXT_POLITENESS_MIN_DELAY=0.05",
           "-s", f"CRAWLER_EXT_WARC_DIR={tmp_path / 'warcs'}"]
    if durable:
        cmd += ["-s", f"JOBDIR={tmp_path / 'job'}"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    items = [json.loads(x) for x in out.read_text().splitlines()]
    assert {"url": "data:,hello%20world", "body": "hello world"} in items
    assert {"error": "NotSupported", "url": "file:///etc/hostname"} in items
    assert "CRAWLER_EXT_ALLOWED_SCHEMES" in proc.stderr
    assert {"lambda": hostile.url("normal", "/ok/1")} in items, proc.stderr[-4000:]
    if durable:  # the durable frontier cannot pickle it: kept in memory, said once
        assert "kept in memory for this run" in proc.stderr
    fetches = [e for e in read_log(hostile.log_path) if e.path == "/ok/0"]
    assert len(fetches) == 2  # the redirect of a dont_filter request is not filtered


PRIORITY_SPIDER = '''
import scrapy

class PrioritySpider(scrapy.Spider):
    name = "priorities"
    custom_settings = {"HTTPERROR_ALLOW_ALL": True}

    async def start(self):
        for n, priority in enumerate(PRIORITIES):
            yield scrapy.Request(f"BASE/p/{n}", priority=priority)

    def parse(self, response):
        return []
'''
PRIORITIES = [0, 1, 3, 2, 3, -1, 5, 0, 2, 1, 5, 4]


def test_requests_of_one_host_go_out_in_priority_order(hostile, tmp_path: Path) -> None:
    from conftest import ROOT

    spider = tmp_path / "priority_spider.py"
    spider.write_text(PRIORITY_SPIDER.replace("BASE", hostile.url("normal", "").rstrip("/"))
                      .replace("PRIORITIES", repr(PRIORITIES)))
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", str(spider),
         "-s", f"CRAWLER_EXT_HOSTS={HOSTS}", "-s", "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.1/32",
         "-s", "CRAWLER_EXT_POLITENESS_MIN_DELAY=0.05",
         "-s", f"CRAWLER_EXT_WARC_DIR={tmp_path / 'warcs'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sent = [int(e.path.rsplit("/", 1)[1]) for e in read_log(hostile.log_path)
            if e.path.startswith("/p/")]
    # highest priority first; equal priorities in the order the spider made them
    expected = sorted(range(len(PRIORITIES)), key=lambda n: (-PRIORITIES[n], n))
    assert sent == expected, (sent, expected)


@pytest.mark.slow
def test_a_catalogue_and_a_long_pagination_are_crawled_whole(hostile, tmp_path: Path) -> None:
    from testweb.hostile import CATALOGUE_ITEMS, PAGINATION

    result = crawl(hostile, tmp_path, ["shop", "blog"], CRAWLER_EXT_POLITENESS_MIN_DELAY=0,
                   CRAWLER_EXT_POLITENESS_LATENCY_FACTOR=0,
                   CRAWLER_EXT_POLITENESS_MAX_IN_FLIGHT=4)
    assert result.returncode == 0, result.output[-3000:]
    fetched = {(e.host.split(".")[0], e.path) for e in read_log(hostile.log_path)}
    assert {("shop", f"/item/{i}") for i in range(CATALOGUE_ITEMS)} <= fetched
    assert {("shop", f"/catalogue/{n}") for n in range(1, CATALOGUE_ITEMS // 100 + 1)} <= fetched
    assert {("blog", f"/page/{n}") for n in range(1, PAGINATION + 1)} <= fetched
    assert not [k for k in result.stats if k.startswith("admission/rejected/pattern")]
    assert not [k for k in result.stats if k.startswith("admission/rejected/id_chain")]


SITEMAP_SPIDER = '''
from scrapy.spiders import SitemapSpider

class Sitemaps(SitemapSpider):
    name = "sitemaps"
    sitemap_urls = ["BASE/sitemap.xml"]
    ALLOWED

    def parse(self, response):
        yield {"url": response.url}
'''


@pytest.mark.parametrize("allowed_domains", [False, True])
def test_no_sitemap_or_sitemap_redirect_reaches_a_forbidden_address(
        hostile, tmp_path: Path, allowed_domains: bool) -> None:
    """Scrapy's SitemapSpider with the pack: an index lists sitemaps that redirect to the
    forbidden address in every spelling, one at that address, and a sitemap lists pages
    there; the forbidden listener logs nothing, the site's own pages are fetched."""
    from conftest import ROOT

    spider = tmp_path / "sitemap_spider.py"
    allowed = 'allowed_domains = ["hostile.test"]' if allowed_domains else ""
    spider.write_text(SITEMAP_SPIDER.replace("BASE", hostile.url("sitemaps", "").rstrip("/"))
                      .replace("ALLOWED", allowed))
    stats = tmp_path / "stats.json"
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", str(spider),
         "-s", f"CRAWLER_EXT_HOSTS={HOSTS}", "-s", "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.1/32",
         "-s", "CRAWLER_EXT_POLITENESS_MIN_DELAY=0.05", "-s", f"CRAWLER_EXT_STATS_FILE={stats}",
         "-s", f"CRAWLER_EXT_WARC_DIR={tmp_path / 'warcs'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert hostile.forbidden_connections() == []
    fetched = {e.path for e in read_log(hostile.log_path) if e.host.startswith("sitemaps.")}
    from testweb.hostile import forbidden_forms

    forms = forbidden_forms(hostile.forbidden_port)
    assert {"/sitemap.xml", "/sitemap-pages.xml"} | {f"/to/{f}" for f in forms} <= fetched
    assert {f"/ok/{i}" for i in range(5)} <= fetched
    if not allowed_domains:  # nothing but the pack's own guard stood in the way
        counted = json.loads(stats.read_text())
        assert counted.get("admission/rejected/private_address", 0) + \
            counted.get("netguard/refused", 0) >= 2 * len(forms)
