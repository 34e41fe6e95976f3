"""The crawl report: a time series written while the crawl runs
(:class:`~crawler_ext.report.timeseries.CrawlTimeSeries`) and one self-contained HTML file
drawn from it (``python -m crawler_ext.report JOBDIR -o report.html``,
:mod:`crawler_ext.report.render`; needs ``pip install crawler_ext[report]``)."""

from crawler_ext.report.timeseries import CrawlTimeSeries

__all__ = ["CrawlTimeSeries"]
