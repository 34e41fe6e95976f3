"""Deployment: scrapyd-deploy packs the project into an egg that a local scrapyd runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import ROOT, free_port

pytest.importorskip("scrapyd")
SCRAPYD_DEPLOY = shutil.which("scrapyd-deploy", path=str(Path(sys.executable).parent))
SCRAPYD = shutil.which("scrapyd", path=str(Path(sys.executable).parent))


def api(port: int, endpoint: str, data: dict | None = None) -> dict:
    url = f"http://127.0.0.1:{port}/{endpoint}"
    body = urllib.parse.urlencode(data, doseq=True).encode() if data is not None else None
    with urllib.request.urlopen(url, body, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.mark.slow
@pytest.mark.skipif(not (SCRAPYD and SCRAPYD_DEPLOY), reason="scrapyd and scrapyd-client needed")
def test_scrapyd_runs_the_deployed_spider(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=3, pages=4, hazards=False)
    project = tmp_path / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(
        ".git", "*.egg-info", "build", "__pycache__", ".pytest_cache", ".venv", "*.so"))
    port = free_port()
    cfg = (project / "scrapy.cfg").read_text().replace("127.0.0.1:6800", f"127.0.0.1:{port}")
    (project / "scrapy.cfg").write_text(cfg)

    home = tmp_path / "scrapyd"
    home.mkdir()
    (home / "scrapyd.conf").write_text(
        f"[scrapyd]\nbind_address = 127.0.0.1\nhttp_port = {port}\npoll_interval = 0.5\n"
        f"eggs_dir = {home}/eggs\nlogs_dir = {home}/logs\ndbs_dir = {home}/dbs\n")
    server = subprocess.Popen([SCRAPYD], cwd=home, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                api(port, "daemonstatus.json")
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        deploy = subprocess.run([SCRAPYD_DEPLOY, "local", "-p", "crawler_ext_web", "-v", "1"],
                                cwd=project, capture_output=True, text=True, timeout=120)
        assert deploy.returncode == 0, deploy.stdout + deploy.stderr
        assert json.loads(deploy.stdout.strip().splitlines()[-1])["status"] == "ok"
        assert api(port, "listspiders.json?project=crawler_ext_web")["spiders"] == ["web"]

        stats_file = tmp_path / "stats.json"
        job = api(port, "schedule.json", {
            "project": "crawler_ext_web", "spider": "web", "seeds": web.url(0),
            "setting": [f"CRAWLER_EXT_HOSTS={web.hosts_setting}", "ROBOTSTXT_OBEY=False",
                        "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.0/8",
                        "CRAWLER_EXT_POLITENESS_MIN_DELAY=0.05",
                        f"CRAWLER_EXT_STATS_FILE={stats_file}"]})
        assert job["status"] == "ok"
        deadline = time.time() + 120
        while time.time() < deadline:
            jobs = api(port, "listjobs.json?project=crawler_ext_web")
            if any(j["id"] == job["jobid"] for j in jobs["finished"]):
                break
            time.sleep(0.5)
        stats = json.loads(stats_file.read_text())
        assert stats["finish_reason"] == "finished"
        assert stats["item_scraped_count"] == 12
        assert len(web.log()) == 12
    finally:
        server.terminate()
        server.wait(10)
