"""Long fuzzing runs of every target of ``tests/fuzz`` (``FUZZ_MINUTES`` each, 10 by default;
1 with --quick), from the seed corpus; prints executions, coverage and crashes per target.  A
crash's input is left in ``FUZZ_ARTIFACTS`` (default benchmarks/fuzz-artifacts/): replay it,
fix, and add it to ``tests/fuzz/regressions/<target>/``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import ROOT, table


def bench_fuzz(quick: bool) -> None:
    from tests.fuzz.run import MODULES

    minutes = 1.0 if quick else float(os.environ.get("FUZZ_MINUTES", 10))
    artifacts = Path(os.environ.get("FUZZ_ARTIFACTS", ROOT / "benchmarks" / "fuzz-artifacts"))
    artifacts.mkdir(parents=True, exist_ok=True)
    rows = []
    for target in sorted(MODULES):
        with tempfile.TemporaryDirectory() as found:
            proc = subprocess.run(
                [sys.executable, "-m", "tests.fuzz.run", target,
                 f"-max_total_time={int(minutes * 60)}", f"-artifact_prefix={artifacts}/{target}-",
                 "-print_final_stats=1", found, str(ROOT / "tests" / "fuzz" / "corpus" / target)],
                cwd=ROOT, capture_output=True, text=True, timeout=minutes * 60 + 300,
                env=dict(os.environ, CRAWLER_EXT_PURE_PYTHON="1", PYTHONPATH=str(ROOT)))
        log = proc.stderr
        execs = re.findall(r"stat::number_of_executed_units: (\d+)", log)
        cov = re.findall(r"cov: (\d+) ft: (\d+)", log)
        crashes = sorted(p.name for p in artifacts.glob(f"{target}-*"))
        rows.append([target, int(execs[-1]) if execs else 0,
                     f"{cov[-1][0]} / {cov[-1][1]}" if cov else "-", len(crashes),
                     "exit 0" if proc.returncode == 0 else f"exit {proc.returncode}"])
        print(f"fuzz {target}: {rows[-1]}", flush=True)
    table(f"Fuzzing, {minutes:g} min a target (atheris, from the seed corpus)",
          ["target", "executions", "coverage (edges / features)", "crashes", "result"], rows)
