"""Canonicalisation (RFC 3986 section 6) and fingerprints: what merges and what must not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler_ext.admission.urls import InvalidURL, canonicalize, fingerprint, url_fingerprint


@pytest.mark.parametrize("variant", [
    "http://example.com/a/b.html",
    "HTTP://EXAMPLE.COM/a/b.html",
    "http://example.com:80/a/b.html",
    "http://example.com/a/./b.html",
    "http://example.com/x/../a/b.html",
    "http://example.com/%61/b.html",
    "http://example.com/a/b.html#section",
    "http://example.com/a/b.html?utm_source=feed&utm_medium=rss",
    "http://example.com./a/b.html",
    "http://user@example.com/a/b.html",
])
def test_safe_spellings_merge(variant: str) -> None:
    assert canonicalize(variant) == "http://example.com/a/b.html"


@pytest.mark.parametrize("a,b", [
    ("http://example.com/Path", "http://example.com/path"),
    ("http://example.com/dir/", "http://example.com/dir"),
    ("http://www.example.com/", "http://example.com/"),
    ("http://example.com/?a=1&a=2", "http://example.com/?a=2&a=1"),
    ("http://example.com/?a=1&b=2", "http://example.com/?b=2&a=1"),
    ("http://example.com/%2F", "http://example.com//"),
    ("https://example.com/", "http://example.com/"),
])
def test_distinct_resources_do_not_merge(a: str, b: str) -> None:
    assert canonicalize(a) != canonicalize(b)
    assert url_fingerprint(a) != url_fingerprint(b)


def test_percent_encoding_is_normalised() -> None:
    assert canonicalize("http://e.com/%7euser/%2fx y") == "http://e.com/~user/%2Fx%20y"
    assert canonicalize("http://e.com/caf\u00e9") == "http://e.com/caf%C3%A9"


def test_idn_host_becomes_punycode() -> None:
    assert canonicalize("http://B\u00fccher.de/") == "http://xn--bcher-kva.de/"


def test_empty_path_and_relative_resolution() -> None:
    assert canonicalize("https://e.com") == "https://e.com/"
    assert canonicalize("https://e.com:443") == "https://e.com/"
    assert canonicalize("https://e.com:8443") == "https://e.com:8443/"
    assert canonicalize("../c/./d?x=1", base="http://e.com/a/b/") == "http://e.com/a/c/d?x=1"


def test_heuristics_are_switchable() -> None:
    url = "http://e.com/p?sid=9&b=2&a=1&utm_campaign=x"
    assert canonicalize(url) == "http://e.com/p?sid=9&b=2&a=1"
    assert canonicalize(url, strip_tracking=False) == url
    assert canonicalize(url, strip_session=True, sort_query=True) == "http://e.com/p?a=1&b=2"
    assert canonicalize(url, drop_params={"e.com": {"b"}}) == "http://e.com/p?sid=9&a=1"
    assert canonicalize("http://e.com/p;jsessionid=AB12/x", strip_session=True) == "http://e.com/p/x"


@pytest.mark.parametrize("url,reason", [
    ("http://e.com/%zz", "bad_percent_encoding"),
    ("http://e.com/%4", "bad_percent_encoding"),
    ("http://e.com:99999/", "bad_port"),
    ("http://e.com:8x/", "bad_port"),
    ("ftp://e.com/", "scheme"),
    ("javascript:alert(1)", "scheme"),
    ("/relative/only", "relative"),
    ("http:///path", "no_host"),
    ("http://e.com/" + "a" * 100_000, "too_long"),
])
def test_malformed_urls_are_rejected_with_a_reason(url: str, reason: str) -> None:
    with pytest.raises(InvalidURL) as info:
        canonicalize(url)
    assert info.value.reason == reason


def test_fingerprint_groups_a_host_in_its_high_bits() -> None:
    a = fingerprint("http://e.com/a")
    b = fingerprint("http://e.com/zzz?q=1")
    c = fingerprint("http://other.org/a")
    assert a >> 44 == b >> 44
    assert a >> 44 != c >> 44
    assert 0 <= a < 1 << 64 and a != b


def test_fingerprints_of_many_hosts_home_pages_are_distinct() -> None:
    # 20-bit host hashes of 5,000 hosts collide; the low bits must still tell them apart
    fps = {fingerprint(f"http://h{i:04d}.web.test:8080/") for i in range(5000)}
    assert len(fps) == 5000


_hosts = st.sampled_from(["Example.COM", "a.b.example.org", "127.0.0.1", "[::1]",
                          "xn--bcher-kva.de", "bücher.de", "user:pw@host.test", "h.test:8080",
                          "H.Test:80"])
_paths = st.text(alphabet="abc/._-%?=&#;é", max_size=20)


@given(scheme=st.sampled_from(["http", "https"]), host=_hosts, path=_paths)
def test_the_fast_politeness_key_of_a_canonical_url_is_the_parsed_one(
        scheme: str, host: str, path: str) -> None:
    """The scheduler keys admitted links by ``canonical_key`` (no second parse): it must agree
    with ``politeness_key`` on every canonical URL."""
    from crawler_ext.frontier.keys import canonical_key, politeness_key

    try:
        canonical = canonicalize(f"{scheme}://{host}/{path}")
    except InvalidURL:
        return
    assert canonical_key(canonical) == politeness_key(canonical)


_fast_hosts = st.sampled_from(["example.com", "a.b.example.org", "Example.com", "h-1.test",
                               "xn--bcher-kva.de", "1.2.3.4", "a.b", "host.test.", "a..b.com",
                               "h.test:8080", "h.test:80", "-x.com", "x-.com"])
_fast_paths = st.one_of(st.text(alphabet="aZ09/._~-", max_size=16),  # mostly the shortcut's
                        st.text(alphabet="aZ09/._~-%?#;=+:@é ", max_size=24))


@settings(max_examples=2000, deadline=None)
@given(scheme=st.sampled_from(["http", "https", "HTTP", "Https"]), host=_fast_hosts,
       path=_fast_paths, slash=st.booleans())
def test_the_shortcut_for_canonical_urls_changes_no_answer(scheme: str, host: str, path: str,
                                                           slash: bool) -> None:
    """Links already canonical skip the parse (#20's fast path); for every URL the answer must
    be the full canonicalisation's, so the seen set admits exactly the same URLs."""
    from crawler_ext.admission.urls import _canonicalize

    url = f"{scheme}://{host}" + ("/" if slash else "") + path
    options = {"strip_tracking": True, "strip_session": False, "sort_query": False,
               "drop_params": None}
    try:
        full = _canonicalize(url, None, **options)
    except InvalidURL as exc:
        with pytest.raises(InvalidURL) as raised:
            canonicalize(url)
        assert raised.value.reason == exc.reason
        return
    assert canonicalize(url) == full


def test_the_shortcut_takes_the_common_links() -> None:
    from crawler_ext.admission.urls import _CANONICAL_RE

    for url in ("https://docs.example.org/en/latest/api/index.html", "http://h0001.web.test",
                "https://example.com/a_b/c-d/~user/file.tar.gz"):
        assert _CANONICAL_RE.match(url), url
    for url in ("http://Example.com/", "http://e.com/./a", "http://e.com/a/../b",
                "http://e.com/a?utm_source=x", "http://e.com/a#f", "http://e.com:80/",
                "http://1.2.3.4/", "http://e.com/a b", "http://e.com/%7Euser"):
        assert not _CANONICAL_RE.match(url), url
