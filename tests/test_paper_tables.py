"""The paper's Table 1 arithmetic reproduced by lmad.paper.tables, digit for digit, and its rendering."""
import pytest

from lmad.paper.tables import AVG, fmt, table1_block, table1_latex, table1_markdown
# the LMAD paper's Table 1 as printed, all ten backbones (its Table 2 is checked there too)
from test_paper_published_cells import BASELINES, COLUMNS, DATASETS, LMAD_TABLE1

#: the backbones whose printed Avg. row and Δs the table code reproduces digit for digit
EXACT = ["Qwen2.5-7B", "Qwen2.5-14B", "Qwen3-8B", "Qwen3.5-4B", "Gemma3-4B"]
PAPER_TABLE1 = {b: LMAD_TABLE1[b] for b in EXACT}


def _parse(text):
    rows = [line.split() for line in text.splitlines()]
    acc = {(d, m): float(v) for d, row in zip(DATASETS, rows) for m, v in zip(COLUMNS, row)}
    return acc, rows


@pytest.mark.parametrize("backbone", sorted(PAPER_TABLE1))
def test_table1_reproduces_paper_avg_and_delta(backbone):
    acc, rows = _parse(PAPER_TABLE1[backbone])
    block = table1_block(acc, DATASETS, COLUMNS, BASELINES)
    assert [r["dataset"] for r in block] == [*DATASETS, AVG]
    avg = block[-1]
    assert [fmt(avg["values"][m]) for m in COLUMNS] == rows[-1][:6]
    for row, paper in zip(block, rows):
        assert fmt(row["delta"], signed=True) == paper[6], (backbone, row["dataset"])
        assert row["best"] == "lmad" or row["delta"] <= 0


def test_delta_per_row_is_vs_the_rows_strongest_baseline():
    acc, _ = _parse(PAPER_TABLE1["Qwen2.5-7B"])
    block = table1_block(acc, DATASETS, COLUMNS, BASELINES)
    assert block[0]["strongest"] == "mad"          # HotpotQA 67.20 − 63.00 = +4.20
    assert block[-1]["strongest"] == "consensus"   # Avg. 73.05 − 68.00 = +5.05


def test_table1_marks_strongest_and_best_and_renders():
    acc, _ = _parse(PAPER_TABLE1["Qwen2.5-14B"])
    block = table1_block(acc, DATASETS, COLUMNS, BASELINES)
    md = table1_markdown([("Qwen2.5-14B", block, (1.0, 3.5))], COLUMNS)
    assert "| Qwen2.5-14B | HotpotQA | 66.60 | **<u>71.40</u>** |" in md   # SC beats LMAD there
    assert "+2.25 [+1.00, +3.50]" in md
    tex = table1_latex([("Qwen2.5-14B", block, (1.0, 3.5))], COLUMNS)
    assert r"\underline{74.85}" in tex and r"\textbf{77.10}" in tex and "$-0.20$" in tex
