"""Reference consumers of the crawl's outputs (tests and docs only, not in the package)."""
