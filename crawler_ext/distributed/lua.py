"""The Lua scripts of the distributed mode, kept as ``.lua`` files beside this module."""

from __future__ import annotations

from importlib.resources import files

__all__ = ["lua"]


def lua(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")
