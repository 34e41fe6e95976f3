"""A reference consumer: the crawl's fetch events (Redis Streams) into a PostgreSQL full-text
index.

    python -m tests.consumers.fts REDIS_URL STREAM POSTGRES_DSN [--group G] [--consumer C]
        [--table T] [--idle 2] [--crash-after N]

It reads the stream with a consumer group (``XREADGROUP``): first the entries it read before a
crash and never acknowledged (its pending list), then new ones.  For each ``fetch`` event of
an HTML page with status 200, it reads the response record at the event's ``warc_file`` and
``warc_offset``, extracts the page's text, and upserts one row per page (``canonical_url``)
holding its ``tsvector``; the event's ``event_id`` goes into a table of its own in the same
transaction, so an event delivered twice (a crash between the commit and the ``XACK``, or a
re-sent batch) changes nothing.  It commits, then acknowledges.  ``--crash-after N`` ends the
process (``os._exit``) after committing N events and before acknowledging them: the restart's
test.  It stops once the stream has had nothing new for ``--idle`` seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import lxml.html
import psycopg
import redis
from warcio.archiveiterator import ArchiveIterator


def record_at(warc_file: str, offset: int) -> tuple[str, str, bytes]:
    """(record id, target URI, payload) of the WARC record at ``offset`` of ``warc_file`` (a
    WARC file the crawl still writes is named ``<warc_file>.open``)."""
    path = warc_file if os.path.exists(warc_file) else warc_file + ".open"
    with open(path, "rb") as fh:
        fh.seek(offset)
        record = next(iter(ArchiveIterator(fh)))
        return (record.rec_headers.get_header("WARC-Record-ID"),
                record.rec_headers.get_header("WARC-Target-URI"),
                record.content_stream().read())


def _text(warc_file: str, offset: int) -> tuple[str, str]:
    """(title, text) of the HTML page in the response record at ``offset``."""
    doc = lxml.html.fromstring(record_at(warc_file, offset)[2])
    for bad in doc.xpath("//script|//style"):
        bad.drop_tree()
    title = (doc.findtext(".//title") or "").strip()
    return title, " ".join(doc.text_content().split())


def setup(conn: psycopg.Connection, table: str) -> None:
    conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (canonical_url text PRIMARY KEY, "
                 "url text NOT NULL, event_id text NOT NULL, fetched_at double precision, "
                 "title text, body tsvector)")
    conn.execute(f"CREATE TABLE IF NOT EXISTS {table}_events (event_id text PRIMARY KEY)")
    conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_body ON {table} USING gin (body)")
    conn.commit()


def load(conn: psycopg.Connection, table: str, event: dict[str, str]) -> bool:
    """One event into the index, in the caller's transaction; False if it came before."""
    cur = conn.execute(f"INSERT INTO {table}_events VALUES (%s) ON CONFLICT DO NOTHING",
                       (event["event_id"],))
    if cur.rowcount == 0:
        return False
    if event.get("kind") != "fetch" or event.get("status") != "200" or \
            "html" not in event.get("content_type", "") or not event.get("warc_file"):
        return True
    title, text = _text(event["warc_file"], int(event["warc_offset"]))
    conn.execute(
        f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s, to_tsvector('simple', %s)) "
        f"ON CONFLICT (canonical_url) DO UPDATE SET url = excluded.url, "
        f"event_id = excluded.event_id, fetched_at = excluded.fetched_at, "
        f"title = excluded.title, body = excluded.body "
        f"WHERE {table}.fetched_at < excluded.fetched_at",
        (event["canonical_url"], event["url"], event["event_id"], float(event["fetched_at"]),
         title, f"{title} {text}"))
    return True


def search(conn: psycopg.Connection, table: str, phrase: str) -> list[str]:
    """URLs of the indexed pages holding ``phrase``."""
    rows = conn.execute(f"SELECT url FROM {table} WHERE body @@ phraseto_tsquery('simple', %s)"
                        " ORDER BY url", (phrase,)).fetchall()
    return [row[0] for row in rows]


def consume(redis_url: str, stream: str, dsn: str, group: str = "fts",
            consumer: str = "fts-1", table: str = "pages", idle: float = 2.0,
            crash_after: int | None = None, timeout: float = 120) -> dict[str, int]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise
    counts = {"loaded": 0, "repeated": 0, "pending": 0}
    done = 0
    with psycopg.connect(dsn) as conn:
        setup(conn, table)
        # the entries read before a crash and not acknowledged: first
        start, last_new, deadline = "0", time.monotonic(), time.monotonic() + timeout
        while time.monotonic() < min(deadline, last_new + idle + 60):
            block = None if start == "0" else int(idle * 1000)
            reply = client.xreadgroup(group, consumer, {stream: start}, count=100, block=block)
            entries = reply[0][1] if reply else []
            if start == "0":
                counts["pending"] += len(entries)
                if not entries:
                    start = ">"
                    continue
            elif not entries:
                if time.monotonic() - last_new >= idle:
                    break
                continue
            last_new = time.monotonic()
            ids = []
            for entry_id, fields in entries:
                if load(conn, table, fields):
                    counts["loaded"] += 1
                else:
                    counts["repeated"] += 1
                ids.append(entry_id)
            conn.commit()
            done += len(ids)
            if crash_after is not None and done >= crash_after:
                os._exit(3)  # committed, not acknowledged: the restart finds them pending
            client.xack(stream, group, *ids)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("redis_url")
    parser.add_argument("stream")
    parser.add_argument("dsn")
    parser.add_argument("--group", default="fts")
    parser.add_argument("--consumer", default="fts-1")
    parser.add_argument("--table", default="pages")
    parser.add_argument("--idle", type=float, default=2.0)
    parser.add_argument("--crash-after", type=int)
    args = parser.parse_args(argv)
    counts = consume(args.redis_url, args.stream, args.dsn, args.group, args.consumer,
                     args.table, args.idle, args.crash_after)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
