"""The pack's process runtime: which modules run compiled (``native``), the helper processes
a crawl spawns (``spawn``), what a full disk does to a crawl (``diskfull``), Python's
collector tuned for a crawl (``collector``), and Scrapy's own components that cost a crawl
process more than their decisions need, in cheaper forms that decide the same (``stock``)."""
