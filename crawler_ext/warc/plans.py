"""Record plans: what the pipeline decides about a fetch's records on the reactor thread
(ids, date, response or revisit, what a revisit refers to), as plain values; the warcio
records are built from them where they are written (the writer process, or its thread).

Building warcio records (``StatusAndHeaders``, the record objects, their payload digest) and
pickling them to the writer process cost the reactor about 0.8 ms a fetch on the broad web
(``benchmarks/run.py broad``, profiled with py-spy); a plan is a tuple of strings and the
body, and its records are byte for byte the ones the pipeline built before.
"""

from __future__ import annotations

import io
import json
from http import HTTPStatus
from typing import Any, NamedTuple, Protocol

from warcio.statusandheaders import StatusAndHeaders

__all__ = ["FetchPlan", "MetadataPlan", "RecordPlan", "metadata_payload", "status_line"]

REVISIT_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


class RecordPlan(Protocol):
    """Records described on one thread and built on another."""

    def build(self, builder: Any) -> list[Any]: ...


def status_line(status: int) -> str:
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"


def metadata_payload(data: dict) -> bytes:
    return json.dumps(data, sort_keys=True, default=str).encode("utf-8")


class FetchPlan(NamedTuple):
    """One fetch: its response (``response``), identical-payload revisit (``revisit``, of
    ``refers``: the first capture's URI and date) or server-not-modified revisit
    (``not_modified``) record, then its request record, concurrent to it."""

    uri: str
    kind: str
    request_line: str
    request_headers: list[tuple[str, str]]
    status: int
    protocol: str
    response_headers: list[tuple[str, str]]
    ip: str | None
    body: bytes
    digest: str
    refers: tuple[str, str] | None
    ids: tuple[str, str]  # the response (or revisit) record's, the request record's
    dates: tuple[str, str]

    def build(self, builder: Any) -> list[Any]:
        resp_head = StatusAndHeaders(status_line(self.status), self.response_headers,
                                     protocol=self.protocol)
        warc_headers = {"WARC-Record-ID": self.ids[0], "WARC-Date": self.dates[0]}
        if self.ip is not None:
            warc_headers["WARC-IP-Address"] = self.ip
        if self.kind == "not_modified":
            record = builder.create_revisit_record(
                self.uri, self.digest, self.uri, self.dates[0], http_headers=resp_head,
                warc_headers_dict=warc_headers)
            record.rec_headers.replace_header("WARC-Profile", REVISIT_NOT_MODIFIED)
        elif self.kind == "revisit":
            assert self.refers is not None
            record = builder.create_revisit_record(
                self.uri, self.digest, self.refers[0], self.refers[1], http_headers=resp_head,
                warc_headers_dict=warc_headers)
        else:
            warc_headers["WARC-Payload-Digest"] = self.digest
            record = builder.create_warc_record(
                self.uri, "response", payload=io.BytesIO(self.body), length=len(self.body),
                http_headers=resp_head, warc_headers_dict=warc_headers)
        req_head = StatusAndHeaders(self.request_line, self.request_headers,
                                    is_http_request=True)
        request = builder.create_warc_record(
            self.uri, "request", http_headers=req_head,
            warc_headers_dict={"WARC-Record-ID": self.ids[1], "WARC-Date": self.dates[1],
                               "WARC-Concurrent-To": self.ids[0]})
        return [record, request]


class MetadataPlan(NamedTuple):
    """A ``metadata`` record of JSON ``data`` about ``uri``, referring to its response
    record (``refers_to``) where there is one."""

    uri: str
    refers_to: str | None
    data: dict[str, Any]
    record_id: str
    date: str

    def build(self, builder: Any) -> list[Any]:
        headers = {"Content-Type": "application/json", "WARC-Record-ID": self.record_id,
                   "WARC-Date": self.date}
        if self.refers_to:
            headers["WARC-Refers-To"] = self.refers_to
        payload = metadata_payload(self.data)
        return [builder.create_warc_record(self.uri, "metadata", payload=io.BytesIO(payload),
                                           length=len(payload),
                                           warc_content_type="application/json",
                                           warc_headers_dict=headers)]
