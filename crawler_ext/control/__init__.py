"""Operating a crawl live: the control API, the live page and the command line
(``python -m crawler_ext.control``).  See docs/control.md."""

from crawler_ext.control.extension import ControlExtension

__all__ = ["ControlExtension"]
