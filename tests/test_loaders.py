import json
import logging
import re
import sys
import types
from pathlib import Path

import pytest

from conftest import UPSTREAM, needs_upstream
from lmad.data import (
    DATASETS,
    DataError,
    load_dataset_spec,
    load_hf,
    load_jsonl,
    record_from_raw,
    select,
    trim_context,
)

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"
SHARED = UPSTREAM / "mhqa"
needs_shared = needs_upstream("mhqa")

KEYS = ["qid", "dataset", "benchmark", "question", "context", "answer", "aliases", "qtype", "supporting_facts", "source",
        "answer_type", "choices", "choice_order", "survey"]
MULTIHOP = DATASETS[:4]  # the multi-hop benchmarks; the others are tests/test_task_loaders.py's
QTYPES = {
    "hotpotqa": {"bridge", "comparison"},
    "2wikimultihopqa": {"comparison", "inference", "compositional", "bridge_comparison"},
    "musique": {"2hop", "3hop", "4hop"},
    "strategyqa": {"boolean"},
}


def raw_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def check_record(record: dict, dataset: str) -> None:
    assert list(record) == KEYS
    assert record["dataset"] == dataset
    assert record["answer_type"] == ("yes_no" if dataset == "strategyqa" else "span")
    assert (record["choices"], record["choice_order"], record["survey"]) == ([], [], "")
    for key in ("qid", "question", "answer", "qtype", "source"):
        assert isinstance(record[key], str) and record[key].strip() == record[key] != "", key
    assert record["qtype"] in QTYPES[dataset]
    assert all(isinstance(a, str) and a for a in record["aliases"])
    folded = [a.casefold() for a in record["aliases"]]
    assert record["answer"].casefold() not in folded and len(set(folded)) == len(folded)
    sentences = {}
    for paragraph in record["context"]:
        assert list(paragraph) == ["title", "sentences"] and isinstance(paragraph["title"], str)
        assert all(isinstance(s, str) for s in paragraph["sentences"])
        sentences.setdefault(paragraph["title"], len(paragraph["sentences"]))
    for fact in record["supporting_facts"]:
        assert list(fact) == ["title", "sent_id", "paragraph"]
        assert 0 <= fact["sent_id"] < sentences[fact["title"]], fact
        if fact["paragraph"] is not None:  # the fact's paragraph, by position
            assert record["context"][fact["paragraph"]]["title"] == fact["title"], fact
    if dataset == "strategyqa":
        assert record["answer"] in {"yes", "no"}


