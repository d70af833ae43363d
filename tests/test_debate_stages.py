"""The debate stage functions on real Parquet tables and the call cache (test double):
round 0 reuses the proposals without a call, Consensus's revisions are MAD's cached
calls, and predictions sum every round's cost."""
import logging
import shutil

import pytest

from conftest import REPO, stored_calls
from lmad.schemas import read_table, write_table
from lmad import layout
from lmad.stages.units import by_method
from lmad.stages.debate import debate_predict, debate_predict_datasets, debate_predict_methods, debate_round
from lmad.stages.generate import generate

MODEL = {"name": "scripted", "backend": "scripted", "model": "scripted"}
PERSONAS = [0.1, 0.5, 0.9]
AUX = {"advice": 32, "judge": 32, "moderator": 32}
PROMPTS = REPO / "config" / "prompts"


def questions(path):
    context = [{"title": t, "sentences": [f"{t} is a place."]} for t in ("Alpha", "Beta", "Gamma")]
    rows = [{"qid": f"q{i}", "dataset": "hotpotqa", "benchmark": "hotpotqa", "question": f"Which place is meant in question {i}?",
             "context": context, "answer": "Alpha", "aliases": [], "qtype": "bridge", "supporting_facts": [],
             "source": "test", "answer_type": "span"} for i in range(3)]
    write_table("questions", rows, path)
    return str(path)


def entries(cache):
    return stored_calls(cache)


def run_method(tmp_path, method, qs, proposals, cache, rounds=2):
    out = tmp_path / method
    for t in range(rounds + 1):
        inputs = {"proposals": [proposals]} if t == 0 else {
            "previous": [str(out / f"round{t - 1}.parquet")],
            "previous_state": [str(out / f"round{t - 1}_state.parquet")]}
        debate_round(questions=[qs], samples=[str(out / f"round{t}.parquet")],
                     steps=[str(out / f"round{t}_steps.parquet")], state=[str(out / f"round{t}_state.parquet")],
                     model=MODEL, cache_dir=str(cache), method=method,
                     round_index=t, last=t == rounds, temperatures=PERSONAS, manners=[], max_tokens=32,
                     aux_max_tokens=AUX, seed=0, provenance={}, **inputs,
                     **({"prompt_debate_revise": str(PROMPTS / "debate_revise.txt")} if t else {}))
    debate_predict(questions=qs, samples=[str(out / f"round{t}.parquet") for t in range(rounds + 1)],
                   steps=[str(out / f"round{t}_steps.parquet") for t in range(rounds + 1)],
                   final_state=str(out / f"round{rounds}_state.parquet"), predictions=str(out / "predictions.parquet"),
                   method=method, provenance={})
    return out


def test_round_0_is_the_proposals_and_consensus_reuses_mads_calls(tmp_path, caplog):
    qs = questions(tmp_path / "questions.parquet")
    proposals = str(tmp_path / "proposals.parquet")
    generate(questions=[qs], prompt=str(PROMPTS / "solver.txt"), samples=[proposals], model=MODEL,
             cache_dir=str(tmp_path / "proposal-cache"), stage="proposals", temperatures=PERSONAS, max_tokens=32,
             seed=0, provenance={})
    cache = tmp_path / "cache"
    with caplog.at_level(logging.INFO):
        mad = run_method(tmp_path, "mad", qs, proposals, cache)
    assert read_table("samples", mad / "round0.parquet").equals(read_table("samples", proposals))
    assert "reused the shared proposals; 0 model calls" in caplog.text
    assert len(entries(cache)) == 2 * 3 * 3  # rounds 1 and 2 only: no round-0 call went out
    preds = read_table("predictions", mad / "predictions.parquet")
    assert preds["calls"].to_list() == [9, 9, 9] and set(preds["stop_reason"]) <= {"vote", "vote_tie"}
    assert (preds["completion_tokens"] > 0).all()

    before = entries(cache)
    consensus = run_method(tmp_path, "consensus", qs, proposals, cache)
    assert entries(cache) == before  # every Consensus revision is a MAD call, served by the cache
    state = read_table("debate_state", consensus / "round2_state.parquet")
    assert not state["active"].any() and len(state) == 3
    preds = read_table("predictions", consensus / "predictions.parquet")
    assert all(3 <= c <= 9 for c in preds["calls"])


def test_one_predictions_job_writes_every_dataset_and_rejects_misaligned_lists(tmp_path):
    qs = questions(tmp_path / "questions.parquet")
    proposals = str(tmp_path / "proposals.parquet")
    generate(questions=[qs], prompt=str(PROMPTS / "solver.txt"), samples=[proposals], model=MODEL,
             cache_dir=str(tmp_path / "cache"), stage="proposals", temperatures=PERSONAS, max_tokens=32,
             seed=0, provenance={})
    mad = run_method(tmp_path, "mad", qs, proposals, tmp_path / "cache")
    datasets, rounds = ["hotpotqa", "musique"], range(3)
    root = tmp_path / "w"

    def at(path):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        return str(root / path)

    for d in datasets:  # the same rounds under each dataset of a results tree
        for t in rounds:
            for part in ("", "_steps", "_state"):
                shutil.copy(mad / f"round{t}{part}.parquet", at(layout.debate_round("b", d, "mad", t, part)))
        shutil.copy(qs, at(layout.questions(d)))
    args = dict(questions=[at(layout.questions(d)) for d in datasets],
                final_state=[at(layout.debate_round("b", d, "mad", 2, "_state")) for d in datasets],
                predictions=[at(layout.predictions("b", d, "mad")) for d in datasets],
                method="mad", units=[[d, "mad"] for d in datasets], provenance={})
    dataset_major = {part: [at(layout.debate_round("b", d, "mad", t, p)) for d in datasets for t in rounds]
                     for part, p in (("samples", ""), ("steps", "_steps"))}
    debate_predict_datasets(**args, **dataset_major)
    for path in args["predictions"]:
        assert read_table("predictions", path).equals(read_table("predictions", mad / "predictions.parquet"))
    round_major = {part: [at(layout.debate_round("b", d, "mad", t, p)) for t in rounds for d in datasets]
                   for part, p in (("samples", ""), ("steps", "_steps"))}
    with pytest.raises(ValueError, match="is not of unit"):
        debate_predict_datasets(**args, **round_major)
    with pytest.raises(ValueError, match="do not split evenly"):
        debate_predict_datasets(**args, samples=dataset_major["samples"][:-1], steps=dataset_major["steps"])


