"""The real embedded model (SmolLM2-135M) on demo questions of a multiple-choice and a math
set: one batch through the solver prompt, every reply read by its type without raising, and
which form each reply's answer was found in recorded."""
from collections import Counter

import pytest

from conftest import REPO
from lmad.backends import open_backend
from lmad.data import load_jsonl
from lmad.prompts import load_prompt
from lmad.answers import reading_of
from lmad.solver import derive_seed, sample_rows, solver_request

pytestmark = pytest.mark.model


def test_smollm2_answers_choice_and_math_questions(smollm2_dir, tmp_path):
    spec = {"backend": "transformers", "name": "smollm2-135m", "model": str(smollm2_dir), "threads": 2,
            "batch_size": 16}
    backend = open_backend(spec, tmp_path / "cache")
    prompt = load_prompt(REPO / "config" / "prompts" / "solver.txt")
    questions = (load_jsonl(REPO / "data" / "demo" / "mmlu.jsonl", "mmlu")[:4]
                 + load_jsonl(REPO / "data" / "demo" / "gsm8k.jsonl", "gsm8k")[:4])
    jobs = [{"qid": q["qid"], "stage": "cot", "round": 0, "agent": 0, "temperature": 0.0,
             "seed": derive_seed(0, q["qid"]), "request": solver_request(prompt, q, 0.0, derive_seed(0, q["qid"]), 96),
             "reading": reading_of(q)} for q in questions]
    rows = sample_rows(backend, jobs)
    assert len(rows) == 8 and all(r["response"] for r in rows)
    forms = Counter(r["answer_method"] for r in rows)
    print("forms matched:", dict(forms))
    for r, q in zip(rows, questions):
        if q["answer_type"] == "choice":   # a letter, or nothing: never option prose passed off as an answer
            assert r["answer"] in ("", "A", "B", "C", "D") or r["answer_method"].startswith(("unparsed", "ambiguous"))
