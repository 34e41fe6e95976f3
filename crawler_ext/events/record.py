"""The events a crawl publishes: one flat map per fetch outcome and per admission decision
worth a consumer's attention, with the field names consumers depend on (docs/outputs.md).

Every event has every field of :data:`FIELDS` (empty where it does not apply), so a consumer
reads one schema: a ``fetch`` event fills the fetch's fields, a ``refused`` event the URL and
its ``reason``, a ``parked`` event the politeness ``key``, its ``reason`` and ``until``.
``event_id`` is the idempotency key: a fetch's WARC record id (``<urn:uuid:...>``, the
``WARC-Record-ID`` of its response or revisit record), or a new id of the same form where
there is no record; it is stored with the event, so a re-delivery carries the same one.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

__all__ = ["FIELDS", "KINDS", "decision_event", "decode", "encode", "fetch_event", "new_id"]

#: the fields of every event, in order
FIELDS = ("event_id", "kind", "url", "canonical_url", "fingerprint", "status", "fetched_at",
          "content_type", "length", "payload_digest", "warc_file", "warc_offset",
          "warc_record_id", "duplicate_of", "outlinks", "lane", "reason", "key", "until",
          "decided_at", "spider")
#: what an event's ``kind`` may be
KINDS = ("fetch", "refused", "parked")


def new_id() -> str:
    """An event id where no WARC record gives one (the same form as a WARC record id)."""
    return f"<urn:uuid:{uuid.uuid4()}>"


def _event(**fields: Any) -> dict[str, Any]:
    event = dict.fromkeys(FIELDS, "")
    event.update(fields)
    return event


def fetch_event(*, url: str, canonical_url: str, fingerprint: str, status: int | str,
                fetched_at: float, content_type: str, length: int | str, payload_digest: str,
                lane: str, spider: str, record_id: str = "", warc_file: str = "",
                warc_offset: int | str = "", duplicate_of: str = "",
                outlinks: int | str = "", reason: str = "") -> dict[str, Any]:
    """A fetch outcome (``status`` empty and a ``reason`` for a fetch that got no response)."""
    return _event(event_id=record_id or new_id(), kind="fetch", url=url,
                  canonical_url=canonical_url, fingerprint=fingerprint, status=status,
                  fetched_at=round(fetched_at, 6), content_type=content_type, length=length,
                  payload_digest=payload_digest, warc_file=warc_file, warc_offset=warc_offset,
                  warc_record_id=record_id, duplicate_of=duplicate_of, outlinks=outlinks,
                  lane=lane, reason=reason, spider=spider)


def decision_event(kind: str, *, reason: str, spider: str, url: str = "", canonical_url: str = "",
                   fingerprint: str = "", key: str = "", until: float | None = None,
                   now: float | None = None) -> dict[str, Any]:
    """A URL ``refused`` at admission, or a politeness key ``parked`` (its URLs kept, but the
    crawl may end without them) until ``until``."""
    return _event(event_id=new_id(), kind=kind, url=url, canonical_url=canonical_url,
                  fingerprint=fingerprint, reason=reason, key=key,
                  until="" if until is None else round(until, 3),
                  decided_at=round(time.time() if now is None else now, 6), spider=spider)


def encode(event: dict[str, Any]) -> bytes:
    """One line of the outbox: the event as compact JSON."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    return json.loads(line)
