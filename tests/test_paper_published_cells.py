"""Every published arithmetic of the seed papers, recomputed from their own published cells
through this project's table code, to one unit of the last displayed digit (a paper rounds each cell
before it averages or subtracts, so a recomputed value may differ from the printed one by that much).

Where a paper gives no cells, nothing here can be recomputed and its table's caption says so:
TrueMAD's Table 1 and Tables 4-10 (``tests/test_truemad_tables.py`` checks the caption and the quoted
averaged gains; of Table 11 the summary quotes four AIME CPL cells, recomputed below), When Debate
Helps' Table 20 (§A.12 quotes averages, no cell). Du et al.'s overview prints no accuracy table, only
the cross-model counts (recomputed below); the layered-disagreement paper's shares, drops, ratio and
counts are recomputed below from turn counts that give its printed shares, through lmad.paper.layered.
"""

import math

import polars as pl
import pytest

from lmad.number_format import fmt
from lmad.paper import readout as ro
from lmad.paper.tables import AVG, table1_block, table2_block

DATASETS = ["hotpotqa", "2wikimultihopqa", "musique", "strategyqa"]
COLUMNS = ["cot", "sc", "consensus", "mad", "dmad", "lmad"]
BASELINES = ["cot", "sc", "consensus", "mad", "dmad"]
#: one unit of the last displayed digit (two decimals)
UNIT = 0.01 + 1e-9

# LMAD paper, Table 1, all ten backbones: per dataset (HotpotQA, 2Wiki, MuSiQue, StrategyQA) the
# cells CoT SC Cons. MAD dMAD LMAD and the printed Δ; last line the printed Avg. row and its Δ.
LMAD_TABLE1 = {
    "Qwen2.5-7B": """59.20 62.60 62.60 63.00 55.00 67.20 +4.20
66.40 68.80 72.80 72.40 62.60 76.00 +3.20
45.40 46.20 47.80 47.00 34.20 55.00 +7.20
89.60 90.80 88.80 85.60 64.00 94.00 +3.20
65.15 67.10 68.00 67.00 53.95 73.05 +5.05""",
    "Qwen2.5-14B": """66.60 71.40 68.00 68.20 64.40 71.20 -0.20
78.20 79.40 78.40 76.60 71.80 81.20 +1.80
55.60 56.80 58.40 56.80 48.20 62.60 +4.20
87.80 91.80 91.00 89.60 62.60 93.40 +1.60
72.05 74.85 73.95 72.80 61.75 77.10 +2.25""",
    "Qwen2.5-32B": """71.60 73.00 71.40 70.20 65.40 74.40 +1.40
81.60 80.80 81.60 80.80 77.20 83.40 +1.80
60.60 59.60 58.60 59.00 49.00 62.60 +2.00
94.20 94.00 92.20 90.00 76.60 95.20 +1.00
77.00 76.85 75.95 75.00 67.05 78.90 +1.90""",
    "Qwen3-8B": """79.00 80.80 79.60 79.00 72.40 80.80 0.00
79.60 76.40 80.20 78.60 73.20 83.20 +3.00
54.60 55.80 59.00 57.60 47.80 63.40 +4.40
91.80 91.40 90.80 88.00 68.40 92.80 +1.00
76.25 76.10 77.40 75.80 65.45 80.05 +2.65""",
    "Qwen3-14B": """82.80 83.00 82.60 81.80 76.20 84.60 +1.60
80.00 79.80 81.20 80.40 77.00 82.20 +1.00
57.00 56.60 59.00 59.20 46.20 63.40 +4.20
93.00 92.00 89.40 87.00 68.20 94.40 +1.40
78.20 77.85 78.05 77.10 66.90 81.15 +2.95""",
    "Qwen3-32B": """80.80 82.60 82.80 80.80 67.80 83.40 +0.60
80.80 81.40 81.40 80.00 64.60 82.40 +1.00
60.80 59.80 61.80 59.20 38.20 64.20 +2.40
94.20 94.00 93.60 87.40 59.20 94.80 +0.60
79.15 79.45 79.90 76.85 57.45 81.20 +1.30""",
    "Qwen3.5-4B": """70.67 69.33 72.67 72.67 64.67 79.33 +6.66
82.67 81.33 83.33 81.33 75.33 86.67 +3.34
57.33 54.67 65.33 69.33 45.33 76.00 +6.67
86.67 90.00 89.33 76.67 70.00 94.67 +4.67
74.34 73.83 77.67 75.00 63.83 84.17 +6.50""",
    "Qwen3.5-9B": """74.00 74.00 74.00 72.67 64.67 74.67 +0.67
79.33 81.33 81.33 82.67 74.67 84.67 +2.00
56.67 60.00 66.67 66.67 46.67 71.33 +4.66
90.67 89.33 91.33 87.33 68.67 94.00 +2.67
75.17 76.17 78.33 77.34 63.67 81.17 +2.84""",
    "Gemma3-4B": """68.20 69.40 72.60 72.40 53.20 75.00 +2.40
61.20 62.00 67.40 68.00 49.20 64.20 -3.80
32.00 35.60 41.20 42.80 28.40 44.00 +1.20
91.40 91.20 87.20 83.80 43.80 92.20 +0.80
63.20 64.55 67.10 66.75 43.65 68.85 +1.75""",
    "Gemma3-12B": """79.00 78.00 78.40 78.00 61.60 81.60 +2.60
78.20 77.40 80.00 79.40 62.20 79.80 -0.20
54.00 56.20 57.00 56.40 37.80 60.60 +3.60
95.80 95.60 94.80 91.40 39.80 97.00 +1.20
76.75 76.80 77.55 76.30 50.35 79.75 +2.20""",
}


