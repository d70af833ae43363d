"""The layered-disagreement paper's own tables (Qian, "A Layered Analysis of Disagreement And Answer
Quality in Multi-Agent LLM Debate"; rules paper_layered*, results/paper/layered/), arranged as the
paper reports them from the metrics the disagreement and jury studies already compute:

* **Table 2** (layer A): per backbone, dataset and debating method, the share of *labelled* self-reported
  debate turns saying ``full`` agreement at each tone (friendly, neutral, hostile), pooled over every
  debate round t ≥ 1 and, beside it, over round 1 alone; the drop = hostile − friendly in percentage
  points (negative: hostility lowers reported agreement), from the unrounded shares.
* **Layer B** (blind judge): over the turns both layers labelled, the exact self-report–judge agreement
  (full = agree, partial = partial, none = disagree); the self-report drop (A's full share) and the blind
  drop (the judge's agree share), each hostile − friendly, their ratio blind / self (the collapse ratio:
  1 = the judge reads the same collapse in the text) and their paired gap blind − self in points.
* **Layer C** (persistence): per toned method, the share of re-asked labels that revert (differ from the
  turn's own) with the tone instruction deleted and with it kept, the excess deleted − kept in points and
  the exact sign test over questions, on first-round turns and pooled over every round.
* **Layer D** (probe) and the **jury** (ties / wins, swap-consistency, sensitivity by severity tier): the
  rows of results/paper/probe.csv and jury.csv, reorganized.

Each cell comes from :func:`lmad.studies.disagreement.tables.disagreement_rows` (layers A–C) or from the
studies' own tables; nothing here recomputes a metric those compute.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Mapping, Sequence

from lmad.number_format import fmt, markdown
from lmad.studies.disagreement.tables import disagreement_rows

#: the paper's tone order (its Table 2 reads friendly → neutral → hostile)
TONES = ("friendly", "neutral", "hostile")
#: the scopes of layer A and C: every debate round t >= 1 pooled, and the first round alone
ALL_ROUNDS, FIRST_ROUND = "all", "1"

TABLE2_COLUMNS = ["backbone", "dataset", "method", "rounds", *(f"{t}{s}" for t in TONES for s in ("", "_labelled")),
                  "drop_pp"]
LAYER_B_COLUMNS = ["backbone", "dataset", "method", "b_status", "ab_pairs", "ab_exact", "self_drop_pp",
                   "blind_drop_pp", "collapse_ratio", "drop_gap_pp"]
LAYER_C_COLUMNS = ["backbone", "dataset", "method", "tone", "rounds", "c_pairs", "c_removed", "c_kept", "c_excess_pp",
                   "c_questions", "c_p"]
JURY_COLUMNS = ["backbone", "method_a", "method_b", "status", "decided", "ties", "a_wins", "b_wins", "unvalidated_pairs",
                "consistency", "sensitivity_severe", "sensitivity_moderate", "sensitivity_subtle"]
PROBE_COLUMNS = ["backbone", "valid_cells", "cells", "degenerate", "shift", "shift_lo", "shift_hi", "toward_opponent",
                 "margin_loss", "margin_lo", "margin_hi", "weakened", "error"]


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def _pooled(rows: Iterable[Mapping]) -> list[dict]:
    """Every round of a cell as one cell: the turn's round moves into its key, so a turn of round 2 and
    the same agent's turn of round 1 stay two turns."""
    return [dict(r) | {"iteration": (r.get("iteration", 0), r["round"]), "round": ALL_ROUNDS} for r in rows]


def cells(reports: Sequence[Mapping], labels: Sequence[Mapping], b_status: str) -> list[dict]:
    """:func:`disagreement_rows` per dataset, once over every round pooled (``rounds`` = ``all``) and once
    over round 1 alone (``rounds`` = ``1``); each row gains ``dataset`` and ``rounds``."""
    out = []
    for dataset in sorted({r["dataset"] for r in reports} | {r["dataset"] for r in labels}):
        mine = [r for r in reports if r["dataset"] == dataset]
        judged = [r for r in labels if r["dataset"] == dataset]
        scoped = ((ALL_ROUNDS, _pooled(mine), _pooled(judged)),
                  (FIRST_ROUND, [r for r in mine if r["round"] == 1], [r for r in judged if r["round"] == 1]))
        for scope, a, b in scoped:
            out += [row | {"dataset": dataset, "rounds": scope} for row in disagreement_rows(a, b, b_status)]
    return out


