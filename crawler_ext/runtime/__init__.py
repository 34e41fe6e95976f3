"""The pack's process runtime: which modules run compiled (``native``), the helper processes
a crawl spawns (``spawn``), and what a full disk does to a crawl (``diskfull``)."""
