"""The topic as a user gives it: folders of example pages, and keywords.

Examples are HTML files (their main text, by Resiliparse, as content dedup reads pages) or
plain-text files.  Bad input raises :class:`~crawler_ext.errors.ConfigError` with one line
naming the setting: a folder that is missing, empty or unreadable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from crawler_ext.errors import ConfigError

__all__ = ["Keywords", "load_examples", "page_text"]

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
TEXT_SUFFIXES = (".txt", ".text", ".md")
MAX_EXAMPLE_BYTES = 10 * 1024 * 1024


def page_text(data: bytes, html: bool) -> str:
    """An example's text: an HTML page's visible text (title included), or the file as
    UTF-8."""
    if not html:
        return data.decode("utf-8", errors="replace")
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    from crawler_ext.dedup.extract import decode_html

    tree = HTMLTree.parse(decode_html(data))
    return f"{tree.title or ''}\n{extract_plain_text(tree, main_content=False)}"


def load_examples(folder: str | Path, setting: str) -> list[str]:
    """The texts of the example files in ``folder`` (its HTML and text files, recursively,
    in name order)."""
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"{setting}: {folder} is not a folder")
    files = sorted(p for p in root.rglob("*") if (p.is_file() or p.is_symlink())
                   and p.suffix.lower() in HTML_SUFFIXES + TEXT_SUFFIXES)
    if not files:
        raise ConfigError(f"{setting}: {folder} holds no .html or .txt example")
    texts = []
    for path in files:
        try:
            data = path.read_bytes()[:MAX_EXAMPLE_BYTES]
        except OSError as exc:
            raise ConfigError(f"{setting}: cannot read {path}: {exc.strerror}") from None
        text = page_text(data, path.suffix.lower() in HTML_SUFFIXES)
        if text.strip():
            texts.append(text)
    if not texts:
        raise ConfigError(f"{setting}: the examples in {folder} hold no text")
    return texts


@dataclass(frozen=True)
class Keywords:
    """Words or regular expressions of the topic, matched case-insensitively (a plain word
    as a whole word)."""

    patterns: tuple[re.Pattern[str], ...]

    @classmethod
    def parse(cls, items: list[str], setting: str = "CRAWLER_EXT_FOCUS_KEYWORDS") -> Keywords:
        patterns = []
        for item in items:
            text = item.strip()
            if not text:
                continue
            source = rf"\b{re.escape(text)}\b" if re.fullmatch(r"[\w\s-]+", text) else text
            try:
                patterns.append(re.compile(source, re.IGNORECASE))
            except re.error as exc:
                raise ConfigError(f"{setting}: {text!r} is not a regular expression "
                                  f"({exc})") from None
        return cls(tuple(patterns))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def hits(self, text: str) -> int:
        """How many of the keywords occur in ``text``."""
        return sum(1 for pattern in self.patterns if pattern.search(text))
