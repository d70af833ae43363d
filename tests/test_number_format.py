"""One number formatter for every table: half-up, so a value shows the same everywhere."""
from lmad.number_format import fmt, markdown, pct


def test_half_up_everywhere():
    assert pct(0.63125) == "63.13"          # table.md and table1.md alike
    assert fmt(74.335) == "74.34"
    assert fmt(63.125, signed=True) == "+63.13"
    assert fmt(-0.001, signed=True) == "0.00"
    assert fmt(12.25, digits=1) == "12.3"
    assert fmt(None) == pct(float("nan")) == "–"


def test_markdown():
    assert markdown(["a", "b"], [["1", "2"]]) == "| a | b |\n|---|---|\n| 1 | 2 |\n"
