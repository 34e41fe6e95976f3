"""Scrapy's own test suite, run twice: stock, and with crawler_ext plugged in.

The tests come from the Scrapy sdist of the installed version (``pip download``, cached under
``~/.cache/crawler_ext``); Scrapy's files are not edited.  The pack's run puts ``inject/`` first
on ``PYTHONPATH``: its ``sitecustomize`` makes the pack's components Scrapy's *defaults*, so a
test's own settings still win.  Every test that passes stock and fails with the pack twice is
a difference; the reviewed ones, each with its reason, are in ``expected_differences.txt``.

The stock run's outcomes of a Scrapy version are recorded in ``stock-<version>.json`` (half
the suite's time saved on every run): with a record, only the pack's run is made, and each
test that passed in the record and fails with the pack is run stock again, live, so a test
that fails on this machine anyway is not taken for a difference.  Without a record for the
installed Scrapy, both runs are made.

    python -m tests.scrapy_suite.suite [--workdir DIR] [--record]

prints the differences and exits 1 when one is not on the reviewed list; ``--record`` runs
stock and writes the record.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
INJECT = HERE / "inject"
EXPECTED = HERE / "expected_differences.txt"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "crawler_ext"

#: the parts of Scrapy a scheduler and a seen set touch: crawls, the engine and its loop,
#: schedulers, dupefilters, spider middlewares, signals, retries and redirects, sitemaps,
#: feed exports, crawler processes (subprocesses included), reactorless mode
FILES = [
    "test_closespider.py", "test_crawl.py", "test_crawler.py", "test_crawler_subprocess.py",
    "test_downloaderslotssettings.py", "test_downloadermiddleware_offsite.py",
    "test_downloadermiddleware_redirect.py",
    "test_downloadermiddleware_retry.py", "test_dupefilters.py", "test_engine.py",
    "test_engine_close_spider.py", "test_engine_download.py", "test_engine_loop.py",
    "test_engine_stop_download_bytes.py", "test_engine_stop_download_headers.py",
    "test_feedexport.py", "test_pipeline_crawl.py", "test_request_attribute_binding.py",
    "test_request_cb_kwargs.py", "test_request_left.py", "test_scheduler.py",
    "test_scheduler_base.py", "test_signals.py", "test_spider.py", "test_spider_crawl.py",
    "test_spider_sitemap.py", "test_spider_start.py", "test_spidermiddleware.py",
    "test_spidermiddleware_depth.py", "test_spidermiddleware_httperror.py",
    "test_spidermiddleware_output_chain.py", "test_spidermiddleware_process_start.py",
    "test_spidermiddleware_referer.py", "test_spidermiddleware_start.py",
    "test_spidermiddleware_urllength.py", "test_utils_reactorless.py",
]


class SuiteUnavailable(RuntimeError):
    """Scrapy's tests could not be fetched (no package index reachable)."""


def scrapy_version() -> str:
    import scrapy

    return scrapy.__version__


def fetch_tests(version: str, cache: Path = CACHE) -> Path:
    """A directory with Scrapy's ``tests/``, ``conftest.py`` and ``pyproject.toml`` (its
    pytest configuration) of ``version``, from the sdist."""
    target = cache / f"scrapy-tests-{version}"
    if (target / "tests").is_dir():
        return target
    download = cache / "sdist"
    download.mkdir(parents=True, exist_ok=True)
    name = f"scrapy-{version}.tar.gz"
    if not (download / name).exists():
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", f"scrapy=={version}", "--no-deps",
             "--no-binary", ":all:", "--quiet", "-d", str(download)],
            capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not (download / name).exists():
            raise SuiteUnavailable(f"pip download scrapy=={version} failed: "
                                   f"{(proc.stderr or proc.stdout).strip()[-300:]}")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    prefix = f"scrapy-{version}/"
    with tarfile.open(download / name) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and (
            m.name[len(prefix):].startswith("tests/")
            or m.name[len(prefix):] in ("conftest.py", "pyproject.toml"))]
        for member in members:
            member.name = member.name[len(prefix):]
        tar.extractall(partial, members=members, filter="data")
    partial.rename(target)
    return target