def write_lines(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def to_hf_hotpot(raw: dict) -> dict:
    """The column-wise shape of ``hotpotqa/hotpot_qa`` for one original-schema row."""
    return {
        "id": raw["_id"],
        "question": raw["question"],
        "answer": raw["answer"],
        "type": raw["type"],
        "level": raw["level"],
        "supporting_facts": {"title": [t for t, _ in raw["supporting_facts"]],
                             "sent_id": [i for _, i in raw["supporting_facts"]]},
        "context": {"title": [t for t, _ in raw["context"]], "sentences": [s for _, s in raw["context"]]},
    }


# ------------------------------------------------------------ real benchmark samples

@needs_shared
@pytest.mark.parametrize("dataset", MULTIHOP)
def test_every_shared_row_loads(dataset):
    path = SHARED / f"{dataset}.jsonl"
    raws = raw_rows(path)
    records = load_jsonl(path, dataset)
    skipped = sum(1 for r in raws if dataset == "musique" and r["answerable"] is False)
    assert len(records) == len(path.read_text(encoding="utf-8").splitlines()) - skipped
    for raw, record in zip(raws, records):
        check_record(record, dataset)
        assert record["source"] == str(path)
        assert record["question"] == raw["question"].strip()


@needs_shared
@pytest.mark.parametrize("dataset", ["hotpotqa", "2wikimultihopqa"])
def test_hotpot_layout_keeps_paragraph_order_and_facts(dataset):
    for raw, record in zip(raw_rows(SHARED / f"{dataset}.jsonl"), load_jsonl(SHARED / f"{dataset}.jsonl", dataset)):
        assert record["qid"] == raw["_id"] and record["qtype"] == raw["type"] and record["answer"] == raw["answer"].strip()
        assert [p["title"] for p in record["context"]] == [t for t, _ in raw["context"]]
        assert [len(p["sentences"]) for p in record["context"]] == [len(s) for _, s in raw["context"]]
        assert [(f["title"], f["sent_id"]) for f in record["supporting_facts"]] == [tuple(f) for f in raw["supporting_facts"]]


@needs_shared
def test_musique_paragraphs_aliases_and_hops():
    path = SHARED / "musique.jsonl"
    for raw, record in zip(raw_rows(path), load_jsonl(path, "musique")):
        assert [p["sentences"] for p in record["context"]] == [[p["paragraph_text"].strip()] for p in raw["paragraphs"]]
        assert [f["title"] for f in record["supporting_facts"]] == [p["title"] for p in raw["paragraphs"] if p["is_supporting"]]
        assert record["qtype"] == raw["id"][:4]
        if raw["answer_aliases"]:
            assert record["aliases"] and set(record["aliases"]) <= {a.strip() for a in raw["answer_aliases"]}


@needs_shared
def test_strategyqa_facts_are_the_context_and_answers_map_to_yes_no():
    path = SHARED / "strategyqa.jsonl"
    for raw, record in zip(raw_rows(path), load_jsonl(path, "strategyqa")):
        assert record["answer"] == ("yes" if raw["answer"] else "no")
        assert record["context"] == [{"title": "Facts", "sentences": [f.strip() for f in raw["facts"]]}]
        text = " ".join(record["context"][0]["sentences"])
        assert not any(step in text for step in raw["decomposition"] if step.endswith("?"))


@needs_shared
def test_hf_column_shape_of_every_shared_hotpot_row_matches_original():
    for i, raw in enumerate(raw_rows(SHARED / "hotpotqa.jsonl"), 1):
        original = record_from_raw(raw, "hotpotqa", f"line {i}", source="s")
        assert record_from_raw(to_hf_hotpot(raw), "hotpotqa", f"row {i}", source="s") == original


# ------------------------------------------------------------ demo data

@pytest.mark.parametrize("dataset", MULTIHOP)
def test_demo_file_loads_and_is_small(dataset):
    records = load_jsonl(DEMO / f"{dataset}.jsonl", dataset)
    assert len(records) == 4
    for record in records:
        check_record(record, dataset)
        words = sum(len(" ".join(p["sentences"]).split()) for p in record["context"])
        assert 10 <= words <= 250
        assert record["supporting_facts"]
        if dataset != "strategyqa":
            # 3-4 short paragraphs, at least one of them a distractor.
            assert 3 <= len(record["context"]) <= 4
            assert {p["title"] for p in record["context"]} - {f["title"] for f in record["supporting_facts"]}


def test_demo_covers_question_kinds():
    hotpot = load_jsonl(DEMO / "hotpotqa.jsonl", "hotpotqa")
    assert {r["qtype"] for r in hotpot} == {"bridge", "comparison"}
    answers = [r["answer"] for d in ("hotpotqa", "2wikimultihopqa") for r in load_jsonl(DEMO / f"{d}.jsonl", d)]
    assert {"yes", "no"} & set(answers)
    assert all(r["aliases"] for r in load_jsonl(DEMO / "musique.jsonl", "musique"))
    assert {r["answer"] for r in load_jsonl(DEMO / "strategyqa.jsonl", "strategyqa")} == {"yes", "no"}


# ------------------------------------------------------------ other input shapes

def test_hf_column_shape_matches_original_for_demo_row():
    raw = raw_rows(DEMO / "hotpotqa.jsonl")[0]
    hf = to_hf_hotpot(raw)
    assert "_id" not in hf and isinstance(hf["context"], dict)
    assert record_from_raw(hf, "hotpotqa", "hf row 1", source="s") == record_from_raw(raw, "hotpotqa", "line 1", source="s")


def test_2wiki_json_strings_and_content_columns_match_original():
    raw = raw_rows(DEMO / "2wikimultihopqa.jsonl")[0]
    encoded = {**raw, "context": json.dumps(raw["context"]), "supporting_facts": json.dumps(raw["supporting_facts"])}
    columns = {**raw,
               "context": {"title": [t for t, _ in raw["context"]], "content": [s for _, s in raw["context"]]},
               "supporting_facts": {"title": [t for t, _ in raw["supporting_facts"]],
                                    "sent_id": [i for _, i in raw["supporting_facts"]]}}
    expected = record_from_raw(raw, "2wikimultihopqa", "w", source="s")
    assert record_from_raw(encoded, "2wikimultihopqa", "w", source="s") == expected
    assert record_from_raw(columns, "2wikimultihopqa", "w", source="s") == expected


def test_musique_column_paragraphs_match_original():
    raw = raw_rows(DEMO / "musique.jsonl")[2]
    keys = ("idx", "title", "paragraph_text", "is_supporting")
    columns = {**raw, "paragraphs": {k: [p[k] for p in raw["paragraphs"]] for k in keys}}
    assert record_from_raw(columns, "musique", "m") == record_from_raw(raw, "musique", "m")


def test_json_list_file_loads_like_jsonl(tmp_path):
    path = tmp_path / "strategyqa.json"
    path.write_text(json.dumps(raw_rows(DEMO / "strategyqa.jsonl")))
    records = load_jsonl(path, "strategyqa")
    expected = load_jsonl(DEMO / "strategyqa.jsonl", "strategyqa")
    assert [{**r, "source": ""} for r in records] == [{**r, "source": ""} for r in expected]


def test_load_hf_uses_datasets_and_names_the_hub_source(monkeypatch):
    hf_rows = [to_hf_hotpot(raw) for raw in raw_rows(DEMO / "hotpotqa.jsonl")]
    calls = []

    def fake_load_dataset(hf_id, config, split):
        calls.append((hf_id, config, split))
        return iter(hf_rows)

    fake = types.ModuleType("datasets")
    fake.load_dataset = fake_load_dataset
    monkeypatch.setitem(sys.modules, "datasets", fake)
    records = load_hf("hotpotqa/hotpot_qa", "hotpotqa", "validation", config="distractor", n=3)
    assert calls == [("hotpotqa/hotpot_qa", "distractor", "validation")]
    assert [r["qid"] for r in records] == [r["id"] for r in hf_rows[:3]]
    assert {r["source"] for r in records} == {"hf:hotpotqa/hotpot_qa"}
    hf_rows[1]["context"] = "not json"
    with pytest.raises(DataError, match=r"hf:hotpotqa/hotpot_qa/distractor validation row 2: field 'context'"):
        load_hf("hotpotqa/hotpot_qa", "hotpotqa", "validation", config="distractor")


def test_musique_skips_only_unanswerable_rows_and_logs_it(tmp_path, caplog):
    rows = raw_rows(DEMO / "musique.jsonl")
    rows[1] = {**rows[1], "answerable": False}
    rows[2] = {k: v for k, v in rows[2].items() if k != "answerable"}  # absent: kept
    with caplog.at_level(logging.WARNING, logger="lmad.data.loaders"):
        records = load_jsonl(write_lines(tmp_path / "musique.jsonl", rows), "musique")
    assert [r["qid"] for r in records] == [rows[0]["id"], rows[2]["id"], rows[3]["id"]]
    assert "skipped 1 unanswerable" in caplog.text


def test_aliases_drop_blanks_repeats_and_the_answer():
    raw = {**raw_rows(DEMO / "musique.jsonl")[0],
           "answer": "Indian rupee", "answer_aliases": ["rupee", " indian RUPEE ", "", "Rupee", "INR"]}
    assert record_from_raw(raw, "musique", "m")["aliases"] == ["rupee", "INR"]


def test_strategyqa_string_answers():
    raw = raw_rows(DEMO / "strategyqa.jsonl")[0]
    assert record_from_raw({**raw, "answer": "False"}, "strategyqa", "s")["answer"] == "no"
    assert record_from_raw({**raw, "answer": "yes"}, "strategyqa", "s")["answer"] == "yes"


# ------------------------------------------------------------ malformed input

def _without(raw: dict, key: str) -> dict:
    return {k: v for k, v in raw.items() if k != key}


BAD = [
    ("hotpotqa", lambda r: {**r, "context": [["Title only"]]}, "context", "list of [title, sentences] pairs"),
    ("hotpotqa", lambda r: {**r, "context": {"title": ["a", "b"], "sentences": [["x"]]}}, "context", "equal-length"),
    ("hotpotqa", lambda r: {**r, "context": "[[unquoted"}, "context", "not valid JSON"),
    ("hotpotqa", lambda r: {**r, "supporting_facts": [["Jane Austen", "0"]]}, "supporting_facts", "sent_id"),
    ("hotpotqa", lambda r: _without(r, "question"), "question", "missing"),
    ("hotpotqa", lambda r: {**r, "answer": "  "}, "answer", "empty"),
    ("hotpotqa", lambda r: {**r, "question": 7}, "question", "expected a string"),
    ("2wikimultihopqa", lambda r: _without(r, "type"), "type", "missing"),
    ("musique", lambda r: {**r, "paragraphs": [{"title": "x"}]}, "paragraphs", "paragraph_text"),
    ("musique", lambda r: {**r, "id": "demo1"}, "id", "2hop__"),
    ("musique", lambda r: {**r, "answer_aliases": [1]}, "answer_aliases", "list of strings"),
    ("strategyqa", lambda r: {**r, "answer": "maybe"}, "answer", "boolean"),
    ("strategyqa", lambda r: {**r, "facts": "not json"}, "facts", "not valid JSON"),
    ("strategyqa", lambda r: _without(r, "qid"), "qid", "missing"),
]


@pytest.mark.parametrize("dataset, corrupt, field, problem", BAD)
def test_malformed_record_names_file_line_and_field(tmp_path, dataset, corrupt, field, problem):
    good = raw_rows(DEMO / f"{dataset}.jsonl")
    path = write_lines(tmp_path / f"{dataset}.jsonl", [good[0], good[1], corrupt(good[2])])
    with pytest.raises(DataError) as err:
        load_jsonl(path, dataset)
    message = str(err.value)
    assert message.startswith(f"{path} line 3: field '{field}': "), message
    assert problem in message
    assert isinstance(err.value, ValueError)


def test_invalid_json_line_names_file_and_line(tmp_path):
    good = raw_rows(DEMO / "hotpotqa.jsonl")
    path = write_lines(tmp_path / "hotpotqa.jsonl", [good[0], "", '{"_id": "x", ', good[1]])
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))} line 3: invalid JSON"):
        load_jsonl(path, "hotpotqa")


