"""Loaders of the math, multiple-choice, truthfulness and opinion benchmarks: the real samples
beside the checkout (skipped without them) and the demo files in their original schemas, the
seeded option order, the MMLU-Redux filter, and named errors (file, line, field) for malformed rows."""
import json
import logging
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO, UPSTREAM, needs_upstream
from lmad.data import ANSWER_TYPE as EXPORTED_TYPES
from lmad.data import DataError, load_dataset_spec, load_jsonl, record_from_raw
from lmad.data import ANSWER_TYPE, DATASETS
from lmad.data.tasks import LETTERS, _shuffled
from lmad.schemas import TABLES, read_table, write_table

SHARED = UPSTREAM / "tasks"
REAL = {"gsm8k": 30, "math500": 30, "aime": 15, "amc12": 20, "olympiadbench": 20, "mmlu": 30}
DEMO = {"gsm8k": ("gsm8k.jsonl", 12), "mmlu": ("mmlu.jsonl", 12), "mmlu-redux": ("mmlu-redux.jsonl", 4),
        "math500": ("math500.jsonl", 5), "aime": ("aime.jsonl", 5), "amc12": ("amc12.jsonl", 5),
        "olympiadbench": ("olympiadbench.jsonl", 5), "truthfulqa": ("truthfulqa.jsonl", 5),
        "gpqa-diamond": ("gpqa-diamond.csv", 5), "globalopinionqa": ("globalopinionqa.csv", 4)}
DEMO_DIR = REPO / "data" / "demo"
TYPES = {"span": {"hotpotqa", "2wikimultihopqa", "musique"}, "yes_no": {"strategyqa"},
         "numeric": {"gsm8k", "aime", "amc12"}, "math": {"math500", "olympiadbench"},
         "choice": {"gpqa-diamond", "mmlu", "mmlu-redux", "truthfulqa"}, "opinion": {"globalopinionqa"}}


def test_every_benchmark_has_an_answer_type_and_the_questions_schema_its_columns():
    assert DATASETS[:4] == ("hotpotqa", "2wikimultihopqa", "musique", "strategyqa")
    assert set(ANSWER_TYPE) == set(DATASETS) and EXPORTED_TYPES is ANSWER_TYPE
    assert {b: t for t, bs in TYPES.items() for b in bs} == ANSWER_TYPE
    schema = TABLES["questions"][0]
    assert {"answer_type": schema["answer_type"], "choices": schema["choices"], "choice_order": schema["choice_order"],
            "survey": schema["survey"]} == {"answer_type": pl.String, "choices": pl.List(pl.String),
                                            "choice_order": pl.List(pl.Int64), "survey": pl.String}


def test_every_demo_file_writes_as_a_questions_table(tmp_path):
    for bench, (name, _) in DEMO.items():
        records = load_jsonl(DEMO_DIR / name, bench)
        write_table("questions", records, tmp_path / f"{bench}.parquet", {})
        assert read_table("questions", tmp_path / f"{bench}.parquet").to_dicts() == sorted(records, key=lambda r: r["qid"])


