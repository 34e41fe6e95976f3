"""Default settings profile of the reference project: crawler_ext's components switched on.

Other profiles live beside this module (``SCRAPY_SETTINGS_MODULE=settings.<name>``).
"""

BOT_NAME = "crawler_ext"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"
COMMANDS_MODULE = "crawler_ext.commands"

USER_AGENT = "crawler_ext/0.1 (+https://github.com/crawler-ext/crawler_ext)"
ROBOTSTXT_OBEY = True

# Asynchronous caching DNS (twisted.names): TTLs with a floor, negative caching, prefetch;
# CRAWLER_EXT_HOSTS pins names to addresses, the SSRF guard checks every answer.
TWISTED_DNS_RESOLVER = "crawler_ext.dns.CachingResolver"

# Fetch limits for the open web.
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 0
REDIRECT_MAX_TIMES = 5

CONCURRENT_REQUESTS = 64
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_DELAY = 0
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"

# The frontier: Mercator scheduler with per-host politeness.  It hands a host's next request
# out only when the host may be contacted, so Scrapy's own delay stays off.
SCHEDULER = "crawler_ext.frontier.FrontierScheduler"
AUTOTHROTTLE_ENABLED = False
RETRY_ENABLED = True
RETRY_TIMES = 3
RETRY_HTTP_CODES = [429, 500, 502, 503, 504, 522, 524, 408]

EXTENSIONS = {"crawler_ext.statsfile.StatsFile": 0}

# The seen set: a Bloom filter over 64-bit fingerprints of canonical URLs.
DUPEFILTER_CLASS = "crawler_ext.dupefilter.BloomDupeFilter"

# Content dedup: exact hash + SimHash after download (below HttpCompression, 590).  The
# frontier fetches robots.txt itself (RFC 9309, paced like any fetch), so Scrapy's robots
# middleware is off; ROBOTSTXT_OBEY still says whether robots.txt is obeyed.
DOWNLOADER_MIDDLEWARES = {
    # the SSRF guard first: every request the downloader sends passes it (redirects included)
    "crawler_ext.netguard.NetworkGuardMiddleware": 10,
    "crawler_ext.middlewares.ContentDedupMiddleware": 450,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
}

# WARC archive of every fetch (CRAWLER_EXT_WARC_DIR, default ./warcs).
ITEM_PIPELINES = {"crawler_ext.pipelines.WarcPipeline": 800}
