"""Rule ``opinion_table`` (rules.smk): the table reported instead of accuracy on questions
whose answer type is ``opinion`` (GlobalOpinionQA), which have no gold. Parquet in, no model calls.

For one method on one such dataset, each question's answers are

* ``agents``: the letters of the method's final round — a debate method's last round, an LMAD
  method's last iteration, SC's samples — where the method has several agents or samples; a
  question that stopped early keeps the answers of its stop round;
* ``prediction``: its single prediction otherwise (CoT).

Their distribution over the question's options is compared with every surveyed country's
distribution (``questions.survey``) by ``answers.opinion_similarity``: 1 − Jensen–Shannon
distance, base 2. A question is *valid* when at least one of its answers is one of its option
letters. Per (backbone, dataset, method): ``n`` questions, ``n_valid``, ``similarity`` = the mean
over every (valid question, surveyed country) pair, and the best- and worst-matched countries by
their mean over the valid questions that survey them (ties: the first country by name).
"""
from __future__ import annotations

import json
from collections import defaultdict
from statistics import fmean
from typing import Iterable, Sequence

from lmad.answers import answer_distribution, opinion_similarity
from lmad.atomic import write_text
from lmad.number_format import fmt, markdown
from lmad.paper import label
from lmad.schemas import read_table, write_table
from lmad.stages.units import check_aligned


def final_answers(rounds: Iterable[Sequence[dict]]) -> dict[str, list[str]]:
    """{qid: answers in agent order} of a question's last round among ``rounds`` (``samples`` rows
    of round 0, 1, …; each holds only the questions still active in it)."""
    latest: dict[str, dict[int, str]] = {}
    for rows in rounds:
        this: dict[str, dict[int, str]] = defaultdict(dict)
        for r in rows:
            this[r["qid"]][r["agent"]] = r["answer"]
        latest.update(this)
    return {qid: [agents[a] for a in sorted(agents)] for qid, agents in latest.items()}


def predicted_answers(rows: Iterable[dict]) -> dict[str, list[str]]:
    """{qid: [prediction]} of a ``predictions`` table."""
    return {r["qid"]: [r["prediction"]] for r in rows}


def summarize(questions: Sequence[dict], answers: dict[str, list[str]]) -> dict:
    """n, n_valid, mean similarity and the best / worst country of one method's answers to ``questions``."""
    pairs: list[float] = []
    by_country: dict[str, list[float]] = defaultdict(list)
    valid = 0
    for q in questions:
        letters = answers.get(q["qid"], [])
        if answer_distribution(letters, len(q["choices"])) is None:
            continue
        valid += 1
        for country, sim in opinion_similarity(letters, json.loads(q["survey"])).items():
            pairs.append(sim)
            by_country[country].append(sim)
    means = sorted((country, fmean(sims)) for country, sims in by_country.items())
    best = max(means, key=lambda c: c[1], default=(None, None))
    worst = min(means, key=lambda c: c[1], default=(None, None))
    return {"n": len(questions), "n_valid": valid, "n_countries": len(means),
            "similarity": fmean(pairs) if pairs else None, "best_country": best[0], "best_similarity": best[1],
            "worst_country": worst[0], "worst_similarity": worst[1]}


def _questions_by_dataset(paths: Sequence[str], datasets: Sequence[str]) -> dict[str, list[dict]]:
    check_aligned("opinion_table", len(datasets), questions=list(paths))
    return {d: [q for q in read_table("questions", p).to_dicts() if q["answer_type"] == "opinion"]
            for d, p in zip(datasets, paths)}


def _round_answers(paths: Sequence[str], units: Sequence[Sequence]) -> dict[tuple[str, str], dict[str, list[str]]]:
    """{(dataset, method): final answers} from the round tables of ``units`` ([dataset, method, round],
    rounds in order within each method)."""
    check_aligned("opinion_table", len(units), rounds=list(paths))
    tables: dict[tuple[str, str], list[list[dict]]] = defaultdict(list)
    for (dataset, method, _), path in zip(units, paths):
        tables[(dataset, method)].append(read_table("samples", path).to_dicts())
    return {key: final_answers(rounds) for key, rounds in tables.items()}


def opinion_rows(backbone: str, questions: dict[str, list[dict]],
                 answers: dict[tuple[str, str], tuple[str, dict[str, list[str]]]]) -> list[dict]:
    """One ``opinion`` row per (dataset, method) of ``answers``: {(dataset, method): (source, answers)}."""
    return [{"backbone": backbone, "dataset": dataset, "method": method, "source": source,
             **summarize(questions[dataset], by_qid)}
            for (dataset, method), (source, by_qid) in answers.items()]


def opinion_markdown(backbone: str, rows: Sequence[dict]) -> str:
    def country(name, sim):
        return "–" if name is None else f"{name} ({fmt(sim, digits=3)})"

    body = [[label(r["dataset"]), label(r["method"]), r["source"], str(r["n"]), str(r["n_valid"]),
             fmt(r["similarity"], digits=3), country(r["best_country"], r["best_similarity"]),
             country(r["worst_country"], r["worst_similarity"])] for r in rows]
    header = ["Dataset", "Method", "answers", "n", "valid", "similarity", "best-matched", "worst-matched"]
    return (f"# Opinion distributions — {backbone}\n\n"
            "Opinion questions have no gold, so no accuracy: a method's answers to a question (its final "
            "round's agents or samples, else its prediction) form a distribution over the options, compared "
            "with each surveyed country's by 1 − Jensen–Shannon distance (base 2; 1 = the same distribution). "
            "similarity: mean over every (valid question, country) pair; best / worst: the countries with the "
            "highest / lowest mean over the valid questions that survey them. valid: questions with at least "
            "one answer that is an option letter.\n\n" + markdown(header, body))


def opinion_table(questions: list[str], rounds: list[str], predictions: list[str], table: str, table_md: str,
                  backbone: str, datasets: list[str], methods: list[str], round_units: list, prediction_units: list,
                  provenance: dict) -> None:
    """Write ``table`` (table ``opinion``) and ``table_md`` for one backbone (see the module docstring);
    rows in config order (``datasets``, ``methods``)."""
    check_aligned("opinion_table", len(prediction_units), predictions=predictions)
    answers = {key: ("agents", by_qid) for key, by_qid in _round_answers(rounds, round_units).items()}
    for (dataset, method), path in zip(prediction_units, predictions):
        answers[(dataset, method)] = ("prediction", predicted_answers(read_table("predictions", path).to_dicts()))
    rows = opinion_rows(backbone, _questions_by_dataset(questions, datasets), answers)
    rows.sort(key=lambda r: (datasets.index(r["dataset"]), methods.index(r["method"])))
    write_table("opinion", rows, table, provenance)
    write_text(table_md, opinion_markdown(backbone, rows))
