"""Bounded maps of the latest entries, out of the garbage collector's way.

The frontier keeps several large maps of recent URLs or fingerprints (links recently admitted,
OPIC cash, the promotion index, trap chains): up to hundreds of thousands of entries each.  An
``OrderedDict`` (or any dict subclass) is walked by every full garbage collection, reference
by reference: at 100,000 hosts those maps were half of what each collection visited, and
collections came every few ten thousand requests.  CPython stops tracking a plain ``dict``
whose keys and values are all atoms (numbers, strings, bytes), so :class:`RecentMap` keeps two
generations of plain dicts: new entries go into the young one; when it holds half of ``size``
entries the old generation is forgotten and the young one becomes old.  It keeps at least the
newest ``size // 2`` entries and at most ``size``; an entry updated keeps its age.  (A plain
dict's oldest entry cannot be popped in constant time: deleted slots before it are walked.)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Any

__all__ = ["RecentMap"]

_MISSING: Any = object()


class RecentMap:
    __slots__ = ("half", "on_forget", "_new", "_old")

    def __init__(self, size: int,
                 on_forget: Callable[[dict[Any, Any]], None] | None = None) -> None:
        """``on_forget(entries)``: told of each generation forgotten (a dict)."""
        self.half = max(1, size // 2)
        self.on_forget = on_forget
        self._new: dict[Any, Any] = {}
        self._old: dict[Any, Any] = {}

    def get(self, key: Hashable, default: Any = None) -> Any:
        value = self._new.get(key, _MISSING)
        if value is _MISSING:
            return self._old.get(key, default)
        return value

    def __getitem__(self, key: Hashable) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: Hashable) -> bool:
        return key in self._new or key in self._old

    def __setitem__(self, key: Hashable, value: Any) -> None:
        old = self._old
        if key in old:
            old[key] = value
            return
        new = self._new
        new[key] = value
        if len(new) >= self.half:
            self._old, self._new = new, {}
            if self.on_forget is not None and old:
                self.on_forget(old)

    def pop(self, key: Hashable, default: Any = None) -> Any:
        value = self._new.pop(key, _MISSING)
        if value is _MISSING:
            return self._old.pop(key, default)
        return value

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def __iter__(self) -> Iterator[Any]:
        """Oldest first."""
        yield from self._old
        yield from self._new

    def items(self) -> Iterator[tuple[Any, Any]]:
        yield from self._old.items()
        yield from self._new.items()

    def clear(self) -> None:
        self._new, self._old = {}, {}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RecentMap):
            other = dict(other.items())
        return isinstance(other, dict) and dict(self.items()) == other

    __hash__ = None  # type: ignore[assignment]
