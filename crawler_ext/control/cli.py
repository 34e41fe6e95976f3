"""``python -m crawler_ext.control``: steer a running crawl from a script.

    python -m crawler_ext.control --jobdir JOB status          # the API of the crawl in JOB
    python -m crawler_ext.control --url http://127.0.0.1:6080/ --token T block example.org
    python -m crawler_ext.control --redis-url redis://127.0.0.1:6379 pause   # straight to Redis

Through the API (``--jobdir`` reads ``control.json`` and ``control.token`` there; or ``--url``
and ``--token``) every command works.  Straight to Redis (a distributed crawl, no worker's API
needed) the crawl-wide ``pause``/``resume``, the key actions that every worker applies from the
crawl's control log (``delay``, ``block``, ``unblock``, ``pause-key``, ``resume-key``,
``budget``), ``seeds`` and ``status``.  Prints the answer as JSON; a refused command prints
its one-line error and exits 1, bad arguments exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jsonschema import Draft202012Validator

from crawler_ext.control.openapi import BODIES

__all__ = ["main"]

#: command -> (method, path with {key}, body fields from arguments)
_API = {"status": ("GET", "/status"), "keys": ("GET", "/keys"), "key": ("GET", "/keys/{key}"),
        "errors": ("GET", "/errors"), "pause": ("POST", "/pause"),
        "resume": ("POST", "/resume"), "stop": ("POST", "/stop"),
        "checkpoint": ("POST", "/checkpoint"), "seeds": ("POST", "/seeds"),
        "delay": ("POST", "/keys/{key}/delay"), "block": ("POST", "/keys/{key}/block"),
        "unblock": ("POST", "/keys/{key}/unblock"), "pause-key": ("POST", "/keys/{key}/pause"),
        "resume-key": ("POST", "/keys/{key}/resume"),
        "delete-queue": ("DELETE", "/keys/{key}/queue"),
        "budget": ("POST", "/keys/{key}/budget"),
        "robots-refresh": ("POST", "/keys/{key}/robots/refresh")}
#: commands Redis alone can carry -> the action's op
_REDIS_OPS = {"pause": "pause", "resume": "resume", "delay": "delay", "block": "block",
              "unblock": "unblock", "pause-key": "pause_key", "resume-key": "resume_key",
              "budget": "budget"}


class Refused(Exception):
    """The crawl (or Redis) said no; the message is one line."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m crawler_ext.control",
                                     description=__doc__.split("\n\n")[0])
    where = parser.add_argument_group("the crawl")
    where.add_argument("--jobdir", help="the crawl's JOBDIR (control.json, control.token)")
    where.add_argument("--url", help="the control API's URL")
    where.add_argument("--token", default=os.environ.get("CRAWLER_EXT_CONTROL_TOKEN"),
                       help="its token (default: $CRAWLER_EXT_CONTROL_TOKEN)")
    where.add_argument("--redis-url", help="a distributed crawl's Redis, reached directly")
    where.add_argument("--cluster", action="store_true", help="--redis-url is a cluster node")
    where.add_argument("--spider", default="web", help="the spider's name (Redis key prefix)")
    where.add_argument("--key-prefix", default=None, help="CRAWLER_EXT_REDIS_KEY, if changed")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("status", "errors", "pause", "resume", "stop", "checkpoint"):
        sub.add_parser(name)
    keys = sub.add_parser("keys", help="keys, busiest first")
    keys.add_argument("--limit", type=int, default=50)
    keys.add_argument("--slowest", action="store_true")
    keys.add_argument("--filter", default="")
    sub.add_parser("seeds", help="add seed URLs").add_argument("urls", nargs="+")
    for name in ("key", "unblock", "pause-key", "resume-key", "delete-queue",
                 "robots-refresh"):
        sub.add_parser(name).add_argument("key")
    delay = sub.add_parser("delay", help="a key's delay floor (0: none)")
    delay.add_argument("key")
    delay.add_argument("seconds", type=float)
    block = sub.add_parser("block", help="block a key (for good, or --until)")
    block.add_argument("key")
    block.add_argument("--until", type=float, default=None, help="epoch seconds")
    budget = sub.add_parser("budget", help="a key's page budget")
    budget.add_argument("key")
    budget.add_argument("pages", type=int)
    return parser


