"""crawler_ext: search-engine-grade crawling components for Scrapy."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Addon", "__version__"]


def __getattr__(name: str) -> Any:
    # ``ADDONS = {"crawler_ext.Addon": 100}``; imported on first use, so that importing a
    # submodule does not import Scrapy's settings machinery
    if name == "Addon":
        from crawler_ext.addon import Addon

        return Addon
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
