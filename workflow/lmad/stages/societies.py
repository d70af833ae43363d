"""Rules ``society_pool``, ``society_select`` and ``paper_societies`` (rules/societies.smk):
coverage-selected societies (library ``lmad.societies``).

``society_pool``: every pool agent answers every question of every dataset — one backend batch
per set of weights (the unperturbed model; each seeded perturbation is its own model load), all
questions × agents of those weights in it. ``society_select``: AC-Greedy, SC-Greedy, top-K and the
default personas on the selection split, each evaluated on the disjoint evaluation split (no
model calls). ``paper_societies``: results/paper/societies.{csv,md} over backbones, and each
debating method run with a society (``mad+ac-greedy``) beside its plain method on each split
(results/paper/society_debates.csv): only the evaluation split is held out from the selection.
"""
from __future__ import annotations

import logging
from collections import defaultdict

import polars as pl

from .. import layout
from .. import societies as so
from ..answers import gold_correct, golds_of
from ..atomic import write_csv, write_text
from ..backends import open_backend
from ..number_format import fmt, markdown
from ..prompts import load_prompt
from ..registry import method as registered_method
from ..schemas import read_table, write_table
from ..answers import reading_of
from ..solver import derive_seed, sample_rows, solver_request
from .units import read_golds

log = logging.getLogger(__name__)


def _agent_columns(a: so.PoolAgent) -> dict:
    return {"agent": a.index, "agent_name": a.name, "temperature": a.temperature, "persona": a.persona,
            "variant": a.variant, "perturb_seed": a.perturb_seed, "perturb_scale": a.perturb_scale}


def society_pool(questions: list[str], pool: str, model: dict, cache_dir: str, prompt: str, temperatures: list[float],
                 personas: list[str], variants: list[str], perturbations: list[dict], selection_fraction: float,
                 max_tokens: int, seed: int, provenance: dict, call_seed: int | None = None) -> None:
    """The pool's answers; ``seed`` splits the questions, ``call_seed`` (a replicate's; default
    ``seed``) seeds the calls."""
    call_seed = seed if call_seed is None else call_seed
    qs = [q for p in questions for q in read_table("questions", p).to_dicts()]
    split = so.split_of(seed, [(q["dataset"], q["qid"]) for q in qs], selection_fraction)
    agents = so.pool_agents(temperatures, personas, variants, perturbations)
    solver = load_prompt(prompt)
    by_weights: dict[tuple, list[so.PoolAgent]] = defaultdict(list)
    for a in agents:
        by_weights[(a.perturb_seed, a.perturb_scale)].append(a)
    rows, stats = [], []
    for (w_seed, _), members in by_weights.items():
        spec = dict(model) | ({"perturb": members[0].perturb} if w_seed is not None else {})
        backend = open_backend(spec, cache_dir)
        jobs = []
        for a in members:
            ask = so.agent_prompt(solver, a)
            for q in qs:
                s = derive_seed(call_seed, q["qid"], "society", a.name)
                jobs.append({"qid": q["qid"], "dataset": q["dataset"], "split": split[(q["dataset"], q["qid"])],
                             **_agent_columns(a), "seed": s, "reading": reading_of(q),
                             "request": solver_request(ask, q, a.temperature, s, max_tokens)})
        golds = golds_of(qs)
        for r in sample_rows(backend, jobs):
            gold = golds[(r["dataset"], r["qid"])]
            rows.append(r | {"answer_type": gold.answer_type, "correct": gold_correct(r["answer"], gold)})
        stats.append(f"weights {'base' if w_seed is None else members[0].name.split('-')[-1]}: {len(jobs)} calls, "
                     f"{backend.stats()}")
    write_table("society_pool", rows, pool, provenance)
    n_sel = sum(v == "selection" for v in split.values())
    log.info("pool of %d agents x %d questions (%d selection, %d evaluation); %s", len(agents), len(qs), n_sel,
             len(qs) - n_sel, "; ".join(stats))


