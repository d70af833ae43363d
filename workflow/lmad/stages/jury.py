"""Rules of rules/jury.smk (docs/studies.md "Pairwise jury"): one juror's swap-checked verdicts on the
final answers of the configured pair of methods plus the sensitivity battery (one batch per
backbone and juror), and the jury table (lmad.jury)."""
from __future__ import annotations

import logging
import math

import polars as pl

from .. import layout
from ..atomic import write_csv, write_text
from ..backends import open_backend
from ..cost import call_columns
from ..number_format import markdown
from ..jury import build_battery, jury_request, parse_choice, summarize, unvalidated_line, winner
from ..prompts import load_prompt
from ..registry import method as registered_method
from ..schemas import read_table, write_table

log = logging.getLogger(__name__)


def jury(questions: list[str], predictions: list[str], prompt: str, verdicts: str, model: dict, judge_name: str,
         cache_dir: str, pair: list[str], battery_questions: int, max_tokens: int, seed: int,
         provenance: dict) -> None:
    """Every question's pair (``pair[0]`` = A, ``pair[1]`` = B) and every battery pair, each in
    both orders, as ONE batch. ``predictions``: the two methods' tables of every dataset."""
    qs = {}
    for path in questions:
        qs.update({(q["dataset"], q["qid"]): q for q in read_table("questions", path).to_dicts()})
    answers = {}
    for path in predictions:
        for p in read_table("predictions", path).to_dicts():
            answers[(p["dataset"], p["qid"], p["method"])] = p["prediction"] or ""
    items = [{"kind": "pair", "dataset": d, "qid": q, "a": answers[(d, q, pair[0])], "b": answers[(d, q, pair[1])]}
             for (d, q) in sorted(qs) if (d, q, pair[0]) in answers and (d, q, pair[1]) in answers]
    items += [{"kind": "battery", **b} for b in build_battery(qs.values(), battery_questions, seed)]
    template = load_prompt(prompt)
    jobs = [(it, order) for it in items for order in (0, 1)]
    requests = [jury_request(template, qs[(it["dataset"], it["qid"])], *((it["a"], it["b"]) if order == 0
                                                                         else (it["b"], it["a"])), max_tokens)
                for it, order in jobs]
    backend = open_backend(model, cache_dir) if requests else None
    replies = backend.generate(requests) if backend else []
    rows = []
    for (it, order), reply in zip(jobs, replies):
        choice = parse_choice(reply.text)
        rows.append({**{k: it[k] for k in ("kind", "dataset", "qid", "a", "b")}, "order": order,
                     "judge_model": judge_name, "raw": reply.text, "choice": choice, "winner": winner(choice, order),
                     **call_columns(reply)})
    write_table("jury_verdicts", rows, verdicts, provenance)
    log.info("%s: %d pairs x 2 orders (%d battery pairs); %s", judge_name, len(items),
             sum(it["kind"] == "battery" for it in items), backend.stats() if backend else "no pairs")


def _pct(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.1f} %"


def jury_table(verdicts: list[str], csv: str, md: str, pair: list[str], min_rate: float, provenance: dict) -> None:
    """results/paper/jury.{csv,md}: per backbone, A wins / ties / B wins of the swap-checked jury,
    with its swap-consistency and sensitivity; a jury below the floor is FAILED, one without any
    battery pair (a run without gold: GlobalOpinionQA) UNVALIDATED, and their verdicts are not
    shown; nor are the pairs of a dataset without battery pairs, which the report names."""
    by_backbone = {}
    for path in verdicts:
        by_backbone.setdefault(layout.parse(path).backbone, []).extend(read_table("jury_verdicts", path).to_dicts())
    a, b = (registered_method(m).label for m in pair)
    rows, lines = [], [f"# Swap-checked pairwise jury: {a} (A) vs {b} (B)", ""]
    for backbone, rs in sorted(by_backbone.items()):
        s = summarize(rs, min_rate)
        status = "PASSED" if s["passed"] else "FAILED" if s["battery"] else "UNVALIDATED"
        jurors = ", ".join(f"`{j}` {_pct(v)}" for j, v in sorted(s["juror_consistency"].items()))
        on = f" ({', '.join(f'`{d}`' for d in s['validated'])})" if s["validated"] else ""
        lines.append(f"> `{backbone}`: jury {status} — {s['reason']}. Swap-consistency per juror: {jurors}; "
                     f"sensitivity {_pct(s['sensitivity'])} on {s['battery']} known-better vs known-worse pairs{on}."
                     + (f" {unvalidated_line(s['unvalidated'])}" if s["unvalidated"] else ""))
        shown = s["passed"]
        rows.append({"backbone": backbone, "method_a": pair[0], "method_b": pair[1], "status": status,
                     "pairs": s["pairs"], "a_wins": s["a_wins"] if shown else None,
                     "ties": s["ties"] if shown else None, "b_wins": s["b_wins"] if shown else None,
                     "consistency": s["consistency"], "sensitivity": s["sensitivity"], "battery": s["battery"],
                     "unvalidated_pairs": sum(s["unvalidated"].values()),
                     "unvalidated_datasets": ", ".join(s["unvalidated"])})
    write_csv(csv, pl.DataFrame(rows) if rows else pl.DataFrame())
    body = [[r["backbone"], str(r["pairs"]), *(str(r[k]) if r[k] is not None else r["status"]
                                               for k in ("a_wins", "ties", "b_wins")),
             _pct(r["consistency"]), _pct(r["sensitivity"])] for r in rows]
    lines += ["", "A verdict counts only when both orders agree (else a tie); the jury is the strict majority of "
              "its jurors (else a tie). A FAILED or UNVALIDATED jury's verdicts are not shown, nor are those of a "
              "dataset whose questions gave no known-better vs known-worse pair (no gold: an opinion task).", ""]
    write_text(md, "\n".join(lines) + "\n" + markdown(
        ["Backbone", "Questions", f"{a} wins", "Ties", f"{b} wins", "Swap-consistency", "Sensitivity"], body))
    log.info("jury table: %d backbones", len(rows))
