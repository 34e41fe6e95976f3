"""Default settings profile of the reference project: crawler_ext's components switched on.

Other profiles live beside this module (``SCRAPY_SETTINGS_MODULE=settings.<name>``).
"""

BOT_NAME = "crawler_ext"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"
COMMANDS_MODULE = "crawler_ext.commands"

USER_AGENT = "crawler_ext/0.1 (+https://github.com/crawler-ext/crawler_ext)"
ROBOTSTXT_OBEY = True

# Fetch limits for the open web.
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 0
REDIRECT_MAX_TIMES = 5

CONCURRENT_REQUESTS = 64
CONCURRENT_REQUESTS_PER_DOMAIN = 8
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
# download failures the web causes (DNS, time-outs, resets, size caps): one line per kind,
# then counted in download_errors/<kind>, instead of a traceback each
LOG_FORMATTER = "crawler_ext.monitoring.downloaderrors.DownloadErrorsOnce"
FEED_EXPORT_ENCODING = "utf-8"

# The whole pack through its Scrapy add-on: the frontier scheduler (per-host politeness,
# robots.txt per RFC 9309), the Bloom seen set, the caching DNS resolver (TTL floor, negative
# caching, prefetch, CRAWLER_EXT_HOSTS), the SSRF guard, content dedup, the WARC pipeline
# (CRAWLER_EXT_WARC_DIR, default ./warcs) and the stats file; Scrapy's RobotsTxtMiddleware,
# DOWNLOAD_DELAY and AutoThrottle off.  ROBOTSTXT_OBEY still says whether robots.txt is obeyed.
ADDONS = {"crawler_ext.Addon": 100}

RETRY_ENABLED = True
RETRY_TIMES = 3
RETRY_HTTP_CODES = [429, 500, 502, 503, 504, 522, 524, 408]
