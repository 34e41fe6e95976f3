"""Helper processes of a crawl (the dedup workers, the WARC writer), started one way.

They are ``spawn``ed -- a fresh interpreter, nothing of the crawl forked (its reactor, its
threads, its open files) -- and talk to the crawl through one pipe; they end when it closes,
so they end with the crawl, a kill -9 included.  A spawned child normally imports the
parent's main module again, and a crawl started from a script that has no
``if __name__ == "__main__":`` guard (as Scrapy's "run from a script" examples are written)
would run the whole crawl again in every helper.  The helpers' code is in crawler_ext's own
modules, so the main module is hidden from multiprocessing while a helper starts.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["start_helper"]


def start_helper(target: Callable[..., None], args: tuple, name: str) -> tuple[Any, Any]:
    """Start ``target(conn, *args)`` in a spawned process named ``name``; return this
    side's end of the pipe and the process."""
    context = multiprocessing.get_context("spawn")
    conn, child = context.Pipe()
    process = context.Process(target=target, args=(child, *args), name=name, daemon=True)
    main = sys.modules.get("__main__")
    hidden: dict[str, Any] = {key: main.__dict__[key] for key in ("__spec__", "__file__")
              if main is not None and key in main.__dict__}
    try:
        if main is not None:  # what multiprocessing reads to import it again in the child
            main.__dict__.pop("__file__", None)
            main.__spec__ = None
        process.start()
    except BaseException:
        conn.close()
        raise
    finally:
        if main is not None:
            main.__dict__.update(hidden)
        child.close()
    return conn, process