def _blocks():
    out = {}
    for backbone, text in LMAD_TABLE1.items():
        rows = [line.split() for line in text.splitlines()]
        acc = {(d, m): float(v) for d, row in zip(DATASETS, rows) for m, v in zip(COLUMNS, row)}
        out[backbone] = (table1_block(acc, DATASETS, COLUMNS, BASELINES), rows)
    return out


BLOCKS = _blocks()


def _near(value: float, printed: str) -> bool:
    return abs(value - float(printed)) <= UNIT


@pytest.mark.parametrize("backbone", list(LMAD_TABLE1))
def test_lmad_table1_avg_row_and_every_delta(backbone):
    block, rows = BLOCKS[backbone]
    assert [r["dataset"] for r in block] == [*DATASETS, AVG]
    for m, printed in zip(COLUMNS, rows[-1][:6]):
        assert _near(block[-1]["values"][m], printed), (backbone, m, block[-1]["values"][m], printed)
    for row, paper in zip(block, rows):
        assert _near(row["delta"], paper[6]), (backbone, row["dataset"], row["delta"], paper[6])


def test_lmad_table1_prose_counts_and_ranges():
    """§4 / abstract / conclusion: the Avg. Δ runs from 1.30 to 6.50 and averages 2.94; over the 40
    backbone-dataset cells LMAD beats the row's strongest baseline in 36, ties in one and trails in
    three; on MuSiQue it wins for every backbone, by at most 7.20 (the abstract's "up to 7.20")."""
    avg = [BLOCKS[b][0][-1]["delta"] for b in LMAD_TABLE1]
    assert (fmt(min(avg)), fmt(max(avg))) == ("1.30", "6.50")
    assert _near(sum(avg) / len(avg), "2.94")
    cells = [r["delta"] for b in LMAD_TABLE1 for r in BLOCKS[b][0][:-1]]
    assert len(cells) == 40
    shown = [fmt(d) for d in cells]
    assert (sum(float(s) > 0 for s in shown), shown.count("0.00"), sum(float(s) < 0 for s in shown)) == (36, 1, 3)
    musique = [r["delta"] for b in LMAD_TABLE1 for r in BLOCKS[b][0] if r["dataset"] == "musique"]
    assert min(musique) > 0 and fmt(max(musique)) == "7.20" and fmt(max(cells)) == "7.20"


def test_lmad_table1_every_avg_row_is_won_by_lmad_against_the_best_macro_baseline():
    for backbone, (block, _) in BLOCKS.items():
        assert block[-1]["best"] == "lmad", backbone


