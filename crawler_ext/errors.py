"""The pack's own exceptions, apart from the settings registry that raises most of them (so
domain code can raise them without importing the settings)."""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A ``CRAWLER_EXT_*`` setting has a value that cannot be used."""
