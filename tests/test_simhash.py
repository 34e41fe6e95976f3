"""SimHash, the permuted-block index, and page text extraction (pure logic)."""

from __future__ import annotations

import random

import pytest

from crawler_ext.dedup.index import ContentIndex
from crawler_ext.dedup.extract import fingerprint_text, main_text, normalise
from crawler_ext.dedup.simhash import (
    SimHashIndex,
    _shingle_hash,
    exact_hash,
    hamming,
    simhash,
)
from testweb import TestWeb


def test_common_word_hundreds_of_times_hashes_without_error() -> None:
    # the simhash package 2.1.2 overflows (uint8 weights) past 50 repetitions of a feature
    text = " ".join(["the cat sat"] * 400 + ["on the mat"] * 300)
    fp = simhash(text)
    assert 0 < fp < 1 << 64
    assert simhash(text) == fp  # deterministic across calls (and processes: no hash())


def _reference_simhash(text: str, n: int = 3) -> int:
    """Charikar's SimHash written out bit by bit over each shingle's hash, one shingle at a
    time (the definition the vectorised one must equal)."""
    from collections import Counter

    words = text.split()
    shingles = [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)] \
        if len(words) >= n else ([" ".join(words)] if words else [])
    totals = [0] * 64
    for feature, weight in Counter(shingles).items():
        h = _shingle_hash(feature.encode())
        for k in range(64):
            totals[k] += weight if h >> k & 1 else -weight
    return sum(1 << k for k in range(64) if totals[k] > 0)


def test_simhash_equals_the_bitwise_definition_and_its_persisted_values() -> None:
    # fingerprints persist in JOBDIR/content.sqlite3 and the Redis content log: values pinned
    assert simhash("the cat sat on the mat") == 15582534975127396864
    assert simhash("a b") == 17423836070074328557
    assert simhash(" ".join(["the cat sat"] * 400 + ["on the mat"] * 300)) == \
        9851933354361521664
    assert simhash("a  b\n") == simhash("a b")  # words, whatever the white space
    rng = random.Random(11)
    for size in (0, 1, 2, 3, 4, 50, 700):
        vocabulary = [f"w{i}é" for i in range(rng.choice((3, 40, 5000)))]
        text = " ".join(rng.choice(vocabulary) for _ in range(size))
        assert simhash(text) == _reference_simhash(text), size
    page = main_text("<html><body><main>" + "".join(
        f"<p>Paragraph {i} of the guide, with café and naïve words.</p>" for i in range(60))
        + "</main></body></html>")
    assert simhash(page) == _reference_simhash(page)
    # past the cached tables of powers (256 KiB), the tables are computed for the text
    long = " ".join(rng.choice(("alpha", "beta", "gamma", "delta")) for _ in range(60_000))
    assert len(long) > 1 << 18 and simhash(long) == _reference_simhash(long)


def test_similar_texts_are_close_and_different_texts_far() -> None:
    rng = random.Random(3)
    words = [f"w{rng.randrange(5000)}" for _ in range(400)]
    base = " ".join(words)
    edited = " ".join(words[:200] + ["changed"] + words[201:])
    other = " ".join(f"w{rng.randrange(5000)}" for _ in range(400))
    assert hamming(simhash(base), simhash(edited)) <= 3
    assert hamming(simhash(base), simhash(other)) > 10


def test_main_text_drops_boilerplate() -> None:
    html = """<html><head><script>var x=1</script><style>p{}</style></head><body>
      <nav><a href="/">Home</a> <a href="/a">About</a></nav>
      <div id="main"><h1>Title</h1><p>Body text of 2026 here, long enough to be the main
      content of this page by any measure of a paragraph.</p></div>
      <footer>Copyright</footer></body></html>"""
    text = main_text(html)
    assert text.startswith("title body text of 2026 here")
    assert "home" not in text and "copyright" not in text and "var" not in text


def test_read_the_docs_theme_keeps_its_content() -> None:
    # the Sphinx Read the Docs theme keeps the whole page in wy-nav-content: a class-name
    # heuristic (\bnav\b) deleted it, and every page became a duplicate of the empty text
    body = " ".join(f"word{i}" for i in range(200))
    html = f"""<html><body><div class="wy-grid-for-nav">
      <nav class="wy-nav-side"><div class="wy-menu"><a href="a.html">A</a></div></nav>
      <section class="wy-nav-content-wrap"><div class="wy-nav-content"><div class="rst-content">
      <div role="main" class="document"><h1>Release 1.0</h1><p>{body}</p></div>
      </div></div></section></div></body></html>"""
    text, basis = fingerprint_text(html)
    assert basis == "main" and "word199" in text


