"""Coverage-guided fuzzing (atheris) of URL canonicalisation and fingerprints, link extraction
from hostile HTML, robots.txt, sitemaps, the WARC recovery of a torn file and the frontier's
record codecs (``tests/fuzz/targets.py``).  Each target replays its seed corpus and the inputs
that once crashed it (``tests/fuzz/regressions/``), then fuzzes briefly from the corpus; the
long runs are ``benchmarks/run.py fuzz``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.run import MODULES
from tests.fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "tests" / "fuzz"
SECONDS = 3


def _inputs(target: str) -> list[Path]:
    return sorted(p for d in (FUZZ / "corpus" / target, FUZZ / "regressions" / target)
                  if d.is_dir() for p in d.iterdir() if not p.name.startswith("."))


@pytest.mark.parametrize("target", sorted(MODULES))
def test_every_seed_and_every_input_that_once_crashed_passes(target: str) -> None:
    inputs = _inputs(target)
    assert inputs
    for path in inputs:
        TARGETS[target](path.read_bytes())


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(MODULES))
def test_a_short_fuzzing_run_finds_nothing(target: str, tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    found = tmp_path / "found"  # new inputs go here, not into the checked-in corpus
    found.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.run", target, f"-max_total_time={SECONDS}",
         f"-artifact_prefix={tmp_path}/", "-print_final_stats=1", str(found),
         str(FUZZ / "corpus" / target)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, CRAWLER_EXT_PURE_PYTHON="1", PYTHONPATH=str(ROOT)))
    crashes = [p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-"))]
    assert proc.returncode == 0 and not crashes, (crashes, proc.stderr[-3000:])
    assert "stat::number_of_executed_units" in proc.stderr