@needs_upstream("tasks")
@pytest.mark.parametrize("bench,rows", REAL.items())
def test_the_real_samples_load_in_their_original_schema(bench, rows):
    records = load_jsonl(SHARED / f"{bench}.jsonl", bench)
    assert len(records) == rows and len({r["qid"] for r in records}) == rows
    assert all(r["answer"].strip() and r["answer_type"] == ANSWER_TYPE[bench] and r["context"] == [] for r in records)
    if bench == "mmlu":
        assert all(len(r["choices"]) == 4 and r["answer"] in "ABCD" and r["choice_order"] == [] for r in records)
    if bench == "gsm8k":  # the gold is the number after ####, thousands separators dropped
        assert all(r["answer"].lstrip("-").replace(".", "").isdigit() for r in records)
        assert all(r["qid"].startswith("gsm8k-") and r["qtype"] == "gsm8k" for r in records)
    if bench in ("aime", "amc12"):  # the source's text: "025", "27.0"
        assert all(float(r["answer"]) == float(r["answer"]) and r["qtype"] == bench for r in records)
    if bench == "math500":
        raw = [json.loads(line) for line in (SHARED / "math500.jsonl").read_text().splitlines()]
        assert [r["qid"] for r in records] == [x["unique_id"] for x in raw]
        assert [r["qtype"] for r in records] == [x["subject"] for x in raw]
    if bench == "olympiadbench":  # is_multiple_answer: the gold is all of final_answer
        raw = {f"{x['id']}": x for x in map(json.loads, (SHARED / "olympiadbench.jsonl").read_text().splitlines())}
        for r in records:
            x = raw[r["qid"]]
            assert r["answer"] == (", ".join(x["final_answer"]) if x["is_multiple_answer"] else x["final_answer"][0])
            assert r["qtype"] == x["subfield"]
    assert all(r["choices"] == [] and r["survey"] == "" for r in records if bench != "mmlu")


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


def test_the_permutation_is_pinned_across_machines():
    # sha256(seed, qid) seeds the shuffle: these orders must never change with Python version or platform
    assert _shuffled(list("abcde"), 0, 0, "q1") == (["e", "c", "a", "b", "d"], [4, 2, 0, 1, 3], "C")
    assert _shuffled(list("abcde"), 0, 7, "q1") == (["c", "e", "b", "d", "a"], [2, 4, 1, 3, 0], "E")


def test_the_spec_seed_reaches_the_option_order():
    spec = {"name": "tqa", "type": "truthfulqa", "source": "local", "path": "data/demo/truthfulqa.jsonl", "n": None}
    orders = [[r["choice_order"] for r in load_dataset_spec({**spec, "seed": seed}, REPO)] for seed in (0, 0, 3)]
    assert orders[0] == orders[1] != orders[2]


def test_mmlu_redux_keeps_the_rows_marked_ok_unless_keep_all(caplog):
    path = DEMO_DIR / "mmlu-redux.jsonl"
    with caplog.at_level(logging.WARNING, logger="lmad.data.loaders"):
        assert len(load_jsonl(path, "mmlu-redux")) == 4
    assert "skipped 1 mmlu-redux rows marked erroneous" in caplog.text
    assert len(load_jsonl(path, "mmlu-redux", keep_all=True)) == 5
    spec = {"name": "mmlu-redux", "source": "jsonl", "path": "data/demo/mmlu-redux.jsonl"}
    assert len(load_dataset_spec(spec, REPO)) == 4 and len(load_dataset_spec({**spec, "keep_all": True}, REPO)) == 5


