"""``python -m crawler_ext.report JOBDIR -o report.html``: the crawl report as one HTML file."""

from __future__ import annotations

import argparse
import sys

from crawler_ext.report.render import ReportError, find_series, load, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m crawler_ext.report",
        description="Draw a crawl's report (plots and tables) as one self-contained HTML file.")
    parser.add_argument("jobdir", help="the crawl's JOBDIR, or its crawl_report.jsonl")
    parser.add_argument("-o", "--output", default="report.html",
                        help="HTML file to write (default: report.html)")
    args = parser.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("error: the crawl report needs matplotlib: pip install 'crawler_ext[report]'",
              file=sys.stderr)
        return 2
    try:
        series = find_series(args.jobdir)
        runs = load(series)
        page = render(runs)
    except (ReportError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(page)
    except OSError as exc:
        print(f"error: cannot write {args.output}: {exc}", file=sys.stderr)
        return 2
    samples = sum(len(run.samples) for run in runs)
    print(f"{args.output}: {len(runs)} run(s), {samples} samples from {series}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
