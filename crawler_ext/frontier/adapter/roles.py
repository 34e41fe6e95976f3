"""The scheduler's collaborators grouped by role, as the wiring hands them to its parts.

* :class:`SchedulerOptions` -- plain values read from the settings, once, by the factory;
* :class:`Policies` -- the rules the factory builds from the settings (admission, robots.txt,
  the blocklist);
* :class:`Stores` -- where the crawl's state is: the frontier, its journal, the seen set, and
  the frontier again when other workers share it;
* :class:`Gates` -- what a URL must pass on its way in and out: the blocklist, robots.txt,
  admission, the learned rules, the operator's controls, the politeness keys;
* :class:`Port` -- what flows back up: counters, the engine's wake-up, the clock, and the
  listeners of what the frontier decides.

A leaf module: the parts import these types, the wiring (``wiring.py``) builds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler_ext.admission import Admission
from crawler_ext.hosts.blocklist import Blocklist

if TYPE_CHECKING:
    from crawler_ext.admission import RuleLearning
    from crawler_ext.frontier.adapter.events import Decisions
    from crawler_ext.frontier.adapter.keys import PolitenessKeys
    from crawler_ext.frontier.adapter.robotsgate import RobotsGate
    from crawler_ext.frontier.contract import FrontierBackend, JournaledFrontier, SharedFrontier
    from crawler_ext.frontier.controls import KeyControls
    from crawler_ext.hosts.robots import RobotsCache
    from crawler_ext.seen import SeenSet

__all__ = ["Gates", "Policies", "Port", "SchedulerOptions", "Stores"]


@dataclass(frozen=True)
class SchedulerOptions:
    """The scheduler's settings as plain values (``factory.scheduler_options`` reads them)."""

    flush_interval: float = 0.2  # CRAWLER_EXT_FRONTIER_FLUSH_INTERVAL
    log_interval: float = 60.0  # CRAWLER_EXT_FRONTIER_LOG_INTERVAL (0: no progress line)
    snapshot_interval: float = 60.0  # CRAWLER_EXT_BLOOM_SNAPSHOT_INTERVAL (0: none)
    rules_path: Path | None = None  # JOBDIR/learned_rules.json
    learn_min_evidence: int = 3  # CRAWLER_EXT_LEARN_MIN_EVIDENCE
    key_by_ip: bool = False  # CRAWLER_EXT_POLITENESS_KEY = "ip"
    dns_prefetch: bool = False  # CRAWLER_EXT_DNS_PREFETCH
    robots_timeout: float = 0.0  # CRAWLER_EXT_ROBOTS_TIMEOUT (0: DOWNLOAD_TIMEOUT)
    track_requests: bool = False  # MEMDEBUG_ENABLED: Scrapy's trackref sees stored requests
    jobdir: str | None = None  # JOBDIR
    #: CRAWLER_EXT_FOCUS_MAX_UNSCORED of a focused crawl: responses in the scraper beyond
    #: which dispatch waits (None: never)
    unscored_max: int | None = None
    #: DOWNLOAD_SLOTS delays: their keys' floors
    slot_delays: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Policies:
    """The rules the factory builds from the settings."""

    admission: Admission = field(default_factory=Admission)
    robots: RobotsCache | None = None  # None: robots.txt is not obeyed
    blocklist: Blocklist = field(default_factory=Blocklist)


@dataclass(frozen=True)
class Stores:
    """Where the crawl's state is kept."""

    frontier: FrontierBackend
    seen: SeenSet
    journal: JournaledFrontier | None = None  # the frontier, when it journals here
    shared: SharedFrontier | None = None  # the frontier, when shared with other workers


@dataclass(frozen=True)
class Gates:
    """What a URL passes on its way in (admission) and out (dispatch)."""

    admission: Admission
    blocklist: Blocklist
    robots: RobotsGate | None  # None: robots.txt is not obeyed
    learning: RuleLearning
    controls: KeyControls
    keys: PolitenessKeys


@dataclass(frozen=True)
class Port:
    """What flows back up from the parts: counts (into the stats at the next flush), the
    engine's wake-up at a time, the clock, and the listeners of refusals and parked keys."""

    inc: Callable[..., None]
    wake: Callable[[float | None, float], None]
    clock: Callable[[], float]
    decisions: Decisions
    stats: Any = None  # the crawl's stats collector, for maxima (None: no crawler)
