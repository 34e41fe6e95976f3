"""Crawl health as Spidermon monitors (``pip install crawler_ext[monitoring]``): see
:mod:`crawler_ext.monitoring.monitors`."""