def _body(args: argparse.Namespace) -> dict[str, Any] | None:
    if args.command == "seeds":
        return {"urls": args.urls}
    if args.command == "delay":
        return {"seconds": args.seconds}
    if args.command == "block":
        return {"until": args.until}
    if args.command == "budget":
        return {"pages": args.pages}
    return None


def through_api(url: str, token: str, args: argparse.Namespace) -> Any:
    method, path = _API[args.command]
    if "{key}" in path:
        path = path.replace("{key}", quote(args.key, safe=":"))
    if args.command == "keys":
        path += "?" + urlencode({"limit": args.limit, "filter": args.filter,
                                 "sort": "slowest" if args.slowest else "busiest"})
    body = _body(args)
    request = urllib.request.Request(url.rstrip("/") + path, method=method,
                                     data=None if body is None else json.dumps(body).encode())
    request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read())["error"]
        except (ValueError, KeyError):
            message = exc.reason
        raise Refused(f"{exc.code}: {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise Refused(f"the control API at {url} does not answer ({exc})") from None


def through_redis(args: argparse.Namespace) -> Any:
    from crawler_ext.distributed.cli import (
        RedisUnreachable,
        connect,
        crawl_prefix,
        crawl_status,
        read_seeds,
    )

    prefix = crawl_prefix({"CRAWLER_EXT_REDIS_KEY": args.key_prefix} if args.key_prefix
                          else {}, args.spider)
    seeds_key = f"{args.spider}:start_urls"
    try:
        client = connect(args.redis_url, args.cluster)
    except RedisUnreachable as exc:
        raise Refused(str(exc)) from None
    if args.command == "status":
        return crawl_status(client, prefix, seeds_key)
    if args.command == "seeds":
        urls = read_seeds(args.urls)
        client.rpush(seeds_key, *urls)
        return {"ok": True, "pushed": len(urls)}
    op = _REDIS_OPS.get(args.command)
    if op is None:
        raise Refused(f"{args.command} needs a worker's control API (--url or --jobdir)")
    action: dict[str, Any] = {"op": op}
    if op not in ("pause", "resume"):
        action["key"] = args.key
    action.update(_body(args) or {})
    # (the shared log's item: its writer, then the action; workers apply others' items)
    item = f"cli-{os.getpid()}".encode() + b"\x1f" + json.dumps(action).encode()
    client.rpush(f"{prefix}:control", item)
    return {"ok": True, "published": action}


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    body = _body(args)
    schema = {"seeds": "seeds", "delay": "delay", "block": "block", "budget": "budget"}
    if body is not None and args.command in schema:
        error = next(iter(Draft202012Validator(BODIES[schema[args.command]])
                          .iter_errors(body)), None)
        if error is not None:
            parser.exit(2, f"crawler_ext.control: {args.command}: {error.message}\n")
    try:
        if args.redis_url:
            answer = through_redis(args)
        else:
            url, token = args.url, args.token
            if args.jobdir:
                job = Path(args.jobdir)
                try:
                    url = url or json.loads((job / "control.json").read_text())["url"]
                    token = token or (job / "control.token").read_text().strip()
                except (OSError, ValueError, KeyError):
                    parser.exit(2, f"crawler_ext.control: no running crawl's API in {job} "
                                "(control.json, control.token)\n")
            if not url or not token:
                parser.exit(2, "crawler_ext.control: give --jobdir, or --url and --token, or "
                            "--redis-url\n")
            answer = through_api(url, token, args)
    except (Refused, ValueError) as exc:
        print(f"crawler_ext.control: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(answer, indent=1, default=str))
    return 0
