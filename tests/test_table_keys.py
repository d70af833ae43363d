"""Every stored table carries the keys of its rows (lmad.schemas.KEYS: backbone, replicate, dataset,
method), set by write_table from where it is written; and a method has one label in both accuracy
figures. A whole run read through one glob: tests/test_replicates.py."""
import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

from lmad import layout
from lmad.headline import headline
from lmad.registry import METHODS
from lmad.schemas import KEYS, STORED, TABLES, SchemaError, keys_of, read_table, read_units, write_table, write_units

PRED = {"qid": "q1", "dataset": "hotpotqa", "method": "cot", "prediction": "a", "prediction_norm": "a",
        "stop_reason": "single", "stop_round": 0, "calls": 1, "prompt_tokens": 5, "completion_tokens": 2}
SAMPLE = {"qid": "q1", "stage": "proposals", "round": 0, "agent": 0, "temperature": 0.1, "seed": 7, "response": "r",
          "answer": "a", "answer_norm": "a", "answer_method": "x", "prompt_tokens": 5, "completion_tokens": 2,
          "finish_reason": "stop", "cached": False}
VALIDATION = {"judge_model": "j", "n_correct_items": 4, "n_incorrect_items": 4, "tpr": 1.0, "tnr": 1.0,
              "balanced_acc": 1.0, "n_unscored": 0, "unscored_rate": 0.0, "min_recall": 0.8, "passed": True,
              "reason": "both recalls reach the floor"}


def stored_keys(path) -> list[dict]:
    return pl.read_parquet(path).select(KEYS.names()).to_dicts()


def test_every_table_stores_every_key_once_with_one_type():
    for name, (schema, _) in TABLES.items():
        stored = STORED[name]
        assert list(stored)[:len(schema)] == list(schema), name          # declared columns first, as declared
        assert {k: stored[k] for k in KEYS} == dict(KEYS), name


def test_a_table_carries_the_keys_of_where_it_is_written(tmp_path):
    run = layout.run_name("qwen", 3)
    path = tmp_path / layout.predictions(run, "hotpotqa.shard1", "cot")
    frame = write_table("predictions", [PRED], path, {})
    assert frame.columns == list(TABLES["predictions"][0])               # read back as declared
    assert stored_keys(path) == [{"backbone": "qwen", "replicate": 3, "dataset": "hotpotqa", "method": "cot"}]
    # the shared proposals belong to no method; MAD's round 0 reuses their rows, and its method is its folder's
    proposals = tmp_path / layout.samples("qwen", "musique", "proposals")
    write_table("samples", [SAMPLE], proposals, {})
    assert stored_keys(proposals) == [{"backbone": "qwen", "replicate": None, "dataset": "musique", "method": None}]
    round0 = tmp_path / layout.debate_round("qwen", "musique", "mad", 0)
    write_table("samples", read_table("samples", proposals, keys=True), round0, {})
    assert stored_keys(round0) == [{"backbone": "qwen", "replicate": None, "dataset": "musique", "method": "mad"}]
    assert read_table("samples", round0).columns == list(TABLES["samples"][0])


@pytest.mark.parametrize("path", ["plain.parquet", "results/judge/j/battery.parquet", "results/paper/x.parquet"])
def test_a_table_outside_the_layout_has_null_keys(tmp_path, path):
    assert keys_of(tmp_path / path) == dict.fromkeys(KEYS)
    write_table("predictions", [PRED], tmp_path / path, {})
    assert stored_keys(tmp_path / path) == [{"backbone": None, "replicate": None, "dataset": "hotpotqa",
                                             "method": "cot"}]


def test_a_declared_backbone_naming_a_replicate_splits_into_backbone_and_replicate(tmp_path):
    row = {"backbone": "qwen/seed2", "dataset": "hotpotqa", "method": "cot", "n": 1}
    for path in (tmp_path / layout.analysis("qwen/seed2", "accuracy.parquet"), tmp_path / "accuracy.parquet"):
        assert write_table("accuracy", [row], path, {})["backbone"].to_list() == ["qwen"]
        assert stored_keys(path) == [{"backbone": "qwen", "replicate": 2, "dataset": "hotpotqa", "method": "cot"}]


