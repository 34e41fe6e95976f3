"""Host services on the test web: robots.txt (RFC 9309), Crawl-delay, the blocklist, the SSRF
guard and per-IP politeness, judged by the request log."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from conftest import run_crawl

from crawler_ext.testweb import politeness_violations, read_log


def test_robots_rules_5xx_crawl_delay_and_blocklist(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=10, pages=5)
    blocklist = tmp_path / "blocked.txt"
    blocklist.write_text("# operator blocklist\nh0005.web.test\n")
    result = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.1,
                                 "CRAWLER_EXT_POLITENESS_MAX_DELAY": 1.0,
                                 "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 2,
                                 "CRAWLER_EXT_ROBOTS_RETRY_BASE": 0.5,
                                 "CRAWLER_EXT_ROBOTS_MAX_FAILURES": 2,
                                 "CRAWLER_EXT_BLOCKLIST": str(blocklist)})
    assert result.returncode == 0, result.output[-3000:]
    log = read_log(web.log_path)
    by_host: dict[str, list] = defaultdict(list)
    for e in log:
        by_host[e.host].append(e)
    paths = {h: {e.path for e in es} for h, es in by_host.items()}
    # host 0: Disallow /private/, /nocrawl/ (our agent's group) and /*.pdf$
    assert not {p for p in paths["h0000.web.test"]
                if p.startswith(("/private/", "/nocrawl/")) or p.endswith(".pdf")}
    assert "/p/1.html" in paths["h0000.web.test"]
    # ... while a host without robots.txt (3) serves them: the links were there
    assert {"/private/1.html", "/nocrawl/1.html", "/doc1.pdf"} <= paths["h0003.web.test"]
    # host 1 answers 503 for robots.txt: nothing else is fetched; retried, then given up
    assert paths["h0001.web.test"] == {"/robots.txt"}
    assert len(by_host["h0001.web.test"]) == 2
    assert result.stat("robots/gave_up") >= 1
    # host 2 asks for Crawl-delay: 1.5
    h2 = by_host["h0002.web.test"]
    assert len(h2) > 5
    assert all(b.start - a.end >= 1.5 - 0.02 for a, b in zip(h2, h2[1:]))
    # the blocklisted host is never contacted, robots.txt included
    assert "h0005.web.test" not in paths
    # robots.txt is paced like every other fetch of its host
    assert politeness_violations(log, 0.1) == []
    assert result.stat("robots/sitemaps") >= 5


def test_private_addresses_are_refused_by_default(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=3, pages=3, hazards=False)
    result = run_crawl("-a", f"seeds={web.url(0)},http://127.0.0.1:{web.port}/",
                       items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_ALLOWED_NETWORKS": "",
                                 "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 1})
    assert result.returncode == 0, result.output[-3000:]
    assert read_log(web.log_path) == []  # not a single request reached the server
    assert result.stat("admission/rejected/private_address") == 1  # the IP literal
    assert "a private or reserved address" in result.output  # the name, refused by the resolver
    assert result.stat("robots/gave_up") == 1
    assert result.items == []


def test_politeness_per_ip_groups_hosts_that_share_a_server(testweb_factory,
                                                           tmp_path: Path) -> None:
    # every test web host is served from 127.0.0.1: per IP, they are one politeness unit
    web = testweb_factory(hosts=4, pages=4, hazards=False)
    common = {"CRAWLER_EXT_HOSTS": web.hosts_setting, "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.2,
              "CRAWLER_EXT_POLITENESS_MAX_DELAY": 0.2, "ROBOTSTXT_OBEY": False}
    by_ip = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "a.jsonl",
                      settings={**common, "CRAWLER_EXT_POLITENESS_KEY": "ip"})
    assert by_ip.returncode == 0, by_ip.output[-3000:]
    log = read_log(web.log_path)
    assert len(log) == 16
    assert politeness_violations(log, 0.2, key="client") == []  # one server: one at a time
    web.clear_log()
    by_host = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "b.jsonl",
                        settings=common)
    assert by_host.returncode == 0
    log = read_log(web.log_path)
    assert len(log) == 16
    assert politeness_violations(log, 0.2) == []  # per host it is polite...
    assert politeness_violations(log, 0.2, key="client") != []  # ...but not per server
