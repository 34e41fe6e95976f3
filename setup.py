"""Build script, for two callers.

* **pip** (``pip install .`` or ``-e .``): the package as ``setup.cfg`` describes it, with the
  modules of the frontier's dispatch and enqueue paths compiled by mypyc where a C compiler and
  the Python headers are at hand (they are the same source, type-checked, built as C
  extensions: about 1.5x the dispatch rate, benchmarks/RESULTS.md). Without a compiler, or with
  ``CRAWLER_EXT_PURE_PYTHON=1`` in the environment, the package is pure Python and behaves the
  same. ``python -c "import crawler_ext; print(crawler_ext.compiled())"`` tells which.
* **scrapyd-deploy**, which builds the project's egg with ``setup.py bdist_uberegg``: the
  egg it would build with its own default ``setup.py`` (the project's packages and its
  settings module as the ``scrapy`` entry point); nothing is compiled (an egg's modules are
  imported from a zip).
"""

from __future__ import annotations

import configparser
import glob
import os
import sys

from setuptools import find_packages, setup

#: compiled by mypyc, in one shared library (a module outside it calls them as Python)
COMPILED: list[str] = [
    "crawler_ext/admission/filters.py",
    "crawler_ext/admission/urls.py",
    "crawler_ext/frontier/adapter/codec.py",
    "crawler_ext/frontier/adapter/dispatch.py",
    "crawler_ext/frontier/adapter/durability.py",
    "crawler_ext/frontier/adapter/inflight.py",
    "crawler_ext/frontier/adapter/intake.py",
    "crawler_ext/frontier/adapter/requests.py",
    "crawler_ext/frontier/bands.py",
    "crawler_ext/frontier/core.py",
    "crawler_ext/frontier/disk.py",
    "crawler_ext/frontier/diskbatch.py",
    "crawler_ext/frontier/diskformat.py",
    "crawler_ext/frontier/diskqueue.py",
    "crawler_ext/frontier/entries.py",
    "crawler_ext/frontier/importance.py",
    "crawler_ext/frontier/kv.py",
    "crawler_ext/frontier/lag.py",
    "crawler_ext/frontier/politeness.py",
    "crawler_ext/frontier/storage.py",
    "crawler_ext/frontier/strategy.py",
    "crawler_ext/recent.py",
    "crawler_ext/seen/bloom.py",
]


def remove_inplace_builds() -> None:
    """An earlier editable build's extensions, which Python would import before the .py."""
    for path in [*glob.glob("crawler_ext/**/*.so", recursive=True),
                 *glob.glob("crawler_ext_compiled__mypyc*.so")]:
        os.remove(path)
        print(f"crawler_ext: removed {path}, built earlier")


def compiled_extensions() -> list:
    if os.environ.get("CRAWLER_EXT_PURE_PYTHON"):
        print("crawler_ext: CRAWLER_EXT_PURE_PYTHON is set, nothing is compiled")
        remove_inplace_builds()
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("crawler_ext: mypyc is not installed, nothing is compiled")
        remove_inplace_builds()
        return []
    try:
        # the libraries it imports are typed as Any, and only the modules compiled are checked
        # (an ignore that the full check, with Scrapy's types, needs is unused here)
        extensions = mypycify(["--ignore-missing-imports", "--follow-imports=silent",
                               "--no-warn-unused-ignores", *COMPILED],
                              opt_level="3", group_name="crawler_ext_compiled")
    except (Exception, SystemExit) as exc:  # mypy's type check failed: pure Python
        print(f"crawler_ext: mypyc failed ({exc!r}), nothing is compiled", file=sys.stderr)
        remove_inplace_builds()  # (they would run the code as it was)
        return []
    for extension in extensions:
        extension.optional = True  # no compiler: build_ext warns, the .py files are used
    return extensions


def scrapyd_egg() -> None:
    config = configparser.ConfigParser()
    config.read("scrapy.cfg")
    settings = config.get("settings", "default")
    setup(name="project", version="1.0", packages=find_packages(),
          entry_points={"scrapy": [f"settings = {settings}"]})


if any(command.startswith(("bdist_egg", "bdist_uberegg")) for command in sys.argv[1:]):
    scrapyd_egg()
else:
    setup(ext_modules=compiled_extensions())
