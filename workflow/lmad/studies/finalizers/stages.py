"""Rule ``finalizers`` (rules.smk): every finalizer on every saved round of every
method, one job per backbone covering every dataset; every call the finalizers need (tie
judges and verifiers, all questions × rounds × methods) goes to the model as ONE batch.

A method's rounds are its answer tables in order: a debate method's ``round{t}.parquet``,
an LMAD method's ``iter{k}/generate.parquet``, SC's shared proposals (round 0 only). Those
tables hold only the questions still active in that round; a question that stopped earlier
keeps the answers of its stop round (``answers_round``), so round t of every method covers
every question.
"""
from __future__ import annotations

import logging
from collections import Counter, defaultdict

from lmad.backends import open_backend
from lmad.studies.finalizers.finalize import (Ballot, finalize_row, judge_request, needs_judge, needs_verification, tied,
                                              verify_request)
from lmad.prompts import load_prompt
from lmad.schemas import read_table, write_table
from lmad.stages.units import check_aligned

log = logging.getLogger(__name__)


def ballots(questions: dict[str, dict], dataset: str, method: str, tables: list[list[dict]]) -> list[Ballot]:
    """One ballot per question and round of one method on one dataset; ``tables[t]`` holds the
    ``samples`` rows of round t (active questions only)."""
    latest: dict[str, tuple[int, list[str]]] = {}
    out = []
    for t, rows in enumerate(tables):
        by_q: dict[str, dict[int, str]] = defaultdict(dict)
        for r in rows:
            by_q[r["qid"]][r["agent"]] = r["answer"]
        for qid, agents in by_q.items():
            latest[qid] = (t, [agents[a] for a in sorted(agents)])
        for qid in sorted(questions):
            if qid not in latest:
                raise ValueError(f"{dataset}/{method}: question {qid} has no answers by round {t}")
            at, answers = latest[qid]
            out.append(Ballot(qid, dataset, method, t, at, answers, questions[qid]))
    return out


def requests_of(ballots_: list[Ballot], finalizers: list[str], prompt_judge, prompt_verifier,
                max_tokens: dict) -> dict[tuple, object]:
    """Every (ballot index, request id) → ChatRequest the finalizers need."""
    reqs = {}
    for i, b in enumerate(ballots_):
        if "vote_judge" in finalizers and needs_judge(b):
            reqs[(i, "judge")] = judge_request(prompt_judge, b.question, [c.answer for c in tied(b.cands)],
                                               max_tokens["judge"])
        if "lvd" in finalizers and needs_verification(b):
            for k, c in enumerate(b.cands):
                reqs[(i, "verify", k)] = verify_request(prompt_verifier, b.question, c.answer, max_tokens["verifier"])
    return reqs


def finalize_ballots(ballots_: list[Ballot], finalizers: list[str], backend, prompt_judge, prompt_verifier,
                     max_tokens: dict, lvd_weight: float, min_quote_words: int) -> tuple[list[dict], int]:
    """The ``finalized`` rows of every ballot × finalizer, and the number of distinct requests
    sent (identical requests of different rounds or methods are sent once, counted in each row)."""
    reqs = requests_of(ballots_, finalizers, prompt_judge, prompt_verifier, max_tokens)
    unique = {}
    for key, req in reqs.items():
        unique.setdefault(req.key(""), req)
    order = list(unique)
    done = dict(zip(order, backend.generate([unique[k] for k in order]))) if order else {}
    rows = []
    for i, b in enumerate(ballots_):
        replies = {key[1:]: done[req.key("")] for key, req in reqs.items() if key[0] == i}
        for f in finalizers:
            rows.append(finalize_row(b, f, replies, lvd_weight, min_quote_words))
    return rows, len(order)


def finalizers(questions: list[str], rounds: list[str], finalized: list[str], round_units: list, datasets: list[str],
               model: dict, cache_dir: str, prompt_judge: str, prompt_verifier: str, names: list[str],
               max_tokens: dict, lvd_weight: float, min_quote_words: int, provenance: dict) -> None:
    """``rounds``: every method's answer table of every round, aligned with ``round_units``
    ([dataset, method, round], rounds of a method consecutive and in order); ``questions`` and
    ``finalized`` are aligned with ``datasets``."""
    check_aligned("finalizers", len(datasets), questions=questions, finalized=finalized)
    check_aligned("finalizers", len(round_units), rounds=rounds)
    qs = {d: {q["qid"]: q for q in read_table("questions", p).to_dicts()} for d, p in zip(datasets, questions)}
    tables: dict[tuple[str, str], list[list[dict]]] = defaultdict(list)
    for (dataset, method, t), path in zip(round_units, rounds):
        have = tables[(dataset, method)]
        if t != len(have):
            raise ValueError(f"finalizers: {dataset}/{method} round {t} given after {len(have)} rounds")
        have.append(read_table("samples", path).to_dicts())
    all_ballots = [b for (d, m), ts in tables.items() for b in ballots(qs[d], d, m, ts)]
    backend = open_backend(model, cache_dir)
    rows, sent = finalize_ballots(all_ballots, names, backend, load_prompt(prompt_judge), load_prompt(prompt_verifier),
                                  max_tokens, lvd_weight, min_quote_words)
    for d, path in zip(datasets, finalized):
        write_table("finalized", [r for r in rows if r["dataset"] == d], path, provenance)
    sources = Counter((r["finalizer"], r["source"]) for r in rows)
    errors = sum(bool(r["parse_error"]) for r in rows)
    log.info("%d ballots ((dataset, method) units: %d), finalizers %s: %d distinct calls in one batch; sources %s; "
             "rows with a parse error: %d; %s", len(all_ballots), len(tables), names, sent, dict(sources), errors,
             backend.stats())
