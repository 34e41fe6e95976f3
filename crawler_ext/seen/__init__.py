"""The seen set: which URLs were admitted (``contract``), the Bloom-filter implementation
(``bloom``), and the adapter for other Scrapy dupefilters (``adapter``)."""

from crawler_ext.seen.adapter import as_seen_set
from crawler_ext.seen.bloom import BloomDupeFilter
from crawler_ext.seen.contract import MAYBE, SeenSet

__all__ = ["MAYBE", "BloomDupeFilter", "SeenSet", "as_seen_set"]
