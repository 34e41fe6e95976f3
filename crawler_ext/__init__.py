"""crawler_ext: search-engine-grade crawling components for Scrapy."""

from __future__ import annotations

import os
from typing import Any

from crawler_ext.runtime.native import compiled, prefer_source, warn_if_stale

__version__ = "0.1.0"
__all__ = ["Addon", "__version__", "compiled"]

if os.environ.get("CRAWLER_EXT_PURE_PYTHON"):
    prefer_source()  # the modules setup.py compiles run as Python
else:
    warn_if_stale()  # an editable install's compiled modules, edited since they were built


def __getattr__(name: str) -> Any:
    # ``ADDONS = {"crawler_ext.Addon": 100}``; imported on first use, so that importing a
    # submodule does not import Scrapy's settings machinery
    if name == "Addon":
        from crawler_ext.addon import Addon

        return Addon
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
