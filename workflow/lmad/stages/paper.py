"""Rule ``paper`` and its parts (rules/paper.smk): tables and figures of every backbone, from
saved Parquet only — no model calls. Each function is one rule's job; inputs are file lists of
the results layout, and ``lmad.layout.parse`` says which backbone (dataset, method) each file is.

Each rule's ``code`` param (lmad.smk.stage) hashes this module and every lmad module it imports:
editing them reruns the paper rules, and nothing that makes their inputs."""
from __future__ import annotations

import logging

import numpy as np
import polars as pl

from .. import layout
from ..atomic import write_csv, write_text
from ..paper import headroom as hr
from ..paper import label
from ..paper.guard_rejections import REJECTION_COLUMNS, gate_activated, guard_rejections
from ..number_format import fmt, markdown
from ..paper.tables import AVG, latex, table1_block, table1_frame_rows, table1_latex, table1_markdown, table2_block
from ..headline import Headline, headline, judge_or_rule, score_expr, score_vectors
from ..registry import TABLE2_METHODS
from ..schemas import read_table
from ..societies import held_out_note
from .societies import held_out as held_out_rows
from ..stats import macro_average, mean_sd, paired_bootstrap_diff

log = logging.getLogger(__name__)


# ---- loading ----

def load(table: str, paths: list[str]) -> pl.DataFrame:
    """Concatenate one table over files, adding ``backbone`` from each file's place in the layout."""
    frames = [read_table(table, p).with_columns(pl.lit(layout.parse(p).backbone).alias("backbone")) for p in paths]
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame()


def load_judgments(paths: list[str]) -> pl.DataFrame:
    return load("judgments", paths)


_write = write_text


def _write_csv(path: str, rows: list[dict], columns: list[str] | None = None) -> None:
    """``columns`` keeps the header of an empty table."""
    write_csv(path, pl.DataFrame(rows) if rows or not columns else pl.DataFrame({c: [] for c in columns}))


def read_headline(validation: str, metric: str) -> Headline:
    """The headline metric of every paper output (``lmad.headline``)."""
    return headline(metric, read_table("judge_validation", validation).row(0, named=True))


def with_score(judged: pl.DataFrame, metric: str) -> pl.DataFrame:
    """``judged`` plus ``score``: the headline metric per prediction (0..1; an unscored judge
    reply counts as incorrect)."""
    return judged.with_columns(score_expr(metric).alias("score")) if len(judged) else judged


def accuracy_cells(judged: pl.DataFrame, backbone: str) -> dict[tuple[str, str], float]:
    """Mean ``score`` in percent per (dataset, method), over every prediction."""
    sub = judged.filter(pl.col("backbone") == backbone)
    acc = sub.group_by("dataset", "method").agg(pl.col("score").mean())
    return {(r["dataset"], r["method"]): 100 * r["score"] for r in acc.to_dicts() if r["score"] is not None}


# ---- Table 1 ----

