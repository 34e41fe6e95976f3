"""Which of the package's modules run compiled.

``setup.py`` compiles the modules of the frontier's dispatch and enqueue paths with mypyc where
it can (a C compiler at hand, ``CRAWLER_EXT_PURE_PYTHON`` not set). Python imports a module's
extension before its ``.py`` file, so in an editable install (``pip install -e .``) a module
edited after the build still runs its old compiled code: :func:`warn_if_stale` says so, once,
at import.
With ``CRAWLER_EXT_PURE_PYTHON=1`` in the environment at run time, :func:`prefer_source`
imports every module from its ``.py`` file instead (readable tracebacks; the benchmarks
measure both builds side by side this way).
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib.abc import MetaPathFinder
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec, PathFinder
from importlib.util import spec_from_file_location
from pathlib import Path
from typing import Any

__all__ = ["built", "compiled", "prefer_source", "warn_if_stale"]

PACKAGE = Path(__file__).resolve().parent.parent  # crawler_ext/
#: a source newer than its extension by more than this was edited after the build (a wheel's
#: files are written within moments of each other)
STALE_AFTER = 5.0
#: the library holding the compiled code of every module (``group_name`` in setup.py)
SHARED_LIBRARY = "crawler_ext_compiled__mypyc"


def _pairs(package: Path = PACKAGE) -> list[tuple[str, Path, Path]]:
    """(dotted name, source, extension) for each module built as an extension."""
    pairs = []
    for directory, _, files in os.walk(package):
        names = set(files)
        for name in files:
            if not name.endswith(".py"):
                continue
            for suffix in EXTENSION_SUFFIXES:
                extension = name[:-3] + suffix
                if extension in names:
                    source = Path(directory, name)
                    dotted = ".".join(source.relative_to(package.parent).with_suffix("").parts)
                    pairs.append((dotted, source, Path(directory, extension)))
                    break
    return sorted(pairs)


def compiled() -> list[str]:
    """The dotted names of the modules that import as compiled extensions (none once
    :func:`prefer_source` was called)."""
    return [] if _source_first() else built()


def built() -> list[str]:
    """The dotted names of the modules built as extensions."""
    return [dotted for dotted, _, _ in _pairs()]


def warn_if_stale(package: Path = PACKAGE) -> list[str]:
    """The compiled modules whose source was edited after the build (warned about).  A
    module's code lives in the shared library beside the package (mypyc's group); its own
    extension is a stub, which a build leaves as it was when it did not change."""
    shared = [path.stat().st_mtime for suffix in EXTENSION_SUFFIXES
              for path in package.parent.glob(f"{SHARED_LIBRARY}{suffix}")]
    stale = [dotted for dotted, source, extension in _pairs(package)
             if source.stat().st_mtime > max([extension.stat().st_mtime, *shared]) + STALE_AFTER]
    if stale:
        warnings.warn(f"crawler_ext: {len(stale)} compiled module(s) are older than their "
                      f"source and run the old code ({', '.join(stale)}); build again with "
                      f"`pip install -e .`, or with CRAWLER_EXT_PURE_PYTHON=1 for none",
                      stacklevel=2)
    return stale


class _SourceFirst(MetaPathFinder):
    """The package's modules from their ``.py`` files, where an extension would be found."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if not name.startswith("crawler_ext."):
            return None
        spec = PathFinder.find_spec(name, path)
        origin = spec.origin if spec is not None else None
        if origin is None or not origin.endswith(tuple(EXTENSION_SUFFIXES)):
            return spec
        source = Path(origin).parent / (Path(origin).name.split(".", 1)[0] + ".py")
        return spec_from_file_location(name, source) if source.exists() else spec


def prefer_source() -> None:
    """From now on, import the package's modules as Python (before any compiled one is)."""
    loaded = [name for name in built() if name in sys.modules]
    if loaded:
        raise RuntimeError(f"crawler_ext: {', '.join(loaded)} already imported compiled")
    if not _source_first():
        sys.meta_path.insert(0, _SourceFirst())


def _source_first() -> bool:
    return any(isinstance(finder, _SourceFirst) for finder in sys.meta_path)
