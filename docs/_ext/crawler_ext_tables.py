"""Sphinx directives that draw the reference tables from the code's registries, so the docs
cannot drift from them: ``crawler-ext-settings`` (:mod:`crawler_ext.config`) and
``crawler-ext-stats`` (:mod:`crawler_ext.stats`)."""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


class _Table(Directive):
    has_content = False
    head: tuple[str, ...] = ()

    def rows(self) -> list[tuple[str, ...]]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        # a Markdown table, parsed by MyST as if written in the page
        lines = ["| " + " | ".join(self.head) + " |", "|" + "---|" * len(self.head)]
        lines += ["| " + " | ".join(_escape(cell) for cell in row) + " |"
                  for row in self.rows()]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="(generated)"), self.content_offset,
                                container)
        return container.children


class SettingsTable(_Table):
    head = ("setting", "default", "meaning")

    def rows(self) -> list[tuple[str, ...]]:
        from crawler_ext import config

        return [(f"`{s.name}`", f"`{config.default_text(s)}`", s.doc)
                for s in config.SETTINGS.values()]


class StatsTable(_Table):
    head = ("key", "meaning")

    def rows(self) -> list[tuple[str, ...]]:
        from crawler_ext.stats import stats_rows

        return stats_rows()


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("crawler-ext-settings", SettingsTable)
    app.add_directive("crawler-ext-stats", StatsTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