def test_short_main_text_falls_back_to_full_text_then_to_the_body() -> None:
    links = " ".join(f'<a href="c{i}.html">class number {i} of the package</a>' for i in range(30))
    text, basis = fingerprint_text(f"<html><body><div>{links}</div><p>Tiny.</p></body></html>")
    assert basis in ("main", "full") and "class number 0" in text
    assert fingerprint_text("<html><body><p>Tiny page.</p></body></html>") == ("", "body")


def test_pages_with_trivial_text_are_duplicates_only_when_their_bodies_are_equal() -> None:
    index = ContentIndex()
    assert index.check("http://a/1", b"<html><body><p>Loading...</p></body></html>").kind == \
        "unique"
    other = index.check("http://a/2", b"<html><body><p>Loading</p><script>x()</script></body></html>")
    assert other.kind == "unique" and other.basis == "body"
    same = index.check("http://a/3", b"<html><body><p>Loading...</p></body></html>")
    assert same.kind == "exact" and same.original == "http://a/1"


@pytest.mark.parametrize("count", [5000, 5050])  # (5050: the last 50 not merged yet)
def test_index_finds_everything_within_k_and_nothing_beyond(count: int) -> None:
    rng = random.Random(9)
    index = SimHashIndex(k=3, buffer=100)
    stored = [rng.getrandbits(64) for _ in range(count)]
    for i, fp in enumerate(stored):
        index.add(fp, i)
    assert len(index) == count
    for i in [*rng.sample(range(count), 200), *range(count - 50, count)]:
        bits = rng.sample(range(64), rng.randint(0, 3))
        q = stored[i]
        for b in bits:
            q ^= 1 << b
        doc, dist = index.nearest(q)
        assert doc == i and dist == len(bits)
    for _ in range(200):  # random queries are (with overwhelming odds) far from everything
        q = rng.getrandbits(64)
        brute = min(hamming(q, s) for s in stored)
        assert (index.nearest(q) is None) == (brute > 3)


def test_test_web_mirrors_and_print_versions_are_caught_but_not_distinct_pages() -> None:
    web = TestWeb(seed=1, hosts=20, pages=12)
    index = ContentIndex(distance=3)
    verdicts = {}
    for host in (0, 8):  # host 8 mirrors host 0
        for n in range(12):
            path = web.page_path(n)
            body = web.respond(f"h{host:04d}.web.test", path, 80, 0.0).body
            verdicts[(host, path)] = index.check(f"h{host}{path}", body)
        for n in range(1, 12, 4):
            body = web.respond(f"h{host:04d}.web.test", f"/print/{n}.html", 80, 5.0).body
            verdicts[(host, f"/print/{n}.html")] = index.check(f"h{host}/print/{n}", body)
    assert all(v.kind == "unique" for (h, p), v in verdicts.items() if h == 0 and "print" not in p)
    assert all(v.kind == "exact" for (h, p), v in verdicts.items() if h == 8 and "print" not in p)
    near = [v for (h, p), v in verdicts.items() if h == 0 and "print" in p]
    assert near and all(v.kind == "near" and v.original == f"h0/p/{p}.html"
                        for v, p in zip(near, (1, 5, 9)))
    assert exact_hash("a b") != exact_hash("a  c")


def test_the_same_url_fetched_again_is_not_its_own_duplicate(tmp_path) -> None:
    # a crawl resumed after kill -9 fetches in-flight pages again; dropping them as copies
    # of themselves would lose the links they lead to
    body = b"<html><body><p>" + b" ".join(b"w%d" % i for i in range(300)) + b"</p></body></html>"
    index = ContentIndex(path=tmp_path / "content.sqlite3")
    index.open()
    assert index.check("http://e.com/a", body).kind == "unique"
    index.close()
    again = ContentIndex(path=tmp_path / "content.sqlite3")
    again.open()
    assert again.check("http://e.com/a", body).kind == "unique"
    assert again.check("http://e.com/b", body).kind == "exact"


def test_a_deeply_nested_page_skips_main_content_detection() -> None:
    import time

    from crawler_ext.dedup.extract import too_deep

    words = " ".join(f"w{i}" for i in range(50))
    deep = "<html><body>" + "<div>" * 100_000 + words + "</div>" * 100_000 + "</body></html>"
    started = time.perf_counter()
    text, basis = fingerprint_text(deep)
    assert basis == "full" and text.startswith("w0 w1")
    assert time.perf_counter() - started < 30  # main-content detection took 112 s here
    assert too_deep(deep) and not too_deep("<div>" * 1999 + "</div>" * 1999)
    assert too_deep("<p>x" * 5000)  # unclosed tags count as open: an upper bound, never less


