"""The control API's requests, answered: authentication, routing, validation, the
operations.  No web stack here: ``server.py`` hands each request in and writes the
:class:`Reply` out; the crawl is reached through :class:`CrawlPort`.

Every answer is JSON (the live page at ``/`` aside).  A refused request is a 4xx with a
one-line ``{"error": ...}``, changes nothing and is counted (``control/refused/<reason>``).
State changes only by POST (or DELETE) with the bearer token in the ``Authorization`` header:
a browser cannot send that header across sites, so no page elsewhere can act through a
user's browser.
"""

from __future__ import annotations

import hmac
import json
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from jsonschema import Draft202012Validator

from crawler_ext.control.openapi import BODIES, KEY_PATTERN, OPERATIONS, document

__all__ = ["MAX_BODY", "ControlAPI", "CrawlPort", "Reply"]

MAX_BODY = 64 * 1024  # bytes of a request body, at most

_KEY = re.compile(KEY_PATTERN)
#: key operations -> the action they take (its fields from the body)
_KEY_ACTIONS = {"key_delay": "delay", "key_block": "block", "key_unblock": "unblock",
                "key_pause": "pause_key", "key_resume": "resume_key",
                "key_delete_queue": "delete_queue", "key_budget": "budget",
                "key_robots_refresh": "robots_refresh"}


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"


class CrawlPort(Protocol):
    """What the API asks of the running crawl."""

    def status(self) -> dict[str, Any]: ...
    def keys(self, limit: int, slowest: bool,
             contains: str) -> Awaitable[list[dict[str, Any]]]: ...
    def key(self, key: str) -> Awaitable[dict[str, Any] | None]:
        """The key's report, None if the crawl does not know it (may read a server)."""
    def errors(self) -> list[dict[str, Any]]: ...
    def series(self) -> list[dict[str, Any]]: ...
    def act(self, action: dict[str, Any]) -> None: ...
    def seeds(self, urls: list[str]) -> dict[str, Any]: ...
    def stop(self) -> None: ...
    def checkpoint(self) -> str | None:
        """None when done, else why not (no JOBDIR)."""


class ControlAPI:
    def __init__(self, port: CrawlPort, token: str, version: str, page: bytes,
                 inc: Callable[[str], None]) -> None:
        self.port = port
        self._token = token.encode()
        self._page = page
        self._inc = inc
        self._openapi = json.dumps(document(version)).encode()
        self._validators = {name: Draft202012Validator(schema)
                            for name, schema in BODIES.items() if schema is not None}
        # (method, path pattern) -> (operation id, body schema name)
        self._routes = [(method.upper(), _pattern(path), op_id, body)
                        for method, path, op_id, body in
                        ((m, p, o, b) for m, p, o, _, b, _ in OPERATIONS)]

    async def handle(self, method: str, path: str, query: dict[str, list[str]],
                     authorization: str | None, content_type: str | None,
                     body: bytes | None) -> Reply:
        """``body`` None: larger than ``MAX_BODY`` (not read)."""
        self._inc("control/requests")
        if method == "GET" and path == "/":
            return Reply(200, self._page, "text/html; charset=utf-8")
        if not self._authorised(authorization):
            return self._refuse(401, "unauthorised", "a valid 'Authorization: Bearer <token>' "
                                "header is required")
        found = [(route_method, op_id, schema, match.groupdict())
                 for route_method, pattern, op_id, schema in self._routes
                 if (match := pattern.fullmatch(path))]
        if not found:
            return self._refuse(404, "not_found", f"no such path: {path[:100]}")
        chosen = [item for item in found if item[0] == method]
        if not chosen:
            allowed = ", ".join(sorted({item[0] for item in found}))
            return self._refuse(405, "method", f"{method} not allowed here (use {allowed})")
        _, op_id, schema, params = chosen[0]
        key = params.get("key")
        if key is not None and not _KEY.fullmatch(key):
            return self._refuse(400, "bad_key", "not a politeness key")
        if body is None:
            return self._refuse(413, "too_large", f"the body is over {MAX_BODY} bytes")
        data: dict[str, Any] = {}
        if schema is not None:
            if (content_type or "").split(";")[0].strip().lower() != "application/json":
                return self._refuse(415, "not_json", "the body must be application/json")
            try:
                data = json.loads(body)
            except ValueError:
                return self._refuse(400, "malformed", "the body is not valid JSON")
            error = next(iter(self._validators[schema].iter_errors(data)), None)
            if error is not None:
                where = "/".join(map(str, error.absolute_path)) or "body"
                return self._refuse(400, "invalid", f"{where}: {error.message}"[:300])
            if any(isinstance(v, float) and not math.isfinite(v) for v in data.values()):
                return self._refuse(400, "invalid", "numbers must be finite")
        return await self._operation(op_id, key, query, data)

    # -- operations --------------------------------------------------------------------------
    async def _operation(self, op_id: str, key: str | None, query: dict[str, list[str]],
                         data: dict[str, Any]) -> Reply:
        port = self.port
        if op_id == "openapi":
            return Reply(200, self._openapi)
        if op_id == "status":
            return _json(port.status())
        if op_id == "keys":
            try:
                limit = int(query.get("limit", ["50"])[0])
            except ValueError:
                limit = 0
            sort = query.get("sort", ["busiest"])[0]
            if not 1 <= limit <= 10_000 or sort not in ("busiest", "slowest"):
                return self._refuse(400, "invalid", "limit is 1 to 10000, sort busiest or "
                                    "slowest")
            contains = query.get("filter", [""])[0][:253]
            return _json({"keys": await port.keys(limit, sort == "slowest", contains)})
        if op_id == "errors":
            return _json({"errors": port.errors()})
        if op_id == "series":
            return _json({"samples": port.series()})
        if op_id in ("pause", "resume"):
            port.act({"op": op_id})
            return _json({"ok": True})
        if op_id == "stop":
            port.stop()
            return _json({"ok": True})
        if op_id == "checkpoint":
            why = port.checkpoint()
            if why is not None:
                return self._refuse(409, "no_checkpoint", why)
            return _json({"ok": True})
        if op_id == "seeds":
            return _json({"ok": True, **port.seeds(data["urls"])})
        assert key is not None
        report = await port.key(key)
        if op_id == "key":
            if report is None:
                return self._refuse(404, "unknown_key", f"the crawl does not know {key!r}")
            return _json(report)
        if report is None:
            return self._refuse(404, "unknown_key", f"the crawl does not know {key!r}")
        action = {"op": _KEY_ACTIONS[op_id], "key": key, **data}
        if action["op"] == "block":
            action.setdefault("until", None)
        port.act(action)
        return _json({"ok": True})

    # -- internals ---------------------------------------------------------------------------
    def _authorised(self, header: str | None) -> bool:
        if not header or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[7:].strip().encode(), self._token)

    def _refuse(self, status: int, reason: str, message: str) -> Reply:
        self._inc(f"control/refused/{reason}")
        return Reply(status, json.dumps({"error": message}).encode())


def _json(data: Any) -> Reply:
    return Reply(200, json.dumps(data, default=str).encode())


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile(re.escape(path).replace(re.escape("{key}"), "(?P<key>[^/]+)"))
