"""URL canonicalisation and 64-bit URL fingerprints.

``canonicalize`` applies the *safe* RFC 3986 section 6 normalisations everywhere (case of scheme
and host, IDN to punycode, default port, fragment, dot segments, percent-encoding, empty path)
and, each switchable, the heuristic ones: strip tracking parameters (on by default), strip
session parameters, sort the query, and parameters learned per host to be irrelevant.
Path case, trailing slashes, ``www.`` and repeated query keys are kept.

``fingerprint`` maps a canonical URL to 64 bits: the host's hash in the high 20 bits and the
whole URL's in the low 44, so one host's URLs sort together.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Mapping
from urllib.parse import urljoin

__all__ = [
    "InvalidURL", "canonicalize", "fingerprint", "fingerprint_hex", "url_fingerprint", "host_of",
    "TRACKING_PARAMS", "SESSION_PARAMS",
]

MAX_INPUT_LENGTH = 16_384
HOST_BITS = 20
REST_BITS = 64 - HOST_BITS

TRACKING_PARAMS = frozenset({"fbclid", "gclid", "dclid", "msclkid", "yclid", "mc_cid", "mc_eid",
                             "_ga", "igshid"})
TRACKING_PREFIXES = ("utm_",)
SESSION_PARAMS = frozenset({"sessionid", "session_id", "sid", "phpsessid", "jsessionid",
                            "aspsessionid", "cfid", "cftoken"})
DEFAULT_PORTS = {"http": 80, "https": 443}

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# characters allowed literally in a path or query (RFC 3986 pchar plus / and ?)
_ALLOWED = _UNRESERVED | frozenset("!$&'()*+,;=:@/?%")
_HEX = frozenset("0123456789abcdefABCDEF")
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_HOST_RE = re.compile(r"^[a-z0-9._~!$&'()*+,;=%-]+$")
#: a URL already in canonical form (most links on real pages): lowercase http(s), a host name
#: of lowercase labels without a port, a path of unreserved characters and "/" with no dot
#: segment, no query, no fragment.  Such a URL is its own canonical form (the empty path
#: becomes "/"), so it skips the parsing below; tests check both paths agree.
_CANONICAL_RE = re.compile(
    r"https?://[a-z0-9-]+(?:\.[a-z0-9-]+)*[a-z](?:/(?!\.)[A-Za-z0-9_~-]*(?:\.[A-Za-z0-9_~-]*)*)*\Z")


class InvalidURL(ValueError):
    """A URL that cannot be admitted; ``reason`` is a short stats-key-safe word."""

    def __init__(self, reason: str, url: str = "") -> None:
        super().__init__(f"{reason}: {url[:200]!r}")
        self.reason = reason


def _normalize_percent(text: str, url: str, keep: frozenset[str] = frozenset()) -> str:
    """Decode %XX of unreserved characters, uppercase the hex of the rest, encode the rest of
    what may not appear literally (spaces, non-ASCII as UTF-8)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "%":
            if i + 2 >= n or text[i + 1] not in _HEX or text[i + 2] not in _HEX:
                raise InvalidURL("bad_percent_encoding", url)
            decoded = chr(int(text[i + 1:i + 3], 16))
            if decoded in _UNRESERVED and decoded not in keep:
                out.append(decoded)
            else:
                out.append("%" + text[i + 1:i + 3].upper())
            i += 3
            continue
        if ch in _ALLOWED:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
        i += 1
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    if "." not in path:
        return path
    out: list[str] = []
    segments = path.split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    result = "/".join(out)
    return result if result.startswith("/") else "/" + result


def _host(netloc_host: str, url: str) -> str:
    host = netloc_host.lower().rstrip(".")
    if not host:
        raise InvalidURL("no_host", url)
    if host.startswith("["):
        if not host.endswith("]"):
            raise InvalidURL("bad_host", url)
        return host
    if "%" in host:
        # (a trailing dot written as %2e goes too: the canonical form is a fixed point)
        host = _normalize_percent(host, url).lower().rstrip(".")
        if not host:
            raise InvalidURL("no_host", url)
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise InvalidURL("bad_idn", url) from None
    if not _HOST_RE.match(host) or ".." in host:
        raise InvalidURL("bad_host", url)
    return host


def _split_query(query: str) -> list[str]:
    return [p for p in query.split("&") if p]


def _param_name(part: str) -> str:
    return part.split("=", 1)[0].lower()


def canonicalize(
    url: str,
    base: str | None = None,
    *,
    strip_tracking: bool = True,
    strip_session: bool = False,
    sort_query: bool = False,
    drop_params: Mapping[str, Collection[str]] | None = None,
) -> str:
    """The canonical form of ``url`` (resolved against ``base``); raises :class:`InvalidURL`.

    ``drop_params`` maps a host (with its port, if not the default) to parameter names to drop.
    """
    if base is None and _CANONICAL_RE.match(url) and len(url) <= MAX_INPUT_LENGTH:
        return url if url.find("/", url.find("//") + 2) > 0 else url + "/"
    return _canonicalize(url, base, strip_tracking=strip_tracking, strip_session=strip_session,
                         sort_query=sort_query, drop_params=drop_params)