def table1(judgments: list[str], validation: str, csv: str, md: str, tex: str, backbones: list[str],
           datasets: list[str], columns: list[str], baselines: list[str], target: str, bootstrap_resamples: int,
           seed: int, metric: str, provenance: dict, held_out: list[str] = (),
           held_out_size: int | None = None) -> None:
    """Headline metric per backbone × dataset + Avg.; Δ = target − strongest baseline of the row, with
    a paired-bootstrap 95% CI on the Avg. row (questions resampled within each dataset). ``held_out``:
    the runs' society splits (societies on): every method on the held-out questions only."""
    head = read_headline(validation, metric)
    judged = with_score(held_out_rows(load_judgments(judgments), held_out), head.metric)
    if not columns:  # paper.columns names no method of this run
        _write_csv(csv, [])
        _write(md, "**Table 1 is empty: no method of config `paper.columns` is in this run's `methods`.**\n")
        _write(tex, "% Table 1 is empty: no method of config paper.columns is in this run's methods.\n")
        return
    blocks, flat = [], []
    groups = _replicate_groups(backbones)
    for b, replicates in groups.items():
        # one row per backbone: each question's score is its mean over the replicates (one, or several)
        mine = judged.filter(pl.col("backbone").is_in(replicates))
        if len(mine):
            mine = (mine.group_by("dataset", "method", "qid", maintain_order=True).agg(pl.col("score").mean())
                    .with_columns(pl.lit(b).alias("backbone")))
        block = table1_block(accuracy_cells(mine, b), datasets, columns, baselines, target)
        if len(replicates) > 1:
            _add_replicate_sd(block, [table1_block(accuracy_cells(judged, r), datasets, columns, baselines, target)
                                      for r in replicates])
        avg = block[-1]
        ci = None
        if avg["strongest"] and avg["delta"] is not None:
            try:
                boot = paired_bootstrap_diff(score_vectors(mine, target, pl.col("score"), datasets),
                                             score_vectors(mine, avg["strongest"], pl.col("score"), datasets),
                                             n_resamples=bootstrap_resamples, seed=seed)
                ci = (100 * boot["lo"], 100 * boot["hi"])
            except ValueError as err:
                log.warning("%s: no bootstrap CI: %s", b, err)
        blocks.append((b, block, ci))
        flat += [{"metric": head.metric, **r} for r in table1_frame_rows(b, block, columns, ci)]
        log.info("%s: Avg. Δ %s vs %s, CI %s", b, fmt(avg["delta"], True), avg["strongest"], ci)
    _write_csv(csv, flat)
    n_replicates = max(len(reps) for reps in groups.values())
    replicate_note = (f" Cells: mean ± sample SD over the {n_replicates} seeded replicates; Δ and its CI from each "
                      "question's score averaged over the replicates." if n_replicates > 1 else "")
    ruled = [d for d in datasets if len(judged) and (judged.filter(pl.col("dataset") == d)["judge_verdict"] == "rule").any()]
    rule_note = (f" On {', '.join(label(d) for d in ruled)} a cell is the answer type's own accuracy (numeric or "
                 "expression equivalence, or the option letter), which needs no judge." if ruled else "")
    note = (f"\n{head.label[0].upper() + head.label[1:]} (%). Avg. = macro-average over {len(datasets)} datasets. "
            f"Δ = {label(target)} − "
            "strongest baseline of the row (underlined; on Avg. rows the strongest macro-averaged baseline); "
            f"bold = best overall. Avg. rows: paired-bootstrap 95% CI, {bootstrap_resamples} resamples, seed {seed}."
            f"{rule_note}{replicate_note}\n" + held_out_note(columns, held_out_size))
    _write(md, f"# Table 1 — {head.label} (%)\n\n" + head.banner() + table1_markdown(blocks, columns) + note)
    _write(tex, f"% {head.warning or 'Headline metric: ' + head.label}\n% {head.validation}\n"
           + table1_latex(blocks, columns))


def _replicate_groups(runs: list[str]) -> dict[str, list[str]]:
    """Runs by the backbone they replicate (lmad.layout.model_of), in config order."""
    groups: dict[str, list[str]] = {}
    for r in runs:
        groups.setdefault(layout.model_of(r), []).append(r)
    return groups


def _add_replicate_sd(block: list[dict], per_replicate: list[list[dict]]) -> None:
    """``sd`` {method: sample SD over the replicates' cells} on each row of a pooled Table 1 block."""
    for i, row in enumerate(block):
        row["sd"] = {m: mean_sd([rep[i]["values"][m] for rep in per_replicate if rep[i]["values"][m] is not None])[1]
                     for m in row["values"]}


# ---- Table 2 ----

GATE_METHODS = TABLE2_METHODS


