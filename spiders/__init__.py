"""Spiders of the reference crawler_ext project."""
