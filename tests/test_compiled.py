"""The compiled build (setup.py, mypyc): all of the listed modules or none of them, and a warning
when an editable install's compiled module is older than its source."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import warnings
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import crawler_ext
from crawler_ext.runtime.native import warn_if_stale

ROOT = Path(__file__).resolve().parent.parent


def _listed() -> list[str]:
    """The modules setup.py compiles, as dotted names."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    listed = next(node.value for node in tree.body if isinstance(node, ast.AnnAssign)
                  and ast.unparse(node.target) == "COMPILED")
    return sorted(p[:-3].replace("/", ".") for p in ast.literal_eval(listed))


def test_the_dispatch_path_is_compiled_whole_or_not_at_all() -> None:
    """A partial build would mix native and Python classes of one shared library; CI builds
    with a compiler (CRAWLER_EXT_EXPECT_COMPILED=1), so its tests run the compiled code."""
    built = crawler_ext.compiled()
    assert built in ([], _listed()), built
    if os.environ.get("CRAWLER_EXT_EXPECT_COMPILED"):
        assert built == _listed()
        import crawler_ext.frontier.core as core

        assert core.__file__.endswith(tuple(EXTENSION_SUFFIXES))


def test_a_compiled_module_edited_after_the_build_is_warned_about(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name in ("sub/a", "sub/b", "c"):
        (package / f"{name}.py").write_text("")
        (package / f"{name}{EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    (package / "d.py").write_text("")  # not compiled
    old = (package / "c.py").stat().st_mtime - 60
    os.utime(package / f"sub/b{EXTENSION_SUFFIXES[0]}", (old, old))  # b edited since
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert warn_if_stale(package) == ["pkg.sub.b"]
    assert "pkg.sub.b" in str(caught[0].message)
    # the build rewrote the shared library only (the stub of b did not change): b is new
    (tmp_path / f"crawler_ext_compiled__mypyc{EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    assert warn_if_stale(package) == []
    os.utime(package / "sub/b.py", (old, old))
    assert warn_if_stale(package) == []


def test_pure_python_at_run_time_imports_every_module_from_its_source() -> None:
    """CRAWLER_EXT_PURE_PYTHON=1 when the crawl starts: the compiled build is left aside."""
    code = ("import crawler_ext, crawler_ext.frontier.core as core, crawler_ext.recent as recent;"
            "from crawler_ext.frontier.storage import Entry;"
            "print(crawler_ext.compiled(), core.__file__, recent.__file__, Entry('k', 0, b'').key)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "CRAWLER_EXT_PURE_PYTHON": "1"}, cwd=ROOT,
                         timeout=60, check=True).stdout.split()
    assert out[0] == "[]"
    assert out[1].endswith("core.py") and out[2].endswith("recent.py") and out[3] == "k"