def table2(judgments: list[str], validation: str, traces: list[str], questions: list[str], csv: str, md: str,
           tex: str, checks_csv: str, backbones: list[str], datasets: list[str], metric: str, provenance: dict) -> None:
    head = read_headline(validation, metric)
    judged = with_score(load_judgments(judgments), head.metric)
    trace = load("lmad_trace", traces)
    subset = gate_activated(trace)
    on_subset = judged.join(subset, on=["backbone", "dataset", "qid"], how="inner")
    rows, flat = [], []
    for b in backbones:
        cells = accuracy_cells(on_subset, b)
        n = {r["dataset"]: r["len"] for r in subset.filter(pl.col("backbone") == b).group_by("dataset").len().to_dicts()}
        for row in table2_block(cells, datasets, GATE_METHODS):
            d = row["dataset"]
            size = n.get(d, 0) if d in datasets else sum(n.values())
            rows.append([b, label(d), str(size), *[fmt(row["values"][m]) for m in GATE_METHODS]])
            flat.append({"metric": head.metric, "backbone": b, "dataset": d, "n": size,
                         **{m: row["values"][m] for m in GATE_METHODS}})
    header = ["Backbone", "Dataset", "n", *[f"{label(m)}" for m in GATE_METHODS]]
    _write_csv(csv, flat)
    empty = ("" if not subset.is_empty() else
             "\n**Table 2 is empty: this run has no LMAD (Strict) trace.**\n"
             if trace.is_empty() or not (trace["method"] == "lmad").any() else
             "\n**Table 2 is empty: Strict (lmad) rejected no candidate repair in this run.**\n")
    rejections = guard_rejections(trace, _golds(questions)) if not trace.is_empty() else []
    _write_csv(checks_csv, rejections, REJECTION_COLUMNS)
    check_rows = [[k["backbone"], k["check"] + (" (required)" if k["required"] else ""), str(k["repairs"]),
                   str(k["rejected"]), str(k["rejected_with_gold"]), str(k["truncated"])] for k in rejections]
    _write(md, f"# Table 2 — {head.label} (%) on the gate-activated subset\n\n" + head.banner()
           + markdown(header, rows) + empty + f"\n{head.label[0].upper() + head.label[1:]} (%) on questions where "
           "Strict (lmad) rejected at least one candidate repair (a truncated resolver reply is no rejection); "
           "Macro Avg. over datasets with a non-empty subset.\n\n"
           + markdown(["Backbone", "Check", "Repairs", "Rejected", "Rejected, gold in repair", "Truncated"],
                      check_rows)
           + "\nStrict's repairs (every iteration, every dataset): how many each check rejected, and how many of "
           "those contained the gold answer (a false-rejection estimate; yes/no golds are not counted). Both "
           "relation checks are recorded whatever the policy required.\n")
    _write(tex, latex(header, rows))


# ---- cost ----

ROLES = ["solver", "extractor", "localizer", "debater", "resolver", "relation"]


def lmad_call_summary(traces: list[str]) -> dict[tuple[str, str], dict]:
    """Per (backbone, LMAD method): auxiliary calls and generated tokens per question spent at
    the last iteration (after which no regeneration can follow; mean per dataset, macro-averaged),
    and the truncation rate (finish reason ``length``) of each role's calls. Polars over the
    exploded call logs: as Python rows this was most of the cost job (~2 s at 4 x 500)."""
    if not traces:
        return {}
    keys = ["backbone", "method"]
    trace = load("lmad_trace", traces).select(*keys, "dataset", "qid", "final_iteration", "call_log")
    calls = (trace.explode("call_log").drop_nulls("call_log")  # an empty log explodes to a null
             .with_columns(pl.col("call_log").struct.field("role", "finish_reason", "completion_tokens"))
             .drop("call_log"))
    roles = calls.group_by(*keys, "role").agg(
        pl.len().alias("n"), (pl.col("finish_reason") == "length").fill_null(False).sum().alias("n_length"))
    tail = (calls.filter(pl.col("final_iteration") & (pl.col("role") != "solver"))
            .group_by(*keys, "dataset", "qid")
            .agg(pl.len().alias("calls"), pl.col("completion_tokens").sum().alias("tokens")))
    # every question of the trace counts, a question without last-iteration calls as 0
    per_dataset = (trace.select(*keys, "dataset", "qid").unique()
                   .join(tail, on=[*keys, "dataset", "qid"], how="left")
                   .with_columns(pl.col("calls", "tokens").fill_null(0))
                   .group_by(*keys, "dataset").agg(pl.col("calls").mean(), pl.col("tokens").mean()))
    by_role: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    for b, m, role, n, n_length in roles.iter_rows():
        by_role.setdefault((b, m), {})[role] = (n, n_length)
    out: dict[tuple[str, str], dict] = {}
    for (b, m), sub in per_dataset.group_by(*keys):
        counts = {role: by_role.get((b, m), {}).get(role, (0, 0)) for role in ROLES}
        out[(b, m)] = {
            "last_iteration_aux_calls_per_q": macro_average(dict(zip(sub["dataset"], sub["calls"]))),
            "last_iteration_aux_completion_tokens_per_q": macro_average(dict(zip(sub["dataset"], sub["tokens"]))),
            **{f"truncated_{role}": (100 * n_len / n if n else None) for role, (n, n_len) in counts.items()},
        }
    return out


