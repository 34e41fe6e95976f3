"""crawler_ext: search-engine-grade crawling components for Scrapy."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
