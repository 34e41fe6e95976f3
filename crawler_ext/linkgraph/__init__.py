"""The crawl's link graph for PageRank-style jobs: page and host edges written as the crawl
goes (``extension``), in gzip TSV files with a reader (``files``).  See docs/outputs.md."""

from crawler_ext.linkgraph.extension import LinkGraphExtension
from crawler_ext.linkgraph.files import edges, host_edges, nodes

__all__ = ["LinkGraphExtension", "edges", "host_edges", "nodes"]
