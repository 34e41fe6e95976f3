"""CDXJ index lines (the format pywb reads) and URL look-ups over them.

A line is ``<SURT urlkey> <14-digit timestamp> <JSON>`` with the JSON holding url, mime,
status, digest, length, offset and filename; files are sorted by urlkey and timestamp.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["surt", "cdxj_line", "lookup", "metadata_uri", "read_index"]


def metadata_uri(url: str) -> str:
    """Target URI of a page's metadata record: ``metadata://crawler_ext/<url>`` (Heritrix
    style).  Its SURT key differs from the page's, so replay tools never serve it in place of
    the page (``metadata://host/path`` would not do: SURT keys drop the scheme)."""
    return "metadata://crawler_ext/" + url


def surt(url: str) -> str:
    """Sort-friendly URL key: ``http://www.Example.com:8080/a?b`` -> ``com,example:8080)/a?b``."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host.startswith("www."):
        host = host[4:]
    key = ",".join(reversed(host.split(".")))
    default = {"http": 80, "https": 443}.get(parts.scheme)
    if parts.port and parts.port != default:
        key += f":{parts.port}"
    path = parts.path or "/"
    return f"{key}){path.lower()}" + (f"?{parts.query.lower()}" if parts.query else "")


def cdxj_line(url: str, timestamp: str, fields: dict) -> str:
    return f"{surt(url)} {timestamp} {json.dumps({'url': url, **fields}, sort_keys=True)}"


def read_index(path: str | Path) -> Iterator[tuple[str, str, dict]]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            key, ts, data = line.rstrip("\n").split(" ", 2)
            yield key, ts, json.loads(data)


def lookup(index_dir: str | Path, url: str,
           metadata: bool = False) -> list[tuple[str, int, int]]:
    """Every capture (response or revisit; with ``metadata``, metadata records too) of
    ``url`` in the CDXJ files of ``index_dir``: (WARC file name, offset, length)."""
    key = surt(url)
    wanted = {url, metadata_uri(url)} if metadata else {url}
    found = []
    for path in sorted(Path(index_dir).glob("*.cdxj")):
        for k, _, data in read_index(path):
            if k == key and data.get("url") in wanted:
                found.append((data["filename"], int(data["offset"]), int(data["length"])))
    return found
