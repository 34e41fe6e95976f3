"""The control API steering real crawls of the test web: the server's request log judges.

One crawl (JOBDIR) is slowed, blocked, seeded, paused and resumed, refused bad input, fuzzed
with schemathesis against its own OpenAPI document, watched in the live page in headless
Chromium, and stopped; resumed, its blocked host stays blocked, also after a kill -9.  Then
two Redis workers are steered through one worker's API."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, free_port
from testweb import read_log

H0, H1, H2, H3 = "h0000.web.test", "h0001.web.test", "h0002.web.test", "h0003.web.test"


class Crawl:
    """``scrapy crawl web`` in the background with the control API on a free port: with a
    JOBDIR, found there; without (``jobdir`` names the run), on a port and token of ours."""

    def __init__(self, web: Any, jobdir: Path, seeds: list[str], use_jobdir: bool = True,
                 **settings: Any) -> None:
        self.jobdir = jobdir
        base = {"CRAWLER_EXT_CONTROL_ENABLED": True,
                "CRAWLER_EXT_CONTROL_PORT": 0, "CRAWLER_EXT_HOSTS": web.hosts_setting,
                "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8",
                "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.3, "CRAWLER_EXT_ROBOTS_RETRY_BASE": 0.5,
                "CRAWLER_EXT_WARC_DIR": jobdir.parent / "warcs", "LOG_LEVEL": "INFO",
                "CRAWLER_EXT_STATS_FILE": jobdir.parent / f"{jobdir.name}.stats.json"}
        if use_jobdir:
            base["JOBDIR"] = jobdir
        else:
            jobdir.mkdir(parents=True, exist_ok=True)
            base["CRAWLER_EXT_CONTROL_PORT"] = free_port()
            base["CRAWLER_EXT_CONTROL_TOKEN"] = f"token-of-{jobdir.name}"
        base.update(settings)
        info = jobdir / "control.json"
        if info.exists():
            info.unlink()
        cmd = [sys.executable, "-m", "scrapy", "crawl", "web",
               *(["-a", f"seeds={','.join(seeds)}"] if seeds else [])]
        for name, value in base.items():
            cmd += ["-s", f"{name}={value}"]
        self.log_path = jobdir.parent / f"{jobdir.name}-{time.time():.0f}.log"
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self.log_path.open("w"),
                                     stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PYTHONPATH=str(ROOT)))
        self.stats_path = Path(base["CRAWLER_EXT_STATS_FILE"])
        deadline = time.time() + 60
        if not use_jobdir:
            self.url = f"http://127.0.0.1:{base['CRAWLER_EXT_CONTROL_PORT']}/"
            self.token = base["CRAWLER_EXT_CONTROL_TOKEN"]
            while True:
                assert self.proc.poll() is None and time.time() < deadline, self.output()
                try:
                    if self.call("GET", "/status")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.1)
            return
        while not info.exists():
            assert self.proc.poll() is None and time.time() < deadline, self.output()
            time.sleep(0.1)
        self.url = json.loads(info.read_text())["url"]
        self.token = (jobdir / "control.token").read_text().strip()

    def call(self, method: str, path: str, body: Any = None, token: str | None = "",
             raw: bytes | None = None, content_type: str = "application/json"
             ) -> tuple[int, Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.url.rstrip("/") + path, method=method, data=data)
        if token is not None:
            request.add_header("Authorization", f"Bearer {token or self.token}")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def output(self) -> str:
        return self.log_path.read_text()[-4000:] if self.log_path.exists() else ""

    def wait(self, timeout: float = 60) -> int:
        return self.proc.wait(timeout)

    def stats(self) -> dict:
        return json.loads(self.stats_path.read_text())


def _gaps(log: list, host: str, since: float) -> list[float]:
    starts = sorted(e.start for e in log if e.host == host)
    return [b - a for a, b in zip(starts, starts[1:]) if b > since]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_crawl_steered_through_its_api(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=4, pages=120, hazards=False)
    jobdir = tmp_path / "job"
    seeds = [web.url(n) for n in range(3)]
    crawl = Crawl(web, jobdir, seeds)
    try:
        assert oct((jobdir / "control.token").stat().st_mode & 0o777) == "0o600"
        deadline = time.time() + 30
        while crawl.call("GET", "/status")[1]["pages"] < 8:
            assert time.time() < deadline, crawl.output()
            time.sleep(0.2)
        # bad input: each a 4xx with one line, nothing changed
        before = crawl.call("GET", "/keys/" + H2)[1]
        refused = [
            crawl.call("POST", f"/keys/{H2}/block", {"until": None}, token="wrong"),
            crawl.call("POST", f"/keys/{H2}/block", {"until": None}, token=None),
            crawl.call("GET", "/pause"),
            crawl.call("POST", f"/keys/{H2}/delay", raw=b"{" * (10 << 20)),
            crawl.call("POST", f"/keys/{H2}/delay", raw=b"{seconds: 2"),
            crawl.call("POST", f"/keys/{H2}/delay", {"seconds": -1}),
            crawl.call("POST", f"/keys/{H2}/delay", {"seconds": 2}, content_type="text/plain"),
            crawl.call("POST", "/keys/nowhere.test/block", {"until": None}),
            crawl.call("POST", "/seeds", {"urls": ["ftp://x"]}),
        ]
        assert [status for status, _ in refused] == [401, 401, 405, 413, 400, 400, 415, 404,
                                                     400], refused
        assert all(set(body) == {"error"} and "\n" not in body["error"] for _, body in refused)
        after = crawl.call("GET", "/keys/" + H2)[1]
        assert (after["floor"], after["blocked_until"]) == (before["floor"], None) == (None, None)
        # steer: slow h0 to 2 s, block h1 for good, add a seed nothing links to
        assert crawl.call("POST", f"/keys/{H0}/delay", {"seconds": 2.0})[0] == 200
        slowed = time.time()
        assert crawl.call("POST", f"/keys/{H1}/block", {"until": None})[0] == 200
        blocked = time.time()
        extra = web.url(3, "/p/119.html")
        assert crawl.call("POST", "/seeds", {"urls": [extra]})[1]["queued"] == 1
        assert crawl.call("POST", f"/keys/{H2}/robots/refresh")[0] == 200
        refreshed = time.time()
        assert crawl.call("POST", "/checkpoint")[0] == 200
        report = crawl.call("GET", f"/keys/{H0}")[1]
        assert (report["floor"], report["delay_rule"] in ("operator", "min_delay")) == (2.0, True)
        assert report["queue_head"] and all(url.startswith(web.url(0, "/"))
                                            for url in report["queue_head"])
        time.sleep(3)
        assert crawl.call("POST", "/pause")[0] == 200
        paused = time.time()
        assert crawl.call("GET", "/status")[1]["state"] == "paused"
        time.sleep(2.5)
        resumed = time.time()
        assert crawl.call("POST", "/resume")[0] == 200
        _live_page(crawl)
        _fuzz(crawl, web)
        crawl.call("POST", "/resume")  # (the fuzzing may have paused it)
        assert crawl.call("GET", f"/keys/{H0}")[1]["delay_rule"] == "operator"
        assert crawl.call("POST", "/stop")[0] == 200
        assert crawl.wait() == 0, crawl.output()
    finally:
        if crawl.proc.poll() is None:
            crawl.proc.kill()
    stats = crawl.stats()
    assert stats["finish_reason"] == "operator_stop"
    for name in ("unauthorised", "method", "too_large", "malformed", "invalid", "not_json",
                 "unknown_key"):
        assert stats.get(f"control/refused/{name}", 0) >= 1, name
    assert stats["control/actions/block"] == 1 and stats["control/actions/delay"] >= 1
    log = read_log(web.log_path)
    # the new pace from the next request on; nothing of h1 after its block; the seed
    gaps = _gaps(log, H0, slowed)
    assert gaps and min(gaps) >= 2.0 - 0.02, gaps
    assert [e for e in log if e.host == H1 and e.start > blocked + 0.05] == []
    assert any(e.host == "h0003.web.test" and e.path == "/p/119.html" for e in log)
    assert any(e.host == H2 and e.path == "/robots.txt" and e.start > refreshed for e in log)
    # paused: what was in flight finishes, nothing starts
    assert [e for e in log if paused + 0.5 < e.start < resumed] == []
    fetched = {(e.host, e.path) for e in log}
    # resumed from its JOBDIR: the block is kept, the crawl goes on; then a kill -9
    again = Crawl(web, jobdir, seeds)
    try:
        start = time.time()
        assert again.call("GET", f"/keys/{H1}")[1]["blocked_until"] == "forever"
        deadline = time.time() + 30
        while again.call("GET", "/status")[1]["pages"] < 5:
            assert time.time() < deadline, again.output()
            time.sleep(0.2)
        again.proc.send_signal(signal.SIGKILL)
        again.wait()
        third = Crawl(web, jobdir, seeds)
        assert third.call("GET", f"/keys/{H1}")[1]["blocked_until"] == "forever"
        time.sleep(1.5)
        third.call("POST", "/stop")
        assert third.wait() == 0, third.output()
    finally:
        for run in (again, locals().get("third")):
            if run is not None and run.proc.poll() is None:
                run.proc.kill()
    later = [e for e in read_log(web.log_path) if e.start > start]
    assert later and not [e for e in later if e.host == H1]
    assert len({(e.host, e.path) for e in later} - fetched) >= 5  # it went on


REDIS_URL = "redis://127.0.0.1:6379/11"  # (not the distributed tests' database)


def _cli(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "crawler_ext.control", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_two_redis_workers_steered_through_one_workers_api(testweb_factory,
                                                           tmp_path: Path) -> None:
    redis_lib = pytest.importorskip("redis")
    client = redis_lib.Redis.from_url(REDIS_URL)
    client.flushdb()
    web = testweb_factory(hosts=4, pages=80, hazards=False)
    _cli("--redis-url", REDIS_URL, "seeds", *[web.url(n) for n in range(4)])
    redis = {"CRAWLER_EXT_FRONTIER_BACKEND": "redis", "REDIS_URL": REDIS_URL,
             "CRAWLER_EXT_REDIS_LEASE_TTL": 3}
    workers = [Crawl(web, tmp_path / f"w{n}", [], use_jobdir=False, **redis) for n in range(2)]
    w0, w1 = workers
    try:
        deadline = time.time() + 30
        while w0.call("GET", "/status")[1]["pages"] < 4:
            assert time.time() < deadline, w0.output()
            time.sleep(0.2)
        assert w0.call("POST", f"/keys/{H0}/delay", {"seconds": 2.0})[0] == 200
        slowed = time.time()
        assert w0.call("POST", f"/keys/{H1}/block", {"until": None})[0] == 200
        blocked = time.time()
        _cli("--redis-url", REDIS_URL, "block", H2)  # straight to Redis, no API
        blocked_too = time.time()
        # (each worker writes to and reads the crawl's control log once a second)
        time.sleep(2.5)
        seen = w1.call("GET", f"/keys/{H1}")[1]
        assert seen["blocked_until"] == "forever" and "queued" in seen, seen
        assert all(url.startswith(web.url(1, "/")) for url in seen["queue_head"]), seen
        assert w1.call("GET", f"/keys/{H0}")[1]["floor"] == 2.0
        assert w1.call("POST", "/checkpoint")[0] == 409  # (no JOBDIR)
        # the busiest keys are the crawl's, every worker's requests counted
        rows = {row["key"]: row for row in w1.call("GET", "/keys")[1]["keys"]}
        so_far = Counter(e.host for e in read_log(web.log_path))
        assert set(rows) >= {H0, H3} and all(
            so_far[key] - 6 <= rows[key]["requests"] <= so_far[key] for key in (H0, H3)), \
            (rows, so_far)
        assert any(row["requests"] > row["requests_here"] for row in rows.values())
        budget = so_far[H3] + 4  # a few more requests for h3, over both workers
        assert w1.call("POST", f"/keys/{H3}/budget", {"pages": budget})[0] == 200
        assert w1.call("POST", "/pause")[0] == 200
        paused = time.time()
        time.sleep(4.5)
        resumed = time.time()
        _cli("--url", w0.url, "--token", w0.token, "resume")
        time.sleep(4)
        assert w0.call("GET", "/status")[1]["state"] == "running"
        for worker in workers:
            assert worker.call("POST", "/stop")[0] == 200
        for worker in workers:
            assert worker.wait() == 0, worker.output()
    finally:
        for worker in workers:
            if worker.proc.poll() is None:
                worker.proc.kill()
        client.flushdb()
    assert all(w.stats()["finish_reason"] == "operator_stop" for w in workers)
    log = read_log(web.log_path)
    assert {e.client for e in log} and len(log) > 10
    gaps = _gaps(log, H0, slowed + 2.5)
    assert gaps and min(gaps) >= 2.0 - 0.02, gaps
    assert [e for e in log if e.host == H1 and e.start > blocked + 2.5] == []
    assert [e for e in log if e.host == H2 and e.start > blocked_too + 2.5] == []
    assert [e for e in log if paused + 2.5 < e.start < resumed] == []
    assert budget <= sum(e.host == H3 for e in log) <= budget + 4  # (a second's lag, 2 workers)
    assert any(e.start > resumed + 0.5 for e in log)  # and it went on


def _fuzz(crawl: Crawl, web: Any) -> None:
    """schemathesis against the running API: every response matches the document, no 5xx,
    auth enforced on every operation (``/stop`` left out, ``/seeds`` given test-web URLs)."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings, strategies

    auth = {"Authorization": f"Bearer {crawl.token}"}
    schema = schemathesis.openapi.from_url(crawl.url + "openapi.json", headers=auth)
    fuzzed = schema.exclude(path=["/stop", "/seeds"])
    loopback = strategies.lists(strategies.integers(0, 3).map(
        lambda n: web.url(n, f"/p/{n}.html")), min_size=1, max_size=3)

    @settings(max_examples=120, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(case=fuzzed.as_strategy())
    def fuzz(case: Any) -> None:
        case.call_and_validate(headers=auth)

    @settings(max_examples=10, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(urls=loopback)
    def seeds(urls: list[str]) -> None:
        case = schema["/seeds"]["POST"].Case(body={"urls": urls},
                                             media_type="application/json")
        case.call_and_validate(headers=auth)

    fuzz()
    seeds()
    document = crawl.call("GET", "/openapi.json")[1]
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            if operation.get("security") == [] or path == "/stop":
                continue
            concrete = path.replace("{key}", H2)
            status, body = crawl.call(method.upper(), concrete, token="not-the-token")
            assert status == 401 and set(body) == {"error"}, (method, path, status)


def _live_page(crawl: Crawl) -> None:
    """The live page in headless Chromium: its plots change between two screenshots, and
    its pause button pauses the crawl."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(f"{crawl.url}#token={crawl.token}")
            page.wait_for_function("document.querySelectorAll('#plot-rate polyline').length > 0",
                                   timeout=15_000)
            first = page.locator(".plots").screenshot()
            time.sleep(2.5)
            page.wait_for_function("Number(document.getElementById('samples').textContent) > 3")
            second = page.locator(".plots").screenshot()
            assert first != second  # the plots moved on
            page.click("#pause")
            deadline = time.time() + 10
            while crawl.call("GET", "/status")[1]["state"] != "paused":
                assert time.time() < deadline
                time.sleep(0.1)
        finally:
            browser.close()
    assert crawl.call("POST", "/resume")[0] == 200


def test_key_rules_at_a_keys_turn() -> None:
    """The gate's verdicts for each operator rule (the crawls above check them on the wire)."""
    from crawler_ext.frontier.controls import HOLD_SLICE, KeyControls

    floors: dict[str, float] = {}
    rules = KeyControls(floors)
    assert not rules.active and rules.verdict("a", 1, 100.0) is None
    rules.apply({"op": "block", "key": "a", "until": 105.0}, 100.0)
    assert rules.verdict("a", 1, 100.0) == 100.0 + HOLD_SLICE and rules.parks("a")
    assert rules.verdict("a", 1, 104.5) == 105.0
    assert rules.verdict("a", 1, 105.0) is None and not rules.active  # its time came
    rules.apply({"op": "pause_key", "key": "b"}, 100.0)
    assert rules.verdict("b", 1, 100.0) == 100.0 + HOLD_SLICE and not rules.parks("b")
    rules.apply({"op": "resume_key", "key": "b"}, 100.0)
    assert rules.verdict("b", 1, 100.0) is None
    rules.apply({"op": "budget", "key": "c", "pages": 2}, 100.0)
    for _ in range(2):
        assert rules.verdict("c", 1, 100.0) is None
        rules.dispatched("c", 100.0)
    assert rules.verdict("c", 1, 100.0) == "budget"
    rules.apply({"op": "delay", "key": "d", "seconds": 2.0}, 100.0)
    assert floors == {"d": 2.0} and rules.verdict("d", 1, 100.5) == 102.0
    rules.slot_delays({"d": 3.0})
    assert floors == {"d": 3.0} and rules.floor_of("d") == (3.0, "download_slots")
    rules.apply({"op": "delay", "key": "d", "seconds": 0}, 103.0)
    assert floors == {"d": 3.0}
    rules.apply({"op": "delete_queue", "key": "e"}, 100.0)
    rules.admitted("e", 7)  # queued after the deletion: kept
    assert rules.verdict("e", 6, 100.0) == "deleted" and rules.verdict("e", 7, 100.0) is None
    with pytest.raises(ValueError):
        rules.apply({"op": "explode", "key": "f"}, 100.0)
    shared = KeyControls()  # a distributed crawl's: its counts go to the crawl's totals
    shared.shared = {}
    shared.apply({"op": "budget", "key": "g", "pages": 5}, 100.0)
    shared.dispatched("g", 100.0)
    assert shared.requests("g") == 1 and shared.take_unshared() == {"g": 1}
    shared.shared["g"] = 5  # (the totals read back: other workers' requests included)
    assert shared.requests("g") == 5 and shared.verdict("g", 1, 100.0) == "budget"
