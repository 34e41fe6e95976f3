"""Outputs for the consumers downstream of a crawl: WET and WAT files beside the WARCs, the
link graph and PageRank over it, checked on a real crawl of the test web."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_crawl
from warcio.archiveiterator import ArchiveIterator

from crawler_ext.admission.urls import canonicalize, fingerprint
from crawler_ext.linkgraph import edges, host_edges, nodes
from tests.consumers.pagerank import pagerank


def _records(path: Path) -> list:
    with path.open("rb") as fh:
        out = []
        for record in ArchiveIterator(fh):
            out.append((record.rec_type, record.rec_headers.get_header("WARC-Record-ID"),
                        record.rec_headers.get_header("WARC-Refers-To"),
                        record.rec_headers.get_header("WARC-Target-URI"),
                        record.content_stream().read()))
        return out


def _fp(url: str) -> int:
    return fingerprint(canonicalize(url)) & ((1 << 64) - 1)


@pytest.mark.slow
def test_wet_wat_and_the_link_graph_of_a_crawl(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=6, pages=10, hazards=False)
    warcs, graph = tmp_path / "warcs", tmp_path / "graph"
    result = run_crawl("-a", f"seeds={web.url(0)}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05,
                                 "CRAWLER_EXT_WARC_DIR": warcs,
                                 "CRAWLER_EXT_WET_ENABLED": True,
                                 "CRAWLER_EXT_WAT_ENABLED": True,
                                 "CRAWLER_EXT_LINKGRAPH_DIR": graph})
    assert result.returncode == 0, result.output[-3000:]
    pages = [item for item in result.items if item.get("status") == 200]
    assert len(pages) >= 50
    # WET and WAT: valid WARC files, each record refers to a response record of the WARCs
    files = sorted(warcs.glob("*.gz"))
    assert {f.name.split(".", 1)[1] for f in files} == {"warc.gz", "warc.wet.gz", "warc.wat.gz"}
    check = subprocess.run([str(Path(sys.executable).parent / "warcio"), "check",
                            *map(str, files)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    captures = {rid: uri for f in warcs.glob("*.warc.gz") for kind, rid, _, uri, _ in
                _records(f) if kind in ("response", "revisit")}
    wet = [r for f in warcs.glob("*.warc.wet.gz") for r in _records(f) if r[0] == "conversion"]
    wat = [r for f in warcs.glob("*.warc.wat.gz") for r in _records(f) if r[0] == "metadata"]
    assert len(wet) >= len(pages) and len(wat) >= len(pages)
    assert all(captures.get(refers) == uri for _, _, refers, uri, _ in wet + wat)
    assert result.stat("warc/records/wet") == len(wet)
    # the link graph holds every link of every 200 page
    graph_edges: dict[int, set[int]] = {}
    for source, target, _ in edges(graph):
        graph_edges.setdefault(source, set()).add(target)
    for page in pages:
        links = {_fp(url) for url in page["links"]}
        assert links <= graph_edges.get(_fp(page["url"]), set()), page["url"]
    names = nodes(graph)
    assert all(fp in names for fp in graph_edges)
    assert sum(host_edges(graph).values()) == sum(1 for _ in edges(graph)) == \
        result.stat("linkgraph/edges")
    # PageRank from the graph equals PageRank solved independently from the pages' links
    rank = pagerank(graph)
    ids = sorted({_fp(p["url"]) for p in pages} |
                 {_fp(url) for p in pages for url in p["links"]})
    index = {fp: n for n, fp in enumerate(ids)}
    n, damping = len(ids), 0.85
    matrix = np.zeros((n, n))
    out_degree = np.zeros(n)
    for page in pages:
        targets = {index[_fp(url)] for url in page["links"]}
        for t in targets:
            matrix[t, index[_fp(page["url"])]] = 1.0 / len(targets)
        out_degree[index[_fp(page["url"])]] = len(targets)
    matrix[:, out_degree == 0] = 1.0 / n  # a dangling page links to every page
    solved = np.linalg.solve(np.eye(n) - damping * matrix, np.full(n, (1 - damping) / n))
    assert set(rank) == set(ids)
    assert max(abs(rank[fp] - solved[index[fp]]) for fp in ids) < 1e-6
