"""The Scrapy adapter of the frontier: the scheduler and the parts it builds.

Everything here speaks Scrapy (requests, signals, the engine, settings); the frontier it drives
(``crawler_ext.frontier``: core, stores, politeness, scoring) imports neither Scrapy nor
Twisted.  Parts, in the order the factory builds them: the politeness keys' address waits
(``keys``), robots.txt as a prerequisite (``robotsgate``), requests as entries hold them
(``codec``, ``requests``), the way in (``intake``), requests in flight (``inflight``), the
way out (``dispatch``), completion and commits (``durability``), the figures (``progress``),
the engine's internals (``engine``), the settings that fight the frontier (``checks``) and the
known-links spider middleware (``knownlinks``).
"""