def test_a_table_written_before_tables_carried_keys_still_reads_its_keys_from_its_path(tmp_path):
    path = tmp_path / layout.judgments("qwen/seed1", "hotpotqa")
    path.parent.mkdir(parents=True)
    old = write_table("judgments", [], tmp_path / "x.parquet", {})     # the declared columns alone
    old.write_parquet(path)
    assert read_table("judgments", path).equals(old)
    keyed = read_table("judgments", path, keys=True)
    assert keyed.schema == STORED["judgments"]
    pl.DataFrame({"qid": ["q"]}).write_parquet(path)                     # any other schema still fails
    with pytest.raises(SchemaError, match="judgments"):
        read_table("judgments", path)


def _figure(monkeypatch, module) -> list:
    """The figure ``module``'s ``save`` is handed (drawn, not written)."""
    figs = []
    monkeypatch.setattr(module, "save", lambda fig, *a, **k: figs.append(fig))
    return figs


def _labels(ax) -> tuple[list[str], list[str]]:
    return [t.get_text() for t in ax.get_legend().get_texts()], [t.get_text() for t in ax.get_xticklabels()]


def test_both_accuracy_figures_label_a_method_and_a_dataset_alike(tmp_path, monkeypatch):
    from lmad.paper import figures
    from lmad.stages import analyze

    methods, datasets = ["cot", "sc", "mad", "lmad"], ["hotpotqa", "2wikimultihopqa"]
    cells = [{"backbone": "qwen", "dataset": d, "method": m, "n": 2, "judge_acc": 0.5} for d in datasets for m in methods]
    accuracy, validation = tmp_path / layout.analysis("qwen", "accuracy.parquet"), tmp_path / "validation.parquet"
    write_table("accuracy", cells, accuracy, {})
    write_table("judge_validation", [VALIDATION], validation, {})
    per_backbone = _figure(monkeypatch, analyze)
    analyze.plot_accuracy(str(accuracy), str(validation), "a.png", "a.pdf", methods, datasets, "auto", {})
    paper = _figure(monkeypatch, figures)
    judged = pl.DataFrame([{"backbone": "qwen", "dataset": d, "method": m, "score": s} for d in datasets
                           for m in methods for s in (0.0, 1.0)])
    figures.accuracy(judged, "p.png", "p.pdf", ["qwen"], datasets, methods, headline("auto", VALIDATION))
    want = [METHODS[m].label for m in methods], ["HotpotQA", "2Wiki"]
    assert _labels(per_backbone[0].axes[0]) == want
    assert _labels(paper[0].axes[0]) == want


STATE = {"qid": "q", "active": True, "committed": [], "stop_reason": "", "stop_iteration": None, "prediction": "",
         "prediction_norm": ""}
UNIT = st.tuples(st.sampled_from(["hotpotqa", "musique", "hotpotqa.shard1"]), st.sampled_from(["lmad", "lmad-dag"]))


@settings(max_examples=40, deadline=None)
@given(parts=st.lists(st.tuples(UNIT, st.integers(0, 3)), max_size=4, unique_by=lambda p: (
    layout.configured_dataset(p[0][0]), p[0][1])), shard=st.none() | st.integers(0, 2))
def test_units_in_one_file_read_back_per_unit(tmp_path_factory, parts, shard):
    """An LMAD iteration's file of every unit (write_units): each unit's rows come back as its own,
    keys from the unit (a shard's dataset as the configured one) and from the path; a unit with no
    rows, or absent, reads as empty; no units at all still writes a readable, empty table."""
    path = tmp_path_factory.mktemp("units") / layout.lmad_iteration(layout.run_name("qwen", 2), 3, "state", shard)
    rows = [[STATE | {"qid": f"{d}-{m}-{i}", "prediction": m} for i in range(n)] for (d, m), n in parts]
    write_units("lmad_state", [(d, m, r) for ((d, m), _), r in zip(parts, rows)], path, {"x": 1})
    units = [u for u, _ in parts] + [("strategyqa", "lmad")]
    assert read_units("lmad_state", path, units) == [sorted(r, key=lambda r: r["qid"]) for r in rows] + [[]]
    stored = stored_keys(path)
    assert len(stored) == sum(n for _, n in parts)
    assert {(k["backbone"], k["replicate"]) for k in stored} <= {("qwen", 2)}
    assert {(k["dataset"], k["method"]) for k in stored} == {(layout.configured_dataset(d), m) for (d, m), n in parts if n}


def test_a_table_that_declares_a_key_cannot_hold_units(tmp_path):
    with pytest.raises(SchemaError, match="cannot hold units"):
        write_units("predictions", [("hotpotqa", "cot", [PRED])], tmp_path / "x.parquet")
