"""``WarcPipeline``: every fetch archived as WARC/1.1 records, as it was transferred.

    ITEM_PIPELINES = {"crawler_ext.pipelines.WarcPipeline": 800}

It listens to ``response_downloaded``, which Scrapy sends before the downloader middlewares
run, so the response record holds the status line, the original headers and the body bytes
as received (``Content-Encoding`` intact; only the chunked transfer coding is undone, and the
``Transfer-Encoding`` header is dropped with it).  For each fetch it writes a request record
and a response record linked by ``WARC-Concurrent-To``; a body whose payload digest was
archived before becomes a ``revisit`` record (profile identical-payload-digest, referring to
the first capture), and a 304 a revisit of profile server-not-modified.  A page the
rendering pool rendered adds its DOM as a ``conversion`` record referring to the response
record of the shell.  Items (one per page the spider parsed) add a ``metadata`` record:
outlinks, fetch timing, the dedup verdict.
Pages the content-dedup middleware dropped get a metadata record naming their original.
With ``CRAWLER_EXT_NOINDEX_STORE = False`` a noindex page (X-Robots-Tag, or meta robots of
its HTML) is not archived at all.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
from collections import OrderedDict
from typing import Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler_ext import config
from crawler_ext.runtime.diskfull import is_disk_full, report_disk_full
from crawler_ext.hosts.directives import raw_noindex
from crawler_ext.signals import (content_duplicate, document_processed, frontier_commit,
                                 warc_written)
from crawler_ext.warc.cdxj import metadata_uri
from crawler_ext.warc.derivatives import wat_payload, wat_record, wet_record
from crawler_ext.warc.process import ProcessWriter
from crawler_ext.warc.plans import FetchPlan, MetadataPlan
from crawler_ext.warc.writer import WarcFileWriter
from crawler_ext.meta import WARC_META  # (its home; re-exported here)

__all__ = ["WARC_META", "WarcPipeline", "payload_digest"]

logger = logging.getLogger(__name__)
_DROP_HEADERS = {b"transfer-encoding"}


def payload_digest(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


class WarcPipeline:
    def __init__(self, writer: WarcFileWriter | ProcessWriter, stats: Any = None,
                 store_noindex: bool = True, crawler: Any = None) -> None:
        self.writer = writer
        self.stats = stats
        self.crawler = crawler
        self.store_noindex = store_noindex
        self._first_capture: dict[str, tuple[str, str]] = {}  # payload digest -> (uri, date)
        self._owned: dict[str, str] = {}  # url -> the payload digest it was first with
        self._captures: OrderedDict[str, str] = OrderedDict()  # url -> response record id
        self._dates: dict[str, str] = {}  # response record id -> its date (for WAT)
        self.wet = self.wat = False  # derivative files (CRAWLER_EXT_WET/WAT_ENABLED)
        self.locate = False  # the event stream wants records' ids and places

    @classmethod
    def from_crawler(cls, crawler: Any) -> WarcPipeline:
        s = crawler.settings
        directory = config.get(s, "CRAWLER_EXT_WARC_DIR")
        if not directory:
            raise NotConfigured  # CRAWLER_EXT_WARC_DIR empty: archiving off
        locate = bool(config.get(s, "CRAWLER_EXT_EVENTS_URL"))
        writer = ProcessWriter(WarcFileWriter(
            directory, prefix=config.get(s, "CRAWLER_EXT_WARC_PREFIX"),
            max_size=config.get(s, "CRAWLER_EXT_WARC_MAX_SIZE"),
            gzip_level=config.get(s, "CRAWLER_EXT_WARC_GZIP_LEVEL"),
            info={"robots": "obey" if s.getbool("ROBOTSTXT_OBEY") else "ignore",
                  "http-header-user-agent": s.get("USER_AGENT") or "",
                  "isPartOf": crawler.spidercls.name}, locate=locate))
        pipeline = cls(writer, crawler.stats, config.get(s, "CRAWLER_EXT_NOINDEX_STORE"),
                       crawler)
        pipeline.locate = locate
        pipeline.wet = config.get(s, "CRAWLER_EXT_WET_ENABLED")
        pipeline.wat = config.get(s, "CRAWLER_EXT_WAT_ENABLED")
        if pipeline.wet or pipeline.wat:
            if not config.get(s, "CRAWLER_EXT_PROCESSORS_ENABLED"):
                logger.warning("WARC: WET and WAT files come from the content processors, "
                               "which are off (CRAWLER_EXT_PROCESSORS_ENABLED): none written")
            crawler.signals.connect(pipeline.document_processed, signal=document_processed)
        crawler.signals.connect(pipeline.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(pipeline.duplicate, signal=content_duplicate)
        crawler.signals.connect(pipeline.flush, signal=frontier_commit)
        return pipeline

    # -- lifecycle -------------------------------------------------------------------------
    def open_spider(self, spider: Any = None) -> None:
        self.writer.open()

    def close_spider(self, spider: Any = None) -> None:
        try:
            self.writer.close()
        except OSError as exc:
            self._failed(exc)
        self._report_located()
        if self.stats is not None:
            self.stats.set_value("warc/files", len(self.writer.files))
            self.stats.set_value("warc/bytes", self.writer.bytes_written)
        logger.info("WARC: %d records, %.1f MB in %d file(s) under %s", self.writer.records,
                    self.writer.bytes_written / 1e6, len(self.writer.files), self.writer.directory)

    def flush(self, durable: bool = True, **_: Any) -> None:
        """Before the frontier commits its journal: what it calls done must be on disk (a
        journal that is not ``durable`` needs no waiting: the records just go out)."""
        try:
            self.writer.flush(wait=durable)
        except OSError as exc:
            self._failed(exc)
        self._report_located()
        if self.stats is not None:  # bytes so far, for the crawl report's time series
            self.stats.set_value("warc/bytes", self.writer.bytes_written)

    def _report_located(self) -> None:
        """The records' places the writer reported, to the event stream."""
        if self.locate and self.crawler is not None:
            located = self.writer.take_located()
            if located:
                self.crawler.signals.send_catch_log(warc_written, records=located)

    def _first(self, uri: str, digest: str, date: str) -> None:
        """``uri`` is the first with this payload: an identical payload later (at any URL) is
        a revisit of this capture.  The payload the URL was first with before is forgotten
        (its record stays in the archive, but a later copy is written whole), so what is
        remembered grows with the URLs, never with the versions of a changing page."""
        self._first_capture.pop(self._owned.get(uri, ""), None)
        self._first_capture[digest] = (uri, date)
        self._owned[uri] = digest

    def _write(self, record: Any) -> bool:
        try:
            self.writer.write(record)
        except OSError as exc:
            self._failed(exc)
            return False
        return True

    def _failed(self, exc: OSError) -> None:
        if not is_disk_full(exc):
            raise exc
        report_disk_full(self.crawler, "warc", self.writer.directory, exc)

    # -- records ---------------------------------------------------------------------------
    def response_downloaded(self, response: Any, request: Any, spider: Any = None) -> None:
        if request.meta.get("playwright"):
            self._conversion(response, request)
            return
        if not self.store_noindex and raw_noindex(response):
            if self.stats is not None:
                self.stats.inc_value("warc/skipped_noindex")
            return
        w = self.writer
        uri = request.url
        body = response.body
        digest = payload_digest(body)
        first = self._first_capture.get(digest)
        if response.status == 304:
            kind = "not_modified"
        elif first is not None and body:
            kind = "revisit"
        else:
            kind = "response"
        rec_id = w.new_id()
        date = w.new_date()
        req_id = w.new_id()
        req_date = w.new_date(same_as=date)  # (the test seam's own, where it is set)
        plan = FetchPlan(
            uri, kind, f"{request.method} {_request_target(uri)} HTTP/1.1",
            [(k.decode("latin-1"), v.decode("latin-1"))
             for k, vs in request.headers.items() for v in vs],
            response.status, response.protocol or "HTTP/1.1",
            [(k.decode("latin-1"), v.decode("latin-1")) for k, vs in response.headers.items()
             if k.lower() not in _DROP_HEADERS for v in vs],
            str(response.ip_address) if response.ip_address is not None else None,
            body, digest, first, (rec_id, req_id), (date, req_date))
        try:
            w.write_plan(plan)
        except OSError as exc:
            self._failed(exc)
            return
        if kind == "not_modified":
            kind = "revisit"
        self._captures[uri] = rec_id
        if kind == "response" and body and digest not in self._first_capture:
            self._first(uri, digest, date)
        if self.locate:
            request.meta[WARC_META] = (rec_id, digest)
        if self.wat:
            self._dates[rec_id] = date
        if len(self._captures) > 100_000:
            gone, gone_id = self._captures.popitem(last=False)
            self._dates.pop(gone_id, None)
            self._first_capture.pop(self._owned.pop(gone, ""), None)
        if self.stats is not None:
            self.stats.inc_value(f"warc/records/{kind}")

    def _conversion(self, response: Any, request: Any) -> None:
        """A page rendered in the browser: its DOM as a ``conversion`` record referring to
        the response record of what the server sent (the shell, archived when fetched)."""
        uri = request.url
        body = response.body
        headers = {"WARC-Payload-Digest": payload_digest(body)}
        original = self._captures.get(uri)
        if original:
            headers["WARC-Refers-To"] = original
        record = self.writer.builder.create_warc_record(
            uri, "conversion", payload=io.BytesIO(body), length=len(body),
            warc_content_type="text/html; charset=utf-8", warc_headers_dict=headers)
        if self._write(record) and self.stats is not None:
            self.stats.inc_value("warc/records/conversion")

    def document_processed(self, request: Any, response: Any, processed: Any,
                           **_: Any) -> None:
        """WET and WAT records of a processed document, referring to its response record."""
        url = request.url
        rec_id = self._captures.get(url)
        b = self.writer.builder
        language = processed.metadata.get("language")
        if self.wet and processed.text:
            if self._write(wet_record(b, url, processed.text, rec_id,
                                      language if isinstance(language, str) else None)) \
                    and self.stats is not None:
                self.stats.inc_value("warc/records/wet")
        if self.wat:
            headers = [(k.decode("latin-1"), v.decode("latin-1"))
                       for k, vs in response.headers.items() for v in vs]
            data = wat_payload(url, rec_id, self._dates.get(rec_id or ""), response.status,
                               headers, processed)
            if self._write(wat_record(b, url, data, rec_id)) and self.stats is not None:
                self.stats.inc_value("warc/records/wat")

    def process_item(self, item: Any, spider: Any = None) -> Any:
        try:
            fields = ItemAdapter(item)
        except TypeError:  # not an item type itemadapter knows: nothing to describe
            return item
        url = fields.get("final_url") or fields.get("url")
        if not isinstance(url, str):  # a user's own item, not a page: the WARC has the fetch
            return item
        data = {k: fields.get(k) for k in ("url", "final_url", "status", "depth", "fetch_time",
                                           "fetched_at", "links", "canonical", "noindex",
                                           "content_kind", "processor", "text_length")}
        data["dedup"] = fields.get("dedup")
        self._metadata(url, data)
        return item

    def duplicate(self, url: str, original: str, kind: str, distance: int = 0, **_: Any) -> None:
        """A page the content-dedup middleware stopped: an alias record naming its original."""
        self._metadata(url, {"url": url, "dedup": {"verdict": kind, "original": original,
                                                   "distance": distance}})

    def _metadata(self, url: str, data: dict) -> None:
        w = self.writer
        plan = MetadataPlan(metadata_uri(url), self._captures.get(url), data, w.new_id(),
                            w.new_date())
        try:
            w.write_plan(plan)
        except OSError as exc:
            self._failed(exc)
            return
        if self.stats is not None:
            self.stats.inc_value("warc/records/metadata")


def _request_target(url: str) -> str:
    rest = url.split("//", 1)[-1]
    slash = rest.find("/")
    return rest[slash:] if slash >= 0 else "/"
