"""Rules ``society_split``, ``society_pool``, ``society_select`` and ``paper_societies``
(rules/societies.smk): coverage-selected societies (library ``lmad.societies``).

``society_pool``: every pool agent answers every question of every dataset — one backend batch
per set of weights (the unperturbed model; each seeded perturbation is its own model load), all
questions × agents of those weights in it. ``society_select``: AC-Greedy, SC-Greedy, top-K and the
default personas on each benchmark's construction split (``society_split``; config
``societies.split``), each evaluated on the benchmark's held-out evaluation split (no model
calls). ``paper_societies``: results/paper/societies.{csv,md} over backbones, and each debating
method run with a society (``mad+ac-greedy``) beside its plain method on each split
(results/paper/society_debates.csv): only the evaluation split is held out from the selection. With
config ``paper.wdh`` these are under results/paper/wdh/ (lmad.plan.paper.PaperPlan.wdh_born).
``held_out``: the filter every table with a society column applies (lmad.stages.paper, readout).
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


def society_split(questions: list[str], split: str, seed: int, size: int, provenance: dict,
                  sizes: list[int] = (), construct_on: dict | None = None) -> None:
    """Each question's construction / evaluation split (config ``societies.split``); fails, naming
    the key, before any model call when a benchmark has no question left to hold out."""
    qs = [q for p in questions for q in read_table("questions", p).to_dicts()]
    rows = so.construction_split(seed, [(q["benchmark"], q["dataset"], q["qid"]) for q in qs], size, sizes,
                                 construct_on)
    write_table("society_split", rows, split, provenance)
    for b in sorted({r["benchmark"] for r in rows}):
        n, c = sum(r["benchmark"] == b for r in rows), sum(r["benchmark"] == b and r["split"] == so.CONSTRUCTION
                                                          for r in rows)
        log.info("%s: %d construction, %d evaluation questions", b, c, n - c)


def society_pool(questions: list[str], split: str, pool: str, model: dict, cache_dir: str, prompt: str,
                 temperatures: list[float], personas: list[str], variants: list[str], perturbations: list[dict],
                 max_tokens: int, seed: int, provenance: dict, call_seed: int | None = None) -> None:
    """The pool's answers to every question (``split``: the society_split table, whose split each
    row carries); ``call_seed`` (a replicate's; default ``seed``) seeds the calls."""
    call_seed = seed if call_seed is None else call_seed
    qs = [q for p in questions for q in read_table("questions", p).to_dicts()]
    where = {(r["dataset"], r["qid"]): r["split"] for r in read_table("society_split", split).to_dicts()}
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
                jobs.append({"qid": q["qid"], "dataset": q["dataset"], "split": where[(q["dataset"], q["qid"])],
                             **_agent_columns(a), "seed": s, "reading": reading_of(q),
                             "request": solver_request(ask, q, a.temperature, s, max_tokens)})
        golds = golds_of(qs)
        for r in sample_rows(backend, jobs):
            gold = golds[(r["dataset"], r["qid"])]
            rows.append(r | {"answer_type": gold.answer_type, "correct": gold_correct(r["answer"], gold)})
        stats.append(f"weights {'base' if w_seed is None else members[0].name.split('-')[-1]}: {len(jobs)} calls, "
                     f"{backend.stats()}")
    write_table("society_pool", rows, pool, provenance)
    n_con = sum(v == so.CONSTRUCTION for v in where.values())
    log.info("pool of %d agents x %d questions (%d construction, %d evaluation); %s", len(agents), len(qs), n_con,
             len(qs) - n_con, "; ".join(stats))


class _Pool:
    """The pool's answers indexed by (agent, dataset, qid)."""

    def __init__(self, pool: pl.DataFrame):
        self.cell = {(r["agent"], r["dataset"], r["qid"]): r for r in pool.to_dicts()}
        self.agents = sorted({a for a, _, _ in self.cell})
        self.info = {r["agent"]: r for r in pool.unique("agent", keep="first").to_dicts()}

    def matrix(self, keys: list[tuple[str, str]]) -> tuple[list[list[str]], list[list[float]], list, list]:
        """(answers, correct, tokens)[a][q] over ``keys`` ((dataset, qid), sorted), and each question's
        answer type: answers are their stored keys (``answer_norm``, canonical in their type),
        correctness the pool's own ``correct`` (the answer type's rule)."""
        keys, cell, agents = sorted(keys), self.cell, self.agents
        answers = [[cell[(a, *k)]["answer_norm"] or "" for k in keys] for a in agents]
        correct = [[1.0 if cell[(a, *k)]["correct"] else 0.0 for k in keys] for a in agents]
        tokens = [[cell[(a, *k)]["completion_tokens"] for k in keys] for a in agents]
        kinds = [cell[(agents[0], *k)]["answer_type"] for k in keys] if agents else []
        return answers, correct, tokens, kinds


def _picks(pool: _Pool, keys: list, k: int, sc_min_support: float, default_temperatures: list[float]) -> dict:
    """selector -> [(pool index, marginal)] picked on the questions ``keys``, and the scores there."""
    answers, correct, _, kinds = pool.matrix(keys)
    support = so.support_scores(answers, kinds)
    info, agents = pool.info, pool.agents
    picks = {
        "ac_greedy": so.greedy(correct, k),
        "sc_greedy": so.greedy(support, k, sc_min_support),
        "top_k": [(a, None) for a in so.top_k(correct, k)],
        "default": [(a, None) for a, r in enumerate(agents)
                    if info[r]["persona"] == "plain" and info[r]["variant"] == "standard"
                    and info[r]["perturb_seed"] is None and info[r]["temperature"] in default_temperatures],
    }
    return {"picks": picks, "correct": correct, "support": support, "n": len(keys)}


def _eval_row(pool: _Pool, keys: list, rows_idx: list[int], sc_min_support: float) -> dict:
    ans, cor, tok, kinds = pool.matrix(keys)
    ev = so.society_scores(ans, cor, rows_idx, kinds)
    n = ev["n"]
    return {"size": len(rows_idx), "n": n, "hit": ev["hit"], "vote": ev["vote"], "member_acc": ev["member_acc"],
            "ac_coverage": so.coverage(cor, rows_idx) if rows_idx else 0,
            "sc_coverage": so.coverage(so.support_scores(ans, kinds), rows_idx, sc_min_support)
            if rows_idx and ans else 0,
            "calls_per_q": float(len(rows_idx)),
            "completion_tokens_per_q": sum(sum(tok[i]) for i in rows_idx) / n if n else None}


def select_societies(pool: pl.DataFrame, split: list[dict], k: int, sc_min_support: float,
                     default_temperatures: list[float], size: int, construct_on: dict | None = None,
                     held_out_from: int | None = None) -> tuple[list[dict], list[dict]]:
    """(members rows, evaluation rows) of every selector and benchmark: each benchmark's society is
    selected on the first ``size`` questions of the ranking of ``construct_on[benchmark]`` (itself by
    default) and evaluated on its own questions ranked ``held_out_from`` (default ``size``) or later."""
    construct_on, held_out_from = construct_on or {}, size if held_out_from is None else held_out_from
    p = _Pool(pool)
    benchmarks = sorted({r["benchmark"] for r in split})
    datasets = {b: sorted({r["dataset"] for r in split if r["benchmark"] == b}) for b in benchmarks}
    for target, source in construct_on.items():
        for name in (target, source):
            if name not in benchmarks:
                raise ValueError(f"config societies.split.construct_on: {name!r} is not a benchmark of the run; "
                                 f"its benchmarks: {benchmarks}")
    construction = {b: [(r["dataset"], r["qid"]) for r in split if r["benchmark"] == b and r["rank"] < size]
                    for b in benchmarks}
    receives = so.transfer_only(construct_on)  # no construction split of their own: every question held out
    held_out = {b: [(r["dataset"], r["qid"]) for r in split if r["benchmark"] == b
                    and (b in receives or r["rank"] >= held_out_from)] for b in benchmarks}
    chosen = {s: _picks(p, construction[s], k, sc_min_support, default_temperatures)
              for s in sorted({construct_on.get(b, b) for b in benchmarks})}
    members, evaluation = [], []
    for b in benchmarks:
        source = construct_on.get(b, b)
        got = chosen[source]
        for selector, picked in got["picks"].items():
            rows_idx = [i for i, _ in picked]
            for d in datasets[b]:
                for rank, (i, marginal) in enumerate(picked):
                    r = p.info[p.agents[i]]
                    members.append({"dataset": d, "benchmark": b, "constructed_on": source, "selector": selector,
                                    "rank": rank, **{c: r[c] for c in (
                                        "agent", "agent_name", "temperature", "persona", "variant", "perturb_seed",
                                        "perturb_scale")},
                                    "marginal": marginal,
                                    "selection_accuracy": 100 * sum(got["correct"][i]) / max(got["n"], 1),
                                    "selection_support": sum(got["support"][i]) / max(got["n"], 1)})
            for name, keys in ((so.CONSTRUCTION, construction[source]), (so.EVALUATION, held_out[b])):
                evaluation.append({"benchmark": b, "constructed_on": source, "construction_size": size,
                                   "selector": selector, "split": name,
                                   **_eval_row(p, keys, rows_idx, sc_min_support)})
    return members, evaluation


def society_select(pool: str, split: str, members: str, evaluation: str, k: int, sc_min_support: float,
                   default_temperatures: list[float], size: int, provenance: dict, construct_on: dict | None = None,
                   sizes: list[int] = (), sweep: str | None = None) -> None:
    """The societies of construction size ``size`` (the ones that debate) and, with ``sizes``, the
    sweep's (``sweep``: their evaluation rows, every size on the questions past the largest)."""
    frame, rows = read_table("society_pool", pool), read_table("society_split", split).to_dicts()
    m, e = select_societies(frame, rows, k, sc_min_support, default_temperatures, size, construct_on)
    write_table("society_members", m, members, provenance)
    write_table("society_eval", e, evaluation, provenance)
    for r in e:
        log.info("%s %s on %s: size %d, hit %s, vote %s", r["benchmark"], r["selector"], r["split"], r["size"],
                 r["hit"], r["vote"])
    if sweep:
        top = max(sizes)
        out = [r for s in sizes for r in select_societies(frame, rows, k, sc_min_support, default_temperatures, s,
                                                          construct_on, held_out_from=top)[1]]
        write_table("society_eval", out, sweep, provenance)


LABELS = so.LABELS


def debate_rows(pools: list[str], predictions: list[str], questions: list[str]) -> list[dict]:
    """Accuracy (official EM for spans, the answer type's rule otherwise) of each predictions table
    (a society method or its plain method) on each split of
    its backbone's pool: the construction split chose the society, so only the evaluation split is a
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
                    debates_csv: str | None = None, size: int | None = None, sweeps: list[str] = (),
                    sweep_csv: str | None = None, sweep_md: str | None = None) -> None:
    ev = _eval_frame(evaluation)
    write_csv(csv, ev)
    names = []
    for p in members:
        mem = read_table("society_members", p)
        for (b, src, sel), g in mem.group_by("benchmark", "constructed_on", "selector", maintain_order=True):
            picked = g.filter(pl.col("dataset") == g["dataset"][0]).sort("rank")["agent_name"].to_list()
            on = "" if src == b else f" (constructed on {src})"
            names.append(f"- {layout.parse(p).backbone} · {b}{on} · {LABELS.get(sel, sel)}: {', '.join(picked)}")
    debates = debate_rows(pools, predictions, questions) if predictions else []
    if debates_csv:
        write_csv(debates_csv, pl.DataFrame(debates, schema={"backbone": pl.Utf8, "method": pl.Utf8,
                                                             "society": pl.Utf8, "split": pl.Utf8, "n": pl.Int64,
                                                             "accuracy": pl.Float64}))
    write_text(md, "# Coverage-selected societies (official EM; the answer type's rule for numbers, expressions and "
               "letters)\n\n" + _eval_markdown(ev)
               + f"\nSelected per benchmark on its construction split ({_size_text(size)}; config "
               "societies.split.size), or on another benchmark's (societies.split.construct_on), evaluated on the "
               "benchmark's held-out evaluation split (% of its questions; one call per member per question). "
               "AC = labeled answer coverage, SC = label-free support coverage (lmad/societies.py).\n\n"
               "Members, in pick order:\n" + "\n".join(names) + "\n" + _debates_markdown(debates, size))
    if sweep_csv:
        sw = _eval_frame(sweeps)
        write_csv(sweep_csv, sw)
        sizes = sorted(set(sw["construction_size"].to_list())) if len(sw) else []
        write_text(sweep_md, "# Construction-set size sweep (When Debate Helps Table 17; pool answers, no debate)\n\n"
                   + "".join(f"## Construction split: {s} questions per benchmark\n\n"
                             + _eval_markdown(sw.filter(pl.col("construction_size") == s)) + "\n" for s in sizes)
                   + f"\nEach size selects on the first N questions of each benchmark's seeded ranking (config "
                   f"societies.split.sizes: {sizes}); every size is evaluated on the same held-out questions, those "
                   f"ranked after the largest size ({max(sizes) if sizes else '–'}). Debates run with "
                   "societies.split.size only (docs/methods.md \"Coverage-selected societies\").\n")


def _size_text(size: int | None) -> str:
    return f"the first {size} questions of the benchmark's seeded ranking" if size is not None else \
        "the first questions of the benchmark's seeded ranking"


def _eval_frame(paths: list[str]) -> pl.DataFrame:
    return pl.concat([read_table("society_eval", p).with_columns(pl.lit(layout.parse(p).backbone).alias("backbone"))
                      for p in paths]) if paths else pl.DataFrame()


def _eval_markdown(ev: pl.DataFrame) -> str:
    order = list(LABELS)
    rows = []
    evals = ev.filter(pl.col("split") == so.EVALUATION).to_dicts() if len(ev) else []
    for r in sorted(evals, key=lambda r: (r["backbone"], r["benchmark"],
                                          order.index(r["selector"]) if r["selector"] in order else 9)):
        sel = ev.filter((pl.col("backbone") == r["backbone"]) & (pl.col("benchmark") == r["benchmark"])
                        & (pl.col("selector") == r["selector"])
                        & (pl.col("split") == so.CONSTRUCTION)).row(0, named=True)
        bench = r["benchmark"] + ("" if r["constructed_on"] == r["benchmark"] else f" (from {r['constructed_on']})")
        rows.append([r["backbone"], bench, LABELS.get(r["selector"], r["selector"]), str(r["size"]),
                     f"{sel['ac_coverage']} / {sel['sc_coverage']} of {sel['n']}", str(r["n"]), fmt(r["hit"]),
                     fmt(r["vote"]), fmt(r["member_acc"]), fmt(r["calls_per_q"]), fmt(r["completion_tokens_per_q"])])
    return markdown(["Backbone", "Benchmark", "Society", "Agents", "Construction coverage (AC / SC)", "Held out",
                     "Eval. proposal hit", "Eval. vote", "Eval. member acc.", "Calls / q", "Gen. tokens / q"], rows)


def _debates_markdown(debates: list[dict], size: int | None = None) -> str:
    if not debates:
        return ""
    cell = {(r["backbone"], r["method"], r["split"]): r for r in debates}
    rows = []
    for b, m in dict.fromkeys((r["backbone"], r["method"]) for r in debates):
        ev, sel = cell.get((b, m, so.EVALUATION)), cell.get((b, m, so.CONSTRUCTION))
        rows.append([b, registered_method(m).label, *(f"{fmt(r['accuracy'])} (n = {r['n']})" if r else "–"
                                                      for r in (ev, sel))])
    return ("\n## Debating with a selected society (official EM or the answer type's rule)\n\n" + markdown(
        ["Backbone", "Method", "Evaluation split (held out)", "Construction split (not held out)"], rows)
        + f"\nA society was picked on its benchmark's construction split ({_size_text(size)}), so a society "
        "method's accuracy there is not a held-out figure; compare methods on the evaluation split, as every "
        "table with a society column does (table1, headroom, readout, headroom_lift).\n")


def held_out(frame: pl.DataFrame, splits: list[str]) -> pl.DataFrame:
    """The rows of ``frame`` (columns backbone, dataset, qid) on their backbone's held-out evaluation
    split (``splits``: every run's society_split table); ``frame`` itself without splits (societies off)."""
    if not splits or frame.is_empty():
        return frame
    keep = pl.concat([read_table("society_split", p).filter(pl.col("split") == so.EVALUATION)
                      .select("dataset", "qid").with_columns(pl.lit(layout.parse(p).backbone).alias("backbone"))
                      for p in splits])
    return frame.join(keep, on=["backbone", "dataset", "qid"], how="semi")
