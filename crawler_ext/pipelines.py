"""Item pipelines of crawler_ext (``ITEM_PIPELINES``)."""

from __future__ import annotations

from crawler_ext.warc.pipeline import WarcPipeline

__all__ = ["WarcPipeline"]