def _by_tone(rows: Sequence[Mapping]) -> dict[tuple, dict[str, dict]]:
    """{(backbone, dataset, base method, rounds): {tone: cell}}."""
    out: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        out[(r["backbone"], r["dataset"], r["base"], r["rounds"])][r["tone"]] = dict(r)
    return out


def _drop(by_tone: Mapping[str, Mapping], key: str) -> float:
    """hostile − friendly of one share, in points (NaN when either tone is absent or unmeasured)."""
    lo, hi = (by_tone.get(t, {}).get(key, math.nan) for t in ("hostile", "friendly"))
    return 100 * (lo - hi) if _finite(lo) and _finite(hi) else math.nan


def table2_rows(rows: Sequence[Mapping]) -> list[dict]:
    """Table 2: one row per (backbone, dataset, method, rounds) with each tone's full-agreement share over
    its labelled turns (NaN where the tone is absent or no turn is labelled) and the drop in points."""
    out = []
    for (backbone, dataset, base, scope), tones in sorted(_by_tone(rows).items()):
        row = {"backbone": backbone, "dataset": dataset, "method": base, "rounds": scope}
        for t in TONES:
            cell = tones.get(t, {})
            row[t] = cell.get("a_full", math.nan)
            row[f"{t}_labelled"] = cell.get("a_labelled", 0)
        row["drop_pp"] = _drop(tones, "a_full")
        out.append(row)
    return out


def _count(share: float, n: int) -> int:
    return round(share * n) if n and _finite(share) else 0


def layer_b_rows(rows: Sequence[Mapping]) -> list[dict]:
    """Layer B over every round: the exact A–B agreement pooled over the tones (each tone's cell
    weighted by its turns labelled by both), the self-report and blind drops, their ratio and gap."""
    out = []
    for (backbone, dataset, base, scope), tones in sorted(_by_tone(rows).items()):
        if scope != ALL_ROUNDS:
            continue
        pairs = sum(c["ab_pairs"] for c in tones.values())
        exact = sum(_count(c["ab_exact"], c["ab_pairs"]) for c in tones.values())
        self_drop, blind_drop = _drop(tones, "a_full"), _drop(tones, "b_agree")
        ratio = blind_drop / self_drop if _finite(self_drop) and _finite(blind_drop) and self_drop else math.nan
        out.append({"backbone": backbone, "dataset": dataset, "method": base,
                    "b_status": next(iter(tones.values()))["b_status"], "ab_pairs": pairs,
                    "ab_exact": exact / pairs if pairs else math.nan, "self_drop_pp": self_drop,
                    "blind_drop_pp": blind_drop, "collapse_ratio": ratio, "drop_gap_pp": blind_drop - self_drop})
    return out


def layer_c_rows(rows: Sequence[Mapping]) -> list[dict]:
    """Layer C: every cell with a re-asked pair (a toned method), first round and every round pooled."""
    return [{"backbone": r["backbone"], "dataset": r["dataset"], "method": r["base"], "tone": r["tone"],
             "rounds": r["rounds"], "c_pairs": r["c_pairs"], "c_removed": r["c_removed"], "c_kept": r["c_kept"],
             "c_excess_pp": 100 * r["c_excess"] if _finite(r["c_excess"]) else math.nan,
             "c_questions": r["c_questions"], "c_p": r["c_p"]}
            for r in sorted(rows, key=lambda r: (r["backbone"], r["dataset"], r["base"], r["tone"], r["rounds"] != "1"))
            if r["c_pairs"]]


def jury_rows(rows: Sequence[Mapping]) -> list[dict]:
    """The jury's rows (results/paper/jury.csv) as the paper reports them: ties over the decided
    (validated) pairs, wins, swap-consistency and sensitivity per tier; counts empty unless it PASSED."""
    out = []
    for r in rows:
        shown = r.get("status") == "PASSED"
        counts = [r.get(k) for k in ("ties", "a_wins", "b_wins")]
        out.append({"backbone": r["backbone"], "method_a": r["method_a"], "method_b": r["method_b"],
                    "status": r["status"], "decided": sum(counts) if shown and None not in counts else None,
                    "ties": counts[0] if shown else None, "a_wins": counts[1] if shown else None,
                    "b_wins": counts[2] if shown else None, "unvalidated_pairs": r.get("unvalidated_pairs") or 0,
                    "consistency": r.get("consistency"),
                    **{f"sensitivity_{t}": r.get(f"sensitivity_{t}") for t in ("severe", "moderate", "subtle")}})
    return out


