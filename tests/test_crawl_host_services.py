"""Host services on the test web: robots.txt (RFC 9309), Crawl-delay, the blocklist, the SSRF
guard and per-IP politeness, judged by the request log."""

from __future__ import annotations

import pytest

from collections import defaultdict
from pathlib import Path

from conftest import run_crawl

from testweb import politeness_violations, read_log


@pytest.mark.slow
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


@pytest.mark.slow
def test_private_addresses_are_refused_by_default(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=3, pages=3, hazards=False)
    result = run_crawl("-a", f"seeds={web.url(0)},http://127.0.0.1:{web.port}/",
                       items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_ALLOWED_NETWORKS": "",
                                 "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 1,
                                 # robots.txt retried a minute later: the host is parked
                                 "CRAWLER_EXT_ROBOTS_RETRY_BASE": 60})
    assert result.returncode == 0, result.output[-3000:]
    assert read_log(web.log_path) == []  # not a single request reached the server
    assert result.stat("admission/rejected/private_address") == 1  # the IP literal
    assert "a private or reserved address" in result.output  # the name, refused by the resolver
    # its robots.txt could not be fetched: the host is parked, its URL kept, not waited for
    assert result.stat("robots/parked") >= 1 and result.stat("frontier/parked_pending") == 1
    assert result.items == []


@pytest.mark.slow
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


def _archived(warc_dir: Path) -> dict[str, set[str]]:
    """WARC record type -> target URIs of its 200 responses, over every file of a crawl (a
    429 or 503 answer for a noindex page is not the page, and is archived)."""
    from warcio.archiveiterator import ArchiveIterator

    kinds: dict[str, set[str]] = defaultdict(set)
    for path in warc_dir.glob("*.warc.gz"):
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type in ("response", "revisit") and \
                        record.http_headers.get_statuscode() == "200":
                    kinds[record.rec_type].add(record.rec_headers.get_header("WARC-Target-URI"))
    return kinds


@pytest.mark.slow
def test_nofollow_noindex_and_canonical_directives(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=10, pages=5)
    common = {"CRAWLER_EXT_HOSTS": web.hosts_setting, "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.1,
              "CRAWLER_EXT_POLITENESS_MAX_DELAY": 0.5, "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 2,
              "CRAWLER_EXT_ROBOTS_MAX_FAILURES": 1,
              "CRAWLER_EXT_DEDUP_ACTION": "mark"}  # the directive pages are near-duplicates
    marked = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "a.jsonl",
                       settings={**common, "CRAWLER_EXT_WARC_DIR": str(tmp_path / "wa")})
    assert marked.returncode == 0, marked.output[-3000:]
    paths = {e.path for e in read_log(web.log_path)}
    assert "/nofollow.html" in paths and "/xrobots.html" in paths and "/noindex.html" in paths
    # meta nofollow, X-Robots-Tag nofollow and rel=nofollow: their links are never followed
    assert not {p for p in paths if p.startswith(("/secret/", "/nf/"))}
    by_path = {item["url"].split(f":{web.port}", 1)[1]: item for item in marked.items}
    assert by_path["/noindex.html"]["noindex"] and by_path["/xrobots.html"]["noindex"]
    assert not by_path["/p/1.html"]["noindex"]
    noindex_urls = {i["url"] for i in marked.items if i["noindex"]}
    assert len(noindex_urls) >= 16  # two pages on each of the hosts that were crawled
    assert noindex_urls <= _archived(tmp_path / "wa")["response"]  # stored, marked
    # the print version of a page names it as canonical (robots allow /print/ everywhere)
    prints = [i for i in marked.items if "/print/" in i["url"] and i["status"] == 200]
    assert prints and all(i["canonical"] and "/p/" in i["canonical"] for i in prints)

    web.clear_log()
    kept_out = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "b.jsonl",
                         settings={**common, "CRAWLER_EXT_WARC_DIR": str(tmp_path / "wb"),
                                   "CRAWLER_EXT_NOINDEX_STORE": False})
    assert kept_out.returncode == 0, kept_out.output[-3000:]
    archived = _archived(tmp_path / "wb")
    # the same pages were fetched (gzip-coded ones included), but neither exported nor archived
    assert {e.path for e in read_log(web.log_path)} == paths
    assert not [i for i in kept_out.items if i["noindex"]]
    assert not noindex_urls & (archived["response"] | archived["revisit"])
    assert kept_out.stat("directives/noindex_not_stored") == len(noindex_urls)
    assert kept_out.stat("warc/skipped_noindex") == len(noindex_urls)
    assert len(kept_out.items) == len(marked.items) - len(noindex_urls)


@pytest.mark.slow
def test_a_changed_robots_txt_is_obeyed_after_expiry(testweb_factory, tmp_path: Path) -> None:
    # host 9 changes its robots.txt after the first fetch: allow all, then Disallow: /p/
    web = testweb_factory(hosts=10, pages=30, robots_change=True)
    result = run_crawl("-a", f"seeds={web.url(9)}", "-a", "allowed_domains=h0009.web.test",
                       items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.2,
                                 "CRAWLER_EXT_POLITENESS_MAX_DELAY": 0.2,
                                 "CRAWLER_EXT_ROBOTS_TTL": 2,
                                 "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 1})
    assert result.returncode == 0, result.output[-3000:]
    log = [e for e in read_log(web.log_path) if e.host == "h0009.web.test"]
    robots = [e for e in log if e.path == "/robots.txt"]
    assert len(robots) >= 2, [e.path for e in log]
    assert robots[1].start - robots[0].start >= 2 - 0.05  # refreshed once it expired
    before = [e for e in log if e.path.startswith("/p/") and e.start < robots[1].start]
    after = [e for e in log if e.path.startswith("/p/") and e.start > robots[1].end]
    assert before, "the first robots.txt allowed /p/"
    assert after == []  # the changed one disallows it: obeyed from its fetch on
    assert result.stat("robots/disallowed") >= 1
