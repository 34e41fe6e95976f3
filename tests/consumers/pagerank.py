"""A reference consumer: PageRank over the crawl's link graph (``CRAWLER_EXT_LINKGRAPH_DIR``).

    python -m tests.consumers.pagerank GRAPH_DIR [--top 20]

Power iteration over the page graph read with ``crawler_ext.linkgraph``: every node the edges
name, an edge per distinct (source, target) pair, damping 0.85, a dangling node's rank spread
over all nodes, until the L1 change is under 1e-12.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crawler_ext.linkgraph import edges, nodes


def pagerank(graph_dir: str | Path, damping: float = 0.85,
             tolerance: float = 1e-12) -> dict[int, float]:
    out: dict[int, set[int]] = {}
    for source, target, _ in edges(graph_dir):
        out.setdefault(source, set()).add(target)
        out.setdefault(target, set())
    ids = sorted(out)
    n = len(ids)
    if not n:
        return {}
    rank = dict.fromkeys(ids, 1.0 / n)
    for _ in range(1000):
        dangling = sum(rank[v] for v in ids if not out[v])
        base = (1.0 - damping) / n + damping * dangling / n
        new = dict.fromkeys(ids, base)
        for v in ids:
            targets = out[v]
            if targets:
                share = damping * rank[v] / len(targets)
                for t in targets:
                    new[t] += share
        change = sum(abs(new[v] - rank[v]) for v in ids)
        rank = new
        if change < tolerance:
            break
    return rank


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("graph")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    rank = pagerank(args.graph)
    names = nodes(args.graph)
    for fp, score in sorted(rank.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{score:.6f}\t{names.get(fp, f'{fp:016x}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
