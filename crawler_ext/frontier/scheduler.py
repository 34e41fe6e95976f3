"""Public path of the scheduler's module (``crawler_ext.frontier.scheduler.FrontierScheduler``,
as projects may name it); it lives in the adapter."""

from __future__ import annotations

from crawler_ext.frontier.adapter.scheduler import FrontierScheduler

__all__ = ["FrontierScheduler"]