def cost_table(predictions: list[str], csv: str, md: str, backbones: list[str], datasets: list[str],
               methods: list[str], provenance: dict, traces: list[str] = ()) -> None:
    """Calls, prompt and generated tokens per question: mean per dataset, then macro-average.
    LMAD methods also show the auxiliary calls of the last iteration (spent after the last
    regeneration: they cannot change an answer) and the truncation rate per role."""
    preds = load("predictions", predictions)
    lmad = lmad_call_summary(list(traces))
    per = preds.group_by("backbone", "dataset", "method").agg(
        pl.col("calls").cast(pl.Float64).mean(), pl.col("prompt_tokens").cast(pl.Float64).mean(),
        pl.col("completion_tokens").cast(pl.Float64).mean())
    rows, flat = [], []
    for b in backbones:
        for m in methods:
            sub = per.filter((pl.col("backbone") == b) & (pl.col("method") == m))
            if sub.is_empty():
                continue
            vals = {k: macro_average(dict(zip(sub["dataset"], sub[k]))) for k in
                    ("calls", "prompt_tokens", "completion_tokens")}
            extra = lmad.get((b, m), {})
            flat.append({"backbone": b, "method": m, **{f"{k}_per_q": v for k, v in vals.items()},
                         **{k: extra.get(k) for k in LMAD_COST_COLUMNS}})
            tail = extra.get("last_iteration_aux_calls_per_q")
            trunc = ", ".join(f"{r} {fmt(extra[f'truncated_{r}'])}" for r in ROLES
                              if extra.get(f"truncated_{r}") is not None)
            rows.append([b, label(m), fmt(vals["calls"]), fmt(vals["prompt_tokens"], digits=1),
                         fmt(vals["completion_tokens"], digits=1), fmt(tail),
                         trunc or "–"])
    _write_csv(csv, flat)
    _write(md, markdown(["Backbone", "Method", "Calls / q", "Prompt tokens / q", "Generated tokens / q",
                         "of which last-iteration aux. calls / q", "Truncated (%) by role"], rows)
           + "\nMean per question within each dataset, macro-averaged over datasets; every call a method "
           "made is counted (the shared proposals included). LMAD: auxiliary calls (extraction to relation "
           "check) at the last iteration, after which no regeneration follows, shown apart; truncated = share "
           "of a role's calls that hit their token budget.\n")


LMAD_COST_COLUMNS = ["last_iteration_aux_calls_per_q", "last_iteration_aux_completion_tokens_per_q",
                     *[f"truncated_{r}" for r in ROLES]]


# ---- headroom ----

def _golds(questions: list[str]) -> dict:
    """(dataset, qid) -> the question's typed gold (lmad.answers.Gold)."""
    from .units import read_golds

    return read_golds(questions)


def _round0_answers(path: str) -> dict[str, list[str]]:
    from ..paper.dynamics import answers_by_qid

    return answers_by_qid(path)


