"""How numbers and tables look in every Markdown, LaTeX and CSV-for-people output: one formatter,
half-up (the paper's convention: 74.335 → 74.34, 0.63125 as a percentage → 63.13), and one
Markdown table. Values are kept at full precision and rounded only here."""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal


def fmt(x: float | None, signed: bool = False, digits: int = 2) -> str:
    """Half-up display with ``digits`` decimals (``signed``: a leading + on positive values);
    '–' when missing or not finite."""
    if x is None or not math.isfinite(x):
        return "–"
    # round(x, 9) first: 63.125 stored as 63.12499999999 still shows as 63.13
    d = Decimal(repr(round(x, 9))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    if d == 0:
        d = abs(d)
    return f"{d:+}" if signed and d != 0 else f"{d}"


def pct(fraction: float | None, signed: bool = False, digits: int = 2) -> str:
    """A fraction (0..1) shown as a percentage."""
    return fmt(None if fraction is None else 100 * fraction, signed, digits)


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"
