"""The Scrapy adapter of the frontier: the scheduler and the parts it builds.

Everything here speaks Scrapy (requests, signals, the engine, settings); the frontier it drives
(``crawler_ext.frontier``: core, stores, politeness, scoring) imports neither Scrapy nor
Twisted.  The factory (``factory``) reads the settings into plain options and policies
(``roles``: the collaborators grouped by role); the composition root (``wiring``) builds the
parts in dependency order: what flows back up (``events``, ``engine``), the politeness keys'
address waits (``keys``), robots.txt as a prerequisite (``robotsgate``), requests as entries
hold them (``codec``, ``requests``), the way in (``intake``), a shared frontier's callbacks
(``hooks``), requests in flight (``inflight``), the way out (``dispatch``), the operator's
actions (``controls``), completion and commits (``durability``) and the figures
(``progress``).  Beside them: the settings that fight the frontier (``checks``) and the
known-links spider middleware (``knownlinks``).
"""
