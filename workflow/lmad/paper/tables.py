"""Table arithmetic and rendering (CSV, Markdown, LaTeX), in percent.

Table 1, per backbone: one row per dataset plus an ``Avg.`` row (macro-average: each dataset
weighs the same). In every row the *strongest conventional baseline* is the baseline column with
the highest value in that row (ties: the earlier column), and

    Δ(row) = LMAD(row) − strongest baseline(row).

On the ``Avg.`` row that baseline is the strongest *macro-averaged* baseline. This is what the
paper's numbers show: Qwen2.5-7B HotpotQA +4.20 = 67.20 − 63.00 (MAD, the row's best), while its
Avg. Δ +5.05 = 73.05 − 68.00 (Cons., the best macro-average). The best overall value of a row
(LMAD included) is bold; the strongest baseline is underlined.

Numbers are kept at full precision and rounded only for display (``lmad.number_format.fmt``: half-up
to two decimals, the paper's convention: 74.335 → 74.34).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from ..number_format import fmt
from ..stats import macro_average
from . import label

AVG = "Avg."


def _argmax(values: Mapping[str, float], names: Sequence[str]) -> str | None:
    present = [n for n in names if values.get(n) is not None and math.isfinite(values[n])]
    return max(present, key=lambda n: (values[n], -names.index(n))) if present else None


def table1_block(acc: Mapping[tuple[str, str], float], datasets: Sequence[str], columns: Sequence[str],
                 baselines: Sequence[str], target: str = "lmad") -> list[dict]:
    """Rows of one backbone: ``acc[(dataset, method)]`` in percent → one dict per dataset + Avg.

    Each row: ``dataset``, ``values`` {method: acc}, ``strongest`` (baseline), ``best`` (overall),
    ``delta`` (target − strongest, None when either is missing)."""
    rows = []
    for d in datasets:
        rows.append({"dataset": d, "values": {m: acc.get((d, m)) for m in columns}})
    avg = {}
    for m in columns:
        per = {d: acc[(d, m)] for d in datasets if acc.get((d, m)) is not None}
        avg[m] = macro_average(per) if len(per) == len(datasets) else None
    rows.append({"dataset": AVG, "values": avg})
    baselines = [b for b in baselines if b in columns and b != target]
    for row in rows:
        v = row["values"]
        row["strongest"] = _argmax(v, list(baselines))
        row["best"] = _argmax(v, list(columns))
        ok = row["strongest"] is not None and v.get(target) is not None
        row["delta"] = v[target] - v[row["strongest"]] if ok else None
    return rows


def table1_frame_rows(backbone: str, block: list[dict], columns: Sequence[str], ci: tuple | None) -> list[dict]:
    """Flat CSV rows (full precision)."""
    out = []
    for row in block:
        ci_row = ci if row["dataset"] == AVG and ci else (None, None)
        sd = {f"{m}_sd": row["sd"][m] for m in columns} if "sd" in row else {}
        out.append({"backbone": backbone, "dataset": row["dataset"],
                    **{m: row["values"][m] for m in columns}, **sd,
                    "strongest_baseline": row["strongest"], "best": row["best"], "delta": row["delta"],
                    "delta_ci_lo": ci_row[0], "delta_ci_hi": ci_row[1]})
    return out


def _cell(row: dict, m: str, style: str) -> str:
    text = fmt(row["values"][m])
    if text == "–":
        return text
    text += _sd_text(row, m, style)
    if style == "md":
        if m == row["strongest"]:
            text = f"<u>{text}</u>"
        if m == row["best"] or (row["best"] and row["values"][m] == row["values"][row["best"]]):
            text = f"**{text}**"
    else:
        if m == row["strongest"]:
            text = rf"\underline{{{text}}}"
        if m == row["best"] or (row["best"] and row["values"][m] == row["values"][row["best"]]):
            text = rf"\textbf{{{text}}}"
    return text


def _sd_text(row: dict, m: str, style: str) -> str:
    """" ± SD" of a cell pooled over seeded replicates (a row without ``sd`` has none)."""
    sd = row.get("sd", {}).get(m)
    if sd is None:
        return ""
    return f" ± {fmt(sd)}" if style == "md" else rf" $\pm$ {fmt(sd)}"


def _delta_text(row: dict, ci: tuple | None, style: str) -> str:
    text = fmt(row["delta"], signed=True)
    if style == "tex" and text.startswith("-"):
        text = f"${text}$"
    if row["dataset"] == AVG and ci and ci[0] is not None:
        text += f" [{fmt(ci[0], signed=True)}, {fmt(ci[1], signed=True)}]"
    return text


def table1_markdown(blocks: list[tuple[str, list[dict], tuple | None]], columns: Sequence[str]) -> str:
    header = ["Backbone", "Dataset", *[label(m) for m in columns], "Δ [95% CI]"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for backbone, block, ci in blocks:
        for i, row in enumerate(block):
            cells = [backbone if i == 0 else "", label(row["dataset"]),
                     *[_cell(row, m, "md") for m in columns], _delta_text(row, ci, "md")]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _tex_escape(s: str) -> str:
    return s.replace("\\", r"\textbackslash{}").replace("&", r"\&").replace("%", r"\%").replace("_", r"\_") \
        .replace("#", r"\#")


def table1_latex(blocks: list[tuple[str, list[dict], tuple | None]], columns: Sequence[str]) -> str:
    head = " & ".join(["Backbone", "Dataset", *[_tex_escape(label(m)) for m in columns], r"$\Delta$ [95\% CI]"])
    lines = [r"\begin{tabular}{ll" + "r" * len(columns) + "l}", r"\toprule", head + r" \\", r"\midrule"]
    for b, (backbone, block, ci) in enumerate(blocks):
        if b:
            lines.append(r"\midrule")
        for i, row in enumerate(block):
            cells = [_tex_escape(backbone) if i == 0 else "", _tex_escape(label(row["dataset"])),
                     *[_cell(row, m, "tex") for m in columns], _delta_text(row, ci, "tex")]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


# ---- Table 2: gate-activated subset ----

def table2_block(acc: Mapping[tuple[str, str], float], datasets: Sequence[str], methods: Sequence[str]) -> list[dict]:
    """Per-dataset accuracy on the gate-activated subset plus ``Macro Avg.`` over the datasets
    whose subset is non-empty (``acc[(dataset, method)]`` missing = empty subset)."""
    rows = [{"dataset": d, "values": {m: acc.get((d, m)) for m in methods}} for d in datasets]
    macro = {}
    for m in methods:
        per = {d: acc[(d, m)] for d in datasets if acc.get((d, m)) is not None}
        macro[m] = macro_average(per) if per else None
    rows.append({"dataset": "Macro Avg.", "values": macro})
    return rows


def latex(header: list[str], rows: list[list[str]]) -> str:
    lines = [r"\begin{tabular}{" + "l" * 2 + "r" * (len(header) - 2) + "}", r"\toprule",
             " & ".join(_tex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(_tex_escape(c) for c in r) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