def test_lmad_table2_macro_average_and_margins():
    """Table 2 and §4: Strict 55.98, ahead of Concrete and Always by 6.56 and 7.56 points."""
    paper = {"hotpotqa": (59.83, 50.43, 48.72), "2wikimultihopqa": (53.95, 51.24, 50.92),
             "musique": (36.61, 34.25, 32.28), "strategyqa": (73.53, 61.76, 61.76)}
    methods = ["lmad", "lmad-concrete", "lmad-always"]
    acc = {(d, m): v for d, vals in paper.items() for m, v in zip(methods, vals)}
    strict, concrete, always = (table2_block(acc, DATASETS, methods)[-1]["values"][m] for m in methods)
    assert _near(strict, "55.98") and _near(concrete, "49.42") and _near(always, "48.42")
    assert _near(strict - concrete, "6.56") and _near(strict - always, "7.56")


def _readout_frame(cells: dict[tuple[int, str], float]) -> pl.DataFrame:
    """The averaged readout rows the paper prints (one backbone, method and ``Avg.`` dataset)."""
    return pl.DataFrame([{"backbone": "b", "dataset": ro.AVG, "method": "society", "round": t, "finalizer": f,
                          "final_em": v} for (t, f), v in cells.items()])


def test_wdh_a10_round_readout_against_its_own_r0():
    """WDH §5 / §A.10 (Table 13): vote-then-judge applied to the saved rounds gives 78.34 % at R2 and
    78.52 % at R3, 1.89 and 2.07 points above its R0 result; at R0 it raises the vote's 76.09 % to
    76.45 %. So 78.34 − 1.89 = 78.52 − 2.07 = 76.45, recomputed by the readout table's own-R0 lift
    (``with_own_r0``), while its lift over the plain R0 vote is 78.34 − 76.09."""
    frame = ro.with_own_r0(_readout_frame({(0, "vote"): 76.09, (0, "vote_judge"): 76.45,
                                           (2, "vote_judge"): 78.34, (3, "vote_judge"): 78.52}))
    own = {(r["round"], r["finalizer"]): r["gain_own_r0"] for r in frame.to_dicts()}
    assert _near(own[(2, "vote_judge")], "1.89") and _near(own[(3, "vote_judge")], "2.07")
    assert own[(0, "vote_judge")] == 0 and own[(0, "vote")] == 0
    r0 = {f: v for (t, f), v in {(r["round"], r["finalizer"]): r["final_em"] for r in frame.to_dicts()}.items() if t == 0}
    assert _near(78.34 - 1.89, fmt(r0["vote_judge"])) and _near(78.52 - 2.07, fmt(r0["vote_judge"]))
    assert fmt(r0["vote_judge"] - r0["vote"], signed=True) == "+0.36"


def test_own_r0_lift_is_per_cell_and_finalizer():
    """The own-R0 lift never mixes finalizers, datasets or methods, and a cell without a round 0 has none."""
    rows = [{"backbone": "b", "dataset": d, "method": m, "round": t, "finalizer": f, "final_em": v}
            for d, m, t, f, v in [("x", "mad", 0, "vote", 50.0), ("x", "mad", 1, "vote", 55.0),
                                  ("x", "mad", 0, "lvd", 60.0), ("x", "mad", 1, "lvd", 58.0),
                                  ("y", "mad", 1, "vote", 40.0), ("x", "sc", 0, "vote", 10.0)]]
    got = ro.with_own_r0(pl.DataFrame(rows))
    assert got["gain_own_r0"].to_list()[:4] == [0.0, 5.0, 0.0, -2.0]
    assert got["gain_own_r0"][4] is None and got["gain_own_r0"][5] == 0.0
    assert got.height == len(rows)