def test_json_list_errors_name_the_item(tmp_path):
    path = tmp_path / "hotpotqa.json"
    path.write_text(json.dumps([raw_rows(DEMO / "hotpotqa.jsonl")[0], ["not", "an", "object"]]))
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))} item 2: expected a JSON object"):
        load_jsonl(path, "hotpotqa")


def test_duplicate_qid_is_an_error(tmp_path):
    row = raw_rows(DEMO / "strategyqa.jsonl")[0]
    path = write_lines(tmp_path / "strategyqa.jsonl", [row, row])
    with pytest.raises(DataError, match=r"line 2: duplicate qid .* \(first at .* line 1\)"):
        load_jsonl(path, "strategyqa")


def test_unknown_dataset_is_rejected():
    with pytest.raises(ValueError, match="unknown dataset 'squad'"):
        load_jsonl(DEMO / "hotpotqa.jsonl", "squad")


def test_a_freely_named_dataset_keeps_its_name_and_is_read_as_its_type():
    spec = {"source": "jsonl", "path": str(DEMO / "hotpotqa.jsonl"), "n": None}
    plain = load_dataset_spec({"name": "hotpotqa", **spec}, REPO)
    dev = load_dataset_spec({"name": "hotpotqa-dev", "type": "hotpotqa", **spec}, REPO)
    assert {r["dataset"] for r in dev} == {"hotpotqa-dev"} and {r["benchmark"] for r in dev} == {"hotpotqa"}
    assert [{**r, "dataset": "hotpotqa"} for r in dev] == plain