def headroom_frame(questions: list[str], proposals: list[str], judgments: list[str],
                   methods: list[str], rounds0: list[str] = (), held_out: list[str] = ()) -> pl.DataFrame:
    """One row per backbone × dataset × method (+ dataset 'Avg.' macro rows); identity asserted.
    Each method is measured against its OWN round 0: a debate method's ``round0.parquet``
    (``rounds0``, results/{backbone}/{dataset}/{method}/round0.parquet — dMAD's affirmative /
    negative openings, DMAD's manners, a 4-agent TrueMAD's own samples), the shared proposals
    for the others (SC's samples, LMAD's iteration 0)."""
    golds = _golds(questions)
    judged = held_out_rows(load_judgments(judgments), held_out)  # societies on: the held-out questions only
    own = {(at.backbone, at.dataset, at.method): p for p in rounds0 for at in [layout.parse(p)]}
    rows = []
    for path in proposals:
        at = layout.parse(path)
        b, d = at.backbone, at.dataset
        shared = _round0_answers(path)
        for m in methods:
            answers = _round0_answers(own[(b, d, m)]) if (b, d, m) in own else shared
            sub = judged.filter((pl.col("backbone") == b) & (pl.col("dataset") == d) & (pl.col("method") == m))
            if sub.is_empty():
                continue
            flags = [hr.question_flags(answers[r["qid"]], r["prediction"], golds[(d, r["qid"])])
                     for r in sub.to_dicts()]
            judge = sub.select(judge_or_rule()).to_series().mean()
            rows.append({"backbone": b, "dataset": d, "method": m,
                         **hr.summarize(flags, f"{b}/{d}/{m}", None if judge is None else 100 * judge)})
    frame = pl.DataFrame(rows)
    if frame.is_empty():
        return frame
    avg = (frame.group_by("backbone", "method", maintain_order=True)
           .agg(pl.col("n").sum(), *[pl.col(c).mean() for c in frame.columns
                                     if c not in ("backbone", "dataset", "method", "n")])
           .with_columns(pl.lit(AVG).alias("dataset")).select(frame.columns))
    for r in avg.to_dicts():  # macro rates are means of per-dataset rates: the identity is linear
        if abs(r["gain"] - (r["recovered"] + r["new_correct"] - r["damage"])) > 1e-9:
            raise hr.AccountingError(f"{r['backbone']}/Avg./{r['method']}: macro identity violated")
    return pl.concat([frame, avg])


def headroom_table(questions: list[str], proposals: list[str], judgments: list[str], validation: str, csv: str,
                   md: str, backbones: list[str], methods: list[str], metric: str, provenance: dict,
                   rounds0: list[str] = (), held_out: list[str] = (), held_out_size: int | None = None) -> None:
    head = read_headline(validation, metric)
    methods = [m for m in methods if m != "cot"]
    frame = headroom_frame(questions, proposals, judgments, methods, list(rounds0), list(held_out))
    if not head.judge_shown and not frame.is_empty():  # a judge that failed validation is not shown
        frame = frame.with_columns(pl.lit(None, dtype=pl.Float64).alias("judge_acc"))
    _write_csv(csv, frame.to_dicts())
    if frame.is_empty():
        _write(md, "No method besides CoT: no headroom to account.\n")
        return
    avg = frame.filter(pl.col("dataset") == AVG)
    cols = ["vote_acc", "hit_rate", "headroom", "recovered", "new_correct", "damage", "final_em", "gain", "judge_acc"]
    rows = [[r["backbone"], label(r["method"]),
             *["FAILED" if c == "judge_acc" and not head.judge_shown else fmt(r[c], signed=c == "gain")
               for c in cols]]
            for b in backbones for m in methods for r in avg.filter((pl.col("backbone") == b) &
                                                                      (pl.col("method") == m)).to_dicts()]
    header = ["Backbone", "Method", "Round-0 vote", "Proposal hit", "Headroom", "Recovered", "New-correct",
              "Damage", "Final (EM)", "Gain", "Judge acc."]
    _write(md, "# Headroom accounting (official EM; the answer type's rule for numbers, expressions and letters)\n\n"
           + head.banner() + markdown(header, rows)
           + "\n% of questions, macro-averaged over datasets. Correctness = normalized "
           "EM against answer + aliases for each method's own round-0 answers (debate methods: their round 0; "
           "others: the shared proposals), their vote and the final answer; gain = final − vote = recovered + "
           "new-correct − damage (asserted). "
           + ("Judge accuracy of the final answer beside it (unscored = incorrect; the judge passed validation).\n"
              if head.judge_passed else "Judge accuracy of the final answer beside it, though the judge FAILED "
              "validation (config analysis.metric asks for it).\n" if head.judge_shown else
              "Judge accuracy is withheld: the judge FAILED validation.\n") + held_out_note(methods, held_out_size))


