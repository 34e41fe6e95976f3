"""WARC archiving: record writing with rotation and crash recovery, CDXJ index, the pipeline."""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["WarcFileWriter", "WarcPipeline", "lookup", "payload_digest", "recover", "surt"]

# names -> their modules, imported on first use: the WARC writer process imports the writer
# alone, not Scrapy with the pipeline
_WHERE = {"lookup": "cdxj", "surt": "cdxj", "WarcPipeline": "pipeline",
          "payload_digest": "pipeline", "WarcFileWriter": "writer", "recover": "writer"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"crawler_ext.warc.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
