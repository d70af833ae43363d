"""When Debate Helps' Table 1 as the paper reads it (§4.2, Table 1): accuracy under one call budget,
one block per backbone, a row per method, a column per displayed benchmark and their Avg.

Rows, in the paper's order (those the run has): vote20 (``sc``: the majority of its samples, its
final predictions), Vanilla Debate (``mad``) and MAD with each selected society (``mad+ac-greedy``,
``mad+sc-greedy``, ``mad+top-k``, config order). A debate row reads the debate's state after round
3 (:data:`ROUND`), not its final round: a question still open then is scored by the typed majority
of its agents' round-3 answers (the question's answer type groups them; a tie goes to the lowest
agent index, as the engine's own final vote), and a question that stopped by round 3 keeps the
answer it stopped with.

Columns: the config's ``paper.wdh_datasets`` (every configured dataset when empty), each a dataset
of the run; Avg. is the unweighted mean of the columns' accuracies (the paper's mean over its eight
displayed columns), undefined when a column has no value.

With a society split every cell is the accuracy on the held-out evaluation questions only, and a
column's questions are the same for every method (a mismatch is an error, never a silently
different denominator). Correctness is the question's own rule (:func:`lmad.answers.gold_correct`).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from .. import layout
from ..answers import Gold, gold_correct, reading_of
from ..number_format import fmt, markdown
from ..registry import split_society
from . import DATASET_LABELS, label

#: the debate round Table 1 reads (the paper's round-3 majority state)
ROUND = 3
VOTE = "sc"
DEBATE = "mad"
AVG = "avg"
CSV_COLUMNS = ["backbone", "method", "source", "dataset", "questions", "correct", "accuracy", "construction"]


def row_methods(methods: Sequence[str]) -> list[str]:
    """Table 1's rows among the run's ``methods``: vote20, Vanilla Debate, then each MAD society."""
    societies = [m for m in methods if split_society(m)[0] == DEBATE and split_society(m)[1] is not None]
    return [m for m in (VOTE, DEBATE) if m in methods] + societies


def debate_rows(methods: Sequence[str]) -> list[str]:
    """The rows that read a debate round (every row but vote20)."""
    return [m for m in row_methods(methods) if m != VOTE]


def columns(config: Mapping) -> list[str]:
    """Table 1's datasets: config ``paper.wdh_datasets``, else every configured dataset."""
    return list((config.get("paper") or {}).get("wdh_datasets") or config["datasets"])


def check_config(config: Mapping) -> None:
    """With ``paper.wdh`` on: its datasets are configured ones, and every debate row debates at least
    :data:`ROUND` rounds on every backbone (else the table has no round to read)."""
    if not (config.get("paper") or {}).get("wdh"):
        return
    from ..protocols.debate import setting_of

    unknown = [d for d in columns(config) if d not in config["datasets"]]
    if unknown:
        raise ValueError(f"config paper.wdh_datasets: {unknown} are not configured datasets; the run has "
                         f"{list(config['datasets'])}")
    for method in debate_rows(config["methods"]):
        for backbone in config["backbones"]:
            rounds = setting_of(method, config, backbone).rounds
            if rounds < ROUND:
                raise ValueError(f"config debate.rounds: When Debate Helps' Table 1 (paper.wdh) reads round {ROUND} "
                                 f"of {method}, which debates {rounds} round(s) on {backbone}; set debate.rounds "
                                 f"(or debate.methods.{split_society(method)[0]}.rounds) to {ROUND} or more")


def vote_inputs(backbones: Sequence[str], datasets: Sequence[str], methods: Sequence[str]) -> list[str]:
    """vote20's predictions of every backbone and column (none without ``sc``)."""
    return [layout.predictions(b, d, VOTE) for b in backbones for d in datasets] if VOTE in methods else []


def round_inputs(backbones: Sequence[str], datasets: Sequence[str], methods: Sequence[str],
                 part: str = "", round_: int = ROUND) -> list[str]:
    """Round ``round_``'s (Table 1's :data:`ROUND`) answers (``part`` "") or state (``"_state"``) of every
    debate row."""
    return [layout.debate_round(b, d, m, round_, part) for b in backbones for d in datasets
            for m in debate_rows(methods)]


