"""Sphinx configuration of crawler_ext's documentation (``sphinx-build -W docs docs/_build``)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "_ext"), str(HERE.parent)]

project = "crawler_ext"
author = "the crawler_ext developers"
copyright = "2026, the crawler_ext developers"  # noqa: A001 (Sphinx's name)

extensions = ["myst_parser", "crawler_ext_tables"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
html_theme = "sphinx_rtd_theme"  # the Scrapy documentation's theme
html_title = "crawler_ext"
