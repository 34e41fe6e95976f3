"""The fetch-event stream, judged by the test web's request log: Redis Streams through a kill -9
and a resume (nothing lost, duplicates only for pages fetched again) into the reference
PostgreSQL consumer, which survives its own crash; NATS JetStream through a 30 s outage of
its own broker, with the crawl blocked meanwhile (nothing lost)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import lxml.html
import pytest
from conftest import ROOT, free_port, run_crawl

from crawler_ext.admission.urls import fingerprint_hex

redis_lib = pytest.importorskip("redis")
psycopg = pytest.importorskip("psycopg")
from tests.consumers.fts import record_at, search  # noqa: E402 (it needs psycopg)

REDIS_URL = "redis://127.0.0.1:6379/12"
PG_DSN = "host=127.0.0.1 dbname=test user=postgres connect_timeout=5"
NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"


def _where(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return (parts.hostname or ""), parts.path or "/"


def _by_fetch(events: list[dict]) -> dict[tuple[str, str], set[str]]:
    """(host, path) -> the ids of its fetch events (de-duplicated by id)."""
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    for event in events:
        if event["kind"] == "fetch":
            out[_where(event["url"])].add(event["event_id"])
    return out


def _crawl_cmd(web, settings: dict) -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={web.url(0)}"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    return cmd


def _consumer(stream: str, table: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.consumers.fts", REDIS_URL, stream, PG_DSN,
                           "--table", table, "--idle", "1", *extra], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _postgres() -> psycopg.Connection:
    try:
        return psycopg.connect(PG_DSN)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL not reachable: {exc}")


@pytest.mark.slow
def test_redis_events_survive_a_kill_and_feed_a_postgres_index(testweb_factory,
                                                               tmp_path: Path) -> None:
    web = testweb_factory(hosts=6, pages=10, hazards=False)
    client = redis_lib.Redis.from_url(REDIS_URL, decode_responses=True)
    stream, table = f"crawler_ext.events.test{os.getpid()}", f"pages_{os.getpid()}"
    client.delete(stream)
    conn = _postgres()
    conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_events")
    conn.commit()
    settings = {"CRAWLER_EXT_HOSTS": web.hosts_setting, "CRAWLER_EXT_ALLOWED_NETWORKS":
                "127.0.0.0/8", "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.1,
                "CRAWLER_EXT_ROBOTS_RETRY_BASE": 0.5, "JOBDIR": tmp_path / "job",
                "CRAWLER_EXT_WARC_DIR": tmp_path / "warcs", "CRAWLER_EXT_EVENTS_URL": REDIS_URL,
                "CRAWLER_EXT_EVENTS_STREAM": stream, "CRAWLER_EXT_HOST_PAGE_BUDGET": 4}
    proc = subprocess.Popen(_crawl_cmd(web, settings), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    deadline = time.time() + 60
    while time.time() < deadline and len(web.log()) < 20:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = len(web.log())
    assert 20 <= killed_at < 40, "the kill must land mid-crawl"
    time.sleep(1)  # the helper processes end on their closed pipes
    # the consumer loads what came so far and crashes after committing, before acknowledging
    crashed = _consumer(stream, table, "--crash-after", "5")
    assert crashed.returncode == 3, crashed.stderr[-2000:]
    result = run_crawl("-a", f"seeds={web.url(0)}", items_path=tmp_path / "items.jsonl",
                       settings=settings)
    assert result.returncode == 0, result.output[-3000:]
    assert result.stat("events/undelivered") == 0 and result.stat("events/unlocated") == 0
    consumed = _consumer(stream, table)
    assert consumed.returncode == 0, consumed.stderr[-2000:]
    assert "pending=" in consumed.stdout and "pending=0 " not in consumed.stdout + " "

    events = [entry for _, entry in client.xrange(stream)]
    client.delete(stream)
    fetched = Counter((e.host, e.path) for e in web.log())
    by_fetch = _by_fetch(events)
    # at least once: every fetch has its event; a page has more than one only if it was
    # fetched more than once (the pages in flight at the kill, fetched again on resuming)
    assert set(by_fetch) == set(fetched)
    assert all(1 <= len(by_fetch[k]) <= n for k, n in fetched.items()), \
        [(k, n, len(by_fetch[k])) for k, n in fetched.items() if not 1 <= len(by_fetch[k]) <= n]
    # (pages: at most those in flight; a resumed crawl reads each robots.txt again)
    assert sum(n - 1 for k, n in fetched.items() if k[1] != "/robots.txt") <= 12
    # each event names its page's WARC record: the id is the record's, at the file and offset
    pages = {}
    for event in events:
        if event["kind"] != "fetch":
            continue
        assert event["fingerprint"] == fingerprint_hex(event["canonical_url"])
        assert event["lane"] == "discovery" and float(event["fetched_at"]) > 0
        assert event["warc_record_id"] == event["event_id"] and event["warc_file"]
        record_id, uri, body = record_at(event["warc_file"], int(event["warc_offset"]))
        assert (record_id, uri) == (event["event_id"], event["url"])
        assert int(event["length"]) == len(body)
        if event["status"] == "200" and "html" in event["content_type"]:
            pages[event["url"]] = body
            assert int(event["outlinks"]) > 0
    # the host budget's refusals are events of their own (a resumed crawl's budget starts
    # afresh: a URL refused before the kill may be fetched after it)
    refused = [e for e in events if e["kind"] == "refused"]
    assert refused and {e["reason"] for e in refused} == {"host_budget"}
    assert all(e["fingerprint"] == fingerprint_hex(e["canonical_url"]) for e in refused)
    assert 0 < result.stat("events/refused") <= len(refused)

    # the PostgreSQL index: each page once; a phrase on exactly one page finds that page only
    count = conn.execute(f"SELECT count(*), count(DISTINCT canonical_url) FROM {table}").fetchone()
    assert count == (len(pages), len(pages))
    texts = {url: " ".join(lxml.html.fromstring(body).text_content().split()).lower()
             for url, body in pages.items()}
    phrase, only = None, None
    for url, text in sorted(texts.items()):
        words = text.split()
        for n in range(len(words) - 2):
            candidate = " ".join(words[n:n + 3])
            if sum(candidate in other for other in texts.values()) == 1:
                phrase, only = candidate, url
                break
        if phrase:
            break
    assert phrase is not None
    assert search(conn, table, phrase) == [only]
    conn.execute(f"DROP TABLE {table}, {table}_events")
    conn.commit()
    conn.close()


class NatsServer:
    """A NATS server with JetStream of the test's own, stopped and started again at will."""

    def __init__(self, store: Path) -> None:
        self.port = free_port()
        self.store = store
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> NatsServer:
        self.proc = subprocess.Popen([NATS_SERVER, "-a", "127.0.0.1", "-p", str(self.port), "-js",
                                      "-sd", str(self.store)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nats-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


def _jetstream_events(url: str, name: str) -> list[dict]:
    import nats

    async def read() -> list[dict]:
        nc = await nats.connect(url)
        js = nc.jetstream()
        info = await js.stream_info(name)
        out = [json.loads((await js.get_msg(name, seq)).data)
               for seq in range(info.state.first_seq, info.state.last_seq + 1)]
        await nc.close()
        return out

    return asyncio.run(read())


@pytest.mark.slow
def test_nats_events_wait_out_a_broker_outage_with_the_crawl_blocked(testweb_factory,
                                                                     tmp_path: Path) -> None:
    pytest.importorskip("nats")
    if not Path(NATS_SERVER).exists():
        pytest.skip("nats-server is not installed")
    web = testweb_factory(hosts=6, pages=10, hazards=False)
    broker = NatsServer(tmp_path / "nats").start()
    stats_path = tmp_path / "stats.json"
    settings = {"CRAWLER_EXT_HOSTS": web.hosts_setting, "CRAWLER_EXT_ALLOWED_NETWORKS":
                "127.0.0.0/8", "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.1,
                "CRAWLER_EXT_WARC_DIR": tmp_path / "warcs", "CRAWLER_EXT_EVENTS_URL": broker.url,
                "CRAWLER_EXT_EVENTS_MAX_BACKLOG": 10, "CRAWLER_EXT_STATS_FILE": stats_path}
    log_path = tmp_path / "crawl.log"
    try:
        with log_path.open("w") as log:
            proc = subprocess.Popen(_crawl_cmd(web, settings), cwd=ROOT, stdout=log, stderr=log,
                                    env=dict(os.environ, PYTHONPATH=str(ROOT)))
            deadline = time.time() + 60
            while time.time() < deadline and len(web.log()) < 15:
                time.sleep(0.02)
            broker.stop()
            stopped = time.time()
            time.sleep(30)
            broker.start()
            assert proc.wait(120) == 0, log_path.read_text()[-3000:]
        events = _jetstream_events(broker.url, "CRAWLER_EXT_EVENTS")
    finally:
        broker.stop()
    log = web.log()
    fetched = Counter((e.host, e.path) for e in log)
    by_fetch = _by_fetch(events)
    # nothing lost, nothing twice: every fetch in the request log has exactly one event
    assert {k: len(v) for k, v in by_fetch.items()} == dict(fetched)
    assert len(events) == len({e["event_id"] for e in events})
    # the policy, blocking, in the stats and the log; the crawl waited while blocked
    stats = json.loads(stats_path.read_text())
    assert stats["events/blocked"] >= 1 and stats["events/blocked_seconds"] >= 15, stats
    assert stats["events/broker_errors"] >= 1 and stats["events/undelivered"] == 0
    text = log_path.read_text()
    assert "CRAWLER_EXT_EVENTS_OVERFLOW=block" in text and "takes events again" in text
    starts = sorted(e.start for e in log if e.start > stopped)
    assert starts and max(b - a for a, b in zip([stopped, *starts], starts)) >= 20


def test_the_file_outbox_resends_what_was_not_acknowledged(tmp_path: Path) -> None:
    """Committed events survive the process; a batch read but not acknowledged is read
    again; a line cut by a kill is dropped at the next open; acknowledged segments go."""
    from crawler_ext.events import outbox as module
    from crawler_ext.events.outbox import FileOutbox, MemoryOutbox
    from crawler_ext.events.record import decode, encode, fetch_event

    events = [fetch_event(url=f"http://a.test/{n}", canonical_url=f"http://a.test/{n}",
                          fingerprint="0" * 16, status=200, fetched_at=1.0, content_type="",
                          length=n, payload_digest="", lane="discovery", spider="s")
              for n in range(30)]
    box = FileOutbox(tmp_path)
    for event in events[:20]:
        box.append(encode(event))
    box.commit()
    lines, position = box.read(8)
    assert [decode(line) for line in lines] == events[:8] and box.backlog() == 20
    box.acked(position, len(lines))
    lines, _ = box.read(100)  # read, never acknowledged: the next process sends them again
    assert len(lines) == 12
    box._file.write(b'{"event_id": "torn')  # a kill in the middle of a line
    box._file.flush()
    box = FileOutbox(tmp_path)
    assert box.backlog() == 12
    old = module.SEGMENT_SIZE
    module.SEGMENT_SIZE = 1000  # rotate: acknowledged segments are deleted
    try:
        for event in events[20:]:
            box.append(encode(event))
        box.commit()
        got = []
        while True:
            lines, position = box.read(5)
            if not lines:
                break
            got += [decode(line) for line in lines]
            box.acked(position, len(lines))
    finally:
        module.SEGMENT_SIZE = old
    assert got == events[8:] and box.backlog() == 0
    assert len(list(tmp_path.glob("outbox-*.jsonl"))) <= 2
    memory = MemoryOutbox()
    memory.append(b"1\n")
    memory.append(b"2\n")
    lines, position = memory.read(1)
    memory.acked(position, len(lines))
    assert memory.read(5)[0] == [b"2\n"] and memory.backlog() == 1


@pytest.mark.slow
def test_with_drop_the_crawl_goes_on_without_a_broker(testweb_factory, tmp_path: Path) -> None:
    """Nothing listens at the events URL: with ``drop`` the crawl is not held, and the events
    past the backlog are dropped, counted and logged once."""
    web = testweb_factory(hosts=2, pages=6, hazards=False)
    result = run_crawl("-a", f"seeds={web.url(0)}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05,
                                 "CRAWLER_EXT_EVENTS_URL": f"redis://127.0.0.1:{free_port()}/0",
                                 "CRAWLER_EXT_EVENTS_OVERFLOW": "drop",
                                 "CRAWLER_EXT_EVENTS_MAX_BACKLOG": 5,
                                 "CRAWLER_EXT_EVENTS_CLOSE_TIMEOUT": 1})
    assert result.returncode == 0, result.output[-3000:]
    fetched = len(web.log())
    assert result.stat("events/fetch") == 5 and result.stat("events/dropped") == fetched - 5
    assert result.stat("events/undelivered") == 5 and result.stat("events/blocked") == 0
    assert result.output.count("CRAWLER_EXT_EVENTS_OVERFLOW=drop") == 1
    assert "5 event(s) not delivered" in result.output


@pytest.mark.slow
def test_a_parked_host_is_an_event(testweb_factory, tmp_path: Path) -> None:
    """Host 1 of the hazardous test web answers robots.txt with 503: its key is parked until
    the retry, an event of its own."""
    web = testweb_factory(hosts=2, pages=3, hazards=True)
    client = redis_lib.Redis.from_url(REDIS_URL, decode_responses=True)
    stream = f"crawler_ext.events.parked{os.getpid()}"
    client.delete(stream)
    result = run_crawl("-a", f"seeds={web.url(0)},{web.url(1)}",
                       items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05,
                                 "CRAWLER_EXT_EVENTS_URL": REDIS_URL,
                                 "CRAWLER_EXT_EVENTS_STREAM": stream})
    assert result.returncode == 0, result.output[-3000:]
    events = [entry for _, entry in client.xrange(stream)]
    client.delete(stream)
    parked = [e for e in events if e["kind"] == "parked"]
    assert parked and parked[0]["reason"] == "robots_failed", parked
    assert parked[0]["key"].startswith("h0001") and \
        float(parked[0]["until"]) > float(parked[0]["decided_at"])
    assert result.stat("events/parked") == len(parked)
