"""Which processor reads which MIME type: the pack's defaults, then third-party packages'
entry points (group ``crawler_ext.processors``, the entry point's name a MIME type, e.g.
``"application/x-foo" = "foo.processing:FooProcessor"``), then the
``CRAWLER_EXT_PROCESSORS`` setting (``{"application/pdf": "dotted.path", ...}``; ``None``
or an empty value switches a type off).  A key may be a ``type/*`` wildcard.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from crawler_ext.errors import ConfigError

__all__ = ["DEFAULTS", "ENTRY_POINT_GROUP", "build_table", "load_processor", "lookup"]

ENTRY_POINT_GROUP = "crawler_ext.processors"
_P = "crawler_ext.processors"
DEFAULTS: dict[str, str] = {
    "text/html": f"{_P}.html.HtmlProcessor",
    "application/xhtml+xml": f"{_P}.html.HtmlProcessor",
    "application/pdf": f"{_P}.pdf.PdfProcessor",
    "application/x-pdf": f"{_P}.pdf.PdfProcessor",
    "application/rss+xml": f"{_P}.feed.FeedProcessor",
    "application/atom+xml": f"{_P}.feed.FeedProcessor",
    "application/rdf+xml": f"{_P}.feed.FeedProcessor",
    "text/plain": f"{_P}.text.TextProcessor",
    "image/*": f"{_P}.image.ImageProcessor",
}


def _entry_points() -> dict[str, str]:
    found: dict[str, str] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found[point.name.strip().lower()] = point.value.replace(":", ".")
    return found


def build_table(setting: Mapping[str, Any] | None, check: bool = True) -> dict[str, str]:
    """MIME type (or ``type/*``) -> the processor's dotted path.  ``check``: import each
    processor that is not the pack's own, so a bad path stops the crawl at its start with
    one line (``ConfigError``)."""
    table = dict(DEFAULTS)
    table.update(_entry_points())
    for mime, path in (setting or {}).items():
        key = str(mime).strip().lower()
        if "/" not in key:
            raise ConfigError(f"CRAWLER_EXT_PROCESSORS: {mime!r} is not a MIME type "
                              "(type/subtype or type/*)")
        if path in (None, "", "None", "none"):
            table.pop(key, None)
        else:
            table[key] = str(path)
    if check:
        for mime, path in table.items():
            if path not in DEFAULTS.values():
                try:
                    load_processor(path)
                except Exception as exc:  # noqa: BLE001 -- any failure is the user's setting
                    raise ConfigError(f"CRAWLER_EXT_PROCESSORS: cannot load {path!r} for "
                                      f"{mime}: {type(exc).__name__}: {exc}") from None
    return table


def lookup(table: Mapping[str, str], mime: str) -> str | None:
    """The processor's path for ``mime``: an exact key, else its ``type/*``."""
    return table.get(mime) or table.get(mime.split("/", 1)[0] + "/*")


def load_processor(path: str) -> Any:
    """An instance of the processor class (or the object itself if it is not a class)."""
    from scrapy.utils.misc import load_object

    obj = load_object(path)
    processor = obj() if isinstance(obj, type) else obj
    for attribute in ("name", "content_kind", "process"):
        if not hasattr(processor, attribute):
            raise TypeError(f"{path} has no {attribute!r}: not a processor")
    return processor
