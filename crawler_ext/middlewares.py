"""Public path of the content dedup middleware (``crawler_ext.middlewares.ContentDedupMiddleware``);
it lives in :mod:`crawler_ext.dedup.middleware`."""

from crawler_ext.dedup.middleware import ContentDedupMiddleware

__all__ = ["ContentDedupMiddleware"]
