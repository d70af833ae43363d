"""The finalizers' constrained calls with the real embedded model (SmolLM2-135M-Instruct on CPU,
1 demo question, one tied ballot): the tie judge's reply is one of the tied answers (choice constraint), every
verifier reply parses or its failure is recorded, and nothing raises."""
import pytest

from lmad.backends import open_backend
from lmad.studies.finalizers.finalize import Ballot
from lmad.prompts import load_prompt
from lmad.studies.finalizers.stages import finalize_ballots

from conftest import REPO

pytestmark = pytest.mark.model


def test_judge_and_verifier_with_the_real_model(smollm2_dir, tmp_path):
    pytest.importorskip("xgrammar")
    from lmad.data.loaders import load_jsonl, select

    qs = select(load_jsonl(REPO / "data" / "demo" / "hotpotqa.jsonl", "hotpotqa"), 1, 0)
    ballots = []
    for q in qs:
        titles = [p["title"] for p in q["context"]][:2]
        ballots.append(Ballot(q["qid"], "hotpotqa", "mad", 0, 0, [titles[0], titles[1]], q))  # a tie
    spec = {"backend": "transformers", "name": "smollm2-135m", "model": str(smollm2_dir), "threads": 2,
            "batch_size": 16}
    prompts = REPO / "config" / "prompts"
    rows, sent = finalize_ballots(ballots, ["vote", "vote_judge", "lvd"], open_backend(spec, tmp_path / "cache"),
                                  load_prompt(prompts / "finalize_judge.txt"), load_prompt(prompts / "verifier.txt"),
                                  {"judge": 16, "verifier": 48}, 1.5, 3)
    assert sent == 1 + 2  # one tie judge, one verification per candidate
    for r in rows:
        if r["finalizer"] == "vote_judge" and r["tie"]:
            assert r["calls"] == 1 and r["source"] in ("judge", "judge_fallback")
            assert r["prediction"] in r["candidates"]
        if r["finalizer"] == "lvd":
            assert r["calls"] == 2 and len(r["evidence"]) == 2 and r["prediction"] in r["candidates"]
            assert all(f in ("stop", "length") for f in r["finish_reasons"])
