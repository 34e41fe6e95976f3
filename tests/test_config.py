"""Settings: validation messages, and the README table lists every setting with its default."""

from __future__ import annotations

import re
from pathlib import Path

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


def test_readme_documents_every_setting_with_its_default() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(CRAWLER_EXT_\w+)` \| ([^|]*) \|", readme, re.M))
    assert set(rows) == set(config.SETTINGS)
    for name, spec in config.SETTINGS.items():
        assert rows[name].strip().strip("`") == config.readme_default(spec), name


def test_settings_that_must_agree_are_checked_together() -> None:
    with pytest.raises(config.ConfigError, match="3 weights"):
        config.validate_all({"CRAWLER_EXT_FRONTIER_BANDS": 2})
    with pytest.raises(config.ConfigError, match="below"):
        config.validate_all({"CRAWLER_EXT_POLITENESS_MIN_DELAY": 5,
                             "CRAWLER_EXT_POLITENESS_MAX_DELAY": 1})