def test_an_mmlu_redux_row_without_error_type_is_named(tmp_path):
    row = {"question": "q", "subject": "s", "choices": ["a", "b"], "answer": 0}
    path = write(tmp_path, "r.jsonl", json.dumps({**row, "error_type": "ok"}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError, match=r"r\.jsonl line 2: field 'error_type': required field is missing"):
        load_jsonl(path, "mmlu-redux", keep_all=True)


def test_globalopinionqa_reprs_become_choices_and_a_json_survey():
    records = {r["question"]: r for r in load_jsonl(DEMO_DIR / "globalopinionqa.csv", "globalopinionqa")}
    plain = records["How often do you use the internet?"]  # a plain {...} repr
    assert plain["choices"] == ["Every day", "A few times a week", "Rarely", "Never"] and plain["choice_order"] == []
    assert json.loads(plain["survey"]) == {"Canada": [0.7, 0.15, 0.1, 0.05], "India": [0.4, 0.3, 0.2, 0.1]}
    wrapped = records["Should the voting age be lowered to 16?"]  # inside defaultdict(<class 'list'>, ...)
    assert json.loads(wrapped["survey"]) == {"Austria": [0.35, 0.65], "Kenya": [0.3, 0.7], "Mexico": [0.25, 0.75]}
    assert all(r["answer"] == "" and r["qtype"] == "Demo survey" and r["aliases"] == [] for r in records.values())


def test_a_csv_names_the_line_a_record_starts_on(tmp_path):
    head = "Record ID,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3,Subdomain\n"
    text = head + 'r1,"a question\nover two lines",a,b,c,d,Physics\n\nr2,q,a,b,c,,Physics\n'
    path = write(tmp_path, "g.csv", text)
    with pytest.raises(DataError, match=r"g\.csv line 5: field 'Incorrect Answer 3': expected a non-empty string"):
        load_jsonl(path, "gpqa-diamond")
    path = write(tmp_path, "g.csv", text.replace(",,Physics", ",d,Physics,extra"))
    with pytest.raises(DataError, match=r"g\.csv line 5: 8 fields but the header has 7 columns"):
        load_jsonl(path, "gpqa-diamond")
    [first, _] = load_jsonl(write(tmp_path, "g.csv", "\ufeff" + text.replace(",,Physics", ",d,Physics")), "gpqa-diamond")
    assert first["question"] == "a question\nover two lines"  # a BOM before the header is dropped


def test_a_parquet_file_loads_like_its_jsonl(tmp_path):
    rows = [json.loads(line) for line in (DEMO_DIR / "truthfulqa.jsonl").read_text().splitlines()]
    pl.DataFrame(rows).write_parquet(tmp_path / "t.parquet")
    from_parquet = load_jsonl(tmp_path / "t.parquet", "truthfulqa", source="x")
    assert from_parquet == load_jsonl(DEMO_DIR / "truthfulqa.jsonl", "truthfulqa", source="x")
    bad = pl.DataFrame([{**rows[0], "question": None}, rows[1]])
    bad.write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(DataError, match=r"bad\.parquet row 1: field 'question'"):
        load_jsonl(tmp_path / "bad.parquet", "truthfulqa")


def test_truthfulqa_original_mapping_form_and_olympiadbench_context_and_unit():
    mc1 = {"True answer": 1, "False one": 0, "False two": 0}
    record = record_from_raw({"question": "Q?", "mc1_targets": mc1}, "truthfulqa", "t line 1", seed=0)
    assert sorted(record["choices"]) == sorted(mc1) and record["choices"][LETTERS.index(record["answer"])] == "True answer"
    [*_, with_context, with_unit] = load_jsonl(DEMO_DIR / "olympiadbench.jsonl", "olympiadbench")
    assert with_context["question"] == "Let $T = 5$.\n\nCompute $T^2 + 1$." and with_context["answer"] == "26"
    assert with_unit["question"].endswith("\nThe unit of the answer is km/h.") and with_unit["answer"] == "60"


def test_a_verbatim_repeat_of_a_hashed_row_is_kept_once_and_a_changed_one_fails(tmp_path, caplog):
    row = {"question": "Q?", "answer": "1 + 1 = 2\n#### 2"}
    with caplog.at_level(logging.WARNING, logger="lmad.data.loaders"):
        assert len(load_jsonl(write(tmp_path, "a.jsonl", f"{json.dumps(row)}\n{json.dumps(row)}\n"), "gsm8k")) == 1
    assert "repeating an earlier row verbatim" in caplog.text
    changed = {**row, "answer": "#### 3"}
    with pytest.raises(DataError, match=r"line 2: duplicate qid 'gsm8k-"):
        load_jsonl(write(tmp_path, "b.jsonl", f"{json.dumps(row)}\n{json.dumps(changed)}\n"), "gsm8k")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GOQA_HEAD = "question,selections,options,source\n"


@pytest.mark.parametrize("selections", ["__import__('os').system('touch PWNED')", "{'A': open('x')}",
                                        "defaultdict(<class 'list'>, {'A': [0.5]})",  # 1 probability, 2 options
                                        "defaultdict(<class 'list'>, __import__('os').system('x'))",
                                        "{'A': [0.5, 0.5]} or __import__('os')", "'just a string'",
                                        "{'A': [0.5, float('nan')]}", "{'A': [0.5, -0.5]}", "{'A': [0.5, 0.5]"])
def test_globalopinionqa_selections_are_parsed_without_eval(tmp_path, selections):
    selections = selections.replace("PWNED", str(tmp_path / "pwned"))
    path = write(tmp_path, "g.csv", GOQA_HEAD + f'"Q?","{selections}","[\'Yes\', \'No\']",s\n')
    with pytest.raises(DataError, match=r"g\.csv line 2: field 'selections'"):
        load_jsonl(path, "globalopinionqa")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("options", ["__import__('os').listdir('.')", "['Yes']", "'Yes, No'", "['Yes', 'No'"])
def test_globalopinionqa_options_are_parsed_without_eval(tmp_path, options):
    path = write(tmp_path, "g.csv", GOQA_HEAD + f'"Q?","{{\'A\': [0.5, 0.5]}}","{options}",s\n')
    with pytest.raises(DataError, match=r"g\.csv line 2: field 'options'"):
        load_jsonl(path, "globalopinionqa")


def test_a_country_with_a_wrong_number_of_probabilities_is_named(tmp_path):
    path = write(tmp_path, "g.csv", GOQA_HEAD + '"Q?","{\'A\': [0.5, 0.5], \'B\': [1.0]}","[\'Yes\', \'No\']",s\n')
    with pytest.raises(DataError, match=r"g\.csv line 2: field 'selections': 'B': expected 2 non-negative"):
        load_jsonl(path, "globalopinionqa")


@pytest.mark.parametrize("bench,name,text,expected", [
    ("gsm8k", "a.jsonl", '{"question": "q"}\n', r"a\.jsonl line 1: field 'answer': required field is missing"),
    ("gsm8k", "a.jsonl", '{"question": "q", "answer": "no hash line"}\n', r"line 1: field 'answer': expected a worked"),
    ("gsm8k", "a.jsonl", '{"question": "q", "answer": "#### twelve"}\n', r"line 1: field 'answer': expected a worked"),
    ("math500", "a.jsonl", '{"problem": "p", "answer": "1", "subject": "s"}\n{"problem": "p", "subject": "s"}\n',
     r"a\.jsonl line 2: field 'answer': required field is missing"),
    ("mmlu", "m.jsonl", '{"question": "q", "choices": ["a", "b"], "answer": "C"}\n',
     r"line 1: field 'answer': expected an option"),
    ("mmlu", "m.jsonl", '{"question": "q", "choices": "a, b", "answer": 0}\n', r"line 1: field 'choices'"),
    ("olympiadbench", "o.jsonl", '{"id": 1, "question": "q", "final_answer": []}\n', r"line 1: field 'final_answer'"),
    ("truthfulqa", "t.jsonl", '{"question": "q", "mc1_targets": {"choices": ["a", "b"], "labels": [1, 1]}}\n',
     r"line 1: field 'mc1_targets': mc1 labels must mark exactly one"),
    ("globalopinionqa", "g.csv", "question,selections,source\nq,\"{'A': [1.0]}\",s\n",
     r"g\.csv line 2: field 'options': required field is missing"),
    ("mmlu", "m.jsonl", '{"question": "q", "choices": ["a", "b"], "answer": 7}\n', r"line 1: field 'answer': expected an option"),
    ("truthfulqa", "t.jsonl", '{"question": "q", "mc1_targets": {"choices": ["a", "b"], "labels": [0, 0]}}\n',
     r"line 1: field 'mc1_targets': mc1 labels must mark exactly one"),
    ("gpqa-diamond", "g.csv", "Record ID,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2\nr1,q,a,b,c\n",
     r"g\.csv line 2: field 'Incorrect Answer 3': required field is missing"),
])
def test_a_malformed_row_names_file_line_and_field(tmp_path, bench, name, text, expected):
    with pytest.raises(DataError, match=expected):
        load_jsonl(write(tmp_path, name, text), bench)
