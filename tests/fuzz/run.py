#!/usr/bin/env python
"""``python -m tests.fuzz.run <target> [libFuzzer flags] [corpus dirs]``: one target of
:mod:`tests.fuzz.targets` under atheris, coverage-guided over the pack's own Python code (run
it with ``CRAWLER_EXT_PURE_PYTHON=1``: compiled modules cannot be instrumented).  Without a
corpus directory it starts from ``tests/fuzz/corpus/<target>/`` (new inputs go to a scratch
folder).  ``-merge=1 NEW tests/fuzz/corpus/<target>`` minimises a corpus.  A crash writes its input
(``-artifact_prefix``) and exits non-zero: copy it to ``tests/fuzz/regressions/<target>/``."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: what each target exercises: imported under atheris' instrumentation
MODULES = {
    "urls": ["crawler_ext.admission.urls"],
    "links": ["spiders.web", "crawler_ext.hosts.directives"],
    "robots": ["crawler_ext.hosts.robots", "protego"],
    "sitemaps": ["crawler_ext.recrawl.sitemaps", "scrapy.utils.sitemap"],
    "warc": ["crawler_ext.warc.writer", "crawler_ext.warc.cdxj"],
    "codec": ["crawler_ext.frontier.disk", "crawler_ext.frontier.adapter.codec"],
}


def _instrument(atheris: Any, module: Any) -> None:
    for value in list(vars(module).values()):
        functions = [value] if inspect.isfunction(value) else \
            list(vars(value).values()) if inspect.isclass(value) else []
        for function in functions:
            function = getattr(function, "__func__", function)  # static and class methods
            if inspect.isfunction(function) and function.__module__ == module.__name__:
                atheris.instrument_func(function)


def main() -> None:
    import atheris

    if len(sys.argv) > 1 and sys.argv[1] in MODULES:
        target, rest = sys.argv[1], sys.argv[2:]
    else:  # libFuzzer's own child processes (-merge, -fork) get the flags alone
        target, rest = os.environ.get("CRAWLER_EXT_FUZZ_TARGET", ""), sys.argv[1:]
    if target not in MODULES:
        sys.exit(f"usage: python -m tests.fuzz.run {{{','.join(MODULES)}}} [flags] [corpus]")
    os.environ["CRAWLER_EXT_FUZZ_TARGET"] = target
    from tests.fuzz.targets import TARGETS

    # the functions of the modules under test, whatever loaded them (the pack's modules that
    # setup.py compiles come from their .py files through a loader of its own with
    # CRAWLER_EXT_PURE_PYTHON=1, which atheris' import hook does not see); instrumenting
    # everything loaded (atheris.instrument_all) takes 15 s with Scrapy and Twisted in memory
    for name in MODULES[target]:
        _instrument(atheris, importlib.import_module(name))

    if not any(not arg.startswith("-") for arg in rest):
        # new inputs go to a scratch folder first, never into the checked-in seeds
        rest += [tempfile.mkdtemp(prefix=f"fuzz-{target}-"), str(HERE / "corpus" / target)]
    atheris.Setup([sys.argv[0], *rest], TARGETS[target])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