@pytest.mark.parametrize("name,extra,key", [
    ("hotpotqa-dev", {}, "config datasets.hotpotqa-dev: name (or give it a type:)"),
    ("dev", {"type": "squad"}, "config datasets.dev: type must be a benchmark"),
])
def test_a_dataset_without_a_benchmark_names_its_key(name, extra, key):
    with pytest.raises(ValueError, match=re.escape(key)):
        load_dataset_spec({"name": name, "source": "jsonl", "path": str(DEMO / "hotpotqa.jsonl"), **extra}, REPO)


# ------------------------------------------------------------ select

def _fake_records(n: int) -> list[dict]:
    return [{"qid": f"q{i:03d}"} for i in range(n)]


def test_select_is_seeded_bounded_and_sorted():
    records = _fake_records(50)
    picked = select(records, 10, seed=0)
    assert len(picked) == 10 and len({r["qid"] for r in picked}) == 10
    assert [r["qid"] for r in picked] == sorted(r["qid"] for r in picked)
    assert select(list(reversed(records)), 10, seed=0) == picked  # input order is irrelevant
    assert select(records, 10, seed=1) != picked
    assert {r["qid"] for r in select(records, 5, seed=0)} < {r["qid"] for r in picked}  # nested in n


def test_select_all_when_n_is_none_or_large():
    records = list(reversed(_fake_records(7)))
    expected = sorted(records, key=lambda r: r["qid"])
    assert select(records, None, seed=3) == expected
    assert select(records, 7, seed=3) == expected
    assert select(records, 100, seed=3) == expected
    assert select(records, 0, seed=3) == []
    with pytest.raises(ValueError):
        select(records, -1, seed=3)


