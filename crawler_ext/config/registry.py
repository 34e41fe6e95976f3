"""Every ``CRAWLER_EXT_*`` setting in one place: default, type, and one line of documentation.

Components read their settings through :func:`get`, which validates the value and raises
:class:`ConfigError` (a one-line message naming the setting) on bad input.  The docs'
settings table (docs/settings.md) is generated from :data:`SETTINGS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crawler_ext.errors import ConfigError
from crawler_ext.config.types import (
    band_weights_value,
    boolean,
    choice,
    dns_servers,
    events_url,
    float_list,
    kind_sizes,
    mapping,
    number,
    optional_str,
    processor_paths,
    str_list,
    strategy_name,
)

__all__ = ["SETTINGS", "ConfigError", "Setting", "band_weights", "default_text",
           "focus_enabled", "get", "validate_all"]


def focus_enabled(settings: Any) -> bool:
    """Whether the crawl is focused: ``CRAWLER_EXT_FOCUS_ENABLED`` or
    ``CRAWLER_EXT_STRATEGY=focus``; ConfigError where the two contradict each other."""
    strategy = get(settings, "CRAWLER_EXT_STRATEGY")
    enabled = get(settings, "CRAWLER_EXT_FOCUS_ENABLED")
    getpriority = getattr(settings, "getpriority", None)
    said = (getpriority("CRAWLER_EXT_FOCUS_ENABLED") is not None if getpriority else
            "CRAWLER_EXT_FOCUS_ENABLED" in settings)
    if enabled and strategy not in ("default", "focus"):
        raise ConfigError(f"CRAWLER_EXT_FOCUS_ENABLED is on but CRAWLER_EXT_STRATEGY={strategy}: "
                          "a focused crawl uses the focus strategy; drop one of the two")
    if strategy == "focus" and said and not enabled:
        raise ConfigError("CRAWLER_EXT_STRATEGY=focus but CRAWLER_EXT_FOCUS_ENABLED is off: "
                          "drop one of the two")
    return bool(enabled) or strategy == "focus"


def band_weights(settings: Any) -> list[float]:
    """CRAWLER_EXT_FRONTIER_BAND_WEIGHTS, or by default each band half the weight of the one
    above it (the lowest 1): a better band goes first almost always, no band starves.  Past
    16 bands the weight halves every 1/15 of the bands instead, so the top band weighs 2^15
    times the lowest whatever their number (a focused crawl's exploration picks in 101 bands
    spread over the scores as they do in 16, and no weight leaves a float's range)."""
    bands = get(settings, "CRAWLER_EXT_FRONTIER_BANDS")
    weights = get(settings, "CRAWLER_EXT_FRONTIER_BAND_WEIGHTS")
    if weights:
        return weights
    step = max(1.0, (bands - 1) / 15)
    return [2.0 ** ((bands - 1 - band) / step) for band in range(bands)]


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    parse: Callable[[Any], Any]
    doc: str


_SPECS = [
    Setting("CRAWLER_EXT_ALLOWED_NETWORKS", [], str_list,
            "CIDRs of private/loopback/... addresses that may be fetched (default: none; SSRF guard)."),
    Setting("CRAWLER_EXT_ALLOWED_SCHEMES", [], str_list,
            "URL schemes besides http, https and data that may be fetched (e.g. ftp,file,s3)."),
    Setting("CRAWLER_EXT_BLOCKLIST", None, optional_str,
            "File of hosts or URL prefixes never to fetch; re-read when it changes."),
    Setting("CRAWLER_EXT_BLOOM_CAPACITY", 1_000_000, number(int, 1000),
            "Initial capacity of the scalable Bloom seen set (it grows past it)."),
    Setting("CRAWLER_EXT_BLOOM_ERROR_RATE", 0.01, number(float, 1e-9),
            "Target false-positive rate of the Bloom seen set."),
    Setting("CRAWLER_EXT_BLOOM_SNAPSHOT_INTERVAL", 60.0, number(float, 1.0),
            "Seconds between snapshots of the seen set to JOBDIR (and one at close)."),
    Setting("CRAWLER_EXT_DEDUP_ACTION", "drop", choice("drop", "mark"),
            "Duplicate pages: drop (not passed to the spider) or mark (passed on, marked)."),
    Setting("CRAWLER_EXT_DEDUP_MIN_WORDS", 20, number(int, 1),
            "Fewer words of main text: judge by the full visible text; fewer of that: by the "
            "exact body only."),
    Setting("CRAWLER_EXT_DEDUP_WORKERS", 1, number(int, 0),
            "Worker processes that fingerprint pages (text extraction, SimHash) off the reactor "
            "thread; 0: on the reactor thread."),
    Setting("CRAWLER_EXT_PROCESSORS_ENABLED", True, boolean,
            "Run every fetched document through its content-type processor (text, links, "
            "metadata; docs/processors.md)."),
    Setting("CRAWLER_EXT_PROCESSORS", {}, processor_paths,
            "MIME type (or type/*) -> processor dotted path, over the defaults and entry "
            "points; None switches a type off."),
    Setting("CRAWLER_EXT_PROCESSOR_WORKERS", 1, number(int, 1),
            "Worker processes that run the processors (and fingerprint documents for dedup)."),
    Setting("CRAWLER_EXT_PROCESSOR_TIMEOUT", 30.0, number(float, 0.1),
            "Seconds one document may take in a processor; then its worker is killed and "
            "replaced, the document counted in processor/<kind>/timeout."),
    Setting("CRAWLER_EXT_PROCESSOR_MEMORY_MB", 512, number(int, 0),
            "Memory (MiB) a processor worker may take beyond its start-up size; 0: no cap."),
    Setting("CRAWLER_EXT_PROCESSOR_MAX_BYTES", 10 * 1024 * 1024, number(int, 1),
            "Size cap of a document: a larger one is cut while it downloads and not parsed."),
    Setting("CRAWLER_EXT_PROCESSOR_MAX_BYTES_BY_KIND", {}, kind_sizes,
            "Per content kind caps over CRAWLER_EXT_PROCESSOR_MAX_BYTES, e.g. pdf=20000000,"
            "image=5000000 (kinds: html, pdf, feed, text, image, xml, other)."),
    Setting("CRAWLER_EXT_FOCUS_ENABLED", False, boolean,
            "Focused crawling: the same as CRAWLER_EXT_STRATEGY=focus (docs/focus.md)."),
    Setting("CRAWLER_EXT_FOCUS_RELEVANT", None, optional_str,
            "Folder of example pages on the topic (HTML or text files)."),
    Setting("CRAWLER_EXT_FOCUS_IRRELEVANT", None, optional_str,
            "Folder of example pages off the topic (HTML or text files)."),
    Setting("CRAWLER_EXT_FOCUS_KEYWORDS", [], str_list,
            "Words or regular expressions of the topic (a list; on the command line "
            "comma-separated), alone or with the examples."),
    Setting("CRAWLER_EXT_FOCUS_THRESHOLD", 0.5, number(float, 0.0, 1.0),
            "Relevance from which a page counts as on topic (harvest, tunnelling)."),
    Setting("CRAWLER_EXT_FOCUS_TUNNEL_DEPTH", 4, number(int, 0),
            "Off-topic pages followed in a row before their links are dropped "
            "(focus/dropped/tunnel)."),
    Setting("CRAWLER_EXT_FOCUS_LEARN", True, boolean,
            "Learn link scores online from the outcomes of fetched links (off: the prior "
            "score alone)."),
    Setting("CRAWLER_EXT_FOCUS_EXPLORATION", 0.05, number(float, 0.0, 1.0),
            "Share of a focused crawl's routing picks that go by the bands' weighted "
            "round-robin instead of best first (frontier/explored)."),
    Setting("CRAWLER_EXT_FOCUS_ACTIVE_HOSTS", 4, number(int, 1),
            "Hosts a focused crawl holds links committed to at once: a link waits in the "
            "front queues, where better ones found later pass it, until a host is free."),
    Setting("CRAWLER_EXT_FOCUS_MAX_UNSCORED", 0, number(int, -1),
            "Fetched pages a focused crawl lets wait for their relevance and link scores "
            "before it holds its next dispatch (focus/dispatch_held): links are chosen with "
            "the scores of the pages already fetched, not ahead of them. -1: never hold."),
    Setting("CRAWLER_EXT_FOCUS_LINK_CONTEXT", False, boolean,
            "Let the learned link scorer read the words around each link too (its sentence "
            "or list item; needs the content processors). Off: no gain measured "
            "(docs/focus.md)."),
    Setting("CRAWLER_EXT_DNS_MIN_TTL", 300.0, number(float, 0),
            "Floor, in seconds, on how long a DNS answer is cached (longer TTLs are kept)."),
    Setting("CRAWLER_EXT_DNS_NEGATIVE_TTL", 60.0, number(float, 0),
            "Seconds a negative DNS answer (NXDOMAIN, no address) is cached."),
    Setting("CRAWLER_EXT_DNS_PREFETCH", True, boolean,
            "Resolve a host when its first URL is admitted, before its turn comes."),
    Setting("CRAWLER_EXT_DNS_SERVERS", [], dns_servers,
            "DNS servers (IP[:port]) of the caching resolver; default: those of /etc/resolv.conf."),
    Setting("CRAWLER_EXT_DOWNLOADER_SLOT_IDLE", 10.0, number(float, 0.1),
            "Seconds Scrapy's downloader keeps an idle host's slot (Scrapy's 60 s kept one "
            "for every host a broad crawl met in the last minute)."),
    Setting("CRAWLER_EXT_FRONTIER_BACKEND", "memory", choice("memory", "disk", "sqlite", "redis"),
            "Frontier storage: memory, disk (out-of-core; the default under JOBDIR), sqlite "
            "(durable, every entry also in memory) or redis (distributed)."),
    Setting("CRAWLER_EXT_FRONTIER_BAND_WEIGHTS", None, band_weights_value,
            "Relative dequeue weights of the priority bands, highest band first; default: "
            "each band half the weight of the band above it (past 16 bands, half every "
            "1/15 of them)."),
    Setting("CRAWLER_EXT_FRONTIER_BANDS", 16, number(int, 1),
            "Number of priority bands (front queues; at most 16 with the Redis frontier); a "
            "focused crawl may keep 101, one a point of score (docs/focus.md)."),
    Setting("CRAWLER_EXT_FRONTIER_DISK_ENGINE", "rocksdb", choice("rocksdb", "sqlite"),
            "Key-value engine of the disk frontier: rocksdb (chosen by benchmark) or sqlite."),
    Setting("CRAWLER_EXT_FRONTIER_DISK_PATH", None, optional_str,
            "Directory of the disk frontier; default JOBDIR/frontier."),
    Setting("CRAWLER_EXT_FRONTIER_FLUSH_INTERVAL", 0.2, number(float, 0.01),
            "Seconds between batched commits of the durable frontier (disk, sqlite)."),
    Setting("CRAWLER_EXT_FRONTIER_HOST_RANK_FILE", None, optional_str,
            "CSV file of host,rank (0..1) feeding the domain-rank term of the score."),
    Setting("CRAWLER_EXT_FRONTIER_LOG_INTERVAL", 60.0, number(float, 0),
            "Seconds between frontier progress lines in the log (0 disables)."),
    Setting("CRAWLER_EXT_FRONTIER_MAX_ACTIVE_HOSTS", 10_000, number(int, 1),
            "Bound on back queues (politeness keys) that hold requests at once."),
    Setting("CRAWLER_EXT_FRONTIER_SQLITE_PATH", None, optional_str,
            "File of the sqlite frontier; default JOBDIR/frontier.sqlite3."),
    Setting("CRAWLER_EXT_HOSTS", {}, mapping,
            "Hosts override: NAME=ADDRESS pairs (or a dict); NAME may be a *.wildcard."),
    Setting("CRAWLER_EXT_HOST_ERROR_BUDGET", 5, number(int, 0),
            "Fetches of a host failed in a row (timeouts, connection errors, 5xx) after which "
            "it is parked: its URLs are kept and reported, and do not hold the crawl open "
            "(0: never)."),
    Setting("CRAWLER_EXT_HOST_PAGE_BUDGET", 0, number(int, 0),
            "Most URLs admitted per host (0: no budget)."),
    Setting("CRAWLER_EXT_HOST_PATTERN_CAP", 1000, number(int, 0),
            "Most URLs per host of one pattern (numbers and ids blanked; 0: no cap)."),
    Setting("CRAWLER_EXT_GC_THRESHOLD", 0, number(int, 0),
            "Allocations between two collections of the garbage collector's young generation, "
            "start-up objects frozen (the broad preset: 10,000, for more pages per CPU-second "
            "and more memory; Python's 700 has requests in flight promoted to the oldest "
            "generation, collected again and again); 0: Python's collector as it is."),
    Setting("CRAWLER_EXT_KEEPALIVE_TIMEOUT", 15.0, number(float, 0),
            "Seconds an idle kept-alive connection to a host stays open (Twisted keeps one "
            "240 s: about 2 KB and a socket a host, on both sides, in a broad crawl)."),
    Setting("CRAWLER_EXT_MAX_OUTLINKS_PER_PAGE", 10_000, number(int, 0),
            "Most links followed from one page (its first ones); the rest are counted in "
            "admission/rejected/max_outlinks (0: no cap)."),
    Setting("CRAWLER_EXT_LEARN_MIN_EVIDENCE", 3, number(int, 1),
            "Duplicates differing in one parameter before that parameter is dropped for a host."),
    Setting("CRAWLER_EXT_MAX_PATTERN_CHAIN", 1, number(int, 0),
            "Most links in a row between empty or duplicate pages of one URL pattern "
            "(calendar traps; distinct pages never count; 0: off)."),
    Setting("CRAWLER_EXT_MAX_PATH_DEPTH", 20, number(int, 1),
            "Most path segments in an admitted URL."),
    Setting("CRAWLER_EXT_MAX_REPEATED_SEGMENTS", 2, number(int, 1),
            "Most times one path segment may repeat in an admitted URL."),
    Setting("CRAWLER_EXT_MAX_URL_LENGTH", 2000, number(int, 16),
            "Longest admitted URL, in characters of its canonical form."),
    Setting("CRAWLER_EXT_MONITOR_MAX_BACKOFF_RATIO", 0.1, number(float, 0),
            "Spidermon monitor: most backoffs (429, 503, errors) per request dispatched."),
    Setting("CRAWLER_EXT_MONITOR_MAX_DUPLICATE_RATIO", 0.5, number(float, 0),
            "Spidermon monitor: most exact and near duplicate pages per page judged."),
    Setting("CRAWLER_EXT_MONITOR_MAX_ROBOTS_FAILURES", 0.2, number(float, 0),
            "Spidermon monitor: most robots.txt fetches that failed (5xx, unreachable)."),
    Setting("CRAWLER_EXT_MONITOR_MAX_TRAP_RATIO", 0.2, number(float, 0),
            "Spidermon monitor: most URLs refused by the trap rules per URL met."),
    Setting("CRAWLER_EXT_NOINDEX_STORE", True, boolean,
            "Store noindex pages (marked) in items and the WARC; false: neither holds them."),
    Setting("CRAWLER_EXT_POLITENESS_BACKOFF_FACTOR", 4.0, number(float, 1.0),
            "Multiplier of a host's delay after a 429/503 or a connection error."),
    Setting("CRAWLER_EXT_POLITENESS_BACKOFF_MAX", 300.0, number(float, 0),
            "Cap, in seconds, of a backed-off delay."),
    Setting("CRAWLER_EXT_POLITENESS_KEY", "host", choice("host", "ip"),
            "Unit of politeness: each host, or each resolved IP address (hosts sharing a server)."),
    Setting("CRAWLER_EXT_POLITENESS_LATENCY_FACTOR", 10.0, number(float, 0),
            "Delay after a response = this factor x its response time (then clamped)."),
    Setting("CRAWLER_EXT_POLITENESS_MAX_DELAY", 60.0, number(float, 0),
            "Upper clamp of the adaptive per-host delay, seconds."),
    Setting("CRAWLER_EXT_POLITENESS_MAX_IN_FLIGHT", 1, number(int, 1),
            "Requests in flight at once per politeness key."),
    Setting("CRAWLER_EXT_POLITENESS_MIN_DELAY", 1.0, number(float, 0),
            "Lower clamp of the adaptive per-host delay, seconds."),
    Setting("CRAWLER_EXT_RECRAWL_ENABLED", False, boolean,
            "Continuous crawling: fetch every HTML page again when its estimated change rate "
            "says so (conditional GET); the crawl runs until stopped."),
    Setting("CRAWLER_EXT_RECRAWL_MAX_INTERVAL", 604_800.0, number(float, 1.0),
            "Longest time, in seconds, before a page is fetched again (recrawl mode)."),
    Setting("CRAWLER_EXT_RECRAWL_MIN_INTERVAL", 300.0, number(float, 0.1),
            "Shortest time, in seconds, between two fetches of a page (recrawl mode)."),
    Setting("CRAWLER_EXT_RECRAWL_SHARE", 0.5, number(float, 0.0, 1.0),
            "Share of a host's fetches that go to refreshes when refreshes and newly found "
            "URLs both wait (either side takes what the other leaves); the refresh budget "
            "per host is this share of the fetches its politeness delay allows."),
    Setting("CRAWLER_EXT_REDIS_CLUSTER", False, boolean,
            "REDIS_URL names a node of a Redis Cluster (also when REDIS_PARAMS' redis_cls is "
            "redis.cluster.RedisCluster)."),
    Setting("CRAWLER_EXT_REDIS_KEY", "%(spider)s:frontier", str,
            "Prefix of the Redis keys of a distributed crawl (%(spider)s: the spider's name)."),
    Setting("CRAWLER_EXT_REDIS_LEASE_TTL", 60.0, number(float, 1.0),
            "Seconds a worker's lease on a host and its request lasts without renewal (crash)."),
    Setting("CRAWLER_EXT_REDIS_SHARE_CONTENT", True, boolean,
            "Share the content index between workers (a log in Redis; see the sizing)."),
    Setting("CRAWLER_EXT_REDIS_SHARDS", 16, number(int, 1),
            "Shards of the Redis frontier (hash tags; spread over a Redis Cluster's slots)."),
    Setting("CRAWLER_EXT_REDIS_WAIT_FOR_SEEDS", False, boolean,
            "Keep a worker running when the shared crawl is finished, waiting for new seeds."),
    Setting("CRAWLER_EXT_RENDER_BLOCK_RESOURCES", ["image", "font", "media"], str_list,
            "Resource types a rendering page may not load (Playwright's names; counted)."),
    Setting("CRAWLER_EXT_RENDER_BROWSER", None, optional_str,
            "Chromium executable the rendering pool launches; default: chromium (or "
            "chromium-browser, google-chrome) on the PATH."),
    Setting("CRAWLER_EXT_RENDER_CONCURRENCY", 2, number(int, 1),
            "Pages rendering at once in the headless browser (its own budget)."),
    Setting("CRAWLER_EXT_RENDER_CONTEXT_PAGES", 200, number(int, 1),
            "Pages rendered in one browser context before a fresh one replaces it."),
    Setting("CRAWLER_EXT_RENDER_ENABLED", False, boolean,
            "Render app-shell pages (little text, scripts, an empty framework root) in headless "
            "Chromium through scrapy-playwright (pip install 'crawler_ext[render]')."),
    Setting("CRAWLER_EXT_RENDER_MAX_WORDS", 300, number(int, 1),
            "A page with this many visible words is never taken for an app shell."),
    Setting("CRAWLER_EXT_RENDER_MEMORY_MB", 1024, number(int, 64),
            "Browser memory (RSS of its processes, MiB) past which the context is replaced."),
    Setting("CRAWLER_EXT_RENDER_MIN_WORDS", 30, number(int, 0),
            "Fewer visible words than this is the app-shell signal 'little text'."),
    Setting("CRAWLER_EXT_RENDER_SETTLE", 5.0, number(float, 0),
            "Seconds a rendered page may take after load to reach network idle."),
    Setting("CRAWLER_EXT_RENDER_THRESHOLD", 4, number(int, 1),
            "App-shell score (signals: little text 2, empty framework root 2, scripts 1, "
            "noscript asking for JavaScript 1, few links 1) at which a page is rendered."),
    Setting("CRAWLER_EXT_RENDER_TIMEOUT", 30.0, number(float, 1),
            "Seconds a page may take to load in the browser (then counted as a timeout)."),
    Setting("CRAWLER_EXT_REPORT_FILE", None, optional_str,
            "JSON-lines time series of the crawl for its report; default JOBDIR/"
            "crawl_report.jsonl (none without JOBDIR)."),
    Setting("CRAWLER_EXT_CONTROL_ENABLED", False, boolean,
            "The control API and live page in the crawl process (docs/control.md)."),
    Setting("CRAWLER_EXT_CONTROL_HOST", "127.0.0.1", str,
            "Address the control API listens on (another than loopback exposes it: the "
            "token is then all that guards the crawl)."),
    Setting("CRAWLER_EXT_CONTROL_PORT", 6080, number(int, 0),
            "Port of the control API (0: a free port; the one taken is in the log and in "
            "JOBDIR/control.json)."),
    Setting("CRAWLER_EXT_CONTROL_TOKEN", None, optional_str,
            "The API's bearer token; unset: generated at start-up, written to "
            "JOBDIR/control.token (mode 0600), or to the log once without JOBDIR."),
    Setting("CRAWLER_EXT_REPORT_INTERVAL", 10.0, number(float, 0),
            "Seconds between samples of the crawl report's time series (0: no report)."),
    Setting("CRAWLER_EXT_ROBOTS_AGENT", None, optional_str,
            "robots.txt user-agent token; default: the product token of USER_AGENT."),
    Setting("CRAWLER_EXT_ROBOTS_MAX_FAILURES", 3, number(int, 1),
            "5xx/unreachable robots.txt answers in a row before the origin's URLs are dropped."),
    Setting("CRAWLER_EXT_ROBOTS_RETRY_BASE", 60.0, number(float, 0),
            "Seconds before fetching a failed (5xx) robots.txt again; doubles per failure."),
    Setting("CRAWLER_EXT_ROBOTS_TIMEOUT", 0.0, number(float, 0),
            "Seconds a robots.txt fetch may take before the origin counts as unreachable "
            "(RFC 9309: disallow all, retried later); 0: DOWNLOAD_TIMEOUT.  A broad crawl sets "
            "a few seconds: a host that cannot serve its robots.txt holds a fetch slot."),
    Setting("CRAWLER_EXT_ROBOTS_TTL", 86400.0, number(float, 1),
            "Seconds a robots.txt answer is cached (at most 24 h)."),
    Setting("CRAWLER_EXT_SEEN_MODE", "bloom", choice("bloom", "bloom+exact"),
            "bloom, or bloom+exact: confirm Bloom hits on an exact on-disk set (no URL skipped)."),
    Setting("CRAWLER_EXT_SIMHASH_DISTANCE", 3, number(int, 0),
            "Pages whose SimHashes differ in at most this many bits are near-duplicates (0-3)."),
    Setting("CRAWLER_EXT_SITEMAPS_ENABLED", False, boolean,
            "Fetch the sitemaps robots.txt lists (else /sitemap.xml) and admit their URLs like "
            "links; <lastmod> is change evidence for recrawl mode."),
    Setting("CRAWLER_EXT_SITEMAPS_MAX_BYTES", 52_428_800, number(int, 1024),
            "Largest sitemap read, in bytes after gunzip (the protocol's limit: 50 MB)."),
    Setting("CRAWLER_EXT_SITEMAPS_MAX_DEPTH", 2, number(int, 0),
            "Most levels of sitemap indexes followed below a site's sitemap."),
    Setting("CRAWLER_EXT_SITEMAPS_MAX_URLS", 50_000, number(int, 1),
            "Most URLs taken from one sitemap (the protocol's limit: 50,000)."),
    Setting("CRAWLER_EXT_STATS_FILE", None, optional_str,
            "Write the final crawl stats as JSON to this file (the StatsFile extension); "
            "<file>.running exists while the engine runs."),
    Setting("CRAWLER_EXT_STRATEGY", "default", strategy_name,
            "The crawling strategy, which orders the crawl: a short name (default: host rank, "
            "page importance by OPIC and depth, learned demotion, the refresh share) or the "
            "dotted path of a class implementing crawler_ext.frontier.strategy."
            "CrawlingStrategy (built by its from_crawler(crawler) if it has one)."),
    Setting("CRAWLER_EXT_URL_SORT_QUERY", False, boolean,
            "Sort query parameters when canonicalising (a heuristic: off by default)."),
    Setting("CRAWLER_EXT_URL_STRIP_SESSION", False, boolean,
            "Drop session parameters (sessionid, sid, PHPSESSID, jsessionid)."),
    Setting("CRAWLER_EXT_URL_STRIP_TRACKING", True, boolean,
            "Drop tracking parameters (utm_*, fbclid, gclid, ...)."),
    Setting("CRAWLER_EXT_WARC_DIR", "warcs", optional_str,
            "Directory of the WARC files and their CDXJ indexes (empty: archiving off)."),
    Setting("CRAWLER_EXT_WET_ENABLED", False, boolean,
            "Write each document's extracted text as WET records, *.warc.wet.gz beside each "
            "WARC file (needs the content processors; docs/outputs.md)."),
    Setting("CRAWLER_EXT_WAT_ENABLED", False, boolean,
            "Write each document's metadata and links as WAT records (JSON), *.warc.wat.gz "
            "beside each WARC file (needs the content processors; docs/outputs.md)."),
    Setting("CRAWLER_EXT_EVENTS_URL", None, events_url,
            "Publish one event per fetch and admission decision to this broker: redis://... "
            "(Redis Streams) or nats://... (NATS JetStream); unset: no event stream "
            "(docs/outputs.md)."),
    Setting("CRAWLER_EXT_EVENTS_STREAM", "crawler_ext.events", str,
            "The Redis stream's key, or the JetStream subject, the events go to."),
    Setting("CRAWLER_EXT_EVENTS_JETSTREAM_NAME", "CRAWLER_EXT_EVENTS", str,
            "The JetStream stream holding the subject (created if missing; no dots)."),
    Setting("CRAWLER_EXT_EVENTS_OVERFLOW", "block", choice("block", "drop"),
            "When the broker is CRAWLER_EXT_EVENTS_MAX_BACKLOG events behind: block (the "
            "crawl waits; nothing lost) or drop (new events dropped, counted)."),
    Setting("CRAWLER_EXT_EVENTS_MAX_BACKLOG", 100_000, number(int, 1),
            "Events waiting for the broker before the overflow policy acts."),
    Setting("CRAWLER_EXT_EVENTS_MAXLEN", 1_000_000, number(int, 0),
            "Redis Streams: the stream is trimmed to about this many entries (0: never)."),
    Setting("CRAWLER_EXT_EVENTS_CLOSE_TIMEOUT", 30.0, number(float, 0),
            "Seconds the crawl's end waits for the events still waiting to be delivered."),
    Setting("CRAWLER_EXT_LINKGRAPH_DIR", None, optional_str,
            "Directory of the crawl's link graph (page and host edges, gzip TSV; "
            "docs/outputs.md); unset: none written."),
    Setting("CRAWLER_EXT_LINKGRAPH_MAX_SIZE", 100 << 20, number(int, 1024),
            "The link graph's files rotate past this many bytes of edges (compressed)."),
    Setting("CRAWLER_EXT_WARC_MAX_SIZE", 1_000_000_000, number(int, 1024),
            "A WARC file is closed and the next one opened past this many bytes."),
    Setting("CRAWLER_EXT_WARC_GZIP_LEVEL", 6, number(int, 1, 9),
            "zlib level of each WARC record's gzip member, 1 (fastest) to 9 (smallest); on "
            "real text 1 takes half the CPU of 6 for 11 % more bytes (docs/broad.md)."),
    Setting("CRAWLER_EXT_WARC_PREFIX", "crawler_ext", str,
            "Prefix of WARC file names (prefix-timestamp-serial-host.warc.gz)."),
]

SETTINGS: dict[str, Setting] = {spec.name: spec for spec in _SPECS}


def get(settings: Any, name: str) -> Any:
    """Read and validate one setting from Scrapy ``settings`` (or any mapping)."""
    spec = SETTINGS[name]
    raw = settings.get(name, spec.default) if settings is not None else spec.default
    if raw is None and spec.default is None:
        return None
    try:
        return spec.parse(raw)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{name}: {exc}") from None


def default_text(spec: Setting) -> str:
    """How the docs' settings table shows a default."""
    if spec.default is None:
        return "unset"
    if isinstance(spec.default, dict):
        return "{}"
    if isinstance(spec.default, list):
        return "[]"
    return str(spec.default)


def validate_all(settings: Any) -> None:
    """Validate every known setting, and reject unknown ``CRAWLER_EXT_*`` names (typos)."""
    for name in SETTINGS:
        get(settings, name)
    for name in settings:
        if str(name).startswith("CRAWLER_EXT_") and name not in SETTINGS:
            raise ConfigError(f"{name}: unknown setting (see the settings in the docs)")
    bands = get(settings, "CRAWLER_EXT_FRONTIER_BANDS")
    weights = band_weights(settings)
    if len(weights) != bands:
        raise ConfigError(f"CRAWLER_EXT_FRONTIER_BAND_WEIGHTS: {len(weights)} weights for "
                          f"CRAWLER_EXT_FRONTIER_BANDS={bands} bands")
    low, high = (get(settings, "CRAWLER_EXT_POLITENESS_MIN_DELAY"),
                 get(settings, "CRAWLER_EXT_POLITENESS_MAX_DELAY"))
    if high < low:
        raise ConfigError(f"CRAWLER_EXT_POLITENESS_MAX_DELAY ({high}) is below "
                          f"CRAWLER_EXT_POLITENESS_MIN_DELAY ({low})")
    get(settings, "CRAWLER_EXT_DNS_SERVERS")
    focus_enabled(settings)
    if get(settings, "CRAWLER_EXT_SIMHASH_DISTANCE") > 3:
        raise ConfigError("CRAWLER_EXT_SIMHASH_DISTANCE: the SimHash index answers 0 to 3")
