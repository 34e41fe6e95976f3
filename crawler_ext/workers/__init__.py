"""Every core of a machine on one crawl: ``python -m crawler_ext.workers -n N -- ARGS...``
starts N Scrapy processes on one shared frontier in Redis (one politeness for all), prints one
merged progress line, forwards SIGINT/SIGTERM for a clean stop and leaves a merged stats file.

The pure part -- merging the workers' stats (:mod:`~crawler_ext.workers.merge`) -- is apart
from the process runner (:mod:`~crawler_ext.workers.cli`)."""
