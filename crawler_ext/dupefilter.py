"""The public dotted path of the seen set (``DUPEFILTER_CLASS``); it lives in
:mod:`crawler_ext.seen`."""

from crawler_ext.seen.bloom import MAYBE, BloomDupeFilter, ExactSeenStore

__all__ = ["BloomDupeFilter", "ExactSeenStore", "MAYBE"]
