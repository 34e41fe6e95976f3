"""The oracle of the focus benchmark: a spider middleware that knows every page's label
(``FOCUS_ORACLE_LABELS``, the topical web's ``web.json``) and gives each link the score
its target deserves.  Benchmark-only: it reads the answers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request


class OracleMiddleware:
    def __init__(self) -> None:
        with open(os.environ["FOCUS_ORACLE_LABELS"], encoding="utf-8") as fh:
            self.labels = json.load(fh)["labels"]

    def process_spider_output(self, response: Any, result: Iterable[Any],
                              spider: Any = None) -> Iterator[Any]:
        for out in result:
            if isinstance(out, Request):
                parts = urlsplit(out.url)
                out.priority = 100 if self.labels.get(f"{parts.hostname}{parts.path}") else 0
            yield out

    async def process_spider_output_async(self, response: Any, result: Any,
                                          spider: Any = None) -> Any:
        async for out in result:
            for item in self.process_spider_output(response, [out], spider):
                yield item
