"""Trap filters and learned rules of URL admission (pure logic)."""

from __future__ import annotations

from crawler_ext.admission import (
    Admission,
    AdmissionRules,
    differing_parameter,
    renamed_id,
    url_pattern,
)


def admit_chain(adm: Admission, urls: list[str], empty: bool = True) -> list[str | None]:
    """Follow a chain of links, each page fetched (``empty``: trap-like content) before its
    link is admitted, as in a crawl."""
    out, referer = [], None
    for url in urls:
        canonical = adm.check(url, referer)
        out.append(canonical)
        if canonical:
            adm.count(canonical, referer)
            adm.note_content(canonical, trap_like=empty)
            referer = canonical
    return out


def test_rejections_are_counted_by_reason() -> None:
    reasons: list[str] = []
    adm = Admission(AdmissionRules(max_url_length=60, max_path_depth=4, host_page_budget=3),
                    on_reject=reasons.append)
    assert adm.check("http://e.com/" + "x" * 80) is None
    assert adm.check("http://e.com/a/b/c/d/e") is None
    assert adm.check("http://e.com/a/a/a") is None
    assert adm.check("http://e.com/%zz") is None
    for i in range(3):
        adm.count(adm.check(f"http://e.com/{i}"))
    assert adm.check("http://e.com/other") is None
    assert reasons == ["too_long", "path_depth", "repeated_segments", "bad_percent_encoding",
                       "host_budget"]


def test_calendar_chain_is_cut_but_siblings_are_not() -> None:
    adm = Admission(AdmissionRules(max_pattern_chain=5))
    chain = admit_chain(adm, [f"http://e.com/cal/2026/{m}" for m in range(1, 30)])
    assert sum(c is not None for c in chain) == 6 and chain[6] is None
    # the same chain of distinct pages (release notes linking the next one) is followed whole
    adm = Admission(AdmissionRules(max_pattern_chain=5))
    notes = admit_chain(adm, [f"http://e.com/releases/1.{m}.html" for m in range(60)],
                        empty=False)
    assert all(notes)
    # many URLs of one pattern linked from one hub page (an archive index) are fine
    hub = "http://e.com/archive"
    adm.count(adm.check(hub))
    assert all(adm.check(f"http://e.com/post/{i}", hub) for i in range(100))


def test_a_chain_continues_on_another_admission_instance() -> None:
    # worker A admits a chain; worker B fetches its last URL (told the chain length that was
    # stored with it) and must not start the chain afresh
    a, b = Admission(AdmissionRules(max_pattern_chain=5)), Admission(AdmissionRules(
        max_pattern_chain=5))
    urls = [f"http://e.com/cal/2026/{m}" for m in range(1, 10)]
    admitted = admit_chain(a, urls[:4])
    assert all(admitted)
    for url in admitted:  # worker B learns the content evidence too (shared or its own)
        b.note_content(url, trap_like=True)
    last = admitted[-1]
    chain = a.count(last, admitted[-2])  # the length stored with the URL
    assert chain == 3
    b.restore_chain(last, chain)
    out, referer = [], last
    for url in urls[4:]:
        canonical = b.check(url, referer)
        out.append(canonical)
        if canonical:
            b.count(canonical, referer)
            referer = canonical
    assert out[:3] == [urls[4], urls[5], None]  # as on one instance: six in a row, then cut


def test_session_ids_renewed_in_the_path_end_the_chain_early() -> None:
    assert renamed_id("http://e.com/s/2c3f76/p/1.html", "http://e.com/s/a1b2c3/p/1.html")
    assert not renamed_id("http://e.com/page/3", "http://e.com/page/2")  # page numbers
    assert not renamed_id("http://e.com/s/2c3f76/p/2.html", "http://e.com/s/a1b2c3/p/1.html")
    reasons: list[str] = []
    adm = Admission(AdmissionRules(max_pattern_chain=10), on_reject=reasons.append)
    urls = ["http://e.com/p/1.html"] + [f"http://e.com/s/{i:03d}abc/p/1.html" for i in range(5)]
    # the trap's first page and one renamed copy, then nothing more
    assert [u is not None for u in admit_chain(adm, urls)] == [True, True, True, False, False,
                                                                False]
    assert reasons == ["id_chain"] * 3
    # pagination is a chain of numbers: up to max_pattern_chain while its pages are empty
    adm = Admission(AdmissionRules(max_pattern_chain=10))
    pages = admit_chain(adm, [f"http://e.com/page/{n}" for n in range(1, 20)])
    assert sum(p is not None for p in pages) == 11
    # and whole when they are distinct pages: 200 pages of "next page" links
    adm = Admission(AdmissionRules(max_pattern_chain=10))
    assert all(admit_chain(adm, [f"http://e.com/page/{n}" for n in range(1, 201)], empty=False))
    # a refused URL stays admissible from a link that is not a chain (an index page)
    adm = Admission(AdmissionRules(max_pattern_chain=3))
    chain = admit_chain(adm, [f"http://e.com/cal/{n}" for n in range(10)])
    refused = f"http://e.com/cal/{chain.index(None)}"
    adm.count(adm.check("http://e.com/index.html"))
    assert adm.check(refused, "http://e.com/index.html") == refused


