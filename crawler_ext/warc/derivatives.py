"""WET and WAT records: what a fetched document's processor read, as Common Crawl publishes
it beside its WARC files for the consumers downstream of a crawl.

* **WET** (``CRAWLER_EXT_WET_ENABLED``): a ``conversion`` record per document with text, its
  payload the extracted text (``text/plain``), ``WARC-Refers-To`` the response record.
* **WAT** (``CRAWLER_EXT_WAT_ENABLED``): a ``metadata`` record per document, its payload JSON
  in Common Crawl's layout -- ``Envelope`` → ``WARC-Header-Metadata`` (the response record's
  URI, id and date) and ``Payload-Metadata`` → ``HTTP-Response-Metadata`` (status, headers;
  for HTML ``HTML-Metadata``: the head's title and metas, the links with their anchor text;
  for other kinds ``Document-Metadata``: the kind, its links and metadata).

The text and links are the content processors' (every content kind), so both need
``CRAWLER_EXT_PROCESSORS_ENABLED`` (the default).  The records go to ``*.warc.wet.gz`` and
``*.warc.wat.gz`` beside the WARC file open when they are written (``writer.DERIVATIVES``).
"""

from __future__ import annotations

import io
import json
from typing import Any

from warcio.warcwriter import WARCWriter

__all__ = ["wat_payload", "wat_record", "wet_record"]


def _record(builder: WARCWriter, derivative: str, url: str, kind: str, payload: bytes,
            content_type: str, refers_to: str | None, **headers: str) -> Any:
    if refers_to:
        headers["WARC-Refers-To"] = refers_to
    record = builder.create_warc_record(url, kind, payload=io.BytesIO(payload),
                                        length=len(payload), warc_content_type=content_type,
                                        warc_headers_dict=headers)
    record.derivative = derivative  # (the writer puts it in that file)
    return record


def wet_record(builder: WARCWriter, url: str, text: str, refers_to: str | None,
               language: str | None = None) -> Any:
    language_header = {"WARC-Identified-Content-Language": language} if language else {}
    return _record(builder, "wet", url, "conversion", text.encode("utf-8"),
                   "text/plain; charset=utf-8", refers_to, **language_header)


def wat_payload(url: str, refers_to: str | None, date: str | None, status: int,
                headers: list[tuple[str, str]], processed: Any) -> dict[str, Any]:
    links = [{"path": "A@/href", "url": link.url, **({"text": link.text} if link.text else {})}
             for link in processed.links]
    meta = dict(processed.metadata)
    http: dict[str, Any] = {
        "Response-Message": {"Status": str(status)},
        "Headers": {name: value for name, value in headers},
        "Entity-Metadata": {"Content-Type": next((v for k, v in headers
                                                  if k.lower() == "content-type"), ""),
                            "Text-Length": len(processed.text)}}
    if processed.content_kind == "html":
        head: dict[str, Any] = {"Title": meta.pop("title", "")}
        if meta.get("metas"):
            head["Metas"] = meta.pop("metas")
        http["HTML-Metadata"] = {"Head": head, "Links": links}
    else:
        http["Document-Metadata"] = {"Kind": processed.content_kind, "Links": links,
                                     "Metadata": meta}
    return {"Envelope": {
        "Format": "WARC",
        "WARC-Header-Metadata": {"WARC-Type": "response", "WARC-Target-URI": url,
                                 "WARC-Record-ID": refers_to or "", "WARC-Date": date or ""},
        "Payload-Metadata": {"Actual-Content-Type": "application/http; msgtype=response",
                             "HTTP-Response-Metadata": http}}}


def wat_record(builder: WARCWriter, url: str, data: dict[str, Any],
               refers_to: str | None) -> Any:
    payload = json.dumps(data, default=str, separators=(",", ":")).encode("utf-8")
    return _record(builder, "wat", url, "metadata", payload, "application/json", refers_to)