def _matrix(pool: pl.DataFrame, split: str, agents: list[int]) -> tuple[list[list[str]], list[list[str]], list, list]:
    """(keys, correct, tokens)[a][q] over one split's questions (sorted), and each question's
    answer type: answers are their stored keys (``answer_norm``, canonical in their type),
    correctness the pool's own ``correct`` (the answer type's rule)."""
    sub = pool.filter(pl.col("split") == split).sort("dataset", "qid", "agent")
    keys = sorted({(r["dataset"], r["qid"]) for r in sub.select("dataset", "qid").to_dicts()})
    cell = {(r["agent"], r["dataset"], r["qid"]): r for r in sub.to_dicts()}
    answers = [[cell[(a, *k)]["answer_norm"] or "" for k in keys] for a in agents]
    correct = [[1.0 if cell[(a, *k)]["correct"] else 0.0 for k in keys] for a in agents]
    tokens = [[cell[(a, *k)]["completion_tokens"] for k in keys] for a in agents]
    kinds = [cell[(agents[0], *k)]["answer_type"] for k in keys] if agents else []
    return answers, correct, tokens, kinds


def select_societies(pool: pl.DataFrame, k: int, sc_min_support: float, default_temperatures: list[float]
                     ) -> tuple[list[dict], list[dict]]:
    """(members rows, evaluation rows) of every selector."""
    agents = sorted(set(pool["agent"].to_list()))
    info = {r["agent"]: r for r in pool.unique("agent", keep="first").to_dicts()}
    answers, correct, _, kinds = _matrix(pool, "selection", agents)
    support = so.support_scores(answers, kinds)
    n_sel = len(answers[0]) if answers else 0
    picks: dict[str, list[tuple[int, int | None]]] = {
        "ac_greedy": so.greedy(correct, k),
        "sc_greedy": so.greedy(support, k, sc_min_support),
        "top_k": [(a, None) for a in so.top_k(correct, k)],
        "default": [(a, None) for a, r in enumerate(agents)
                    if info[r]["persona"] == "plain" and info[r]["variant"] == "standard"
                    and info[r]["perturb_seed"] is None and info[r]["temperature"] in default_temperatures],
    }
    members, evaluation = [], []
    for selector, chosen in picks.items():
        rows_idx = [i for i, _ in chosen]
        for rank, (i, marginal) in enumerate(chosen):
            r = info[agents[i]]
            members.append({"selector": selector, "rank": rank, **{c: r[c] for c in (
                "agent", "agent_name", "temperature", "persona", "variant", "perturb_seed", "perturb_scale")},
                "marginal": marginal, "selection_accuracy": 100 * sum(correct[i]) / max(n_sel, 1),
                "selection_support": sum(support[i]) / max(n_sel, 1)})
        for split in ("selection", "evaluation"):
            ans, cor, tok, kinds = _matrix(pool, split, agents)
            ev = so.society_scores(ans, cor, rows_idx, kinds)
            n = ev["n"]
            evaluation.append({"selector": selector, "split": split, "size": len(rows_idx), "n": n, "hit": ev["hit"],
                               "vote": ev["vote"], "member_acc": ev["member_acc"],
                               "ac_coverage": so.coverage(cor, rows_idx) if rows_idx else 0,
                               "sc_coverage": so.coverage(so.support_scores(ans, kinds), rows_idx, sc_min_support)
                               if rows_idx and ans else 0,
                               "calls_per_q": float(len(rows_idx)),
                               "completion_tokens_per_q": sum(sum(tok[i]) for i in rows_idx) / n if n else None})
    return members, evaluation


def society_select(pool: str, members: str, evaluation: str, k: int, sc_min_support: float,
                   default_temperatures: list[float], provenance: dict) -> None:
    frame = read_table("society_pool", pool)
    m, e = select_societies(frame, k, sc_min_support, default_temperatures)
    write_table("society_members", m, members, provenance)
    write_table("society_eval", e, evaluation, provenance)
    for r in e:
        log.info("%s on %s: size %d, hit %s, vote %s", r["selector"], r["split"], r["size"], r["hit"], r["vote"])


LABELS = so.LABELS


