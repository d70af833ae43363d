"""Valid result tables of a finished run, written the way the pipeline lays them out, for the
property tests of the analysis and paper layer (tests/test_analysis_properties.py).

``Run`` says what a run produced: backbones, datasets, methods, questions per dataset, one
correctness pattern per backbone x dataset x method (``correct`` / ``wrong`` / ``unscored`` /
``mixed`` / ``copy`` = the same answers as the first method, for ties), optionally one method
missing on one dataset, agents, debate rounds. ``write_run`` turns it into Parquet files under
``root/results`` through ``lmad.schemas.write_table`` (so every table is schema-valid) and
returns the input lists each rule of rules/analysis.smk and rules/paper.smk would get.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lmad.answers.span import normalize_answer
from lmad.data import ANSWER_TYPE
from lmad.schemas import write_table

DATASETS = ["hotpotqa", "2wikimultihopqa", "musique", "strategyqa"]
BASELINES = ["cot", "sc", "consensus", "mad", "dmad"]
LMAD = ["lmad", "lmad-concrete", "lmad-always"]
DEBATE = ["consensus", "mad", "dmad"]
METHODS = [*BASELINES, *LMAD]
PATTERNS = ["correct", "wrong", "unscored", "mixed", "copy"]


@dataclass
class Run:
    backbones: list[str]
    datasets: list[str]
    methods: list[str]
    n: dict[str, int]                                    # questions per dataset
    pattern: dict[tuple[str, str, str], str]             # (backbone, dataset, method) -> PATTERNS
    missing: tuple[str, str] | None = None               # (dataset, method) absent for every backbone
    agents: int = 3
    rounds: dict[str, int] = field(default_factory=dict)  # debate method -> R (files round0..roundR)
    seed: int = 0
    metric: str = "auto"                                 # config analysis.metric
    judge_passed: bool = True                            # the judge's validation result


def qids(n: int) -> list[str]:
    return [f"q{i:03d}" for i in range(n)]


def gold(d: str, q: str) -> str:
    return f"{d} answer {q}"


def _questions(d: str, n: int) -> list[dict]:
    return [{"qid": q, "dataset": d, "benchmark": d, "question": f"Which {q} of {d}? <b>&</b>", "answer": gold(d, q),
             "aliases": [f"alias {q}"] if i % 3 == 0 else [], "qtype": "bridge", "source": "property",
             "answer_type": ANSWER_TYPE[d],
             "context": [{"title": f"T{j}", "sentences": [f"Sentence {j} of {q}."]} for j in range(2)],
             "supporting_facts": [{"title": "T0", "sent_id": 0}]} for i, q in enumerate(qids(n))]


def scores(run: Run, rng: np.random.Generator, b: str, d: str, m: str, first: list) -> list:
    """Per question: 1.0 right, 0.0 wrong, None unscored."""
    kind, n = run.pattern[(b, d, m)], run.n[d]
    if kind == "copy" and first:
        return list(first)
    if kind in ("correct", "copy"):
        return [1.0] * n
    if kind == "wrong":
        return [0.0] * n
    if kind == "unscored":
        return [None] * n
    return [[1.0, 0.0, None][i] for i in rng.choice(3, size=n, p=[0.5, 0.4, 0.1])]


def _call(rng) -> dict:
    return {"prompt_tokens": int(rng.integers(0, 500)), "completion_tokens": int(rng.integers(0, 80)),
            "finish_reason": "stop", "cached": False}


def _answer(rng, d, q, p_right=0.5) -> str:
    r = rng.random()
    return gold(d, q) if r < p_right else ("" if r > 0.95 else f"wrong {int(r * 4)}")


def write_validation(root: Path, passed: bool) -> str:
    """A judge_validation table (rule judge_validation) that passed or failed."""
    path = root / "results" / "judge" / "j" / "validation.parquet"
    write_table("judge_validation", [{
        "judge_model": "j", "n_correct_items": 10, "n_incorrect_items": 8, "tpr": 1.0, "tnr": 1.0 if passed else 0.0,
        "balanced_acc": 1.0 if passed else 0.5, "n_unscored": 0, "unscored_rate": 0.0, "min_recall": 0.8,
        "passed": passed, "reason": "fixture"}], path)
    return str(path)


def write_run(run: Run, root: Path) -> dict:
    rng = np.random.default_rng(run.seed)
    res = root / "results"
    out = {"questions": [], "judgments": {b: [] for b in run.backbones}, "predictions": {b: [] for b in run.backbones},
           "proposals": [], "rounds": {b: [] for b in run.backbones}, "traces": {b: [] for b in run.backbones},
           "correct": {}, "validation": write_validation(root, run.judge_passed)}
    for d in run.datasets:
        path = res / "data" / f"{d}.parquet"
        write_table("questions", _questions(d, run.n[d]), path)
        out["questions"].append(str(path))
    for b in run.backbones:
        for d in run.datasets:
            judged, first = [], []
            for m in run.methods:
                if run.missing == (d, m):
                    continue
                s = scores(run, rng, b, d, m, first)
                first = first or s
                out["correct"][(b, d, m)] = s
                preds = []
                for q, c in zip(qids(run.n[d]), s):
                    pred = gold(d, q) if c == 1.0 else ("" if c == 0.0 and q.endswith("7") else f"wrong {q}")
                    em = float(c == 1.0)
                    verdict = {1.0: "correct", 0.0: "incorrect", None: "unscored"}[c]
                    judged.append({"qid": q, "dataset": d, "method": m, "prediction": pred, "gold": gold(d, q),
                                   "aliases": [], "judge_model": "judge", "judge_verdict": verdict,
                                   "judge_correct": c, "judge_raw": verdict, "em": em, "f1": em, **_call(rng)})
                    calls = 1 if m == "cot" else run.agents if m == "sc" else int(rng.integers(run.agents, 20))
                    preds.append({"qid": q, "dataset": d, "method": m, "prediction": pred,
                                  "prediction_norm": normalize_answer(pred), "stop_reason": "final", "stop_round": 0,
                                  "calls": calls, "prompt_tokens": int(rng.integers(0, 5000)),
                                  "completion_tokens": int(rng.integers(0, 800))})
                path = res / b / d / "predictions" / f"{m}.parquet"
                write_table("predictions", preds, path)
                out["predictions"][b].append(str(path))
            path = res / b / d / "judgments.parquet"
            write_table("judgments", judged, path)
            out["judgments"][b].append(str(path))
            path = res / b / d / "samples" / "proposals.parquet"
            write_table("samples", _samples(rng, run, d, "proposals", 0, qids(run.n[d])), path)
            out["proposals"].append(str(path))
            for m in run.methods:
                if m in DEBATE and run.missing != (d, m):
                    out["rounds"][b] += _rounds(rng, run, res / b / d / m, d, m)
                if m in LMAD and run.missing != (d, m):
                    path = res / b / d / m / "trace.parquet"
                    write_table("lmad_trace", _trace(rng, run, d, m), path)
                    out["traces"][b].append(str(path))
    return out


def _samples(rng, run: Run, d: str, stage: str, t: int, active: list[str], p_right=0.5) -> list[dict]:
    rows = []
    for q in active:
        for a in range(run.agents):
            ans = _answer(rng, d, q, p_right)
            rows.append({"qid": q, "stage": stage, "round": t, "agent": a, "temperature": 0.1 + 0.4 * a,
                         "seed": a, "response": f"reasoning\nAnswer: {ans}", "answer": ans,
                         "answer_norm": normalize_answer(ans), "answer_method": "answer_line", **_call(rng)})
    return rows


def _rounds(rng, run: Run, folder: Path, d: str, m: str) -> list[str]:
    """round0..roundR; a question that stopped early is absent from later rounds."""
    R = run.rounds.get(m, 1)
    stop = {q: int(rng.integers(0, R + 1)) for q in qids(run.n[d])}
    paths = []
    for t in range(R + 1):
        path = folder / f"round{t}.parquet"
        write_table("samples", _samples(rng, run, d, m, t, [q for q, s in stop.items() if s >= t]), path)
        paths.append(str(path))
    return paths


def _trace(rng, run: Run, d: str, m: str) -> list[dict]:
    rows = []
    for q in qids(run.n[d]):
        committed: list[str] = []
        for it in range(int(rng.integers(1, 3))):
            answers = [_answer(rng, d, q) for _ in range(run.agents)]
            agreed = bool(rng.random() < 0.3)
            last = agreed or it == 1
            chains = [] if agreed else [[f"step {j} of agent {a}" for j in range(int(rng.integers(1, 4)))]
                                        for a in range(run.agents)]
            admitted = None if agreed else bool(rng.random() < 0.5)
            repair = [] if agreed else ["repaired step"]
            after = committed + repair if admitted else committed
            rows.append({
                "qid": q, "dataset": d, "method": m, "iteration": it, "committed_before": committed,
                "answers": answers, "agreed": agreed, "chains": chains, "chain_fallbacks": [""] * len(chains),
                "conflict": None if agreed else f"conflict on {q}",
                "witness": [int(rng.integers(1, len(c) + 1)) for c in chains], "witness_fallback": [""] * len(chains),
                "segments": [c[:1] for c in chains],
                "positions": [] if agreed else [[f"claim {a}" for a in range(run.agents)]],
                "repair_nodes": repair, "quotes": [] if agreed else ["a quote"],
                "checks": [] if agreed else [{"check": "quote", "passed": bool(admitted), "required": True,
                                              "detail": ""}],
                "admitted": admitted, "committed_after": after, "stop_reason": "agreed" if last else None,
                "prediction": answers[0], "calls": int(rng.integers(1, 9)), "prompt_tokens": 10,
                "completion_tokens": 5})
            committed = after
            if last:
                break
    return rows
