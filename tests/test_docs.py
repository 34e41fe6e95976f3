"""The documentation site: Sphinx builds ``docs/`` with warnings as errors, its settings and
stats tables come from the code's registries, and every stat the code writes is listed."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crawler_ext import config
from crawler_ext.stats import STATS, documented

ROOT = Path(__file__).resolve().parents[1]
#: a stat written by name: stats.inc_value("a/b"), self._inc(f"a/{x}"), set_value, max_value
_WRITES = re.compile(
    r"""(?:inc_value|set_value|max_value|_inc|_count)\(\s*(f?)"([a-z_]+/[^"]*)\"""")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    pytest.importorskip("myst_parser")
    out = tmp_path_factory.mktemp("docs")
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q",
                             "-b", "html", str(ROOT / "docs"), str(out)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def _cells(page: Path) -> list[list[str]]:
    text = page.read_text()
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", text, re.S)
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
             for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)] for row in rows]


def test_the_settings_page_lists_every_setting_with_its_default(built: Path) -> None:
    rows = {cells[0]: cells[1] for cells in _cells(built / "settings.html") if len(cells) == 3}
    assert set(rows) == set(config.SETTINGS)
    for name, spec in config.SETTINGS.items():
        assert rows[name] == config.default_text(spec), name


def test_the_stats_page_lists_the_registry(built: Path) -> None:
    keys = {k.strip() for cells in _cells(built / "stats.html") if len(cells) == 2
            for k in cells[0].split(",")}
    assert keys == {key for stat in STATS for key in stat.keys}


def _listed(name: str, is_f: str) -> bool:
    if not is_f:
        return documented(name)
    # an f-string's {...} is a value, one path segment: some listed key must fit it
    pattern = re.compile("[^/]+".join(map(re.escape, re.split(r"\{[^}]*\}", name))) + r"\Z")
    return any(pattern.match(key) for stat in STATS for key in stat.keys)


def test_every_stat_the_code_writes_is_documented() -> None:
    written = set()
    for path in [*(ROOT / "crawler_ext").rglob("*.py"), *(ROOT / "spiders").rglob("*.py")]:
        written |= set(_WRITES.findall(path.read_text()))
    assert len(written) > 50
    missing = sorted(name for is_f, name in written if not _listed(name, is_f)
                     and not name.startswith(("downloader/", "item_")))
    assert missing == []


def test_the_readme_is_short_and_its_links_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 100
    assert 'ADDONS = {"crawler_ext.Addon": 100}' in readme
    links = re.findall(r"\]\(((?!https?:)[^)#]+)", readme)
    assert len(links) >= 8
    for link in links:
        assert (ROOT / link).exists(), link