def probe_rows(rows: Sequence[Mapping]) -> list[dict]:
    """Layer D's rows (results/paper/probe.csv), the paper's columns."""
    return [{k: r.get(k) for k in PROBE_COLUMNS} for r in rows]


# ------------------------------------------------------------------------------------------ Markdown

def pct(x, signed: bool = False) -> str:
    """A share in %, one decimal (the paper's precision), half-up."""
    return fmt(100 * x if _finite(x) else None, signed, 1)


def points(x) -> str:
    """A signed difference in percentage points, one decimal, with a true minus sign."""
    return fmt(x if _finite(x) else None, True, 1).replace("-", "−")


def table2_markdown(rows: Sequence[Mapping]) -> str:
    head = ["# Layered disagreement, Table 2: full agreement in self-reported debate turns by tone", "",
            "Share (%) of the debate turns (rounds t ≥ 1) whose self-report says *full* agreement, over the turns "
            "with an explicit label (n in brackets; an unparsable report is excluded, never counted as agreement), "
            "per tone; drop = hostile − friendly in percentage points, from the unrounded shares (so it can differ "
            "by 0.1 from the difference of the two displayed shares). Rounds: every debate round pooled, and "
            "round 1 alone. – : the tone is not in the run or has no labelled turn.", ""]
    if not rows:
        return "\n".join(head + ["No self-reported debate turn in this run (config disagreement.self_report)."]) + "\n"
    body = [[r["backbone"], r["dataset"], r["method"], r["rounds"],
             *(f"{pct(r[t])} ({r[f'{t}_labelled']})" for t in TONES), points(r["drop_pp"])] for r in rows]
    return "\n".join(head) + "\n" + markdown(["Backbone", "Dataset", "Method", "Rounds", "Friendly %", "Neutral %",
                                              "Hostile %", "Drop (pp)"], body)


def layer_b_markdown(rows: Sequence[Mapping], validation: str) -> str:
    head = ["# Layered disagreement, layer B: the blind judge against the self-reports", "", f"> {validation}", "",
            "Exact agreement: share of the turns labelled by both layers whose self-report (full / partial / none) "
            "equals the judge's stance (agree / partial / disagree), every tone and round pooled. Drops: hostile − "
            "friendly of the self-reported full-agreement share and of the judge's agree share, in points; collapse "
            "ratio = blind drop / self drop (1: the judge reads the same collapse in the reply text); gap = blind − "
            "self drop. Empty unless the judge PASSED its battery.", ""]
    if not rows:
        return "\n".join(head + ["No debate turn labelled in this run."]) + "\n"
    body = [[r["backbone"], r["dataset"], r["method"], r["b_status"], str(r["ab_pairs"]), pct(r["ab_exact"]),
             points(r["self_drop_pp"]), points(r["blind_drop_pp"]),
             fmt(r["collapse_ratio"] if _finite(r["collapse_ratio"]) else None, digits=3), points(r["drop_gap_pp"])]
            for r in rows]
    return "\n".join(head) + "\n" + markdown(["Backbone", "Dataset", "Method", "Judge", "Turns both labelled",
                                              "Exact agreement %", "Self drop (pp)", "Blind drop (pp)",
                                              "Collapse ratio", "Drop gap (pp)"], body)


