"""What flows back up the scheduler's parts to the crawl: the pack's signals the parts send
(:class:`FrontierEvents`), and the listeners of what the frontier refuses and parks
(:class:`Decisions`, the event stream's source).

Both are built before the parts that use them, so nothing is bound after construction: a
listener subscribes to :class:`Decisions` (``report_decisions``), it is not set on the parts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from crawler_ext.signals import host_released, sitemaps_found

if TYPE_CHECKING:
    from crawler_ext.frontier.adapter.engine import EngineHandle

__all__ = ["Decisions", "FrontierEvents"]


class Decisions:
    """The listeners told of each URL refused and each key parked: ``(kind, subject, reason,
    until=None)``, ``kind`` "refused" or "parked"."""

    def __init__(self) -> None:
        self._listeners: list[Callable[..., None]] = []

    def listen(self, listener: Callable[..., None]) -> None:
        self._listeners.append(listener)

    @property
    def heard(self) -> bool:
        """Whether anybody listens (a decision's details are worked out only then)."""
        return bool(self._listeners)

    def tell(self, kind: str, subject: str, reason: str, until: float | None = None) -> None:
        for listener in self._listeners:
            listener(kind, subject, reason, until)


class FrontierEvents:
    """The pack's signals sent by the parts, through the engine's crawler."""

    def __init__(self, engine: EngineHandle) -> None:
        self.engine = engine

    def sitemaps_found(self, origin: str, sitemaps: list[str]) -> None:
        """robots.txt of ``origin`` listed ``sitemaps``: the pack's signal."""
        self.engine.send(sitemaps_found, origin=origin, sitemaps=sitemaps)

    def key_released(self, **kwargs: Any) -> None:
        """A politeness key was released after a fetch: the pack's signal."""
        self.engine.send(host_released, **kwargs)