def column_label(dataset: str, benchmark: str) -> str:
    """A column's header: a benchmark's own label, a subject dataset as ``MMLU-Redux: philosophy``,
    a dataset named as the start of its benchmark's label in that label's spelling (``gpqa``: GPQA)."""
    if dataset in DATASET_LABELS:
        return label(dataset)
    bench = label(benchmark)
    if dataset.startswith(f"{benchmark}-"):
        return f"{bench}: {dataset[len(benchmark) + 1:]}"
    return bench[:len(dataset)] if bench.lower().startswith(dataset.lower()) else dataset


def method_label(method: str, vote_samples: int) -> str:
    if method == VOTE:
        return f"vote{vote_samples} ({VOTE})"
    if method == DEBATE:
        return f"Vanilla Debate ({DEBATE})"
    return label(method)


# ---- answers ----

def round_answers(questions: Mapping[str, Mapping], samples: Sequence[Mapping],
                  state: Sequence[Mapping]) -> dict[str, str]:
    """{qid: the debate's answer after the round} of one method on one dataset. ``samples``: the
    round's answers (the questions still debating in it); ``state``: the state after it (every
    question). A stopped question keeps its state's answer; an open one gets the typed majority of
    its agents' answers, in agent order."""
    by_q: dict[str, dict[int, str]] = {}
    for r in samples:
        by_q.setdefault(r["qid"], {})[r["agent"]] = r["answer"] or ""
    out = {}
    for s in state:
        qid = s["qid"]
        if not s["active"]:
            out[qid] = s["prediction"] or ""
        elif qid in by_q:
            agents = by_q[qid]
            out[qid] = reading_of(questions[qid]).vote([agents[a] for a in sorted(agents)])[0] or ""
        else:
            raise ValueError(f"question {qid} is open after the round but has no answers in it")
    return out


def score(answers: Mapping[str, str], golds: Mapping[str, Gold], keep: set[str] | None = None) -> dict[str, bool]:
    """{qid: correct} of the answered questions (those in ``keep`` when given: the held-out ones)."""
    return {q: bool(gold_correct(a, golds[q])) for q, a in answers.items() if keep is None or q in keep}


def cells(scored: Mapping[tuple[str, str, str], Mapping[str, bool]]) -> dict[tuple[str, str, str], tuple[int, int]]:
    """``{(backbone, method, dataset): {qid: correct}}`` → ``{...: (correct, questions)}``; every method
    of a (backbone, dataset) must have scored the same questions."""
    seen: dict[tuple[str, str], tuple[str, frozenset]] = {}
    for (backbone, method, dataset), flags in scored.items():
        qs = frozenset(flags)
        first = seen.setdefault((backbone, dataset), (method, qs))
        if first[1] != qs:
            raise ValueError(f"{backbone}/{dataset}: {method} is scored on {len(qs)} questions, {first[0]} on "
                             f"{len(first[1])} (differing: {sorted(first[1] ^ qs)[:5]}); every method of a column "
                             "must answer the same questions")
    return {key: (sum(flags.values()), len(flags)) for key, flags in scored.items()}


# ---- the table ----

def table_rows(counts: Mapping[tuple[str, str, str], tuple[int, int]], backbones: Sequence[str],
               methods: Sequence[str], datasets: Sequence[str],
               construction: Mapping[tuple[str, str], int] | None = None) -> list[dict]:
    """Long form: one row per backbone × method (present in ``counts``) × column, then its Avg.
    Accuracy in percent, None for a column with no question; Avg. = mean of the columns' accuracies,
    None unless every column has one. ``construction``: {(backbone, dataset): the questions of the
    society split's construction part, left out} (None without a split)."""
    construction = construction or {}
    rows = []
    for backbone in backbones:
        for method in methods:
            if not any((backbone, method, d) in counts for d in datasets):
                continue
            source = "predictions" if method == VOTE else f"round{ROUND}"
            accs = []
            for d in datasets:
                correct, n = counts.get((backbone, method, d), (0, 0))
                acc = 100 * correct / n if n else None
                accs.append(acc)
                rows.append({"backbone": backbone, "method": method, "source": source, "dataset": d, "questions": n,
                             "correct": correct, "accuracy": acc, "construction": construction.get((backbone, d))})
            avg = sum(accs) / len(accs) if accs and all(a is not None for a in accs) else None
            left_out = [construction.get((backbone, d)) for d in datasets]
            rows.append({"backbone": backbone, "method": method, "source": source, "dataset": AVG,
                         "questions": sum(r["questions"] for r in rows[-len(datasets):]), "correct": None,
                         "accuracy": avg, "construction": sum(left_out) if None not in left_out else None})
    return rows


