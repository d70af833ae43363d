"""Loaders of the math, multiple-choice, truthfulness and opinion benchmarks: the real samples in
../shared/data/tasks/ and the demo files in their original schemas, the seeded option order, the
MMLU-Redux filter, and named errors (file, line, field) for malformed rows."""
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from lmad.data import DataError, load_jsonl
from lmad.data.convert import ANSWER_TYPE, DATASETS
from lmad.data.tasks import LETTERS, _shuffled
from lmad.schemas import TABLES

SHARED = REPO.parent / "shared" / "data" / "tasks"
REAL = {"gsm8k": 30, "math500": 30, "aime": 15, "amc12": 20, "olympiadbench": 20, "mmlu": 30}
DEMO = {"gsm8k": ("gsm8k.jsonl", 12), "mmlu": ("mmlu.jsonl", 12), "mmlu-redux": ("mmlu-redux.jsonl", 3),
        "math500": ("math500.jsonl", 4), "aime": ("aime.jsonl", 3), "amc12": ("amc12.jsonl", 3),
        "olympiadbench": ("olympiadbench.jsonl", 3), "truthfulqa": ("truthfulqa.jsonl", 3),
        "gpqa-diamond": ("gpqa-diamond.csv", 3), "globalopinionqa": ("globalopinionqa.csv", 2)}


def test_every_benchmark_has_an_answer_type_and_the_questions_schema_its_columns():
    assert set(ANSWER_TYPE) == set(DATASETS)
    assert {"answer_type", "choices", "choice_order", "survey"} <= set(TABLES["questions"][0])


@pytest.mark.parametrize("bench,rows", REAL.items())
def test_the_real_samples_load_in_their_original_schema(bench, rows):
    if not SHARED.is_dir():
        pytest.skip("../shared/data/tasks is not beside the checkout")
    records = load_jsonl(SHARED / f"{bench}.jsonl", bench)
    assert len(records) == rows and len({r["qid"] for r in records}) == rows
    assert all(r["answer"].strip() and r["answer_type"] == ANSWER_TYPE[bench] and r["context"] == [] for r in records)
    if bench == "mmlu":
        assert all(len(r["choices"]) == 4 and r["answer"] in "ABCD" and r["choice_order"] == [] for r in records)
    if bench == "gsm8k":  # the gold is the number after ####, thousands separators dropped
        assert all(r["answer"].lstrip("-").replace(".", "").isdigit() for r in records)


@pytest.mark.parametrize("bench", DEMO)
def test_every_demo_file_loads(bench):
    name, rows = DEMO[bench]
    records = load_jsonl(REPO / "data" / "demo" / name, bench)
    assert len(records) == rows and all(r["answer_type"] == ANSWER_TYPE[bench] for r in records)
    for r in records:
        if r["answer_type"] == "choice":
            assert r["answer"] in LETTERS[:len(r["choices"])]
        if r["answer_type"] == "opinion":
            survey = json.loads(r["survey"])
            assert r["answer"] == "" and all(len(p) == len(r["choices"]) for p in survey.values())


@pytest.mark.parametrize("bench", ["gpqa-diamond", "truthfulqa"])
def test_the_option_order_is_seeded_and_recovers_the_gold(bench):
    name, _ = DEMO[bench]
    path = REPO / "data" / "demo" / name
    first, again, other = (load_jsonl(path, bench, seed=s) for s in (0, 0, 1))
    assert first == again
    assert any(a["choice_order"] != b["choice_order"] for a, b in zip(first, other))
    for r in first:
        # the correct option is the source's first (TruthfulQA) or its Correct Answer column (GPQA): index 0
        assert r["choice_order"][LETTERS.index(r["answer"])] == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1), min_size=2, max_size=8, unique=True), st.data(), st.integers(0, 2**31),
       st.text(max_size=12))
def test_the_permutation_is_a_bijection_whose_inverse_finds_the_gold(options, data, seed, qid):
    correct = data.draw(st.integers(0, len(options) - 1))
    shown, order, gold = _shuffled(options, correct, seed, qid)
    assert sorted(order) == list(range(len(options))) and [options[i] for i in order] == shown
    assert shown[LETTERS.index(gold)] == options[correct]


def test_mmlu_redux_keeps_the_rows_marked_ok_unless_keep_all():
    path = REPO / "data" / "demo" / "mmlu-redux.jsonl"
    assert len(load_jsonl(path, "mmlu-redux")) == 3 and len(load_jsonl(path, "mmlu-redux", keep_all=True)) == 4


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GOQA_HEAD = "question,selections,options,source\n"


@pytest.mark.parametrize("selections", ["__import__('os').system('touch /tmp/pwned')", "{'A': open('x')}",
                                        "defaultdict(<class 'list'>, {'A': [0.5]})"])
def test_globalopinionqa_selections_are_parsed_without_eval(tmp_path, selections):
    path = write(tmp_path, "g.csv", GOQA_HEAD + f'"Q?","{selections}","[\'Yes\', \'No\']",s\n')
    with pytest.raises(DataError, match=r"g\.csv line 2: field 'selections'"):
        load_jsonl(path, "globalopinionqa")
    assert not Path("/tmp/pwned").exists()


@pytest.mark.parametrize("bench,name,text,expected", [
    ("gsm8k", "a.jsonl", '{"question": "q"}\n', r"a\.jsonl line 1: field 'answer': required field is missing"),
    ("gsm8k", "a.jsonl", '{"question": "q", "answer": "no hash line"}\n', r"line 1: field 'answer': expected a worked"),
    ("mmlu", "m.jsonl", '{"question": "q", "choices": ["a", "b"], "answer": 7}\n', r"line 1: field 'answer': expected an option"),
    ("truthfulqa", "t.jsonl", '{"question": "q", "mc1_targets": {"choices": ["a", "b"], "labels": [0, 0]}}\n',
     r"line 1: field 'mc1_targets': mc1 labels must mark exactly one"),
    ("gpqa-diamond", "g.csv", "Record ID,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2\nr1,q,a,b,c\n",
     r"g\.csv line 2: field 'Incorrect Answer 3': required field is missing"),
])
def test_a_malformed_row_names_file_line_and_field(tmp_path, bench, name, text, expected):
    with pytest.raises(DataError, match=expected):
        load_jsonl(write(tmp_path, name, text), bench)
