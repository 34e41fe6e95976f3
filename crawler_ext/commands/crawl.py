"""``scrapy crawl``, with bad input reported as one line and exit code 2 before the crawl starts.

It validates every ``CRAWLER_EXT_*`` setting and, when the spider defines
``parse_arguments`` in its module (as ``web`` does), the spider arguments.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError

from crawler_ext import config
from crawler_ext.addon import SCHEDULER_PATHS, Addon
from crawler_ext.focus import build_classifier
from crawler_ext.processors.registry import build_table
from crawler_ext.render.browser import require_render


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.crawler_process is not None
        settings = self.settings
        assert settings is not None  # (set by Scrapy before run)
        try:
            config.validate_all(self.settings)
            require_render(self.settings)
            if config.get(self.settings, "CRAWLER_EXT_PROCESSORS_ENABLED"):
                build_table(config.get(self.settings, "CRAWLER_EXT_PROCESSORS"))
            if config.focus_enabled(self.settings):
                build_classifier(self.settings)  # trained again by the crawl: fast enough
        except config.ConfigError as exc:
            raise UsageError(str(exc), print_help=False) from None
        if _uses_frontier(self.settings):
            from scrapy.utils.misc import load_object

            from crawler_ext.frontier.adapter.factory import make_store, strategy_class
            from crawler_ext.seen.adapter import check_dupefilter_class

            try:
                check_dupefilter_class(load_object(settings["DUPEFILTER_CLASS"]))
                strategy_class(config.get(self.settings, "CRAWLER_EXT_STRATEGY"))
                if config.get(self.settings, "CRAWLER_EXT_FRONTIER_BACKEND") != "redis":
                    # where the frontier is kept, and with which engine (nothing is opened)
                    make_store(self.settings, config.get(self.settings,
                                                         "CRAWLER_EXT_FRONTIER_BANDS"))
            except (config.ConfigError, ImportError, NameError, ValueError) as exc:
                raise UsageError(str(exc), print_help=False) from None
        if config.get(self.settings, "CRAWLER_EXT_FRONTIER_BACKEND") == "redis":
            _check_redis(self.settings)
        if len(args) == 1:
            try:
                spidercls = self.crawler_process.spider_loader.load(args[0])
            except KeyError:
                raise UsageError(f"no spider named {args[0]!r}", print_help=False) from None
            module = sys.modules.get(spidercls.__module__)
            validate = getattr(module, "parse_arguments", None)
            if validate is not None:
                distributed = getattr(module, "distributed", lambda settings: False)
                try:
                    validate(**opts.spargs, require_seeds=not distributed(self.settings))
                except (TypeError, ValueError) as exc:
                    raise UsageError(f"spider {args[0]}: {exc}", print_help=False) from None
        super().run(args, opts)


def _check_redis(settings: object) -> None:
    """A distributed crawl needs its Redis: say so in one line if it does not answer."""
    import redis

    from crawler_ext.distributed.cli import redis_from_settings

    try:
        redis_from_settings(settings).ping()
    except (redis.RedisError, ValueError) as exc:
        where = settings.get("REDIS_URL") or "REDIS_HOST/REDIS_PORT"  # type: ignore[attr-defined]
        raise UsageError(f"CRAWLER_EXT_FRONTIER_BACKEND=redis: Redis at {where} does not "
                         f"answer ({exc})", print_help=False) from None


def _uses_frontier(settings: Any) -> bool:
    """Whether the crawl runs the pack's scheduler: set directly, or by the add-on (which
    applies it only when the crawler is built, after this command's checks)."""
    if settings.get("SCHEDULER") in SCHEDULER_PATHS:
        return True
    addons = settings.getdict("ADDONS")
    return any(key in ("crawler_ext.Addon", "crawler_ext.addon.Addon") or key is Addon
               for key, order in addons.items() if order is not None)
