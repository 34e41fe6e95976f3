"""The control API's OpenAPI 3.1 document: the one description of its paths, bodies and
answers; the API validates request bodies against the schemas here (``jsonschema``), and
``GET /openapi.json`` serves it."""

from __future__ import annotations

from typing import Any

__all__ = ["BODIES", "KEY_PATTERN", "document"]

#: a politeness key as the frontier names it: a host name, or ``ip:<address>`` (no ``%``:
#: a client's HTTP library leaves ``%XX`` in a path as it is, so a key with one could not be
#: named reliably; only an IPv6 zone index has one, and link-local addresses are never fetched)
KEY_PATTERN = r"^(ip:)?[A-Za-z0-9._\-:\[\]]{1,253}$"

_ERROR = {"type": "object", "required": ["error"],
          "properties": {"error": {"type": "string"}}}
_DONE = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}},
         "additionalProperties": True}
_NUM = {"type": ["number", "null"]}
_KEY_ROW = {"type": "object", "required": ["key"], "additionalProperties": True,
            "properties": {"key": {"type": "string"}, "requests": {"type": "integer"},
                           "responses": {"type": "integer"}, "backoffs": {"type": "integer"},
                           "delay": _NUM, "max_delay": _NUM, "min_gap": _NUM,
                           "min_slack": _NUM}}
_KEY = {"type": "object", "required": ["key"], "additionalProperties": True,
        "properties": {"key": {"type": "string"}, "queued": {"type": "integer"},
                       "in_flight": {"type": "integer"}, "delay": _NUM,
                       "delay_rule": {"type": "string"}, "backoff": _NUM,
                       "crawl_delay": _NUM, "learned_floor": _NUM, "next_allowed": _NUM,
                       "blocked_until": {"type": ["number", "string", "null"]},
                       "paused": {"type": "boolean"},
                       "budget": {"type": ["integer", "null"]},
                       "robots": {"type": "object"},
                       "queue_head": {"type": "array", "items": {"type": "string"}}}}
_STATUS = {"type": "object", "required": ["state", "pages", "pages_per_second", "queued",
                                          "in_flight"], "additionalProperties": True,
           "properties": {"state": {"enum": ["running", "paused", "closing"]},
                          "pages": {"type": "integer"}, "items": {"type": "integer"},
                          "pages_per_second": {"type": "number"},
                          "queued": {"type": "integer"},
                          "bands": {"type": ["array", "null"], "items": {"type": "integer"}},
                          "delayed": {"type": "integer"}, "active_keys": {"type": "integer"},
                          "parked_keys": {"type": "integer"}, "in_flight": {"type": "integer"},
                          "failing_keys": {"type": "integer"},
                          "errors": {"type": "object"}, "dedup": {"type": "object"},
                          "admission": {"type": "object"}, "warc_bytes": {"type": "integer"},
                          "focus": {"type": "object"}}}

#: request bodies by operation (None: no body)
BODIES: dict[str, dict[str, Any] | None] = {
    "seeds": {"type": "object", "required": ["urls"], "additionalProperties": False,
              "properties": {"urls": {"type": "array", "minItems": 1, "maxItems": 1000,
                                      "items": {"type": "string", "minLength": 8,
                                                "maxLength": 2048,
                                                "pattern": "^https?://[^\\s]+$"}}}},
    "delay": {"type": "object", "required": ["seconds"], "additionalProperties": False,
              "properties": {"seconds": {"type": "number", "minimum": 0,
                                         "maximum": 86400}}},
    "block": {"type": "object", "additionalProperties": False,
              "properties": {"until": {"type": ["number", "null"], "minimum": 0,
                                       "maximum": 1e11}}},
    "budget": {"type": "object", "required": ["pages"], "additionalProperties": False,
               "properties": {"pages": {"type": "integer", "minimum": 0,
                                        "maximum": 1_000_000_000}}},
}