def test_select_is_pinned_across_machines():
    # sha256 of (seed, qid): these exact picks must never change with Python version or platform.
    assert [r["qid"] for r in select(_fake_records(20), 3, seed=0)] == PINNED_SEED0
    assert [r["qid"] for r in select(_fake_records(20), 3, seed=1)] == PINNED_SEED1


PINNED_SEED0 = ["q001", "q009", "q015"]
PINNED_SEED1 = ["q000", "q003", "q019"]


# ------------------------------------------------------------ trimming and specs

def _paragraph(title: str, chars: int) -> dict:
    return {"title": title, "sentences": ["x" * (chars - len(title))]}


def test_trim_keeps_supporting_then_fills_in_order_until_budget():
    record = {"qid": "q", "supporting_facts": [{"title": "C", "sent_id": 0}],
              "context": [_paragraph("A", 10), _paragraph("B", 30), _paragraph("C", 50), _paragraph("D", 5)]}
    titles = lambda budget: [p["title"] for p in trim_context(record, budget)["context"]]
    assert titles(0) == ["C"]              # supporting kept even over budget
    assert titles(60) == ["A", "C"]        # A fits; B does not and ends the filling
    assert titles(89) == ["A", "C"]
    assert titles(90) == ["A", "B", "C"]
    assert titles(95) == ["A", "B", "C", "D"]
    assert len(record["context"]) == 4     # input untouched


@needs_shared
def test_trim_never_drops_a_supporting_paragraph_of_real_rows():
    for dataset in MULTIHOP:
        for record in load_jsonl(SHARED / f"{dataset}.jsonl", dataset):
            trimmed = trim_context(record, 400)
            titles = [p["title"] for p in trimmed["context"]]
            assert {f["title"] for f in record["supporting_facts"]} <= set(titles)
            originals = iter(p["title"] for p in record["context"])
            assert all(t in originals for t in titles)  # a subsequence: original order kept
            check_record(trimmed, dataset)