def test_truemad_table11_aime_cpl_matched_comparisons():
    """TrueMAD §4.3 / Figure 3 (Table 11): on AIME, CPL rises from 0.85 to 1.96 for TrueMAD over MAD and
    from 0.80 to 1.01 for TrueDMAD over DMAD. Fed as one run each through Table 11's own rows and matched
    comparisons: the cells come back as printed, both comparisons rise (by 1.11 and 0.21), and TrueMAD's
    is the column's best (bold)."""
    from lmad.paper import label
    from lmad.paper import truemad as tm

    def run(cpl):
        return {"q": {"aime": {"n": 90, "k": 4, "cpl": cpl, "ame": float("nan"), "cmp": float("nan"), "replies": 0,
                               "scored": 0, "rp": float("nan"), "ei": float("nan"), "nc": float("nan")}}}

    cells = {("qwen3-30b-a3b", m): run(v) for m, v in tm.PUBLISHED_CPL_AIME.items()}
    rows = tm.process_rows(cells, ["aime"], list(tm.PUBLISHED_CPL_AIME))
    assert {r["method"]: fmt(r["cpl"]) for r in rows} == {m: fmt(v) for m, v in tm.PUBLISHED_CPL_AIME.items()}
    deltas = {(d["method"], d["baseline"]): d["cpl"] for d in tm.matched_deltas(rows)}
    assert _near(deltas[("truemad", "mad")], "1.11") and _near(deltas[("truedmad", "dmad-manners")], "0.21")
    assert all(v > 0 for v in deltas.values())
    assert "**1.96 ± n/a**" in tm.process_markdown(rows, ["aime"], label, 11)


# ------------------------------------------------------------------ the layered-disagreement paper
#
# Its cells are shares of counted turns, so each test builds the turns (layer-A self-reports, layer-B
# blind labels, layer-C re-asks, jury verdicts) from counts that give the printed shares, runs them
# through lmad.paper.layered (which reads every metric from lmad.studies.disagreement.tables and the
# jury's summarize) and compares the printed cells to one unit of their last digit.

import json  # noqa: E402

from lmad.disagreement_labels import PERSIST_KEPT, PERSIST_REMOVED, SELF_REPORT_STEP  # noqa: E402
from lmad.paper import du as du_tables  # noqa: E402
from lmad.paper import layered as ly  # noqa: E402

TONED = {"friendly": "chair@friendly", "neutral": "chair", "hostile": "chair@hostile"}
#: one unit of a displayed share or drop in % / pp (one decimal) and of the collapse ratio (three)
UNIT_PCT, UNIT_RATIO = 0.1 + 1e-9, 0.001 + 1e-12