def layer_c_markdown(rows: Sequence[Mapping]) -> str:
    head = ["# Layered disagreement, layer C: does the dissent persist without its instruction?", "",
            "Per toned method, a sampled share of the debate turns is re-asked for its label twice: with the tone "
            "instruction deleted and with it kept (the noise floor of a re-ask). Reverted: the re-asked label "
            "differs from the turn's own. Excess = deleted − kept in points; p: exact two-sided sign test over "
            "questions of the per-question difference (each question weighs the same). Rounds: round 1 alone, "
            "and every round pooled.", ""]
    if not rows:
        return "\n".join(head + ["No re-asked turn in this run (a toned method and config "
                                 "disagreement.persistence > 0)."]) + "\n"
    body = [[r["backbone"], r["dataset"], r["method"], r["tone"], r["rounds"], str(r["c_pairs"]), pct(r["c_removed"]),
             pct(r["c_kept"]), points(r["c_excess_pp"]),
             "–" if not _finite(r["c_p"]) else f"{fmt(r['c_p'], digits=4)} ({r['c_questions']} q)"] for r in rows]
    return "\n".join(head) + "\n" + markdown(["Backbone", "Dataset", "Method", "Tone", "Rounds", "Pairs",
                                              "Reverted, deleted %", "Reverted, kept %", "Excess (pp)",
                                              "Sign test p"], body)


def jury_markdown(rows: Sequence[Mapping], labels: Mapping[str, str]) -> str:
    head = ["# Layered disagreement, §5 / App. G: the swap-checked jury on the final syntheses", "",
            "Ties / decided: the pairs the jury (majority of the jurors, each verdict kept only when both reading "
            "orders agree) calls a tie, over the pairs of datasets its battery validates; a dataset without gold "
            "(GlobalOpinionQA) gives no battery pair and its pairs are counted apart (unvalidated). Swap-consistency: "
            "the share of a juror's pairs whose two orders agree, mean over the jurors and pairs. Sensitivity: the "
            "share of known-better vs degraded battery pairs decided for the better text, per severity tier. Counts "
            "are shown only when the jury PASSED (see results/paper/jury.md).", ""]
    if not rows:
        return "\n".join(head + ["No jury in this run (config jury.pair)."]) + "\n"
    body = []
    for r in rows:
        a, b = labels.get(r["method_a"], r["method_a"]), labels.get(r["method_b"], r["method_b"])
        shown = r["decided"] is not None
        body.append([r["backbone"], f"{a} (A) vs {b} (B)", r["status"],
                     f"{r['ties']} / {r['decided']}" if shown else r["status"],
                     str(r["a_wins"]) if shown else "–", str(r["b_wins"]) if shown else "–",
                     str(r["unvalidated_pairs"]), fmt(r["consistency"] if _finite(r["consistency"]) else None),
                     *(pct(r[f"sensitivity_{t}"]) for t in ("severe", "moderate", "subtle"))])
    return "\n".join(head) + "\n" + markdown(["Backbone", "Pair", "Jury", "Ties / decided", "A wins", "B wins",
                                              "Unvalidated pairs", "Swap-consistency", "Sensitivity severe %",
                                              "Sensitivity moderate %", "Sensitivity subtle %"], body)


def probe_markdown(rows: Sequence[Mapping]) -> str:
    head = ["# Layered disagreement, layer D: conviction vs direction in the debater's own log-probabilities", "",
            "Per backbone, over the valid cells (its round-0 answer probed after a peer's opposing argument, TREAT, "
            "and after length-matched filler, CONTROL): the shift toward the opponent E(control) − E(treat) and the "
            "margin loss |E(control) − 4| − |E(treat) − 4| on the 1–7 stance scale, with 95 % intervals, and the "
            "shares of cells that moved toward the opponent and whose margin weakened (the paper: arguments weaken "
            "the margin more consistently than they shift its direction). Details: results/paper/probe.md.", ""]
    if not rows:
        return "\n".join(head + ["No probed backbone (config disagreement.probe)."]) + "\n"

    def num(x) -> str:
        return fmt(x if _finite(x) else None)

    body = [[r["backbone"], f"{r['valid_cells']} / {r['cells']}",
             f"{num(r['shift'])} [{num(r['shift_lo'])}, {num(r['shift_hi'])}]", pct(r["toward_opponent"]),
             f"{num(r['margin_loss'])} [{num(r['margin_lo'])}, {num(r['margin_hi'])}]", pct(r["weakened"])]
            if not r.get("error") else [r["backbone"], f"0 / {r['cells']}", f"not measured — {r['error']}", "–", "–",
                                        "–"] for r in rows]
    return "\n".join(head) + "\n" + markdown(["Backbone", "Cells valid / all", "Shift toward opponent [95 % CI]",
                                              "Toward opponent %", "Margin loss [95 % CI]", "Weakened %"], body)