def debate_rows(pools: list[str], predictions: list[str], questions: list[str]) -> list[dict]:
    """Accuracy (official EM for spans, the answer type's rule otherwise) of each predictions table
    (a society method or its plain method) on each split of
    its backbone's pool: the selection split chose the society, so only the evaluation split is a
    held-out figure for a society method."""
    golds = read_golds(questions)
    split = {}
    for p in pools:
        b = layout.parse(p).backbone
        split |= {(b, r["dataset"], r["qid"]): r["split"]
                  for r in read_table("society_pool", p).unique(["dataset", "qid"]).to_dicts()}
    right: dict[tuple, list[int]] = defaultdict(list)
    for p in predictions:
        b = layout.parse(p).backbone
        for r in read_table("predictions", p).to_dicts():
            ok = gold_correct(r["prediction"], golds[(r["dataset"], r["qid"])])
            right[(b, r["method"], split[(b, r["dataset"], r["qid"])])].append(ok)
    return [{"backbone": b, "method": m, "society": registered_method(m).society or "", "split": sp, "n": len(v),
             "accuracy": 100 * sum(v) / len(v)} for (b, m, sp), v in sorted(right.items())]


def societies_table(evaluation: list[str], members: list[str], csv: str, md: str, provenance: dict,
                    pools: list[str] = (), predictions: list[str] = (), questions: list[str] = (),
                    debates_csv: str | None = None) -> None:
    ev = pl.concat([read_table("society_eval", p).with_columns(pl.lit(layout.parse(p).backbone).alias("backbone"))
                    for p in evaluation]) if evaluation else pl.DataFrame()
    write_csv(csv, ev)
    rows = []
    order = list(LABELS)
    evals = ev.filter(pl.col("split") == "evaluation").to_dicts() if len(ev) else []
    for r in sorted(evals, key=lambda r: (r["backbone"], order.index(r["selector"]) if r["selector"] in order else 9)):
        sel = ev.filter((pl.col("backbone") == r["backbone"]) & (pl.col("selector") == r["selector"])
                        & (pl.col("split") == "selection")).row(0, named=True)
        rows.append([r["backbone"], LABELS.get(r["selector"], r["selector"]), str(r["size"]),
                     f"{sel['ac_coverage']} / {sel['sc_coverage']} of {sel['n']}", fmt(r["hit"]), fmt(r["vote"]),
                     fmt(r["member_acc"]), fmt(r["calls_per_q"]), fmt(r["completion_tokens_per_q"])])
    names = []
    for p in members:
        mem = read_table("society_members", p)
        for sel in mem["selector"].unique(maintain_order=True).to_list():
            picked = mem.filter(pl.col("selector") == sel).sort("rank")["agent_name"].to_list()
            names.append(f"- {layout.parse(p).backbone} · {LABELS.get(sel, sel)}: {', '.join(picked)}")
    debates = debate_rows(pools, predictions, questions) if predictions else []
    if debates_csv:
        write_csv(debates_csv, pl.DataFrame(debates, schema={"backbone": pl.Utf8, "method": pl.Utf8,
                                                             "society": pl.Utf8, "split": pl.Utf8, "n": pl.Int64,
                                                             "accuracy": pl.Float64}))
    write_text(md, "# Coverage-selected societies (official EM; the answer type's rule for numbers, expressions and "
               "letters)\n\n" + markdown(
        ["Backbone", "Society", "Agents", "Selection coverage (AC / SC)", "Eval. proposal hit", "Eval. vote",
         "Eval. member acc.", "Calls / q", "Gen. tokens / q"], rows)
        + "\nSelected on the selection split, evaluated on the disjoint evaluation split (% of its questions; "
        "one call per member per question). AC = labeled answer coverage, SC = label-free support coverage "
        "(lmad/societies.py).\n\nMembers, in pick order:\n" + "\n".join(names) + "\n" + _debates_markdown(debates))


def _debates_markdown(debates: list[dict]) -> str:
    if not debates:
        return ""
    cell = {(r["backbone"], r["method"], r["split"]): r for r in debates}
    rows = []
    for b, m in dict.fromkeys((r["backbone"], r["method"]) for r in debates):
        ev, sel = cell.get((b, m, "evaluation")), cell.get((b, m, "selection"))
        rows.append([b, registered_method(m).label, *(f"{fmt(r['accuracy'])} (n = {r['n']})" if r else "–"
                                                      for r in (ev, sel))])
    return ("\n## Debating with a selected society (official EM or the answer type's rule)\n\n" + markdown(
        ["Backbone", "Method", "Evaluation split (held out)", "Selection split (not held out)"], rows)
        + "\nA society was picked on the selection split's questions, so a society method's accuracy there is "
        "not a held-out figure; compare methods on the evaluation split. Every other table of the run scores "
        "each method on all questions.\n")