def _turns(tone: str, n: int, full: int, b_agree: int | None = None, b_partial: int = 0, unlabelled: int = 0,
           dataset: str = "globalopinionqa"):
    """``n`` labelled turns of one tone (``full`` of them report full agreement, the rest none) plus
    ``unlabelled`` turns whose report did not parse, spread over rounds 1-3 and three agents; with
    ``b_agree`` the blind judge reads the first ``b_agree`` as agree, the next ``b_partial`` of the
    turns that report none as partial, and the rest as disagree."""
    reports, labels = [], []
    for i in range(n + unlabelled):
        where = {"backbone": "tri3", "method": TONED[tone], "dataset": dataset, "qid": f"q{i // 9}",
                 "round": (i // 3) % 3 + 1, "agent": i % 3}
        agreement = "full" if i < full else "none" if i < n else None
        reports.append(where | {"step": SELF_REPORT_STEP, "parsed": json.dumps(
            {"agreement": agreement, "changed_mind": "no"}) if agreement else ""})
        if b_agree is not None:
            top = max(full, b_agree)
            stance = "agree" if i < b_agree else "partial" if top <= i < top + b_partial else "disagree"
            labels.append(where | {"stance": stance, "move": "challenge"})
    return reports, labels


def _near_pct(value: float, printed: str, unit: float = UNIT_PCT) -> bool:
    return abs(value - float(printed.replace("−", "-"))) <= unit


def _table2(reports, labels=(), status="off"):
    rows = ly.table2_rows(ly.cells(reports, list(labels), status))
    return {r["rounds"]: r for r in rows}[ly.ALL_ROUNDS], ly.table2_markdown(rows)


def test_layered_layer_a_timing_grid_drop():
    """Abstract / §7: full agreement 74.8 % (friendly) vs 24.4 % (hostile) over the 750-debate grid,
    50.4 points apart (750 labelled turns per tone stand in for the grid's)."""
    reports = [r for tone, full in (("friendly", 561), ("hostile", 183)) for r in _turns(tone, 750, full)[0]]
    row, md = _table2(reports)
    assert (ly.pct(row["friendly"]), ly.pct(row["hostile"])) == ("74.8", "24.4")
    assert ly.points(row["drop_pp"]) == "−50.4" and _near_pct(row["drop_pp"], "-50.4")
    assert math.isnan(row["neutral"]) and "– (0)" in md  # the neutral tone is absent: no cell, never 0 %


def test_layered_table2_tri3_pilot_and_its_drop_from_unrounded_shares():
    """§4 / Table 2 and §5: the tri3 pilot's full-agreement shares 69.9 / 50.9 / 19.0 % (friendly /
    neutral / hostile) and the −50.8 pp drop. 69.9 − 19.0 is 50.9, not 50.8: the paper subtracts the
    unrounded shares (here 276/395 = 69.87 % and 75/394 = 19.04 %, 50.84 points apart), so the drop is
    reproduced from the unrounded shares and each printed cell to one unit of its last digit. Three of
    the 1,189 turns have no explicit label (99.7 % labelled) and count in no share."""
    reports = []
    for tone, n, full, unlabelled in (("friendly", 395, 276, 0), ("neutral", 397, 202, 3), ("hostile", 394, 75, 0)):
        reports += _turns(tone, n, full, unlabelled=unlabelled)[0]
    row, md = _table2(reports)
    assert [ly.pct(row[t]) for t in ly.TONES] == ["69.9", "50.9", "19.0"]
    assert [row[f"{t}_labelled"] for t in ly.TONES] == [395, 397, 394] and len(reports) == 1189
    assert ly.points(row["drop_pp"]) == "−50.8" and _near_pct(row["drop_pp"], "-50.8")
    # the difference of the displayed shares is one unit off the printed drop
    assert abs((float(ly.pct(row["hostile"])) - float(ly.pct(row["friendly"]))) - -50.8) <= UNIT_PCT
    assert "| tri3 | globalopinionqa | chair | all | 69.9 (395) | 50.9 (397) | 19.0 (394) | −50.8 |" in md


def test_layered_layer_b_exact_agreement_collapse_ratio_and_gap():
    """§5 layer B: 81.1 % exact self-report–judge agreement, blind-over-self collapse ratio 1.024 and a
    paired drop gap of −1.2 pp, on the pilot's self-reports (−50.8 pp) with the blind judge reading
    79.2 % (313/395) friendly and 27.2 % (107/394) hostile turns as agreeing: a blind drop of −52.08 pp."""
    reports, labels = [], []
    # mismatches: friendly 313 − 276 = 37, hostile 107 − 75 = 32, neutral 155 partial readings of
    # "none": 224 of the 1,186 turns both labelled, 962 exact = 81.1 %
    for tone, n, full, agree, partial, unlabelled in (("friendly", 395, 276, 313, 0, 0),
                                                      ("neutral", 397, 202, 202, 155, 3),
                                                      ("hostile", 394, 75, 107, 0, 0)):
        r, lab = _turns(tone, n, full, agree, partial, unlabelled)
        reports, labels = reports + r, labels + lab
    [b] = ly.layer_b_rows(ly.cells(reports, labels, "PASSED"))
    assert b["ab_pairs"] == 1186 and ly.pct(b["ab_exact"]) == "81.1"
    assert _near_pct(b["self_drop_pp"], "-50.8") and ly.points(b["blind_drop_pp"]) == "−52.1"
    assert fmt(b["collapse_ratio"], digits=3) == "1.024" and abs(b["collapse_ratio"] - 1.024) <= UNIT_RATIO
    assert ly.points(b["drop_gap_pp"]) == "−1.2" and _near_pct(b["drop_gap_pp"], "-1.2")
    md = ly.layer_b_markdown([b], "validation PASSED")
    assert "| 1186 | 81.1 | −50.8 | −52.1 | 1.024 | −1.2 |" in md
    # a judge that failed its battery shows no layer-B cell
    [failed] = ly.layer_b_rows(ly.cells(reports, labels, "FAILED"))
    assert failed["ab_pairs"] == 0 and math.isnan(failed["collapse_ratio"])


def test_layered_layer_c_first_round_excess():
    """§5 / §6 layer C: 23.1 points more first-round dissent labels revert with the hostile instruction
    deleted than kept, on 39 first-round pairs: 12 vs 3 reverted, (12 − 3) / 39 = 23.08 %."""
    reports = []
    for i in range(39):
        where = {"backbone": "tri3", "method": "chair@hostile", "dataset": "globalopinionqa", "qid": f"q{i // 3}",
                 "round": 1, "agent": i % 3}
        own = json.dumps({"agreement": "none", "changed_mind": "no"})
        reports += [where | {"step": SELF_REPORT_STEP, "parsed": own},
                    where | {"step": PERSIST_REMOVED, "parsed": json.dumps(
                        {"agreement": "full" if i < 12 else "none", "changed_mind": "no"})},
                    where | {"step": PERSIST_KEPT, "parsed": json.dumps(
                        {"agreement": "partial" if i < 3 else "none", "changed_mind": "no"})}]
    rows = {r["rounds"]: r for r in ly.layer_c_rows(ly.cells(reports, [], "off"))}
    first = rows[ly.FIRST_ROUND]
    assert first["c_pairs"] == 39 and ly.points(first["c_excess_pp"]) == "+23.1"
    assert _near_pct(first["c_excess_pp"], "23.1") and rows[ly.ALL_ROUNDS]["c_pairs"] == 39
    assert "| 39 | 30.8 | 7.7 | +23.1 |" in ly.layer_c_markdown(list(rows.values()))


def test_layered_jury_299_of_299_ties_and_swap_consistency():
    """§5 / App. G: the three-family, swap-checked jury ties 299/299 debated vs no-debate pairs, with a
    mean swap-consistency of 0.89: per juror 39 of its 299 pairs flip with the reading order (a tie for
    that juror) and the other 260 and its 54 battery pairs (18 per tier) are read alike in both orders:
    314 / 353 = 0.8895."""
    from lmad.studies.jury.stages import _backbone_row
    from lmad.studies.jury.verdicts import summarize

    rows = []
    for juror in ("j1", "j2", "j3"):
        for i in range(299):
            flips = i < 39
            for order in (0, 1):
                rows.append({"kind": "pair", "judge_model": juror, "dataset": "gpqa-diamond", "qid": f"q{i}",
                             "order": order, "winner": ("a" if order == 0 else "b") if flips else "tie", "tier": ""})
        for i, tier in enumerate(t for t in ("severe", "moderate", "subtle") for _ in range(18)):
            for order in (0, 1):
                rows.append({"kind": "battery", "judge_model": juror, "dataset": "gpqa-diamond", "qid": f"b{i}",
                             "order": order, "winner": "a", "tier": tier})
    s = summarize(rows, 0.8, "severe")
    [jury] = ly.jury_rows([_backbone_row("tri3", ["chair-none", "chair"], s, [])])
    assert (jury["ties"], jury["decided"], jury["a_wins"], jury["b_wins"]) == (299, 299, 0, 0)
    assert fmt(jury["consistency"]) == "0.89" and abs(jury["consistency"] - 0.89) <= UNIT
    md = ly.jury_markdown([jury], {})
    assert "| PASSED | 299 / 299 | 0 | 0 | 0 | 0.89 |" in md


# ------------------------------------------------------------------------------- Du et al.

def test_du_cross_model_counts():
    """The overview: ChatGPT 14/20 and Bard 11/20 alone, 17/20 debating jointly (GSM8K) — 70.0, 55.0 and
    85.0 %, through the cross-model table's code (Gemini stands in for Bard)."""
    scored = [{"backbone": b, "dataset": "gsm8k", "method": "mad", "qid": f"q{i}", "score": float(i < k)}
              for b, k in (("gpt-3.5-turbo", 14), ("gemini-2.0-flash", 11), ("chatgpt-gemini", 17)) for i in range(20)]
    models = {"gpt-3.5-turbo": ["gpt-3.5-turbo"], "gemini-2.0-flash": ["gemini-2.0-flash"],
              "chatgpt-gemini": ["gpt-3.5-turbo", "gemini-2.0-flash"]}
    rows = du_tables.cross_model_rows(du_tables.counts(scored), list(models), models, ["gsm8k"], ("mad",))
    cells = {r["backbone"]: du_tables.cell_text(r) for r in rows}
    assert cells == {"gpt-3.5-turbo": "70.0 (14/20)", "gemini-2.0-flash": "55.0 (11/20)",
                     "chatgpt-gemini": "85.0 (17/20)"}
    assert [r["debate"] for r in rows] == ["alone", "alone", "jointly"]
