"""The Scrapy add-on in a user's own project: ``scrapy startproject``, two spiders of the user's
own (a CrawlSpider with rules, a plain Spider that yields items and follows links), one
``ADDONS`` line, and the test web: politeness, robots.txt, dedup and WARC hold as with the
reference project; the user's feed export works; ``scrapy check``, ``parse`` and ``shell``
still work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT, archived_uris

from testweb import politeness_violations

pytestmark = pytest.mark.slow

SPIDERS = '''
import scrapy
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class RulesSpider(CrawlSpider):
    name = "rules"
    rules = [Rule(LinkExtractor(), callback="parse_item", follow=True)]

    def __init__(self, start=None, **kw):
        super().__init__(**kw)
        self.start_urls = [start]

    def parse_item(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}


class FollowSpider(scrapy.Spider):
    name = "follow"

    def __init__(self, start=None, **kw):
        super().__init__(**kw)
        self.start_urls = [start]

    def parse(self, response):
        """Yields one item per page and follows its links.

        @url {url}
        @returns items 1 1
        """
        yield {"url": response.url, "links": len(response.css("a::attr(href)"))}
        yield from response.follow_all(css="a::attr(href)", callback=self.parse)
'''

DELAY = 0.3


def user_project(python: str, tmp_path: Path, web, env: dict) -> Path:
    """``scrapy startproject userproj`` with the spiders above and the add-on line (plus what
    the test web needs: its host names, loopback allowed)."""
    subprocess.run([python, "-m", "scrapy", "startproject", "userproj"], cwd=tmp_path,
                   check=True, capture_output=True, env=env, timeout=120)
    root = tmp_path / "userproj"
    (root / "userproj" / "spiders" / "mine.py").write_text(
        SPIDERS.replace("{url}", web.url(0)))
    with open(root / "userproj" / "settings.py", "a") as fh:
        fh.write(f'''
ADDONS = {{"crawler_ext.Addon": 100}}
CRAWLER_EXT_HOSTS = {web.hosts_setting!r}
CRAWLER_EXT_ALLOWED_NETWORKS = "127.0.0.0/8"
CRAWLER_EXT_POLITENESS_MIN_DELAY = {DELAY}
CRAWLER_EXT_WARC_DIR = {str(tmp_path / "warcs")!r}
CRAWLER_EXT_ROBOTS_RETRY_BASE = 0.5
''')
    return root


@pytest.fixture
def project(tmp_path: Path, testweb_factory):
    web = testweb_factory(hosts=4, pages=8, hazards=False)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return web, user_project(sys.executable, tmp_path, web, env), env


def scrapy(root: Path, env: dict, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("spider", ["rules", "follow"])
def test_a_users_project_crawls_with_one_addon_line(project, tmp_path: Path,
                                                     spider: str) -> None:
    web, root, env = project
    proc = scrapy(root, env, "crawl", spider, "-a", f"start={web.url(0)}", "-O",
                  str(tmp_path / "items.jsonl"))
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert "crawler_ext add-on: frontier scheduler" in output
    assert "DNS: crawler_ext.dns.CachingResolver installed (set by an add-on)" in output
    # the template's DOWNLOAD_DELAY = 1 is handed to the frontier: no double delay, no warning
    assert "the project's DOWNLOAD_DELAY=1 is applied per host by the frontier" in output
    assert [line for line in output.splitlines() if "WARNING" in line] == []
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    log = web.log()
    pages = {(e.host, e.path) for e in log if e.path != "/robots.txt"}
    assert len(items) >= 10 and len(pages) >= 10
    # politeness: no two requests to one host closer than the delay, robots.txt first, once
    assert politeness_violations(log, DELAY) == []
    for host in {e.host for e in log}:
        mine = [e for e in log if e.host == host]
        assert mine[0].path == "/robots.txt"
        assert Counter(e.path for e in mine)["/robots.txt"] == 1
    # no URL fetched twice (but the start URL: Scrapy sends start requests with dont_filter,
    # so they skip the seen set and a link back to them is new, as in stock Scrapy), and every
    # page archived in WARC files that pass `warcio check`
    twice = [k for k, n in Counter((e.host, e.path) for e in log).items() if n > 1]
    assert twice in ([], [("h0000.web.test", "/")]), twice
    archived = archived_uris(tmp_path / "warcs")
    assert len(archived) >= len(items)
    assert "'dedup/unique': " in output  # content dedup judged the pages (stats dump)


def test_check_parse_and_shell_still_work(project) -> None:
    web, root, env = project
    check = scrapy(root, env, "check", "follow")
    assert check.returncode == 0, (check.stdout + check.stderr)[-3000:]
    assert "OK" in check.stderr
    parse = scrapy(root, env, "parse", "--spider", "follow", "-a", f"start={web.url(0)}",
                   web.url(0))
    assert parse.returncode == 0 and "Scraped Items" in parse.stdout, parse.stderr[-3000:]
    assert '"links"' in parse.stdout or "'links'" in parse.stdout
    shell = scrapy(root, env, "shell", web.url(0), "-c", "response.status")
    assert shell.returncode == 0 and shell.stdout.strip().endswith("200"), \
        (shell.stdout + shell.stderr)[-3000:]


def test_autothrottle_forced_on_gets_one_warning(project) -> None:
    web, root, env = project
    proc = scrapy(root, env, "crawl", "follow", "-a", f"start={web.url(0)}",
                  "-s", "AUTOTHROTTLE_ENABLED=True", "-s", "CLOSESPIDER_PAGECOUNT=3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and "AUTOTHROTTLE" in warnings[0], warnings


def test_a_contradicting_scheduler_stops_the_crawl_with_one_line(project) -> None:
    web, root, env = project
    proc = scrapy(root, env, "crawl", "follow", "-a", f"start={web.url(0)}",
                  "-s", "SCHEDULER=scrapy.core.scheduler.Scheduler")
    assert proc.returncode != 0
    assert "crawler_ext.Addon needs SCHEDULER" in proc.stderr
    assert web.log() == []  # nothing was fetched
