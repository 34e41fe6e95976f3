"""What flows back up the scheduler's parts, through one port.

The parts are built in dependency order (keys and learning before the intake that uses
them), so what a part must tell a later one -- rules learned (known spellings change), a
host's address resolved (its URLs wait), rules other workers learned, a host's sitemaps
found, a key released -- goes through :class:`FrontierEvents`: built first, handed to the
parts as bound methods, and bound to its listeners once they exist (:meth:`bind`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler_ext.signals import host_released, sitemaps_found

if TYPE_CHECKING:
    from crawler_ext.admission import RuleLearning
    from crawler_ext.frontier.adapter.engine import EngineHandle
    from crawler_ext.frontier.adapter.intake import Intake

__all__ = ["FrontierEvents"]


class FrontierEvents:
    def __init__(self, engine: EngineHandle) -> None:
        self.engine = engine
        self._intake: Intake | None = None
        self._learning: RuleLearning | None = None

    def bind(self, intake: Intake, learning: RuleLearning) -> None:
        """The listeners, once built."""
        self._intake = intake
        self._learning = learning

    def rules_learned(self) -> None:
        """A parameter was learned irrelevant: spellings get other canonical forms."""
        if self._intake is not None:
            self._intake.forget_known()

    def addresses_resolved(self, waited: list[Any]) -> None:
        """A host's address is known: the URLs that waited for it are admitted."""
        if self._intake is not None:
            self._intake.resolved(waited)

    def rules_from_others(self, items: list[bytes]) -> None:
        """Rules other workers learned (a shared frontier's rule log)."""
        if self._learning is not None:
            self._learning.from_others(items)

    def sitemaps_found(self, origin: str, sitemaps: list[str]) -> None:
        """robots.txt of ``origin`` listed ``sitemaps``: the pack's signal."""
        self.engine.send(sitemaps_found, origin=origin, sitemaps=sitemaps)

    def key_released(self, **kwargs: Any) -> None:
        """A politeness key was released after a fetch: the pack's signal."""
        self.engine.send(host_released, **kwargs)
