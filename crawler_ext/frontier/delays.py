"""The latest politeness delay of each key, as the frontier announces it (``host_released``):
for components that pace or budget their own work by a host's delay (the recrawl middleware,
the rendering pool).  Bounded: the least recently released keys are forgotten first."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

__all__ = ["KeyDelays"]


class KeyDelays:
    def __init__(self, memory: int = 100_000) -> None:
        self.memory = memory
        self._delays: OrderedDict[str, float] = OrderedDict()

    def released(self, key: str, delay: float, **_: Any) -> None:
        """The ``host_released`` receiver."""
        self._delays[key] = delay
        self._delays.move_to_end(key)
        if len(self._delays) > self.memory:
            self._delays.popitem(last=False)

    def get(self, key: str | None, default: float) -> float:
        return self._delays.get(key, default) if key is not None else default
