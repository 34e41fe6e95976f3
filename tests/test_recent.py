"""The bounded maps of recent entries (``crawler_ext.recent``): what they keep, what they
forget, and that the garbage collector does not walk them."""

from __future__ import annotations

import gc

from crawler_ext.recent import RecentMap


def test_keeps_the_newest_half_at_least_and_the_size_at_most() -> None:
    forgotten: list[dict] = []
    m = RecentMap(10, forgotten.append)
    for i in range(23):
        m[i] = i * 10
        assert 5 <= len(m) <= 10 or i < 5
        assert all(j in m for j in range(max(0, i - 4), i + 1))  # the newest five always
    assert [sorted(f) for f in forgotten] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9],
                                              [10, 11, 12, 13, 14]]
    assert list(m) == list(range(15, 23))  # oldest first
    assert m.get(3) is None and m.get(3, "x") == "x" and m[22] == 220


def test_an_update_keeps_its_age_and_a_pop_takes_it_out() -> None:
    m = RecentMap(4)
    m["a"], m["b"] = 1, 2  # "a" and "b" now old
    m["a"] = 3  # updated where it is: no new entry
    assert len(m) == 2 and m["a"] == 3
    m["c"] = 4
    assert m.pop("a") == 3 and m.pop("a", None) is None and "a" not in m
    m["d"] = 5  # the young generation is full: "b" is forgotten
    assert dict(m.items()) == {"c": 4, "d": 5} and m == {"c": 4, "d": 5}


def test_a_map_of_plain_values_is_left_out_of_the_collectors_walks() -> None:
    m = RecentMap(1_000)
    for i in range(1_200):
        m[f"http://a.test/{i}"] = i
    m[7] = 0.5
    gc.collect()
    assert not gc.is_tracked(m._new) and not gc.is_tracked(m._old)
