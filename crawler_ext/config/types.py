"""The value types of the ``CRAWLER_EXT_*`` settings: each parses what a settings file, a
``-s`` option or a JSON string gives, and raises ValueError with a short reason (the
registry, :mod:`crawler_ext.config`, names the setting in its one-line error)."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["events_url", "boolean", "number", "choice", "optional_str", "strategy_name", "mapping", "processor_paths", "kind_sizes", "band_weights_value", "float_list", "dns_servers", "str_list"]


def boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean, got {value!r}")


def number(kind: type, minimum: float | None = None,
            maximum: float | None = None) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        try:
            number = kind(value)
        except (TypeError, ValueError):
            raise ValueError(f"expected a {kind.__name__}, got {value!r}") from None
        if minimum is not None and number < minimum:
            raise ValueError(f"must be >= {minimum}, got {number}")
        if maximum is not None and number > maximum:
            raise ValueError(f"must be <= {maximum}, got {number}")
        return number

    return parse


def choice(*choices: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip().lower()
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return text

    return parse


def optional_str(value: Any) -> str | None:
    if value is None or str(value).strip() == "":
        return None
    return str(value)


def events_url(value: Any) -> str | None:
    """A broker URL for the event stream: redis:// (or rediss://, unix://) or nats:// (or
    tls://); empty: off."""
    text = optional_str(value)
    if text is None:
        return None
    scheme = text.partition("://")[0].lower()
    if "://" not in text or scheme not in ("redis", "rediss", "unix", "nats", "tls"):
        raise ValueError(f"expected a redis:// (Redis Streams) or nats:// (NATS JetStream) "
                         f"URL, got {value!r}")
    return text


def strategy_name(value: Any) -> str:
    text = str(value or "").strip()
    if not text:
        raise ValueError("give a short name (default) or a dotted path")
    if "." not in text and text not in ("default", "focus"):
        raise ValueError(f"unknown strategy {text!r}: use default, focus, or a class's "
                         "dotted path")
    return text


def mapping(value: Any) -> dict[str, str]:
    """A dict, a JSON object, or ``name=value,name=value`` (the form ``-s`` gives)."""
    if value is None or value == "":
        return {}
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    text = str(value).strip()
    if text.startswith("{"):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid JSON object: {exc.msg}") from None
        return mapping(loaded)
    result: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, addr = part.partition("=")
        if not sep or not name.strip() or not addr.strip():
            raise ValueError(f"expected NAME=ADDRESS, got {part!r}")
        result[name.strip()] = addr.strip()
    return result


def processor_paths(value: Any) -> dict[str, str | None]:
    """``{"application/pdf": "dotted.path", "image/*": None}`` (or JSON, or ``mime=path``)."""
    if isinstance(value, Mapping):
        return {str(k): (None if v in (None, "", "None", "none") else str(v))
                for k, v in value.items()}
    return {k: (None if v in ("None", "none") else v) for k, v in mapping(value).items()}


def kind_sizes(value: Any) -> dict[str, int]:
    """``{"pdf": 20000000}`` (or JSON, or ``kind=bytes,...``)."""
    sizes: dict[str, int] = {}
    for kind, size in mapping(value).items():
        try:
            sizes[kind.strip().lower()] = int(size)
        except ValueError:
            raise ValueError(f"{kind}: expected a size in bytes, got {size!r}") from None
        if sizes[kind.strip().lower()] < 1:
            raise ValueError(f"{kind}: a size must be >= 1")
    return sizes


def band_weights_value(value: Any) -> list[float]:
    """Band weights, or [] for the default (halving from band to band)."""
    return float_list(value) if str(value).strip() not in ("", "[]") else []


def float_list(value: Any) -> list[float]:
    if isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = [v for v in str(value).split(",") if v.strip()]
    try:
        numbers = [float(v) for v in items]
    except ValueError:
        raise ValueError(f"expected comma-separated numbers, got {value!r}") from None
    if not numbers or any(n <= 0 for n in numbers):
        raise ValueError(f"expected positive numbers, got {value!r}")
    return numbers


def dns_servers(value: Any) -> list[tuple[str, int]]:
    """``["127.0.0.1:5353", "::1", "[::1]:53"]`` -> ``[(host, port), ...]`` (port 53 if none)."""
    result: list[tuple[str, int]] = []
    for item in str_list(value):
        text = item.strip()
        host, port = text, 53
        if text.startswith("["):
            host, _, rest = text[1:].partition("]")
            port = int(rest[1:]) if rest.startswith(":") else 53
        elif text.count(":") == 1:
            host, _, port_text = text.partition(":")
            port = int(port_text)
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address[:port]") from None
        if not 0 < port < 65536:
            raise ValueError(f"bad port in {item!r}")
        result.append((host, port))
    return result


def str_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value).strip()
    if text.startswith("["):
        return str_list(json.loads(text))
    return [v.strip() for v in text.split(",") if v.strip()]