def table_markdown(rows: Sequence[Mapping], datasets: Sequence[str], benchmarks: Mapping[str, str],
                   vote_samples: int) -> str:
    """One block per backbone: a row per method, the columns and Avg. (%), then each column's questions
    (and, with a split, its construction questions left out)."""
    heads = [column_label(d, benchmarks.get(d, d)) for d in datasets]
    out = []
    for backbone in dict.fromkeys(r["backbone"] for r in rows):
        mine = [r for r in rows if r["backbone"] == backbone]
        body = []
        for method in dict.fromkeys(r["method"] for r in mine):
            by = {r["dataset"]: r for r in mine if r["method"] == method}
            body.append([method_label(method, vote_samples), *(fmt(by[d]["accuracy"]) for d in [*datasets, AVG])])
        text = f"## {backbone}\n\n" + markdown(["Method", *heads, "Avg."], body)
        text += questions_note(mine, datasets, heads)
        out.append(text)
    return "\n".join(out)


def questions_note(rows: list[dict], datasets: list[str], heads: list[str]) -> str:
    """The line under one backbone's table: its questions per column, and with societies the
    construction questions each column leaves out."""
    n = {r["dataset"]: r["questions"] for r in rows}
    left = {r["dataset"]: r["construction"] for r in rows}
    count = ", ".join(f"{h} {n[d]}" for h, d in zip(heads, datasets))
    if all(left[d] is not None for d in datasets):
        return (f"\nHeld-out questions per column: {count}; construction questions left out: "
                + ", ".join(f"{h} {left[d]}" for h, d in zip(heads, datasets)) + "\n")
    return f"\nQuestions per column: {count}\n"


def title(vote_samples: int) -> str:
    return f"# When Debate Helps, Table 1: vote{vote_samples} and round-{ROUND} debate accuracy (%)\n\n"


def caption(datasets: Sequence[str], vote_samples: int, held_out: bool, size: int | None) -> str:
    if held_out:
        size_text = f"{size} question(s) per benchmark" if size is not None else "per benchmark"
        where = (f"Every cell is accuracy on the held-out questions only: each benchmark's construction split "
                 f"({size_text}, config societies.split.size; each column's share above), on which the societies "
                 f"were selected, is left out, and every method of a column is scored on the same questions.")
    else:
        where = "No society split in this run: every cell is over all of the dataset's questions."
    return (f"\nAccuracy (%). vote{vote_samples}: the majority of {vote_samples} samples (method {VOTE}, its final "
            f"predictions). Debate rows: the debate's state after round {ROUND} (R{ROUND}), not its final round: the "
            f"typed majority of the agents' round-{ROUND} answers (a tie goes to the lowest agent index), or the answer "
            f"a question stopped with before. Avg. = the unweighted mean of the {len(datasets)} columns (– when a "
            f"column has no value). {where} Correctness is each question's answer type's own rule (equivalence of "
            f"numbers, expressions, option letters). The When Debate Helps summary prints no Table 1 cells to check "
            f"against.\n")


# ---- five-run robustness (§A.5) ----

#: the comparison §A.5 makes: each coverage-selected society's debate against Vanilla Debate
ROBUSTNESS_COLUMNS = ["backbone", "method", "baseline", "runs", "seeds", "gains", "mean_gain", "sd", "ci_low",
                      "ci_high", "p_value"]