# ---- debate dynamics ----

def dynamics_table(questions: list[str], rounds: list[str], csv: str, md: str, backbones: list[str],
                   provenance: dict, rounds_png: str | None = None, rounds_pdf: str | None = None) -> None:
    """Per backbone × method (macro over datasets) and per dataset: round-wise agent / strict-majority
    accuracy, R-final accuracy by initial composition and on TrueMAD's difficult questions, CPL, AME,
    CMP1vK (lmad.paper.dynamics). Correctness is each question's answer type's own rule. The
    round-wise accuracies are drawn too where ``rounds_png`` and ``rounds_pdf`` are given (rule
    paper_dynamics gives them): the figure is this table's curves, and this job runs when the
    debates end, not on the run's last stretch after the judge."""
    from ..paper import figures as draw
    from ..paper.dynamics import correctness_by_round, dynamics
    from .units import read_golds

    golds = read_golds(questions)
    per_dataset = [(key, dynamics(correctness_by_round(golds, ps)), len(ps))
                   for key, ps in draw.group_rounds(rounds).items()]
    if rounds_png and rounds_pdf:
        draw.rounds(per_dataset, rounds_png, rounds_pdf, backbones)
    rows = [{"backbone": b, "dataset": d, "method": m, **row} for (b, d, m), row, _ in per_dataset]
    frame = pl.DataFrame(rows, infer_schema_length=None)
    _write_csv(csv, frame.to_dicts() if len(frame) else [])
    if frame.is_empty():
        _write(md, "**No debate method in this run: no debate dynamics to report.**\n")
        return
    cols = ["final_acc_wrong_majority", "final_acc_even_split", "final_acc_correct_majority",
            "final_agent_acc_difficult", "final_acc_difficult", "cpl", "ame", "cmp_1vK"]
    out = []
    for b in backbones:
        for m in (frame.filter(pl.col("backbone") == b)["method"].unique(maintain_order=True) if len(frame) else []):
            sub = frame.filter((pl.col("backbone") == b) & (pl.col("method") == m))
            rounds_ = [c for c in sub.columns if c.startswith("agent_acc_r") and sub[c].is_not_null().any()]
            curve = " → ".join(f"{fmt(float(np.nanmean(sub[c].to_numpy())))}/"
                               f"{fmt(float(np.nanmean(sub[c.replace('agent', 'majority')].to_numpy())))}"
                               for c in rounds_)
            vals = [fmt(float(np.nanmean(sub[c].cast(pl.Float64).to_numpy())) if sub[c].is_not_nan().any() else None)
                    for c in cols]
            out.append([b, label(m), curve, *vals])
    header = ["Backbone", "Method", "Agent / majority acc. per round", "R-final: wrong maj.", "R-final: even split",
              "R-final: correct maj.", "Difficult: R-final agent acc.", "Difficult: R-final maj.", "CPL", "AME (pp)",
              "CMP1vK (%)"]
    _write(md, markdown(header, out) + "\nAccuracy (%) by each question's answer type (official EM for spans and "
           "yes/no, equivalence of numbers, expressions and option letters otherwise), mean over datasets of "
           "per-dataset values (NaN groups skipped). Difficult = at least half of the agents wrong at round 0 "
           "(wrong majority or even split; TrueMAD's difficult cases, its R1 being round 0 here); per-round "
           "accuracies on them are in the CSV. CPL = P(wrong→right) / P(right→wrong) over agent transitions "
           "between rounds; AME = P(final majority right | initial wrong majority) − P(final majority wrong | "
           "initial correct majority); CMP1vK = P(final majority right | exactly one agent right at round 0) — "
           "formulas in lmad/paper/dynamics.py.\n" + agent_vote_markdown(frame, backbones))


def _final_round(row: dict, kind: str) -> float | None:
    """``{kind}_acc_r{t}`` of a dynamics row at its last round with a value."""
    ts = sorted((int(k.rsplit("_r", 1)[1]), v) for k, v in row.items()
                if k.startswith(f"{kind}_acc_r") and v is not None and np.isfinite(v))
    return ts[-1][1] if ts else None


