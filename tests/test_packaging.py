"""Packaging: ``python -m build`` makes a wheel and an sdist; the wheel holds the library only
(no tests, test web or benchmarks; the Lua scripts included); installed into a fresh virtual
environment, it runs the add-on crawl of a user's own project against the test web."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT
from test_addon import DELAY, user_project

from testweb import politeness_violations

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and "Could not find a version" in proc.stdout + proc.stderr:
        pytest.skip("the build backend cannot be downloaded here (no package index)")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return out


def test_the_wheel_holds_the_library_only(built: Path) -> None:
    wheels = list(built.glob("crawler_ext-*.whl"))
    assert len(wheels) == 1 and list(built.glob("crawler_ext-*.tar.gz"))
    names = zipfile.ZipFile(wheels[0]).namelist()
    tops = {name.split("/")[0] for name in names}
    # beside the package, the shared library of its compiled modules (setup.py), if built
    compiled = {t for t in tops if t.startswith("crawler_ext_compiled__mypyc.")}
    assert tops - compiled == {"crawler_ext", next(t for t in tops if t.endswith(".dist-info"))}
    if os.environ.get("CRAWLER_EXT_EXPECT_COMPILED"):
        assert compiled and "crawler_ext/frontier/core.py" in names  # (its source, too)
    assert not [n for n in names if "testweb" in n or "/tests/" in n or "benchmarks" in n]
    assert {"crawler_ext/distributed/frontier_sync.lua", "crawler_ext/distributed/bloom_add.lua",
            "crawler_ext/distributed/frontier_done.lua",
            "crawler_ext/addon.py", "crawler_ext/py.typed"} <= set(names)


def test_the_installed_wheel_runs_a_users_addon_crawl(built: Path, tmp_path: Path,
                                                        testweb_factory) -> None:
    wheel = next(built.glob("crawler_ext-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run([python, "-m", "pip", "install", "--quiet", str(wheel)],
                             capture_output=True, text=True, timeout=900, env=env)
    assert install.returncode == 0, install.stderr[-3000:]
    web = testweb_factory(hosts=3, pages=6, hazards=False)
    project = user_project(python, tmp_path, web, env)
    where = subprocess.run([python, "-c", "import crawler_ext; print(crawler_ext.__file__)"],
                           cwd=project, capture_output=True, text=True, env=env, timeout=60)
    assert where.stdout.startswith(str(venv)), where.stdout  # the wheel, not the checkout
    if os.environ.get("CRAWLER_EXT_EXPECT_COMPILED"):  # and its compiled modules import
        out = subprocess.run([python, "-c", "import crawler_ext; print(crawler_ext.compiled())"],
                                cwd=project, capture_output=True, text=True, env=env, timeout=60)
        assert "crawler_ext.frontier.core" in out.stdout, out.stdout + out.stderr
    crawl = subprocess.run([python, "-m", "scrapy", "crawl", "follow", "-a",
                            f"start={web.url(0)}", "-O", str(tmp_path / "items.jsonl")],
                           cwd=project, capture_output=True, text=True, env=env, timeout=300)
    assert crawl.returncode == 0, crawl.stderr[-3000:]
    assert "crawler_ext add-on: frontier scheduler" in crawl.stderr
    log = web.log()
    assert len({e.path for e in log}) >= 6 and politeness_violations(log, DELAY) == []
    assert all(e.path == "/robots.txt" for e in log[:1])
    assert list((tmp_path / "warcs").glob("*.warc.gz"))