def test_one_predictions_job_writes_every_debate_method(tmp_path):
    """Rule debate_predict: every debate method in one job, each method's lists after the last's,
    split by each method's round count; a count or an order that does not fit fails."""
    qs = questions(tmp_path / "questions.parquet")
    proposals = str(tmp_path / "proposals.parquet")
    generate(questions=[qs], prompt=str(PROMPTS / "solver.txt"), samples=[proposals], model=MODEL,
             cache_dir=str(tmp_path / "cache"), stage="proposals", temperatures=PERSONAS, max_tokens=32,
             seed=0, provenance={})
    methods, rounds = ["mad", "consensus"], [2, 2]
    runs = {m: run_method(tmp_path, m, qs, proposals, tmp_path / "cache") for m in methods}
    datasets = ["hotpotqa", "musique"]
    root = tmp_path / "w"

    def at(path):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        return str(root / path)

    for d in datasets:
        shutil.copy(qs, at(layout.questions(d)))
        for m, last in zip(methods, rounds):
            for t in range(last + 1):
                for part in ("", "_steps", "_state"):
                    shutil.copy(runs[m] / f"round{t}{part}.parquet", at(layout.debate_round("b", d, m, t, part)))
    args = dict(questions=[at(layout.questions(d)) for d in datasets],
                final_state=[at(layout.debate_round("b", d, m, r, "_state")) for m, r in zip(methods, rounds)
                             for d in datasets],
                predictions=[at(layout.predictions("b", d, m)) for m in methods for d in datasets],
                methods=methods, rounds=rounds, units=[[d, m] for m in methods for d in datasets], provenance={})
    tables = {part: [at(layout.debate_round("b", d, m, t, p)) for m, r in zip(methods, rounds) for d in datasets
                     for t in range(r + 1)] for part, p in (("samples", ""), ("steps", "_steps"))}
    debate_predict_methods(**args, **tables)
    for d in datasets:
        for m in methods:
            assert read_table("predictions", root / layout.predictions("b", d, m)).equals(
                read_table("predictions", runs[m] / "predictions.parquet"))
    with pytest.raises(ValueError, match="expecting"):
        debate_predict_methods(**{**args, "rounds": [2, 1]}, **tables)
    swapped = {part: paths[len(paths) // 2:] + paths[:len(paths) // 2] for part, paths in tables.items()}
    with pytest.raises(ValueError, match="is not of unit"):
        debate_predict_methods(**args, **swapped)


def test_by_method_splits_by_count():
    assert by_method("s", ["a", "b", "c"], [2, 0, 1], ["a1", "a2", "c1"]) == [["a1", "a2"], [], ["c1"]]
    with pytest.raises(ValueError, match="expecting"):
        by_method("s", ["a", "b"], [1, 1], ["a1"])


def test_self_consistency_votes_and_keys_by_the_answer_type(tmp_path):
    """SC's vote groups "0.5" with "1/2" (a math question) and "(B)" with "B" (a choice question);
    the prediction's key is the type's canonical form."""
    from lmad.stages.predict import predict

    def qs(qid, answer_type, answer, choices=()):
        return {"qid": qid, "dataset": "set", "benchmark": "set", "question": "?", "context": [], "answer": answer,
                "aliases": [], "qtype": "", "supporting_facts": [], "source": "test", "answer_type": answer_type,
                "choices": list(choices), "choice_order": [], "survey": ""}

    write_table("questions", [qs("q1", "math", "\\frac{1}{2}"), qs("q2", "choice", "B", "wxyz")], tmp_path / "q.parquet")
    said = {"q1": ["3", "0.5", "1/2"], "q2": ["C", "(B)", "B"]}
    write_table("samples", [{"qid": q, "stage": "proposals", "round": 0, "agent": i, "temperature": 0.1, "seed": i,
                             "response": a, "answer": a, "answer_norm": a, "answer_method": "answer_line",
                             "prompt_tokens": 1, "completion_tokens": 1, "finish_reason": "stop", "cached": False}
                            for q, answers in said.items() for i, a in enumerate(answers)], tmp_path / "s.parquet")
    predict(str(tmp_path / "q.parquet"), str(tmp_path / "s.parquet"), str(tmp_path / "p.parquet"), "sc", {})
    got = {r["qid"]: (r["prediction"], r["prediction_norm"], r["stop_reason"])
           for r in read_table("predictions", tmp_path / "p.parquet").to_dicts()}
    assert got == {"q1": ("0.5", "1/2", "vote"), "q2": ("(B)", "B", "vote")}
