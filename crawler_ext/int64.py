"""64-bit fingerprints in SQLite, whose INTEGER is signed: map them to and from int64."""

from __future__ import annotations

__all__ = ["to_signed", "to_unsigned"]

_SIGN = 1 << 63


def to_signed(value: int) -> int:
    return value - (1 << 64) if value >= _SIGN else value


def to_unsigned(value: int) -> int:
    return value + (1 << 64) if value < 0 else value