def test_load_dataset_spec_resolves_samples_and_trims():
    spec = {"name": "hotpotqa", "source": "jsonl", "path": "data/demo/hotpotqa.jsonl",
            "n": 2, "seed": 0, "max_context_chars": 1}
    records = load_dataset_spec(spec, REPO)
    full = {r["qid"]: r for r in load_jsonl(DEMO / "hotpotqa.jsonl", "hotpotqa")}
    assert [r["qid"] for r in records] == [r["qid"] for r in select(list(full.values()), 2, 0)]
    for record in records:
        assert record["source"] == "data/demo/hotpotqa.jsonl"
        assert [p["title"] for p in record["context"]] == [
            p["title"] for p in full[record["qid"]]["context"]
            if p["title"] in {f["title"] for f in record["supporting_facts"]}]
    untrimmed = load_dataset_spec({**spec, "max_context_chars": None, "n": None}, str(REPO))
    assert len(untrimmed) == 4 and untrimmed == sorted(
        [{**r, "source": "data/demo/hotpotqa.jsonl"} for r in full.values()], key=lambda r: r["qid"])


@pytest.mark.parametrize("spec, message", [
    ({"source": "jsonl", "path": "x.jsonl"}, "must be a benchmark, one of hotpotqa"),
    ({"name": "hotpotqa", "source": "csv"}, "unknown source 'csv'"),
    ({"name": "hotpotqa", "source": "jsonl"}, "needs 'path'"),
    ({"name": "hotpotqa", "source": "hf", "hf_id": "hotpotqa/hotpot_qa"}, "needs 'hf_id' and 'split'"),
])
def test_load_dataset_spec_rejects_bad_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        load_dataset_spec(spec, REPO)


def test_2wiki_aliases_from_the_official_id_aliases_file(tmp_path):
    """The official 2Wiki evaluation accepts the answer entity's aliases and demonyms."""
    import json

    from lmad.data.loaders import load_dataset_spec

    # the demo row with a Wikidata answer id, as the real dev rows have (the demo omits them)
    raw = {**json.loads((DEMO / "2wikimultihopqa.jsonl").read_text().splitlines()[0]), "answer_id": "Q1021"}
    (tmp_path / "dev.jsonl").write_text(json.dumps(raw) + "\n")
    (tmp_path / "id_aliases.json").write_text(
        json.dumps({"Q_id": raw["answer_id"], "aliases": ["Harvest 3000 Years", raw["answer"]], "demonyms": []}) + "\n"
        + json.dumps({"Q_id": "Q1", "aliases": ["unrelated"], "demonyms": ["x"]}) + "\n")
    spec = {"name": "2wikimultihopqa", "source": "jsonl", "path": "dev.jsonl", "aliases_path": "id_aliases.json"}
    [record] = load_dataset_spec(spec, tmp_path)
    assert record["aliases"] == ["Harvest 3000 Years"]  # the answer itself is not repeated
    [plain] = load_dataset_spec({k: v for k, v in spec.items() if k != "aliases_path"}, tmp_path)
    assert plain["aliases"] == []
    (tmp_path / "id_aliases.json").write_text('{"Q_id": "Q9", "aliases": "not a list"}\n')
    with pytest.raises(DataError, match=r"id_aliases.json line 1: field 'aliases'"):
        load_dataset_spec(spec, tmp_path)


def test_musique_supporting_paragraphs_are_identified_by_index():
    """Two paragraphs share a title; only the second supports: the index tells them apart,
    also after trimming drops paragraphs before it."""
    raw = {"id": "2hop__1_2", "question": "Q?", "answer": "A", "answer_aliases": [], "answerable": True,
           "paragraphs": [{"idx": 0, "title": "T", "paragraph_text": "decoy " * 20, "is_supporting": False},
                          {"idx": 1, "title": "U", "paragraph_text": "other " * 20, "is_supporting": False},
                          {"idx": 2, "title": "T", "paragraph_text": "the support.", "is_supporting": True}]}
    record = record_from_raw(raw, "musique", "x line 1")
    assert record["supporting_facts"] == [{"title": "T", "sent_id": 0, "paragraph": 2}]
    trimmed = trim_context(record, 1)
    assert [p["sentences"] for p in trimmed["context"]] == [["the support."]]
    assert trimmed["supporting_facts"] == [{"title": "T", "sent_id": 0, "paragraph": 0}]