def paired_gains(rows: Sequence[Mapping]) -> list[dict]:
    """From Table 1's long rows of replicate runs (``{model}/seed{s}``): per model and society debate, each
    run's Avg. minus Vanilla Debate's Avg. of the same run (the paper's eight-column average gain), and
    over the runs their mean, sample SD, paired 95 % t interval and two-sided paired t-test p-value.
    The interval measures generation-seed variability (the runs), not question resampling. One run has
    no interval; runs that all gain the same have no spread, hence no test (both None)."""
    from scipy import stats as st

    from ..stats import mean_sd

    avg = {(r["backbone"], r["method"]): r["accuracy"] for r in rows if r["dataset"] == AVG}
    out = []
    backbones = dict.fromkeys(b for b, _ in avg)
    for model in dict.fromkeys(map(layout.model_of, backbones)):
        runs = sorted((layout.replicate_of(b), b) for b in backbones if layout.model_of(b) == model)
        methods = dict.fromkeys(m for (b, m) in avg if layout.model_of(b) == model and m not in (VOTE, DEBATE))
        for method in methods:
            pairs = [(s, avg[(b, method)] - avg[(b, DEBATE)]) for s, b in runs
                     if avg.get((b, method)) is not None and avg.get((b, DEBATE)) is not None]
            gains = [g for _, g in pairs]
            mean, sd = mean_sd(gains)
            low = high = p = None
            if sd is not None and sd > 0:
                half = float(st.t.ppf(0.975, len(gains) - 1)) * sd / len(gains) ** 0.5  # a Python float: fmt reprs it
                low, high = mean - half, mean + half
                p = float(2 * st.t.sf(abs(mean) / (sd / len(gains) ** 0.5), len(gains) - 1))
            out.append({"backbone": model, "method": method, "baseline": DEBATE, "runs": len(gains),
                        "seeds": [s for s, _ in pairs], "gains": gains, "mean_gain": mean, "sd": sd,
                        "ci_low": low, "ci_high": high, "p_value": p})
    return out


def robustness_markdown(gains: Sequence[Mapping]) -> str:
    body = [[g["backbone"], label(g["method"]), str(g["runs"]), fmt(g["mean_gain"], signed=True),
             "n/a" if g["sd"] is None else fmt(g["sd"]),
             "n/a" if g["ci_low"] is None else f"[{fmt(g['ci_low'], signed=True)}, {fmt(g['ci_high'], signed=True)}]",
             "n/a" if g["p_value"] is None else f"{g['p_value']:.3g}"] for g in gains]
    return ("# When Debate Helps, §A.5: society debate − Vanilla Debate over matched runs\n\n"
            + (markdown(["Backbone", "Method", "Runs", "Mean gain (points)", "SD", "95 % CI", "p"], body) if body
               else "**No society debate beside Vanilla Debate in this run: nothing to compare.**\n")
            + "\nEach run's gain is its Table 1 Avg. (the unweighted mean of the displayed columns, round-3 debate "
            "state, held-out questions) minus Vanilla Debate's Avg. in the same run; runs are the config's `seeds` "
            "(one generation seed each). Mean, sample SD, a paired 95 % t interval and a two-sided paired t-test "
            "over the runs: they measure generation-seed variability, not question resampling. n/a: one run (no "
            "spread to estimate) or runs that all gain the same. The summary reports the mean gains (+1.14 and "
            "+1.46 on Qwen3-4B, +0.96 and +2.01 on OLMo3-7B for SC-Greedy and AC-Greedy) and nominal p < .05, but "
            "no interval to check against.\n")


# ---- Table 20: five-round results with a new seed (§A.12.2) ----
#
# Per backbone, debate method and column: the R0 proposal hit (any of the method's own round-0
# answers right), its R0 vote (their typed majority), the final accuracy (its final prediction, after
# its last round) and the lift = final − own R0 vote (lmad.paper.headroom's per-question flags, on the
# held-out questions when the run has a society split); Avg. the unweighted mean of the columns.

TABLE20_METRICS = {"hit_r0": "R0 hit", "vote_r0": "R0 vote", "final": "Final", "lift": "Lift"}
TABLE20_COLUMNS = ["backbone", "seed", "method", "dataset", "questions", *TABLE20_METRICS, "construction"]
#: §A.12: the averages the summary quotes for the two coverage-selected societies' debates, R0 proposal
#: hit and lift over the own R0 vote (over which backbones and columns is not said; no cell is printed)
PUBLISHED_TABLE20_AVG = {"mad+ac-greedy": {"hit_r0": 84.93, "lift": 1.64}, "mad+sc-greedy": {"hit_r0": 83.88, "lift": 2.48}}