#: (method, path, operation id, summary, request body, answer schema)
OPERATIONS: list[tuple[str, str, str, str, str | None, dict[str, Any]]] = [
    ("get", "/openapi.json", "openapi", "This document", None, {"type": "object"}),
    ("get", "/status", "status", "The crawl's figures", None, _STATUS),
    ("get", "/keys", "keys", "Politeness keys, busiest first (or slowest)", None,
     {"type": "object", "required": ["keys"],
      "properties": {"keys": {"type": "array", "items": _KEY_ROW}}}),
    ("get", "/keys/{key}", "key", "One key's state: delay and its rule, backoff, queue, "
     "robots.txt, next allowed time", None, _KEY),
    ("get", "/errors", "errors", "Recent errors", None,
     {"type": "object", "required": ["errors"],
      "properties": {"errors": {"type": "array", "items": {"type": "object"}}}}),
    ("get", "/series", "series", "The time series the live page plots", None,
     {"type": "object", "required": ["samples"],
      "properties": {"samples": {"type": "array", "items": {"type": "object"}}}}),
    ("post", "/pause", "pause", "Pause the crawl (requests in flight finish)", None, _DONE),
    ("post", "/resume", "resume", "Resume the crawl", None, _DONE),
    ("post", "/stop", "stop", "Stop gracefully (finish reason operator_stop)", None, _DONE),
    ("post", "/checkpoint", "checkpoint", "Commit the frontier and snapshot the seen set "
     "now (needs JOBDIR)", None, _DONE),
    ("post", "/seeds", "seeds", "Add seed URLs", "seeds", _DONE),
    ("post", "/keys/{key}/delay", "key_delay", "Set the key's delay floor (0: none)",
     "delay", _DONE),
    ("post", "/keys/{key}/block", "key_block", "Block the key until a time (null: for good)",
     "block", _DONE),
    ("post", "/keys/{key}/unblock", "key_unblock", "Lift a block", None, _DONE),
    ("post", "/keys/{key}/pause", "key_pause", "Pause the key", None, _DONE),
    ("post", "/keys/{key}/resume", "key_resume", "Resume the key", None, _DONE),
    ("delete", "/keys/{key}/queue", "key_delete_queue", "Drop the key's queued URLs", None,
     _DONE),
    ("post", "/keys/{key}/budget", "key_budget", "Set the key's page budget", "budget",
     _DONE),
    ("post", "/keys/{key}/robots/refresh", "key_robots_refresh", "Fetch the key's "
     "robots.txt again before its next URL", None, _DONE),
]


def document(version: str) -> dict[str, Any]:
    paths: dict[str, Any] = {"/": {"get": {
        "operationId": "page", "summary": "The live page (no data: it asks the API with the "
        "token)", "security": [],
        "responses": {"200": {"description": "HTML", "content": {"text/html": {
            "schema": {"type": "string"}}}}}}}}
    for method, path, op_id, summary, body, answer in OPERATIONS:
        operation: dict[str, Any] = {
            "operationId": op_id, "summary": summary,
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {
                    "schema": answer}}},
                "400": _error("Bad request"), "401": _error("No or wrong token"),
                "404": _error("Unknown key"), "405": _error("Wrong method"),
                "409": _error("Not possible now"), "413": _error("Body too large"),
                "415": _error("Not JSON")}}
        if "{key}" in path:
            operation["parameters"] = [{"name": "key", "in": "path", "required": True,
                                        "schema": {"type": "string",
                                                   "pattern": KEY_PATTERN}}]
        if op_id == "keys":
            operation["parameters"] = [
                {"name": "limit", "in": "query", "required": False,
                 "schema": {"type": "integer", "minimum": 1, "maximum": 10000}},
                {"name": "sort", "in": "query", "required": False,
                 "schema": {"enum": ["busiest", "slowest"]}},
                {"name": "filter", "in": "query", "required": False,
                 "schema": {"type": "string", "maxLength": 253}}]
        if body is not None:
            operation["requestBody"] = {"required": True, "content": {"application/json": {
                "schema": BODIES[body]}}}
        paths.setdefault(path, {})[method] = operation
    return {"openapi": "3.1.0",
            "info": {"title": "crawler_ext control API", "version": version},
            "components": {"securitySchemes": {"bearer": {"type": "http",
                                                          "scheme": "bearer"}}},
            "security": [{"bearer": []}], "paths": paths}


def _error(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": _ERROR}}}