def run(suite: Path, pack: bool, report: Path, tests: list[str] | None = None,
        workers: int = 2) -> dict[str, str]:
    """Run the suite (or the given test ids); test id -> passed / failed / skipped."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    if pack:  # a trailing separator keeps the current directory on the path, as stock has it
        env["PYTHONPATH"] = str(INJECT) + os.pathsep
    targets = tests or [f"tests/{name}" for name in FILES]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "180",
           f"--junitxml={report}", "-o", "junit_family=xunit1", *targets]
    if workers > 1:
        cmd[4:4] = ["-n", str(workers)]
    subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, timeout=3600)
    return outcomes(report)


def outcomes(report: Path) -> dict[str, str]:
    if not report.exists():
        return {}
    result: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                break
            if child.tag == "skipped":
                outcome = "skipped"
        result[test_id(case.get("classname", ""), case.get("name", ""))] = outcome
    return result


def test_id(classname: str, name: str) -> str:
    """pytest's node id from a JUnit class name (``tests.test_x.TestY`` ->
    ``tests/test_x.py::TestY``)."""
    parts = classname.split(".")
    module = max(i for i, part in enumerate(parts) if part.startswith("test_") or i == 0)
    return "::".join(["/".join(parts[:module + 1]) + ".py", *parts[module + 1:], name])


def load_expected(path: Path = EXPECTED) -> dict[str, str]:
    """The reviewed differences: test id -> reason (``id -- reason`` lines, ``#`` comments)."""
    expected: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            test, _, reason = line.partition(" -- ")
            expected[test.strip()] = reason.strip()
    return expected


def differences(stock: dict[str, str], pack: dict[str, str]) -> list[str]:
    """Tests that pass stock and do not pass with the pack."""
    return sorted(t for t, outcome in stock.items()
                  if outcome == "passed" and pack.get(t, "missing") != "passed")


def record_path(version: str) -> Path:
    return HERE / f"stock-{version}.json"


def record(suite: Path, workdir: Path, version: str) -> dict[str, str]:
    """Run the suite stock and record its outcomes for ``version``."""
    workdir.mkdir(parents=True, exist_ok=True)
    stock = run(suite, False, workdir / "stock.xml")
    record_path(version).write_text(json.dumps({"files": FILES, "outcomes": stock}, indent=0,
                                               sort_keys=True) + "\n")
    return stock


def recorded(version: str) -> dict[str, str] | None:
    """The recorded stock outcomes of ``version`` (None: none, or of another file list)."""
    path = record_path(version)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return data["outcomes"] if data.get("files") == FILES else None


def compare(workdir: Path, suite: Path | None = None) -> tuple[list[str], list[str], dict]:
    """Run both (stock from its record if there is one); (unexpected differences, reviewed
    ones seen, counts)."""
    suite = suite or fetch_tests(scrapy_version())
    workdir.mkdir(parents=True, exist_ok=True)
    stock = recorded(scrapy_version())
    from_record = stock is not None
    if stock is None:
        stock = run(suite, False, workdir / "stock.xml")
    pack = run(suite, True, workdir / "pack.xml")
    diff = differences(stock, pack)
    if diff:  # a second chance, one at a time, for what may be a timing flake
        again = run(suite, True, workdir / "pack-again.xml", tests=diff, workers=1)
        diff = [t for t in diff if again.get(t) != "passed"]
    if diff and from_record:  # does it pass stock here and now?
        live = run(suite, False, workdir / "stock-again.xml", tests=diff, workers=1)
        diff = [t for t in diff if live.get(t) == "passed"]
    expected = load_expected()
    counts = {"stock_passed": sum(o == "passed" for o in stock.values()),
              "pack_passed": sum(o == "passed" for o in pack.values()),
              "tests": len(stock),
              # reviewed entries that name no test of this Scrapy (stale: to be removed)
              "stale": [t for t in expected if t not in stock]}
    return [t for t in diff if t not in expected], [t for t in diff if t in expected], counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=CACHE / "scrapy-suite-run")
    parser.add_argument("--record", action="store_true",
                        help="run the suite stock and record its outcomes")
    args = parser.parse_args(argv)
    try:
        if args.record:
            stock = record(fetch_tests(scrapy_version()), args.workdir, scrapy_version())
            print(f"recorded {len(stock)} outcomes in {record_path(scrapy_version())}")
            return 0
        unexpected, reviewed, counts = compare(args.workdir)
    except SuiteUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    expected = load_expected()
    print(f"Scrapy {scrapy_version()}: {counts['tests']} tests, {counts['stock_passed']} pass "
          f"stock, {counts['pack_passed']} with crawler_ext")
    for test in reviewed:
        print(f"  reviewed  {test} -- {expected[test]}")
    for test in unexpected:
        print(f"  UNEXPECTED {test}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
