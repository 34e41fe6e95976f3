"""Plug crawler_ext into Scrapy's own test suite without editing it.

This directory goes first on ``PYTHONPATH`` of the pack's run (subprocesses that Scrapy's tests
start included).  When ``scrapy.settings.default_settings`` is imported, the pack's components
are added to it, so they are *defaults*: a test's own settings still win.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys

PACK_DEFAULTS = {
    "SCHEDULER": "crawler_ext.frontier.FrontierScheduler",
    "DUPEFILTER_CLASS": "crawler_ext.dupefilter.BloomDupeFilter",
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    # the mock servers listen on loopback, which the SSRF guard refuses unless allowed
    "CRAWLER_EXT_ALLOWED_NETWORKS": ["127.0.0.0/8", "::1/128"],
    # no politeness floor: a test web of one host must not wait a second between requests
    "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.0,
}
TARGET = "scrapy.settings.default_settings"


class _InjectDefaults(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):  # noqa: ANN001, ANN201
        if name != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):  # noqa: ANN001, ANN202
            run(module)
            for setting, value in PACK_DEFAULTS.items():
                setattr(module, setting, value)
            # the SSRF guard sees every request the downloader sends, as in the pack's profile
            module.DOWNLOADER_MIDDLEWARES_BASE = {
                **module.DOWNLOADER_MIDDLEWARES_BASE,
                "crawler_ext.netguard.NetworkGuardMiddleware": 10}

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _InjectDefaults())
