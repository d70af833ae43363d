"""Rules of rules.smk (docs/studies.md "Pairwise jury"): one juror's swap-checked verdicts on the
final answers of the configured pair of methods plus the sensitivity battery (one batch per
backbone and juror), and the jury table (lmad.studies.jury.verdicts)."""
from __future__ import annotations

import logging
import math

import polars as pl

from lmad import layout
from lmad.atomic import write_csv, write_text
from lmad.backends import open_backend
from lmad.call_accounting import call_columns
from lmad.number_format import markdown
from lmad.studies.jury.verdicts import (DIMENSIONS, build_battery, jury_request, read_reply, required_tiers, summarize,
                                        unvalidated_line)
from lmad.studies.jury.battery import DEGRADATION, TIERS, shortfall
from lmad.prompts import load_prompt
from lmad.registry import method as registered_method
from lmad.schemas import read_table, write_table

log = logging.getLogger(__name__)


def jury(questions: list[str], predictions: list[str], prompt: str, verdicts: str, model: dict, judge_name: str,
         cache_dir: str, pair: list[str], battery: dict, subscores: bool, max_tokens: int, seed: int,
         provenance: dict, syntheses: list[str] = ()) -> None:
    """Every question's pair (``pair[0]`` = A, ``pair[1]`` = B) and every battery pair (config
    ``jury.battery``: ``questions`` per dataset, one pair per tier of ``tiers``), each in both
    orders, as ONE batch; ``subscores``: the four 1-5 sub-scores per answer (JSON) instead of
    1 / 2 / tie. ``predictions``: the two methods' tables of every dataset; ``syntheses``: the last
    round's steps of a method of the pair that ends in a chair (``chair``, ``chair-none``), whose
    answer is the chair's whole synthesis, not its extracted answer line (the layered-disagreement
    paper's jury compares debated and no-debate syntheses). A reply that does not parse is a
    fallback (``parse_error``), never an exception."""
    qs = {}
    for path in questions:
        qs.update({(q["dataset"], q["qid"]): q for q in read_table("questions", path).to_dicts()})
    answers = {}
    for path in predictions:
        for p in read_table("predictions", path).to_dicts():
            answers[(p["dataset"], p["qid"], p["method"])] = p["prediction"] or ""
    for path in syntheses:
        at = layout.parse(path)
        for r in read_table("debate_steps", path).filter(pl.col("step") == "chair").to_dicts():
            answers[(at.dataset, r["qid"], at.method)] = r["response"] or ""
    items = [{"kind": "pair", "dataset": d, "qid": q, "tier": "", "a": answers[(d, q, pair[0])],
              "b": answers[(d, q, pair[1])]}
             for (d, q) in sorted(qs) if (d, q, pair[0]) in answers and (d, q, pair[1]) in answers]
    items += [{"kind": "battery", **b} for b in build_battery(qs.values(), battery["questions"], seed,
                                                              battery["tiers"])]
    template = load_prompt(prompt)
    jobs = [(it, order) for it in items for order in (0, 1)]
    requests = [jury_request(template, qs[(it["dataset"], it["qid"])],
                             *((it["a"], it["b"]) if order == 0 else (it["b"], it["a"])), max_tokens, subscores)
                for it, order in jobs]
    backend = open_backend(model, cache_dir) if requests else None
    replies = backend.generate(requests) if backend else []
    rows = []
    for (it, order), reply in zip(jobs, replies):
        rows.append({**{k: it[k] for k in ("kind", "dataset", "qid", "tier", "a", "b")}, "order": order,
                     "judge_model": judge_name, "raw": reply.text, **read_reply(reply.text, order, subscores),
                     **call_columns(reply)})
    write_table("jury_verdicts", rows, verdicts, provenance)
    log.info("%s: %d pairs x 2 orders (%d battery pairs), %d fallbacks; %s", judge_name, len(items),
             sum(it["kind"] == "battery" for it in items), sum(bool(r["parse_error"]) for r in rows),
             backend.stats() if backend else "no pairs")


def _pct(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.1f} %"


def _num(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.2f}"


def _backbone_row(backbone: str, pair: list[str], s: dict, shortfalls: list[str]) -> dict:
    """One backbone's CSV row: counts and sub-score means only when the jury passed (else None)."""
    shown = s["passed"]
    status = "PASSED" if shown else "FAILED" if s["battery"] else "UNVALIDATED"
    sub = s["subscores"]
    row = {"backbone": backbone, "method_a": pair[0], "method_b": pair[1], "status": status, "pairs": s["pairs"],
           "a_wins": s["a_wins"] if shown else None, "ties": s["ties"] if shown else None,
           "b_wins": s["b_wins"] if shown else None, "consistency": s["consistency"],
           "sensitivity": s["sensitivity"], "battery": s["battery"], "replies": s["replies"],
           "fallbacks": sum(s["fallbacks"].values()), "unvalidated_pairs": sum(s["unvalidated"].values()),
           "unvalidated_datasets": ", ".join(s["unvalidated"]), "battery_short": "; ".join(shortfalls),
           "scored_replies": sub["scored_replies"]}
    for t in TIERS:
        row[f"battery_{t}"] = s["tier_pairs"].get(t, 0)
        row[f"sensitivity_{t}"] = s["tier_sensitivity"].get(t)
    for d in DIMENSIONS:
        row[f"{d}_a"] = sub["a"][d] if shown else None
        row[f"{d}_b"] = sub["b"][d] if shown else None
        row[f"{d}_same_both_orders"] = sub["same_both_orders"][d]
    return row