def test_pattern_cap_and_patterns() -> None:
    assert url_pattern("http://e.com/s/a1b2c3/p/12.html?b=2&a=1") == "/s/#/p/#.html?a&b"
    adm = Admission(AdmissionRules(pattern_cap=10))
    for i in range(10):
        adm.count(adm.check(f"http://e.com/item?id={i}"))
    # no content evidence yet: a catalogue of distinct items is not capped
    assert adm.check("http://e.com/item?id=99") is not None
    for i in range(3):
        adm.note_content(f"http://e.com/item?id={i}", trap_like=True)
    assert adm.check("http://e.com/item?id=99") is None
    assert adm.check("http://e.com/other?id=1") is not None
    # 5,000 distinct items of one pattern, default cap 1,000: all admitted
    adm = Admission()
    for i in range(5000):
        canonical = adm.check(f"http://shop.com/item/{i}", "http://shop.com/catalogue")
        assert canonical is not None
        adm.count(canonical, "http://shop.com/catalogue")
        adm.note_content(canonical, trap_like=False)


def test_learned_parameter_is_dropped_for_that_host_only() -> None:
    assert differing_parameter("http://e.com/p?sid=1&a=2", "http://e.com/p?a=2&sid=9") == "sid"
    assert differing_parameter("http://e.com/p?a=1", "http://e.com/q?a=2") is None
    assert differing_parameter("http://e.com/p?a=1&b=1", "http://e.com/p?a=2&b=2") is None
    adm = Admission()
    assert adm.learn_drop("e.com:8080", "sid")
    assert adm.check("http://e.com:8080/p?sid=1&a=2") == "http://e.com:8080/p?a=2"
    assert adm.check("http://other.com/p?sid=1") == "http://other.com/p?sid=1"


def _reference_pattern(canonical_url: str) -> str:
    """url_pattern as first written, segment by segment (the one-pass version must equal it)."""
    import re

    id_segment = re.compile(r"^(?=[^/]*\d)[0-9a-fA-F-]{6,}$|^\d+$")
    start = canonical_url.find("/", canonical_url.find("//") + 2)
    if start < 0:
        return "/"
    path, _, query = canonical_url[start:].partition("?")
    segs = ["#" if id_segment.match(s) else re.sub(r"\d+", "#", s) for s in path.split("/")]
    names = sorted({p.split("=", 1)[0] for p in query.split("&") if p})
    return "/".join(segs) + ("?" + "&".join(names) if names else "")


def test_url_pattern_in_one_pass_equals_the_segment_by_segment_definition() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    segment = st.text(alphabet="0123456789abcdefABCDEFghz-._~%", max_size=12)
    query = st.lists(st.sampled_from(["a=1", "b=x2", "id=9f8e7d6c", "", "z", "a=2"]),
                     max_size=4).map("&".join)

    @settings(max_examples=2000, deadline=None)
    @given(st.lists(segment, max_size=6), st.booleans(), query)
    def check(segments: list[str], with_query: bool, q: str) -> None:
        url = "http://h.example/" + "/".join(segments) + (f"?{q}" if with_query else "")
        assert url_pattern(url) == _reference_pattern(url)

    check()
    for url in ("http://h", "http://h/", "http://h/2024/05/a1b2c3d4e5/page-12.html?x=1&b=2",
                "http://h/abcdef12.html", "http://h/--1---/x", "http://h/123456/"):
        assert url_pattern(url) == _reference_pattern(url)
