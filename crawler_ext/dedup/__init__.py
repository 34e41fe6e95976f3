"""Content deduplication: text extraction (``extract``), 64-bit SimHash (``simhash``), the index of
pages seen (``index``) and the downloader middleware that consults it (``middleware``)."""
