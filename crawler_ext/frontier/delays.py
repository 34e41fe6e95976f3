"""The latest politeness delay of each key, as the frontier announces it (``host_released``),
and whether new URLs of the key were waiting then: for components that pace or budget their
own work by a host's delay (the recrawl middleware, the rendering pool).  Bounded: the least
recently released keys are forgotten first."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["KeyDelays"]


class KeyDelays:
    def __init__(self, memory: int = 100_000) -> None:
        self.memory = memory
        self._delays: OrderedDict[str, tuple[float, bool | None]] = OrderedDict()

    def released(self, key: str, delay: float, discovery: bool | None = None,
                 **_: Any) -> None:
        """The ``host_released`` receiver."""
        self._delays[key] = (delay, discovery)
        self._delays.move_to_end(key)
        if len(self._delays) > self.memory:
            self._delays.popitem(last=False)

    def get(self, key: str | None, default: float) -> float:
        record = self._delays.get(key) if key is not None else None
        return record[0] if record is not None else default

    def discovery(self, key: str | None) -> bool | None:
        """Whether new URLs of ``key`` waited at its last release (None: not known)."""
        record = self._delays.get(key) if key is not None else None
        return record[1] if record is not None else None
