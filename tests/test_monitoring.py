"""The Spidermon monitors of crawl health (``crawler_ext.monitoring``): a healthy crawl of the
test web passes them; a crawl of misbehaving hosts (robots.txt answering 503, mirrors,
rate limits) fails the monitor that sees it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_crawl

pytest.importorskip("spidermon")
pytestmark = pytest.mark.slow

SPIDERMON = {"SPIDERMON_ENABLED": True,
             "EXTENSIONS": '{"spidermon.contrib.scrapy.extensions.Spidermon": 500}',
             "SPIDERMON_SPIDER_CLOSE_MONITORS": "crawler_ext.monitoring.monitors.CrawlHealthSuite",
             "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05}


def monitor_lines(output: str) -> dict[str, str]:
    """monitor name -> OK / FAIL / ERROR, from Spidermon's report in the log."""
    out = {}
    for line in output.splitlines():
        if "[Spidermon] crawler_ext crawl health/" in line:
            name, _, verdict = line.split("crawler_ext crawl health/", 1)[1].rpartition("... ")
            out[name] = verdict.strip()
    return out


def test_a_healthy_crawl_passes_every_monitor(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=10, pages=6, hazards=False)
    result = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting, **SPIDERMON})
    assert result.returncode == 0, result.output[-3000:]
    verdicts = monitor_lines(result.output)
    assert len(verdicts) == 5 and set(verdicts.values()) == {"OK"}, verdicts


def test_a_misbehaving_web_fails_the_monitors_that_see_it(testweb_factory,
                                                          tmp_path: Path) -> None:
    web = testweb_factory(hosts=10, pages=6, hazards=True)  # host 1: robots.txt 503; 8: mirror
    result = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting, **SPIDERMON,
                                 "CRAWLER_EXT_MONITOR_MAX_DUPLICATE_RATIO": 0.05,
                                 "CLOSESPIDER_TIMEOUT": 25})
    assert result.returncode == 0, result.output[-3000:]
    verdicts = monitor_lines(result.output)
    assert verdicts["robots.txt failures within bounds"] == "FAIL", verdicts
    assert verdicts["duplicate content within bounds"] == "FAIL", verdicts
    assert verdicts["no politeness violation seen by the frontier"] == "OK", verdicts
    assert "FAILED (failures=" in result.output
