"""The nemesis campaigns of ``tests/test_nemesis.py`` run again and again (``NEMESIS_RUNS`` of
each, 10 by default; 2 with --quick): the single Redis and the 3+3 Redis Cluster, two workers
on hosts of their own.  A rare fault (a race between threads, a failover at the wrong moment)
shows in one run of several, so the figure is the count over many runs: runs passed, admitted
pages lost, extra fetches and their counted causes, politeness violations.  Needs root (the
campaigns make network namespaces); each run takes a minute or two."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

from benchmarks.harness import ROOT, table

CAMPAIGNS = {"single Redis": "test_a_nemesis_against_two_workers_and_one_redis",
             "Redis Cluster 3+3": "test_a_nemesis_against_two_workers_and_a_redis_cluster"}
_FIGURES = re.compile(r"fetches (\d+), URLs \d+, admitted pages \d+ \((\d+) of them not "
                      r"fetched\), fetched more than once \d+ \((\d+) extra fetches\).*?"
                      r"politeness violations (\d+)")


def bench_nemesis(quick: bool) -> None:
    runs = 2 if quick else int(os.environ.get("NEMESIS_RUNS", "10"))
    rows = []
    for name, test in CAMPAIGNS.items():
        passed, lost, extra, violations, fetches, failures = 0, 0, 0, 0, 0, []
        for n in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                proc = subprocess.run(
                    [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                     "-n", "0", f"tests/test_nemesis.py::{test}", f"--basetemp={tmp}"], cwd=ROOT, capture_output=True, text=True,
                    timeout=600, check=False)
            out = proc.stdout
            if "skipped" in out and "passed" not in out:
                print(f"nemesis {name}: skipped (needs root and redis-server)", flush=True)
                break
            figures = _FIGURES.search(out)
            if figures:
                fetched, missing, more, bad = map(int, figures.groups())
                fetches += fetched
                lost += missing
                extra += more
                violations += bad
            if proc.returncode == 0:
                passed += 1
            else:
                failures.append(next((line for line in out.splitlines()
                                      if line.startswith("E ")), "exit "
                                     f"{proc.returncode}")[:160])
            print(f"nemesis {name}, run {n + 1}: "
                  f"{'passed' if proc.returncode == 0 else 'FAILED'}", flush=True)
        rows.append([name, f"{passed} / {runs}", lost, fetches, extra, violations,
                     "; ".join(failures[:2]) or "-"])
    table(f"Nemesis campaigns, {runs} runs each (seed 41, two workers)",
          ["campaign", "runs passed", "admitted pages lost", "fetches",
           "extra fetches (each explained)", "politeness violations", "first failures"], rows)