def test_removed_entries_are_never_found_and_are_compacted_away() -> None:
    rng = random.Random(11)
    index = SimHashIndex(k=3, buffer=100)
    stored = [rng.getrandbits(64) for _ in range(6000)]
    for i, fp in enumerate(stored):
        index.add(fp, i)
    gone = set(rng.sample(range(6000), 3000))
    for i in gone:
        index.discard(i)
    assert len(index) == 3000
    assert index.nbytes() < 6000 * 48  # compacted: the arrays hold fewer than all 6,000
    for i in rng.sample(range(6000), 400):
        found = index.nearest(stored[i] ^ 1)
        assert (found is None) if i in gone else (found == (i, 1))
    index.add(stored[0], 0)  # an entry removed and added again is live again
    assert index.nearest(stored[0]) == (0, 0)


def test_short_texts_are_matched_exactly_only() -> None:
    """Under NEAR_MIN_WORDS words a text has no SimHash to compare (SimHash over a few dozen
    shingles puts distinct template pages within 3 bits by chance); at or over it, an edit
    of one word is a near duplicate."""
    from crawler_ext.dedup.simhash import NEAR_MIN_WORDS, near_hash

    rng = random.Random(4)
    for n, expected in ((NEAR_MIN_WORDS - 1, None), (NEAR_MIN_WORDS, True)):
        words = [f"w{rng.randrange(5000)}" for _ in range(n)]
        edited = words[:n // 2] + ["changed"] + words[n // 2 + 1:]
        a, b = near_hash(" ".join(words)), near_hash(" ".join(edited))
        if expected is None:
            assert a == b == 0
        else:
            assert a and b and hamming(a, b) <= 3


def test_a_changing_page_is_remembered_by_its_latest_version_only(tmp_path) -> None:
    def page(version: int) -> bytes:
        words = " ".join(f"w{version}x{i}" for i in range(120))
        return f"<html><body><main><p>{words}</p></main></body></html>".encode()

    index = ContentIndex(path=tmp_path / "content.sqlite3")
    index.open()
    for version in range(60):
        assert index.check("http://a/news", page(version)).kind == "unique"
    assert len(index.urls) == 1 and len(index.index) == 1 and len(index.by_exact) == 1
    assert index.check("http://b/copy-of-old", page(3)).kind == "unique"  # forgotten
    latest = index.check("http://b/copy", page(59))
    assert latest.kind == "exact" and latest.original == "http://a/news"
    index.close()
    again = ContentIndex(path=tmp_path / "content.sqlite3")
    again.open()
    assert again.urls == ["http://a/news", "http://b/copy-of-old"]
    assert again.check("http://c/copy", page(59)).original == "http://a/news"
    assert again.check("http://c/older", page(58)).kind == "unique"
    again.close()


def test_normalise_is_the_words_of_the_lowered_text_whatever_the_characters() -> None:
    # the byte table for ASCII and the expression for other words give exactly \w+ of the
    # lowered text, on every kind of character: case, white space, controls, combining marks,
    # lone surrogates, non-ASCII digits and letters whose lower case is ASCII
    import re

    word = re.compile(r"\w+")
    alphabet = list("abcXYZ09_ -,.;:!?'\"()[]\t\n\r\x0b\x0c\x1c\x1f\x00\x7f") + [
        "é", "É", "ß", "İ", "K", "\xa0", "\u2003", "’", "—", "“", "中", "\u0301", "\ud800",
        "١", "²", "ǅ", "\u200b", "\ufeff", "😀"]
    rng = random.Random(5)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        assert normalise(text) == " ".join(word.findall(text.lower())), repr(text)


def test_white_space_and_control_characters_are_normalised_before_the_shingles() -> None:
    """An ASCII text's bytes are checked with numpy (not str.isprintable): every text gives
    the shingles of its words one space apart."""
    import random

    import numpy as np

    from crawler_ext.dedup.simhash import _shingle_hashes

    rng = random.Random(5)
    pieces = list("abc ") + [" ", "  ", "\t", "\n", "\x00", "\x7f", "\x1f", "é", "\u2028",
                             "\xa0", "\u3000", "\u200b", "x"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        words = " ".join(text.split())
        assert np.array_equal(_shingle_hashes(text, 3), _shingle_hashes(words, 3)), repr(text)
