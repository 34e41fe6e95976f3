"""Scrapy commands that crawler_ext's project overrides (``COMMANDS_MODULE``)."""