def agent_vote_markdown(frame: pl.DataFrame, runs: list[str]) -> str:
    """TrueMAD's headline pair per backbone × method × dataset: Agent ACC (mean accuracy of the agents'
    final answers) and Vote ACC (strict-majority accuracy, a tie counting wrong), at the last round,
    as mean ± sample SD over the backbone's seeded replicates."""
    groups = _replicate_groups(runs)
    datasets = frame["dataset"].unique(maintain_order=True).to_list()
    out = []
    for b, reps in groups.items():
        sub = frame.filter(pl.col("backbone").is_in(reps))
        for m in sub["method"].unique(maintain_order=True).to_list():
            cells = []
            for d in datasets:
                rows = sub.filter((pl.col("method") == m) & (pl.col("dataset") == d)).to_dicts()
                pair = [mean_sd([v for r in rows if (v := _final_round(r, kind)) is not None]) for kind in ("agent", "majority")]
                cells.append(" / ".join("–" if mean is None else fmt(mean) + (f" ± {fmt(sd)}" if sd is not None else "")
                                        for mean, sd in pair))
            out.append([b, label(m), *cells])
    n = max(len(r) for r in groups.values())
    spread = f"mean ± sample SD over {n} seeded replicates" if n > 1 else "one run (no replicates: no SD)"
    return ("\n## Agent ACC / Vote ACC at the last round (TrueMAD)\n\n"
            + markdown(["Backbone", "Method", *[label(d) for d in datasets]], out)
            + f"\nAgent ACC = mean accuracy of the agents' final answers; Vote ACC = strict-majority accuracy (more "
              f"than half of the agents agree and are right; a tie is wrong), as the TrueMAD paper counts it; {spread}.\n")


# ---- figures / viewer: lmad.paper.figures, lmad.paper.viewer ----

#: The paper figures of the judgments, in the order rule paper_figures draws them (the round-wise
#: accuracy figure is rule paper_dynamics', ``dynamics_table``).
FIGURES = ("accuracy", "pareto", "lmad_trace")


def figures(judgments: list[str], validation: str, predictions: list[str], questions: list[str],
            traces: list[str], backbones: list[str], datasets: list[str], methods: list[str],
            metric: str, trace_questions: int, provenance: dict, **out: str) -> None:
    """The figures of the judgments in one job (rule paper_figures), so matplotlib is imported and
    the judgments read once. ``out`` holds ``<figure>_png`` and ``<figure>_pdf`` for each
    figure of FIGURES the config asks for (lmad_trace: LMAD)."""
    from ..paper import figures as draw
    wanted = [f for f in FIGURES if f"{f}_png" in out]
    if unknown := set(out) - {f"{f}_{ext}" for f in FIGURES for ext in ("png", "pdf")}:
        raise ValueError(f"rule paper_figures: unknown outputs {sorted(unknown)}")
    head = read_headline(validation, metric)
    judged = load_judgments(judgments)
    scored = with_score(judged, head.metric)
    for f in wanted:
        png, pdf = out[f"{f}_png"], out[f"{f}_pdf"]
        if f == "accuracy":
            draw.accuracy(scored, png, pdf, backbones, datasets, methods, head)
        elif f == "pareto":
            draw.pareto(scored, load("predictions", predictions), png, pdf, backbones, datasets, methods, head)
        else:
            draw.lmad_trace(load("lmad_trace", traces), judged, _golds(questions), png, pdf, trace_questions)
        log.info("drew %s", png)


def viewer(questions: list[str], judgments: list[str], validation: str, traces: list[str], rounds: list[str],
           html: str, metric: str, provenance: dict, steps: list[str] = (),
           lmad_reports: list[str] = (), labels: list[str] = (), pushback_validation: list[str] = ()) -> None:
    """The trace viewer; ``steps`` .. ``pushback_validation``: the disagreement layers' tables of
    this backbone, each empty when its layer is off (lmad.paper.viewer.turn_labels)."""
    from ..paper import viewer as v
    v.write(questions, judgments, traces, rounds, html, read_headline(validation, metric), steps, lmad_reports,
            labels, pushback_validation)