def _canonicalize(
    url: str,
    base: str | None,
    *,
    strip_tracking: bool,
    strip_session: bool,
    sort_query: bool,
    drop_params: Mapping[str, Collection[str]] | None,
) -> str:
    """:func:`canonicalize` without its shortcut for URLs already canonical."""
    if len(url) > MAX_INPUT_LENGTH:
        raise InvalidURL("too_long", url)
    url = url.strip()
    if base is not None:
        url = urljoin(base, url)
    match = _SCHEME_RE.match(url)
    if not match:
        raise InvalidURL("relative", url)
    scheme = match.group(1).lower()
    if scheme not in DEFAULT_PORTS:
        raise InvalidURL("scheme", url)
    rest = url[match.end():]
    if not rest.startswith("//"):
        raise InvalidURL("no_host", url)
    rest = rest[2:]
    rest, _, _fragment = rest.partition("#")
    split = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, rest = rest[:split], rest[split:]
    authority = authority.rpartition("@")[2]  # userinfo is dropped
    host_part, port = authority, None
    if authority.startswith("["):
        end = authority.find("]")
        host_part, tail = authority[:end + 1], authority[end + 1:]
        if tail:
            if not tail.startswith(":"):
                raise InvalidURL("bad_host", url)
            port = tail[1:]
    elif ":" in authority:
        host_part, _, port = authority.rpartition(":")
    host = _host(host_part, url)
    if port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidURL("bad_port", url)
        port_num = int(port)
        netloc = host if port_num == DEFAULT_PORTS[scheme] else f"{host}:{port_num}"
    else:
        netloc = host
    path, qmark, query = rest.partition("?")
    path = _normalize_percent(path, url)
    if strip_session and ";" in path:  # before the dot segments go (idempotent: fuzzing)
        path = re.sub(r";(jsessionid|phpsessid|sid|sessionid)=[^/?]*", "", path, flags=re.I)
    path = _remove_dot_segments(path) or "/"
    if qmark:
        # keep &, = and + encoded as they were: they separate parameters
        query = _normalize_percent(query, url, keep=frozenset("&=+"))
        parts = _split_query(query)
        dropped = drop_params.get(netloc, ()) if drop_params else ()
        if strip_tracking or strip_session or dropped:
            kept = []
            for part in parts:
                name = _param_name(part)
                if strip_tracking and (name in TRACKING_PARAMS or name.startswith(TRACKING_PREFIXES)):
                    continue
                if strip_session and name in SESSION_PARAMS:
                    continue
                if name in dropped:
                    continue
                kept.append(part)
            parts = kept
        if sort_query:
            parts.sort()
        query = "&".join(parts)
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def host_of(canonical_url: str) -> str:
    """Host (with port, if any) of a canonical URL, without parsing it again."""
    start = canonical_url.find("//") + 2
    end = canonical_url.find("/", start)
    return canonical_url[start:end if end >= 0 else None]


def _hash(data: str, bits: int) -> int:
    digest = hashlib.blake2b(data.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> (64 - bits)


_HOST_HIGH_BITS: dict[str, int] = {}  # scheme + host + port -> its hash, in the high bits


def fingerprint(canonical_url: str) -> int:
    """64-bit fingerprint of a canonical URL: host hash (high bits) | URL hash (low bits)."""
    start = canonical_url.find("//") + 2
    end = canonical_url.find("/", start)
    if end < 0:
        end = len(canonical_url)
    host = canonical_url[:end]  # scheme + host + port
    high = _HOST_HIGH_BITS.get(host)
    if high is None:  # (a host's links come in runs: its hash is remembered, bounded)
        if len(_HOST_HIGH_BITS) >= 100_000:
            _HOST_HIGH_BITS.clear()
        high = _HOST_HIGH_BITS[host] = _hash(host, HOST_BITS) << REST_BITS
    # the low bits hash the whole URL, so two hosts whose 20-bit hashes collide still differ
    return high | _hash(canonical_url, REST_BITS)


def fingerprint_hex(canonical_url: str) -> str:
    """The fingerprint as 16 hex digits (as the link graph and the event stream write it)."""
    return f"{fingerprint(canonical_url) & 0xFFFFFFFFFFFFFFFF:016x}"


def url_fingerprint(url: str) -> int:
    """Fingerprint of any URL under the default canonicalisation (0 if it is invalid)."""
    try:
        return fingerprint(canonicalize(url))
    except InvalidURL:
        return 0
