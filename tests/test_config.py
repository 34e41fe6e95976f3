"""Settings: validation messages (the docs' table of every setting: tests/test_docs.py)."""

from __future__ import annotations


import pytest

from crawler_ext import config


def test_bad_values_name_the_setting() -> None:
    with pytest.raises(config.ConfigError, match="CRAWLER_EXT_FRONTIER_BANDS"):
        config.get({"CRAWLER_EXT_FRONTIER_BANDS": "three"}, "CRAWLER_EXT_FRONTIER_BANDS")
    with pytest.raises(config.ConfigError, match="CRAWLER_EXT_FRONTIER_BACKEND"):
        config.get({"CRAWLER_EXT_FRONTIER_BACKEND": "mongo"}, "CRAWLER_EXT_FRONTIER_BACKEND")
    with pytest.raises(config.ConfigError, match="unknown setting"):
        config.validate_all({"CRAWLER_EXT_FRONTEIR_BANDS": 3})


def test_values_from_the_command_line_are_parsed() -> None:
    assert config.get({"CRAWLER_EXT_HOSTS": "*.web.test=127.0.0.1,a.b=127.0.0.2"},
                      "CRAWLER_EXT_HOSTS") == {"*.web.test": "127.0.0.1", "a.b": "127.0.0.2"}
    assert config.get({"CRAWLER_EXT_HOSTS": '{"x": "127.0.0.1"}'}, "CRAWLER_EXT_HOSTS") == {
        "x": "127.0.0.1"}
    assert config.get({"CRAWLER_EXT_FRONTIER_BAND_WEIGHTS": "4,1"},
                      "CRAWLER_EXT_FRONTIER_BAND_WEIGHTS") == [4.0, 1.0]
    assert config.get({"CRAWLER_EXT_URL_SORT_QUERY": "true"}, "CRAWLER_EXT_URL_SORT_QUERY") is True


def test_settings_that_must_agree_are_checked_together() -> None:
    with pytest.raises(config.ConfigError, match="3 weights"):
        config.validate_all({"CRAWLER_EXT_FRONTIER_BANDS": 2,
                             "CRAWLER_EXT_FRONTIER_BAND_WEIGHTS": "5,2,1"})
    # unset, the weights follow the bands: each band half the weight of the one above
    assert config.band_weights({"CRAWLER_EXT_FRONTIER_BANDS": 3}) == [4.0, 2.0, 1.0]
    with pytest.raises(config.ConfigError, match="below"):
        config.validate_all({"CRAWLER_EXT_POLITENESS_MIN_DELAY": 5,
                             "CRAWLER_EXT_POLITENESS_MAX_DELAY": 1})
