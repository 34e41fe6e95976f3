"""Every stat the pack keeps, with one line of meaning: the docs' stats table is made from it.

A name's ``<part>`` stands for a value (a reason, a status code, a host).  The test suite
checks that every stat name written in the code is listed here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["STATS", "Counts", "Stat", "documented", "stats_rows"]


@dataclass(frozen=True)
class Stat:
    keys: tuple[str, ...]
    meaning: str


STATS: list[Stat] = [
    Stat(("frontier/enqueued", "frontier/enqueued/band_<N>"),
         "URLs admitted into the frontier, by band"),
    Stat(("frontier/dispatched",),
         "requests handed to the engine"),
    Stat(("frontier/recovered",),
         "queued or in-flight requests resumed from a durable store"),
    Stat(("frontier/promoted",),
         "waiting URLs moved to a better band: their page importance (OPIC) grew"),
    Stat(("frontier/active_hosts_max",),
         "most politeness keys active at once"),
    Stat(("frontier/delay_max",),
         "longest per-host delay applied, seconds"),
    Stat(("frontier/backoffs", "frontier/retry_after_honoured"),
         "429/503/error backoffs; of them with Retry-After"),
    Stat(("frontier/politeness_violations",),
         "requests handed out before their host's next allowed time with nothing else in "
         "flight there (0 by construction; watched by the Spidermon monitor)"),
    Stat(("frontier/pending",),
         "requests left in the frontier at close"),
    Stat(("frontier/parked", "frontier/parked_pending", "frontier/parkings"),
         "hosts parked at close (they asked to wait longer than "
         "`CRAWLER_EXT_POLITENESS_BACKOFF_MAX`, their robots.txt failed and waits for its "
         "retry, or they failed their error budget), their queued URLs, and parkings during "
         "the crawl"),
    Stat(("frontier/hosts_failing",),
         "hosts parked because `CRAWLER_EXT_HOST_ERROR_BUDGET` fetches in a row failed "
         "(timeouts, connection errors, 5xx)"),
    Stat(("netguard/refused",),
         "requests the SSRF guard stopped in the download path"),
    Stat(("netguard/lookup_failed", "netguard/refused_at_connect"),
         "requests refused because the guard's own look-up failed or timed out (it fails "
         "closed); connection look-ups of unchecked names whose answer the guard refused"),
    Stat(("download_errors/<type>",),
         "download failures the web caused, by exception type (the reference project's "
         "`LOG_FORMATTER`: logged once per type, not a traceback each)"),
    Stat(("admission/error_answers",),
         "error answers (404, 410, 500, ...; not 408, 429, 502-504) taken as trap evidence for "
         "their URL pattern"),
    Stat(("robots/parked",),
         "turns of a host whose robots.txt failed and waits for its retry: parked, not waited "
         "for"),
    Stat(("disk_full/warc", "disk_full/jobdir"),
         "the crawl stopped because that disk filled up (finish reason `disk_full`)"),
    Stat(("netguard/refused_scheme/<scheme>",),
         "requests of schemes not allowed (`CRAWLER_EXT_ALLOWED_SCHEMES`), failed with "
         "NotSupported"),
    Stat(("scheduler/unserializable",),
         "requests a durable frontier could not serialise, kept in memory for the run"),
    Stat(("scheduler/enqueued", "scheduler/dequeued", "scheduler/enqueued/<memory|disk>",
          "scheduler/dequeued/<memory|disk>"),
         "Scrapy's scheduler stats: requests queued, and handed to the engine (the frontier's "
         "robots.txt fetches not counted)"),
    Stat(("frontier/dropped", "frontier/blocked"),
         "queued URLs dropped at their turn (robots.txt, blocklist)"),
    Stat(("robots/status/<code>", "robots/disallowed", "robots/gave_up"),
         "robots.txt answers; URLs robots.txt forbade; URLs dropped after robots.txt kept "
         "failing"),
    Stat(("robots/crawl_delay", "robots/sitemaps"),
         "robots.txt files with a Crawl-delay; Sitemap lines found"),
    Stat(("admission/rejected/<reason>",),
         "URLs refused: `blocklist`, `too_long`, `path_depth`, `repeated_segments`, "
         "`host_budget`, `pattern_cap` (also queued URLs dropped at their turn once their "
         "pattern proved a trap), `pattern_chain`, `id_chain`, `max_outlinks` (links past "
         "`CRAWLER_EXT_MAX_OUTLINKS_PER_PAGE` on one page), and malformed: "
         "`bad_percent_encoding`, `bad_port`, `bad_host`, `bad_idn`, `scheme`, `no_host`, "
         "`relative`"),
    Stat(("dupefilter/checks", "dupefilter/filtered"),
         "seen-set look-ups; URLs found already seen"),
    Stat(("dupefilter/urls", "dupefilter/bits_per_url", "dupefilter/estimated_fp_rate"),
         "seen-set size at close"),
    Stat(("dupefilter/snapshots",),
         "seen-set snapshots written to JOBDIR"),
    Stat(("dupefilter/false_positives_caught",),
         "\"maybe seen\" URLs that the exact store proved new (bloom+exact)"),
    Stat(("admission/learned_rules", "frontier/demoted"),
         "parameters learned irrelevant per host; URLs queued lower for a duplicate-prone "
         "pattern"),
    Stat(("dedup/unique", "dedup/exact", "dedup/near"),
         "content verdicts of fetched HTML pages"),
    Stat(("dedup/fallback/full_text", "dedup/fallback/body_hash"),
         "pages judged on their full visible text (too little main text), or on their exact "
         "body only (too little text at all)"),
    Stat(("dedup/unjudged",),
         "documents content dedup could not judge: no processor read them (refused, too "
         "large, or a type without a processor)."),
    Stat(("processor/<kind>/processed",),
         "documents a content processor read, by content kind (html, pdf, feed, text, image)."),
    Stat(("processor/<kind>/<reason>",),
         "documents not read, by kind and reason: too_large, timeout, memory, crashed, error, "
         "encrypted, hostile_xml, bomb, no_workers."),
    Stat(("processor/sniff/<how>",),
         "documents whose type the bytes decided: sniffed (no useful Content-Type), "
         "overruled (the header lied), unsniffed (libmagic missing: the header trusted)."),
    Stat(("processor/workers/restarted",),
         "processor workers replaced after a timeout or a crash"),
    Stat(("focus/fetched", "focus/relevant", "focus/harvest_rate"),
         "a focused crawl's pages judged, those on topic (relevance at least "
         "CRAWLER_EXT_FOCUS_THRESHOLD), and their ratio, the harvest rate"),
    Stat(("focus/scored_on_reactor",),
         "a focused crawl's pages the classifier scored on the crawl's thread (not in a "
         "processor worker, where it runs when the content processors are on)"),
    Stat(("focus/relevance/<tenth>",),
         "a focused crawl's pages by relevance, in tenths (0: below 0.1, 9: 0.9 and above)"),
    Stat(("focus/confidence",),
         "a focused crawl's classifier confidence: how far its answers stand from undecided, "
         "on average (|2 x relevance - 1|: 0, every page a coin toss; 1, every page sure)"),
    Stat(("focus/link_model/prior_auc", "focus/link_model/learned_auc",
          "focus/link_model/trusted"),
         "how well the link scorer's prior and its learned answer ranked the latest outcomes "
         "(ROC AUC, each judged before it was learned from), and whether the learned answer "
         "is used (1: it ranks better)"),
    Stat(("frontier/explored", "frontier/deferred"),
         "a focused crawl's routing picks that went by the bands' weighted round-robin "
         "(CRAWLER_EXT_FOCUS_EXPLORATION), and dispatches that waited because an active host "
         "held a better link"),
    Stat(("focus/dispatch_held",),
         "dispatches a focused crawl held while more fetched pages than "
         "CRAWLER_EXT_FOCUS_MAX_UNSCORED waited for their scores"),
    Stat(("focus/dispatch_hold_expired",),
         "dispatches that went after a hold of 10 s in a row (a page whose processing hangs "
         "slows a focused crawl, never stops it)"),
    Stat(("focus/dropped/tunnel",),
         "links dropped because their page ended an off-topic branch deeper than "
         "CRAWLER_EXT_FOCUS_TUNNEL_DEPTH"),
    Stat(("dedup/workers/fallback",),
         "pages fingerprinted on the reactor thread because the dedup worker processes could "
         "not be used (no asyncio reactor, a worker died; logged once)"),
    Stat(("frontier/known_links", "frontier/known_links/before_engine",
          "frontier/known_links/before_request"),
         "links refused at once because their exact spelling was recently admitted or found "
         "seen; of them, refused by the known-links spider middleware before the engine's "
         "round; refused by the reference spider before a request was made for them"),
    Stat(("recrawl/due", "recrawl/fetched", "recrawl/sitemap_lastmod"),
         "recrawl mode: refreshes scheduled (a due time per fetched HTML page); refreshes "
         "fetched; refreshes brought forward by a sitemap's newer <lastmod>"),
    Stat(("recrawl/not_modified", "recrawl/changed"),
         "refreshes answered 304 (the conditional GET); refreshes whose content changed (a 200 "
         "with an unchanged content hash counts as neither)"),
    Stat(("recrawl/estimated_freshness",),
         "expected share of the pages whose copy is fresh, by the latest allocation of each "
         "host's refresh budget over its pages' estimated change rates"),
    Stat(("render/checked", "render/detected", "render/queued"),
         "rendering on: HTML pages with a script judged for the app-shell signals; judged "
         "app shells; render requests queued for them"),
    Stat(("render/rendered", "render/ms"),
         "pages rendered in headless Chromium; mean time a render took, ms (its turn in the "
         "pool included)"),
    Stat(("render/timeouts", "render/failed", "render/fallback", "render/settle_timeouts"),
         "renders past CRAWLER_EXT_RENDER_TIMEOUT; renders that failed otherwise; pages then "
         "fetched plainly again and parsed as served; pages not network-idle within "
         "CRAWLER_EXT_RENDER_SETTLE (rendered anyway)"),
    Stat(("render/subrequests", "render/subrequests_blocked",
          "render/subrequests_blocked/<reason>"),
         "requests of rendering pages let through (paced at the host's delay); refused, by "
         "reason: `other_host`, `private_address`, `robots`, `resource_type`, `scheme`, "
         "`navigation` (a script leaving the page), `late` (past the page's deadline), "
         "`detached`, `unknown_page`"),
    Stat(("render/context_restarts", "render/context_restarts/<reason>"),
         "browser contexts replaced: `pages` (CRAWLER_EXT_RENDER_CONTEXT_PAGES), `memory` "
         "(CRAWLER_EXT_RENDER_MEMORY_MB)"),
    Stat(("control/requests", "control/refused/<reason>"),
         "requests to the control API; refused, by reason: `unauthorised`, `not_found`, "
         "`method`, `bad_key`, `too_large`, `not_json`, `malformed`, `invalid`, "
         "`unknown_key`, `no_checkpoint`"),
    Stat(("control/actions/<op>",),
         "operator actions taken (the API, the command line, another worker's): `pause`, "
         "`resume`, `stop`, `checkpoint`, `seeds`, `delay`, `block`, `unblock`, `pause_key`, "
         "`resume_key`, `delete_queue`, `budget`, `robots_refresh`"),
    Stat(("control/dropped/<reason>",),
         "queued URLs dropped at their turn by an operator's rule: `budget` (the key's page "
         "budget spent), `deleted` (its queue deleted)"),
    Stat(("control/journal_errors", "control/refused/shared", "control/redis/errors"),
         "operator actions not kept in JOBDIR/control-actions.jsonl (a write failed); "
         "actions from another worker's control log that could not be read; syncs of the "
         "requests per key with the other workers that failed (retried)"),
    Stat(("render/refused_address",),
         "rendered pages dropped because the browser reached an address the SSRF guard "
         "refuses"),
    Stat(("sitemaps/requested", "sitemaps/fetched", "sitemaps/urls"),
         "sitemaps asked for (robots.txt's, /sitemap.xml, those an index lists); read; URLs "
         "handed to admission"),
    Stat(("sitemaps/errors", "sitemaps/status/<code>", "sitemaps/urls_dropped",
          "sitemaps/too_deep", "sitemaps/urls_invalid"),
         "sitemaps skipped (not XML, too big, not a sitemap); answered other than 200; URLs "
         "past CRAWLER_EXT_SITEMAPS_MAX_URLS; indexes past CRAWLER_EXT_SITEMAPS_MAX_DEPTH; "
         "unusable URLs"),
    Stat(("spider/links_invalid/<reason>",),
         "hrefs the reference spider skipped: `scheme`, `bad_url`, `too_long`"),
    Stat(("dedup/hosts_with_duplicates", "dedup/host_rate/<host>"),
         "hosts serving duplicates; the 20 highest duplicate rates"),
    Stat(("warc/records/response", "warc/records/revisit", "warc/records/metadata",
          "warc/records/conversion", "warc/records/wet", "warc/records/wat"),
         "WARC records written, by type; WET and WAT records (their own files)"),
    Stat(("linkgraph/pages", "linkgraph/edges", "linkgraph/bytes", "linkgraph/invalid_links"),
         "the link graph: pages whose links were written, edges, bytes (compressed); links "
         "left out because their URL could not be canonicalised"),
    Stat(("events/fetch", "events/refused", "events/parked"),
         "the event stream: events put in the outbox, by kind"),
    Stat(("events/sent", "events/broker_errors", "events/backlog", "events/backlog_max",
          "events/undelivered", "events/unlocated"),
         "the event stream: events the broker took; failed sends (retried); events waiting "
         "now and at most; left undelivered at the end; fetch events sent without their WARC "
         "record's place (the writer did not report it within 10 s)"),
    Stat(("events/blocked", "events/blocked_seconds", "events/dropped"),
         "the broker fell `CRAWLER_EXT_EVENTS_MAX_BACKLOG` events behind: times the crawl "
         "waited, and for how long (`CRAWLER_EXT_EVENTS_OVERFLOW = block`); events dropped "
         "(`drop`)"),
    Stat(("warc/files", "warc/bytes"),
         "WARC files closed and bytes written"),
    Stat(("warc/skipped_noindex", "directives/noindex_not_stored"),
         "noindex pages kept out of the WARC and the items (`CRAWLER_EXT_NOINDEX_STORE = "
         "False`)"),
    Stat(("hosts/downloader_slots_max", "hosts/downloader_slots_dropped"),
         "Scrapy downloader slots (one a host) held at most, seen at each sweep; slots "
         "dropped idle (CRAWLER_EXT_DOWNLOADER_SLOT_IDLE)"),
    Stat(("gc/collections/<generation>",),
         "collections of the garbage collector's generation 0 (young), 1 or 2 (oldest) "
         "during the crawl (CRAWLER_EXT_GC_THRESHOLD)"),
    Stat(("hosts/connections_direct", "hosts/connections_resolved"),
         "new connections made straight to the address the SSRF guard pinned; new "
         "connections that went through Twisted's endpoint and the pinned resolver"),
    Stat(("dns/queries", "dns/cache_hits", "dns/negative_hits", "dns/coalesced"),
         "DNS queries sent; answers from the cache; cached negative answers; look-ups that "
         "joined a query in flight"),
    Stat(("frontier/redis/exchanges", "frontier/redis/commands", "frontier/redis/pushed",
          "frontier/redis/leased"),
         "distributed: exchanges with Redis, commands sent, entries pushed and leased"),
    Stat(("frontier/redis/leases_expired", "frontier/redis/leases_lost", "frontier/redis/errors",
          "frontier/redis/seeds"),
         "leases of dead workers returned; releases and completions refused or not sent (the "
         "lease had expired: its fencing token is no longer the one in Redis); failed "
         "exchanges (retried); seeds popped"),
    Stat(("frontier/redis/pushes_repeated",),
         "pushes sent again after an exchange's answer was lost that Redis had queued "
         "already (not queued twice)"),
    Stat(("frontier/redis/held_for_replicas", "frontier/redis/fetches_held_for_replicas"),
         "Redis Cluster: exchanges whose completions and claims' ends were held back because "
         "a written primary's replica had not acknowledged the writes (`WAIT`), sent with a "
         "later exchange; times a leased fetch waited (50 ms each) because its shard's "
         "replica had not acknowledged the lease"),
    Stat(("frontier/redis/restarts", "frontier/redis/refetched_after_restart"),
         "the Redis server (or a cluster shard's node) changed since the last exchange: a "
         "restart or a failover, which may have lost acknowledged writes; the worker let go "
         "of its leases, dropped the completions not yet sent and forgot its local seen set: "
         "pages that may be fetched again for it"),
    Stat(("frontier/redis/leases_fenced",),
         "leased entries let go unfetched: Redis had not answered for half "
         "`CRAWLER_EXT_REDIS_LEASE_TTL` (partition, stall, slow link), so the lease may have "
         "expired and another worker may hold the key"),
    Stat(("shared/rules/redis/errors", "shared/docs/redis/errors"),
         "failed exchanges of the shared rule log and content index (retried); a Redis outage "
         "is logged once per worker, whichever component meets it first, and once more when "
         "Redis answers again"),
    Stat(("dupefilter/redis/filtered", "robots/shared", "shared/docs/received",
          "shared/rules/received", "admission/learned_rules_shared"),
         "distributed: URLs another worker had admitted; robots.txt answers, pages and rules "
         "learned from other workers"),
    Stat(("dupefilter/redis/second_looks", "dupefilter/redis/reclaimed"),
         "distributed: URLs found while another worker's admission of them was not yet "
         "confirmed pushed (looked at again a second later, then every quarter of "
         "`CRAWLER_EXT_REDIS_LEASE_TTL`); of them, admitted again because that worker had "
         "died between admission and push"),
    Stat(("dupefilter/redis/late_claims",),
         "distributed: this worker's admissions confirmed pushed more than a lease's time "
         "after they were made (the worker was stalled or cut off, or a Redis node held its "
         "writes for its replicas): another worker may have admitted the URL again, and the "
         "page be fetched twice"),
    Stat(("dns/nxdomain", "dns/errors", "dns/refused", "dns/prefetched"),
         "negative answers; failures and time-outs; answers refused by the SSRF guard; hosts "
         "resolved at admission"),
    Stat(("shared/rules/commands", "shared/docs/commands"),
         "commands sent to Redis by the shared rule log and content index"),
]

#: a stat of Scrapy's own that the pack's progress and report read
_PART = re.compile(r"<[^>]*>")


def _pattern(key: str) -> re.Pattern[str]:
    parts = _PART.split(key)
    return re.compile("[^/]+".join(re.escape(p) for p in parts) + r"\Z")


_PATTERNS = [_pattern(key) for stat in STATS for key in stat.keys]


def documented(name: str) -> bool:
    """Whether a stat name is listed (``<part>`` matching any one path segment)."""
    return any(p.match(name) for p in _PATTERNS)


def stats_rows() -> list[tuple[str, str]]:
    """(keys as Markdown code, meaning) per row, in the registry's order."""
    return [(", ".join(f"`{k}`" for k in stat.keys), stat.meaning) for stat in STATS]


class Counts:
    """Stat increments of a hot path, kept in a plain dict and added to the crawl's stats by
    :meth:`flush` (a dict update per event instead of a stats-collector call: the frontier
    flushes every ``CRAWLER_EXT_FRONTIER_FLUSH_INTERVAL`` and at close)."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: dict[str, int] = {}

    def inc(self, key: str, count: int = 1) -> None:
        pending = self.pending
        pending[key] = pending.get(key, 0) + count

    def flush(self, stats: object) -> None:
        if self.pending:
            pending, self.pending = self.pending, {}
            if stats is not None:
                for key, count in pending.items():
                    stats.inc_value(key, count)  # type: ignore[attr-defined]