def jury_table(verdicts: list[str], csv: str, md: str, pair: list[str], min_rate: float, provenance: dict,
               battery: dict | None = None, subscores: bool | None = None) -> None:
    """results/paper/jury.{csv,md}: per backbone, A wins / ties / B wins of the swap-checked jury,
    its swap-consistency, its battery sensitivity per severity tier and its fallbacks; in the
    sub-score mode the mean sub-score of each method per dimension, with the share of scores the
    two orders agree on. A jury below the floor is FAILED, one without any battery pair (a run
    without gold: GlobalOpinionQA) UNVALIDATED, and their verdicts and means are not shown; nor are
    the pairs of a dataset without battery pairs, which the report names. ``battery``: config
    ``jury.battery`` (the pass tier; the size the report checks the battery against); ``subscores``:
    config ``jury.subscores`` (None: the sub-score table when some reply was scored)."""
    battery = {"questions": 18, "tiers": list(TIERS), "pass_tier": TIERS[0], **(battery or {})}
    required = required_tiers(battery["pass_tier"])
    by_backbone = {}
    for path in verdicts:
        by_backbone.setdefault(layout.parse(path).backbone, []).extend(read_table("jury_verdicts", path).to_dicts())
    a, b = (registered_method(m).label for m in pair)
    rows, lines = [], [f"# Swap-checked pairwise jury: {a} (A) vs {b} (B)", ""]
    for backbone, rs in sorted(by_backbone.items()):
        s = summarize(rs, min_rate, battery["pass_tier"])
        items = {(r["dataset"], r["qid"], r["tier"]) for r in rs if r["kind"] == "battery"}
        short = shortfall([{"dataset": d, "qid": q} for d, q, _ in items], {d for d, *_ in items},
                          battery["questions"], battery["tiers"])
        row = _backbone_row(backbone, pair, s, short)
        rows.append(row)
        jurors = ", ".join(f"`{j}` {_pct(v)}" for j, v in sorted(s["juror_consistency"].items()))
        on = f" ({', '.join(f'`{d}`' for d in s['validated'])})" if s["validated"] else ""
        tiers = "; ".join(f"{t} {_pct(v)} of {s['tier_pairs'][t]}" for t, v in s["tier_sensitivity"].items())
        fallbacks = ", ".join(f"`{j}` {n}" for j, n in s["fallbacks"].items())
        lines.append(f"> `{backbone}`: jury {row['status']} — {s['reason']}. Swap-consistency per juror: {jurors}; "
                     f"sensitivity {_pct(s['sensitivity'])} on {s['battery']} known-better vs degraded pairs{on}"
                     + (f" (per tier: {tiers})" if tiers else "") + f". Fallbacks (unparsable replies, ties) of "
                     f"{s['replies']} replies: {fallbacks or 'none'}."
                     + (f" Battery short: {'; '.join(short)}." if short else "")
                     + (f" {unvalidated_line(s['unvalidated'])}" if s["unvalidated"] else ""))
        if s["passed"] and s["tier_sensitivity"]:
            missed = [t for t in TIERS if t in s["tier_sensitivity"] and t not in s["resolves"]]
            lines[-1] += (f" Its ties rule out differences of the {', '.join(s['resolves'])} tier"
                          + (f" only; {', '.join(missed)} differences stay unresolved." if missed else "s."))
    write_csv(csv, pl.DataFrame(rows) if rows else pl.DataFrame())
    gate = " and ".join(required)
    lines += ["", "A verdict counts only when both orders agree (else a tie); the jury is the strict majority of "
              "its jurors (else a tie). In the sub-score mode an order's winner is the answer with the higher sum of "
              "its four 1-5 sub-scores (equal sums: a tie); an unparsable reply is a fallback and makes the pair a "
              f"tie for its juror. Sensitivity: the share of battery pairs the jury decides for the known-better "
              f"text; the jury passes only if its swap-consistency and its sensitivity on the {gate} tier "
              f"each reach {100 * min_rate:.0f} %. A FAILED or UNVALIDATED jury's verdicts and means are not "
              "shown, nor are those of a dataset whose questions gave no battery pair (no gold: an opinion task).",
              "", "Battery tiers (each degraded text against the same known-better text): "
              + "; ".join(f"**{t}**: {DEGRADATION[t]}" for t in battery["tiers"]) + ".", ""]
    body = [[r["backbone"], str(r["pairs"]), *(str(r[k]) if r[k] is not None else r["status"]
                                               for k in ("a_wins", "ties", "b_wins")),
             _pct(r["consistency"]), *(_pct(r[f"sensitivity_{t}"]) for t in TIERS), _pct(r["sensitivity"]),
             f"{r['fallbacks']} / {r['replies']}"] for r in rows]
    text = markdown(["Backbone", "Questions", f"{a} wins", "Ties", f"{b} wins", "Swap-consistency",
                     *(f"Sensitivity {t}" for t in TIERS), "Sensitivity (all tiers)", "Fallbacks / replies"], body)
    if rows and (subscores if subscores is not None else any(r["scored_replies"] for r in rows)):
        sub = [[r["backbone"], d, *(_num(r[f"{d}_{x}"]) if r[f"{d}_{x}"] is not None else r["status"]
                                    for x in ("a", "b")), _pct(r[f"{d}_same_both_orders"])]
               for r in rows for d in DIMENSIONS]
        text += ("\n\nSub-scores (1-5): the mean over every parsed reply to the question pairs of the validated "
                 "datasets (both orders, every juror); \"same in both orders\": the share of (pair, juror, answer) "
                 "whose score on that dimension did not change when the positions were swapped.\n\n"
                 + markdown(["Backbone", "Dimension", f"{a} mean", f"{b} mean", "Same in both orders"], sub))
    write_text(md, "\n".join(lines) + "\n" + text)
    log.info("jury table: %d backbones", len(rows))
