"""results/paper/disagreement.{csv,md}: layers A and B per backbone x method x tone x round.

Per cell (every debate reply of rounds t >= 1 of one method, pooled over datasets; for an LMAD
method, every local-debate reply of local round t, pooled over datasets and iterations):

* ``a_full``: share of layer-A self-reports saying ``full`` agreement, over the *labelled*
  turns (a reply that did not parse is excluded and counted in ``a_unlabelled``), with its
  Wilson 95 % interval; ``a_changed``: share saying ``changed_mind: yes``.
* ``b_agree`` / ``b_challenge``: share of replies the blind judge reads as stance ``agree`` /
  move ``challenge``, over its labelled replies, Wilson 95 %. Shown only when the judge
  PASSED its battery (``b_status``); a FAILED judge's labels are kept in its Parquet table
  but every B column here is empty.
* ``ab_exact``: over turns labelled by both, the share where A's agreement equals B's
  stance (full = agree, partial = partial, none = disagree); ``ab_kappa``: Cohen's kappa of
  the binary "full agreement" reading of both (NaN when either is constant).
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Iterable, Mapping

from lmad.disagreement_labels import PERSIST_KEPT, PERSIST_REMOVED, SELF_REPORT_STEP, STANCE_OF_AGREEMENT
from lmad.number_format import markdown
from lmad.judge_battery import cohen_kappa
from lmad.plotting import pyplot, save
from lmad.registry import method as registered_method
from lmad.stats import wilson_interval

COLUMNS = ["backbone", "method", "base", "tone", "round", "turns", "a_labelled", "a_unlabelled", "a_full",
           "a_full_lo", "a_full_hi", "a_changed", "b_status", "b_labelled", "b_unlabelled", "b_agree", "b_agree_lo",
           "b_agree_hi", "b_challenge", "b_challenge_lo", "b_challenge_hi", "ab_pairs", "ab_exact", "ab_kappa",
           "c_pairs", "c_removed", "c_kept", "c_excess", "c_questions", "c_p"]


def sign_test(diffs) -> float:
    """Exact two-sided sign test of paired differences (zeros dropped); NaN without a nonzero one."""
    nonzero = [d for d in diffs if d]
    n = len(nonzero)
    if not n:
        return math.nan
    k = min(sum(d > 0 for d in nonzero), sum(d < 0 for d in nonzero))
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def persistence(original: Mapping, removed: Mapping, kept: Mapping) -> dict:
    """Layer C over one cell: label reversion (the re-asked agreement differs from the turn's
    own label) with the tone deleted vs kept, their difference, and an exact sign test over
    questions of the per-question difference (each question weighs the same)."""
    keys = [k for k in original if original[k] and removed.get(k) and kept.get(k)]
    if not keys:
        return {"c_pairs": 0, "c_removed": math.nan, "c_kept": math.nan, "c_excess": math.nan, "c_questions": 0,
                "c_p": math.nan}
    rev = {k: (removed[k]["agreement"] != original[k]["agreement"], kept[k]["agreement"] != original[k]["agreement"])
           for k in keys}
    per_q = defaultdict(list)
    for k, (r, c) in rev.items():
        per_q[k[:2]].append(r - c)  # (dataset, qid)
    removed_rate = sum(r for r, _ in rev.values()) / len(keys)
    kept_rate = sum(c for _, c in rev.values()) / len(keys)
    return {"c_pairs": len(keys), "c_removed": removed_rate, "c_kept": kept_rate, "c_excess": removed_rate - kept_rate,
            "c_questions": len(per_q), "c_p": sign_test([sum(v) / len(v) for v in per_q.values()])}


def _share(k: int, n: int) -> tuple[float, float, float]:
    return (k / n, *wilson_interval(k, n)) if n else (math.nan, math.nan, math.nan)


def disagreement_rows(reports: Iterable[Mapping], labels: Iterable[Mapping], b_status: str) -> list[dict]:
    """``reports``: layer-A ``self_report`` step rows with ``backbone``, ``method``, ``dataset``;
    ``labels``: ``pushback_labels`` rows with ``backbone``; ``b_status``: ``PASSED``,
    ``FAILED`` or ``off``. One row per (backbone, method, round), sorted."""
    a, b = defaultdict(dict), defaultdict(dict)
    c = {PERSIST_REMOVED: defaultdict(dict), PERSIST_KEPT: defaultdict(dict)}
    for r in reports:
        label = json.loads(r["parsed"]) if r["parsed"] else None
        where = a if r.get("step", SELF_REPORT_STEP) == SELF_REPORT_STEP else c[r["step"]]
        where[(r["backbone"], r["method"], r["round"])][(r["dataset"], r["qid"], r.get("iteration", 0), r["agent"])] = label
    use_b = b_status == "PASSED"
    for r in labels:
        label = {"stance": r["stance"], "move": r["move"]} if r["stance"] else None
        b[(r["backbone"], r["method"], r["round"])][(r["dataset"], r["qid"], r.get("iteration", 0), r["agent"])] = label
    rows = []
    for cell in sorted(set(a) | set(b)):
        backbone, name, t = cell
        spec = registered_method(name)
        a_cell, b_cell = a.get(cell, {}), b.get(cell, {}) if use_b else {}
        a_ok = [v for v in a_cell.values() if v]
        b_ok = [v for v in b_cell.values() if v]
        full = _share(sum(v["agreement"] == "full" for v in a_ok), len(a_ok))
        changed = _share(sum(v["changed_mind"] == "yes" for v in a_ok), len(a_ok))[0]
        agree = _share(sum(v["stance"] == "agree" for v in b_ok), len(b_ok))
        challenge = _share(sum(v["move"] == "challenge" for v in b_ok), len(b_ok))
        both = [(a_cell[k], b_cell[k]) for k in a_cell if a_cell[k] and b_cell.get(k)]
        exact = (sum(STANCE_OF_AGREEMENT[x["agreement"]] == y["stance"] for x, y in both) / len(both)
                 if both else math.nan)
        kappa = cohen_kappa([float(x["agreement"] == "full") for x, _ in both],
                            [float(y["stance"] == "agree") for _, y in both])
        rows.append({
            "backbone": backbone, "method": name, "base": spec.base, "tone": spec.tone, "round": t,
            "turns": len(set(a_cell) | set(b.get(cell, {}))), "a_labelled": len(a_ok),
            "a_unlabelled": len(a_cell) - len(a_ok), "a_full": full[0], "a_full_lo": full[1], "a_full_hi": full[2],
            "a_changed": changed, "b_status": b_status, "b_labelled": len(b_ok),
            "b_unlabelled": len(b_cell) - len(b_ok), "b_agree": agree[0], "b_agree_lo": agree[1],
            "b_agree_hi": agree[2], "b_challenge": challenge[0], "b_challenge_lo": challenge[1],
            "b_challenge_hi": challenge[2], "ab_pairs": len(both), "ab_exact": exact, "ab_kappa": kappa,
            **persistence(a_cell, c[PERSIST_REMOVED].get(cell, {}), c[PERSIST_KEPT].get(cell, {}))})
    return rows


def _pct(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.1f}"


def _ci(row: dict, key: str) -> str:
    if not math.isfinite(row[key]):
        return "–"
    return f"{_pct(row[key])} [{_pct(row[key + '_lo'])}, {_pct(row[key + '_hi'])}]"


def disagreement_markdown(rows: list[dict], validation: str, layer_a: bool) -> str:
    head = ["# Is the disagreement real? Layers A and B by method × tone × round", "",
            f"> Layer A (self-report): {'on' if layer_a else 'off (config disagreement.self_report)'}.",
            f"> {validation}", "",
            "Shares in % over labelled turns, Wilson 95 % intervals in brackets; unlabelled turns are excluded "
            "and counted. A–B: exact agreement of A's agreement with B's stance over turns both labelled. C (toned "
            "methods, LMAD's local debate included): share of re-asked labels that differ from the turn's own, "
            "tone instruction deleted / kept; excess = deleted − kept; exact two-sided sign test over questions.", ""]
    header = ["Backbone", "Method", "Tone", "Round", "Turns", "A labelled / unlabelled", "A full agreement %",
              "A changed mind %", "B labelled / unlabelled", "B agree %", "B challenge %", "A–B exact %",
              "A–B κ (full)", "C pairs", "C reverted: removed / kept %", "C excess (pp)", "C sign test p"]
    body = [[r["backbone"], r["base"], r["tone"], str(r["round"]), str(r["turns"]),
             f"{r['a_labelled']} / {r['a_unlabelled']}", _ci(r, "a_full"), _pct(r["a_changed"]),
             f"{r['b_labelled']} / {r['b_unlabelled']}" if r["b_status"] == "PASSED" else r["b_status"],
             _ci(r, "b_agree"), _ci(r, "b_challenge"), _pct(r["ab_exact"]),
             "–" if not math.isfinite(r["ab_kappa"]) else f"{r['ab_kappa']:.2f}",
             str(r["c_pairs"]) if r["c_pairs"] else "–",
             f"{_pct(r['c_removed'])} / {_pct(r['c_kept'])}" if r["c_pairs"] else "–", _pct(r["c_excess"]),
             "–" if not math.isfinite(r["c_p"]) else f"{r['c_p']:.3f} ({r['c_questions']} q)"] for r in rows]
    if not rows:
        return "\n".join(head + ["No debate reply of a round t ≥ 1 in this run (no debating method, or R = 0)."]) + "\n"
    return "\n".join(head) + "\n" + markdown(header, body)


def figure(rows: list[dict], png: str) -> None:
    """Layer A vs layer B by tone: per backbone x base method, the full-agreement share (A) and
    the agree share of the blind judge (B, only when it PASSED), pooled over rounds t >= 1 as
    rows weighted by their labelled counts, with Wilson 95 % intervals."""
    from lmad.tones import TONES

    plt = pyplot()
    panels = sorted({(r["backbone"], r["base"]) for r in rows})
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(3.2 * max(len(panels), 1), 2.8), squeeze=False)
    for ax, (backbone, base) in zip(axes[0], panels):
        for n, (layer, key, count) in enumerate((("A: reports full agreement", "a_full", "a_labelled"),
                                                 ("B: judge reads agreement", "b_agree", "b_labelled"))):
            xs, ys, lo, hi = [], [], [], []
            for i, tone in enumerate(TONES):
                cell = [r for r in rows if (r["backbone"], r["base"], r["tone"]) == (backbone, base, tone)
                        and r[count] and math.isfinite(r[key])]
                k = sum(round(r[key] * r[count]) for r in cell)
                total = sum(r[count] for r in cell)
                if total:
                    share, (low, high) = k / total, wilson_interval(k, total)
                    xs.append(i + (n - 0.5) * 0.15)
                    ys.append(100 * share)
                    lo.append(100 * (share - low))
                    hi.append(100 * (high - share))
            if xs:
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=layer)
        ax.set_xticks(range(len(TONES)), TONES)
        ax.set_ylim(-5, 105)
        ax.set_title(f"{backbone}: {base}")
        ax.set_ylabel("% of labelled turns")
        ax.legend(fontsize=6)
    if not panels:
        axes[0][0].text(0.5, 0.5, "no debate turn", ha="center")
    fig.tight_layout()
    save(fig, png, deterministic=False)
