"""The reference project: `scrapy list`, argument errors, IP-literal seeds, a 1,000-host crawl."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT, run_crawl

from testweb import TestWeb, read_log


def scrapy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_scrapy_list_shows_web() -> None:
    proc = scrapy("list")
    assert proc.returncode == 0 and proc.stdout.split() == ["web"]


@pytest.mark.parametrize("args,message", [
    (["-a", "seeds=ftp://example.com/"], "seed 'ftp://example.com/' is not an http(s) URL"),
    (["-a", "seeds=/no/such/seeds.txt"], "cannot read seeds file '/no/such/seeds.txt'"),
    ([], "missing seeds"),
    (["-a", "seeds=http://a.test/", "-a", "max_pages=ten"], "max_pages must be a whole number"),
    (["-a", "seeds=http://a.test/", "-s", "CRAWLER_EXT_FRONTIER_BACKEND=mongo"],
     "CRAWLER_EXT_FRONTIER_BACKEND: expected one of memory, disk, sqlite, redis"),
    (["-a", "seeds=http://a.test/", "-s", "CRAWLER_EXT_FRONTIER_BACKEND=disk"],
     "CRAWLER_EXT_FRONTIER_BACKEND=disk needs JOBDIR"),
    (["-a", "seeds=http://a.test/", "-s", "CRAWLER_EXT_FRONTEIR_BANDS=2"], "unknown setting"),
    (["-s", "CRAWLER_EXT_FRONTIER_BACKEND=redis", "-s", "REDIS_URL=redis://127.0.0.1:1/0"],
     "Redis at redis://127.0.0.1:1/0 does not answer"),
    (["-s", "CRAWLER_EXT_DNS_SERVERS=dns.example"], "CRAWLER_EXT_DNS_SERVERS"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    proc = scrapy("crawl", "web", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_test_web_is_deterministic_and_exports_ground_truth() -> None:
    a, b = TestWeb(seed=7, hosts=40, pages=6), TestWeb(seed=7, hosts=40, pages=6)
    assert a.respond("h0003.web.test", "/p/2.html", 80, 0.0).body == \
        b.respond("h0003.web.test", "/p/2.html", 80, 0.0).body
    assert a.respond("h0003.web.test", "/p/2.html", 80, 0.0).body != \
        TestWeb(seed=8, hosts=40, pages=6).respond("h0003.web.test", "/p/2.html", 80, 0.0).body
    truth = a.ground_truth(port=80)
    assert len(truth["pages"]) == 240
    assert sum(truth["pagerank"].values()) == pytest.approx(1.0, abs=1e-6)
    # mirrors (host 8 of host 0) are byte-identical; print versions differ but share the text
    for x, y in truth["duplicates"]["exact"][:6]:
        hx, px = x.split("//")[1].split(":")[0], "/" + x.split("/", 3)[3]
        hy, py = y.split("//")[1].split(":")[0], "/" + y.split("/", 3)[3]
        assert a.respond(hx, px, 80, 0.0).body == a.respond(hy, py, 80, 0.0).body
    assert truth["change_periods"]


def test_the_request_log_read_live_skips_the_line_being_written(tmp_path: Path) -> None:
    line = ('{"host": "h", "path": "/", "start": 1.0, "end": 1.1, "client": "127.0.0.1", '
            '"status": 200, "bytes": 5}')
    path = tmp_path / "requests.jsonl"
    path.write_text(line + "\n" + line[:60])  # the server is half-way through a line
    assert [e.path for e in read_log(path)] == ["/"]
    path.write_text(line + "\n" + line + "\n")
    assert len(read_log(path)) == 2


def test_a_changing_webs_page_classes_change_on_their_periods() -> None:
    from testweb.model import parse_change_classes

    web = TestWeb(hosts=1, pages=8, hazards=False, change_period=2.0,
                  change_classes=parse_change_classes("never,1,never,4"))
    assert [web.page_period(n) for n in range(4)] == [None, 2.0, None, 8.0]
    body = lambda t: web.respond("h0000.web.test", "/p/1.html", 80, t).body  # noqa: E731
    assert body(0.5) == body(1.5) != body(2.5)  # every 2 s
    static = lambda t: web.respond("h0000.web.test", "/p/2.html", 80, t).body  # noqa: E731
    assert static(0.5) == static(100.0)
    truth = web.ground_truth(port=80)["change_periods"]
    assert sorted(set(truth.values()), key=str) == sorted({None, 2.0, 8.0}, key=str)
    with pytest.raises(ValueError):
        parse_change_classes("never,0")


@pytest.mark.slow
def test_ip_literal_seeds_and_allowed_domains(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=5, pages=5, hazards=False)
    result = run_crawl("-a", f"seeds=http://127.0.0.1:{web.port}/", "-a", "allowed_domains=127.0.0.1",
                       items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05, "ROBOTSTXT_OBEY": False})
    assert result.returncode == 0, result.output[-2000:]
    urls = {item["url"] for item in result.items}
    assert len(urls) == 5
    assert all(u.startswith(f"http://127.0.0.1:{web.port}/") for u in urls)


@pytest.mark.slow
def test_thousand_host_crawl_completes_and_the_log_accounts_for_every_fetch(
        testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=1000, pages=3)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(web.seeds_path.read_text())
    result = run_crawl("-a", f"seeds={seeds}", items_path=tmp_path / "items.jsonl", timeout=600,
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.2,
                                 "CRAWLER_EXT_POLITENESS_MAX_DELAY": 2,
                                 "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 4,
                                 "CONCURRENT_REQUESTS": 100})
    assert result.returncode == 0, result.output[-3000:]
    assert result.stats["finish_reason"] == "finished"
    log = read_log(web.log_path)
    assert len({e.host for e in log}) == 1000
    # one log line per response the crawler received, and every page item is in the log
    assert len(log) == result.stat("downloader/response_count")
    logged = Counter((e.host, e.path) for e in log)
    for item in result.items:
        host, _, path = item["final_url"].split("//", 1)[1].partition("/")
        assert (host.split(":")[0], "/" + path) in logged
    # every content page of a host whose robots.txt allows it was fetched: an exact mirror's
    # page (hosts 8 and 0 mod 10) on one host of the pair (the other copy is a duplicate,
    # not passed to the spider, so its links are not followed)
    fetched_ok = {(int(e.host[1:5]), e.path) for e in log if e.status == 200}
    missing = []
    for url in web.truth()["pages"]:
        host, path = int(url.split("//h")[1][:4]), "/" + url.split("/", 3)[3]
        if host % 10 == 1:
            continue  # robots.txt answers 503: disallow all
        twin = {0: host + 8, 8: host - 8}.get(host % 10)
        if (host, path) not in fetched_ok and (twin is None or (twin, path) not in fetched_ok):
            missing.append((host, path))
    assert missing == []
    # nothing but robots.txt was fetched from hosts whose robots.txt answers 503
    assert {e.path for e in log if int(e.host[1:5]) % 10 == 1} == {"/robots.txt"}
