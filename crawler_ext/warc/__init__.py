"""WARC archiving: record writing with rotation and crash recovery, CDXJ index, the pipeline."""

from __future__ import annotations

from crawler_ext.warc.cdxj import lookup, surt
from crawler_ext.warc.pipeline import WarcPipeline, payload_digest
from crawler_ext.warc.writer import WarcFileWriter, recover

__all__ = ["WarcFileWriter", "WarcPipeline", "lookup", "payload_digest", "recover", "surt"]