def table20_rows(cells: Mapping[tuple[str, str, str], Mapping], backbones: Sequence[str], methods: Sequence[str],
                 datasets: Sequence[str], seeds: Mapping[str, int],
                 construction: Mapping[tuple[str, str], int] | None = None) -> list[dict]:
    """Long form: one row per backbone × debate method (present in ``cells``) × column, then its Avg.
    ``cells``: {(backbone, method, dataset): {"n", "hit_rate", "vote_acc", "final_em", "gain"}} (percent,
    lmad.paper.headroom.summarize); a column with no question has no value. Avg. = the unweighted mean
    of the columns, None unless every column has one. ``seeds``: {backbone: the run's generation seed}."""
    construction = construction or {}
    source = {"hit_r0": "hit_rate", "vote_r0": "vote_acc", "final": "final_em", "lift": "gain"}
    rows = []
    for backbone in backbones:
        for method in debate_rows(methods):
            if not any((backbone, method, d) in cells for d in datasets):
                continue
            mine = []
            for d in datasets:
                c = cells.get((backbone, method, d))
                n = c["n"] if c else 0
                mine.append({"backbone": backbone, "seed": seeds.get(backbone), "method": method, "dataset": d,
                             "questions": n, **{k: c[v] if c and n else None for k, v in source.items()},
                             "construction": construction.get((backbone, d))})
            avg = {k: (sum(r[k] for r in mine) / len(mine) if mine and all(r[k] is not None for r in mine) else None)
                   for k in TABLE20_METRICS}
            left_out = [construction.get((backbone, d)) for d in datasets]
            rows += mine + [{"backbone": backbone, "seed": seeds.get(backbone), "method": method, "dataset": AVG,
                             "questions": sum(r["questions"] for r in mine), **avg,
                             "construction": sum(left_out) if None not in left_out else None}]
    return rows


def table20_markdown(rows: Sequence[Mapping], datasets: Sequence[str], benchmarks: Mapping[str, str]) -> str:
    """One block per backbone: a row per debate method, R0 hit / R0 vote / Final / Lift per column and Avg."""
    heads = [column_label(d, benchmarks.get(d, d)) for d in datasets]
    out = []
    for backbone in dict.fromkeys(r["backbone"] for r in rows):
        mine = [r for r in rows if r["backbone"] == backbone]
        body = []
        for method in dict.fromkeys(r["method"] for r in mine):
            by = {r["dataset"]: r for r in mine if r["method"] == method}
            body.append([method_label(method, 0), *(fmt(by[d][k], signed=k == "lift") for d in [*datasets, AVG]
                                                    for k in TABLE20_METRICS)])
        head = ["Method", *(f"{h} {name}" for h in [*heads, "Avg."] for name in TABLE20_METRICS.values())]
        text = f"## {backbone} (seed {mine[0]['seed']})\n\n" + markdown(head, body)
        text += questions_note(mine, datasets, heads)
        out.append(text)
    return "\n".join(out)


def table20_title(seeds: Sequence[int], rounds: int) -> str:
    named = ", ".join(str(s) for s in dict.fromkeys(seeds)) or "–"
    return f"# When Debate Helps, Table 20: {rounds}-round debate results, seed {named}\n\n"


def table20_caption(datasets: Sequence[str], rounds: int, held_out: bool, size: int | None,
                    seeds: Sequence[int]) -> str:
    where = (f"Every cell is over the held-out questions only (each benchmark's construction split, "
             f"{size if size is not None else 'config societies.split.size'} question(s), is left out), the same "
             f"questions for every method of a column." if held_out else
             "No society split in this run: every cell is over all of the dataset's questions.")
    published = "; ".join(f"{label(m)}: R0 hit {fmt(v['hit_r0'])}, lift {fmt(v['lift'], signed=True)}"
                          for m, v in PUBLISHED_TABLE20_AVG.items())
    return (f"\nPer debate method (its own agents): R0 hit = % of questions where at least one of its round-0 answers "
            f"is right (proposal hit); R0 vote = the typed majority of those answers; Final = its final prediction "
            f"after round {rounds} (the last round: config debate.rounds); Lift = Final − its own R0 vote, in points. "
            f"Avg. = the unweighted mean of the {len(datasets)} columns (– when a column has no value). {where} "
            f"Correctness is each question's answer type's own rule. The run's generation seed: "
            f"{', '.join(map(str, dict.fromkeys(seeds)))} (the paper's Table 20 is a run with a seed other than "
            f"Table 1's: config/wdh-new-seed.yaml). The summary prints no Table 20 cell, only averages (§A.12): "
            f"{published}.\n")
