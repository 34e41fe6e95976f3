"""The pack's configuration: every ``CRAWLER_EXT_*`` setting in one registry (``registry``:
default, type, one line of documentation), the value types it checks them with (``types``),
and Scrapy configured for the pack where its components are built (``scrapyside``).

``from crawler_ext import config`` then ``config.get(settings, name)`` is how components
read a setting; domain code never imports this package.
"""

from __future__ import annotations

from crawler_ext.config.registry import (
    SETTINGS,
    ConfigError,
    Setting,
    band_weights,
    default_text,
    focus_enabled,
    get,
    validate_all,
)
from crawler_ext.config.scrapyside import (
    component_path,
    enabled_component,
    enabled_settings,
    use_bundled_public_suffix_list,
)

__all__ = ["SETTINGS", "ConfigError", "Setting", "band_weights", "component_path",
           "default_text", "enabled_component", "enabled_settings", "focus_enabled", "get",
           "use_bundled_public_suffix_list", "validate_all"]
