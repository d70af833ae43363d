"""Malformed dataset files fail with the file, line and field: non-UTF-8 bytes, empty files,
supporting facts outside the context; a relative dataset path names one file for the rule's
input and the loader alike."""
import json

import polars as pl
import pytest

from conftest import REPO, make_config, snakemake, write_config
from lmad.data import DataError
from lmad.data.loaders import load_dataset_spec, load_id_aliases, load_jsonl, resolve_path

DEMO = REPO / "data" / "demo"


def demo_rows(dataset):
    return [json.loads(line) for line in (DEMO / f"{dataset}.jsonl").read_text().splitlines() if line.strip()]


def write(path, rows):
    path.write_bytes(b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in rows))
    return path


def test_a_non_utf8_byte_names_file_line_and_column(tmp_path):
    rows = demo_rows("hotpotqa")
    bad = json.dumps(rows[0]).encode().replace(b'"question": "', b'"question": "caf\xe9 ', 1)
    path = write(tmp_path / "hotpotqa.jsonl", [rows[0], b"", bad])
    with pytest.raises(DataError, match=rf"^{path} line 3: not UTF-8 \(byte 0xe9 at column \d+\)"):
        load_jsonl(path, "hotpotqa")


def test_a_non_utf8_byte_in_a_json_list_names_its_line(tmp_path):
    path = tmp_path / "hotpotqa.json"
    path.write_bytes(b'[\n{"_id": "a",\n "question": "\xff"}\n]')
    with pytest.raises(DataError, match=rf"^{path} line 3: not UTF-8 \(byte 0xff at column 15\)"):
        load_jsonl(path, "hotpotqa")


def test_non_utf8_aliases_file(tmp_path):
    path = tmp_path / "id_aliases.json"
    path.write_bytes(b'{"Q_id": "Q1", "aliases": ["a"], "demonyms": []}\n{"Q_id": "Q2\x80"}\n')
    with pytest.raises(DataError, match=rf"^{path} line 2: not UTF-8"):
        load_id_aliases(path)


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"], ids=["empty", "blank lines"])
def test_an_empty_file_is_named(tmp_path, content):
    path = tmp_path / "musique.jsonl"
    path.write_bytes(content)
    with pytest.raises(DataError, match=rf"^{path}: empty file"):
        load_jsonl(path, "musique")


def test_a_file_of_only_unanswerable_rows_is_named(tmp_path):
    rows = [{**r, "answerable": False} for r in demo_rows("musique")]
    path = write(tmp_path / "musique.jsonl", rows)
    with pytest.raises(DataError, match=rf"^{path}: no answerable musique records"):
        load_jsonl(path, "musique")


@pytest.mark.parametrize("dataset,fact,problem", [
    ("hotpotqa", ["Nowhere In The Context", 0], "title 'Nowhere In The Context' is not a paragraph of the context"),
    ("hotpotqa", None, r"sent_id 99 but paragraph .* has \d+ sentence"),
    ("2wikimultihopqa", None, r"sent_id 99 but paragraph"),
    ("hotpotqa", "negative", r"sent_id -1 but paragraph"),
])
def test_supporting_facts_outside_the_context_are_named(tmp_path, dataset, fact, problem):
    rows = demo_rows(dataset)
    first = rows[0]["supporting_facts"][0]
    if fact is None:
        fact = [first[0], 99]
    elif fact == "negative":
        fact = [first[0], -1]
    rows[0]["supporting_facts"] = [*rows[0]["supporting_facts"], fact]
    path = write(tmp_path / f"{dataset}.jsonl", rows)
    n = len(rows[0]["supporting_facts"]) - 1
    with pytest.raises(DataError, match=rf"^{path} line 1: field 'supporting_facts\[{n}\]': {problem}"):
        load_jsonl(path, dataset)


def test_the_demo_files_still_load():
    # the real samples: tests/test_loaders.py (skipped where they are absent)
    for dataset in ("hotpotqa", "2wikimultihopqa", "musique", "strategyqa"):
        assert load_jsonl(DEMO / f"{dataset}.jsonl", dataset)


def test_relative_paths_resolve_against_the_checkout(tmp_path):
    assert resolve_path("data/demo/hotpotqa.jsonl", REPO) == DEMO / "hotpotqa.jsonl"
    assert resolve_path(str(tmp_path / "x.jsonl"), REPO) == tmp_path / "x.jsonl"
    spec = {"name": "hotpotqa", "source": "jsonl", "path": "data/demo/hotpotqa.jsonl", "n": 1, "seed": 0}
    assert load_dataset_spec(spec, REPO)[0]["source"] == "data/demo/hotpotqa.jsonl"


def test_a_relative_path_with_directory_elsewhere_loads_the_declared_file(tmp_path):
    """A decoy of the same relative name in the working directory is neither declared nor loaded."""
    config = make_config(tmp_path, n=1)
    config["datasets"] = {"hotpotqa": {"source": "jsonl", "path": "data/demo/hotpotqa.jsonl", "n": 1}}
    write_config(tmp_path, config)
    decoy = tmp_path / "data" / "demo" / "hotpotqa.jsonl"
    decoy.parent.mkdir(parents=True)
    rows = demo_rows("hotpotqa")
    write(decoy, [{**r, "_id": "decoy-" + r["_id"]} for r in rows])
    dry = snakemake(tmp_path, "results/data/hotpotqa.parquet", "--dry-run", "--printshellcmds")
    assert str(DEMO / "hotpotqa.jsonl") in dry.stdout  # the declared input is the checkout's file
    snakemake(tmp_path, "results/data/hotpotqa.parquet")
    qids = pl.read_parquet(tmp_path / "results/data/hotpotqa.parquet")["qid"].to_list()
    assert qids and not any(q.startswith("decoy-") for q in qids)


def test_a_row_without_its_answer_fails_its_job_with_one_line(tmp_path):
    """Not a traceback: one line naming file, line and field, on the job's stderr and in its log."""
    rows = demo_rows("hotpotqa")
    del rows[0]["answer"]
    path = write(tmp_path / "hotpotqa.jsonl", rows)
    config = make_config(tmp_path, n=1)
    config["datasets"] = {"hotpotqa": {"source": "jsonl", "path": str(path), "n": 1}}
    write_config(tmp_path, config)
    proc = snakemake(tmp_path, "results/data/hotpotqa.parquet", check=False)
    out = proc.stdout + proc.stderr
    line = f"rule prepare_data: {path} line 1: field 'answer': required field is missing"
    assert proc.returncode != 0 and out.count(line) == 1, out[-3000:]
    assert "Traceback" not in out
    assert line.removeprefix("rule prepare_data: ") in (tmp_path / "logs/prepare_data/hotpotqa.log").read_text()


def test_a_data_error_ends_the_job_without_a_traceback(tmp_path, capsys):
    """As the script's own process or the warm worker's child runs it (lmad.worker maps the exit)."""
    from lmad.job import Job, execute

    def stage(provenance):
        raise DataError("data/x.jsonl line 3: field 'answer': required field is missing")

    with pytest.raises(SystemExit) as exit:
        execute(Job("prepare_data", str(tmp_path / "job.log"), stage, {"provenance": {}}))
    assert exit.value.code == 1
    assert capsys.readouterr().err == "rule prepare_data: data/x.jsonl line 3: field 'answer': required field is missing\n"
    assert "Traceback" not in (tmp_path / "job.log").read_text()
