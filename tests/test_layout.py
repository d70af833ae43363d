"""lmad.layout builds every results path and parses it back; lmad.registry knows every method
the config schema accepts."""
import pathlib

import re

import pytest
from hypothesis import given, strategies as st

from lmad import config_schema, layout
from lmad.registry import METHODS, TABLE2_METHODS, names

REPO = pathlib.Path(__file__).resolve().parents[1]
name = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,12}", fullmatch=True).filter(lambda s: s not in ("data", "results"))


@given(b=name, d=name, m=name, k=st.integers(0, 99), stage=name, lmad_stage=st.sampled_from(layout.LMAD_ITERATION_STAGES),
       shard=st.none() | st.integers(0, 9))
def test_builders_and_parse_are_inverse(b, d, m, k, stage, lmad_stage, shard):
    assert layout.parse(layout.questions(d)) == layout.Location("questions", dataset=d)
    assert layout.parse(layout.questions(d, b)) == layout.Location("questions", backbone=b, dataset=d)
    assert layout.parse(layout.samples(b, d, stage)) == layout.Location("samples", b, d, stage=stage)
    assert layout.parse(layout.predictions(b, d, m)) == layout.Location("predictions", b, d, m)
    assert layout.parse(layout.judgments(b, d)) == layout.Location("judgments", b, d)
    assert layout.parse(layout.lmad_table(b, d, m, k)) == layout.Location("lmad_table", b, d, m, "generate", k)
    assert layout.parse(layout.lmad_iteration(b, k, lmad_stage, shard)) == layout.Location(
        "lmad_iteration", b, stage=lmad_stage, iteration=k)
    assert layout.parse(layout.lmad_trace(b, d, m)) == layout.Location("lmad_trace", b, d, m)
    for part in ("", "_steps", "_state"):
        assert layout.parse(layout.debate_round(b, d, m, k, part)) == layout.Location(
            "debate_round", b, d, m, round=k, part=part)


def test_paths_users_see():
    """The layout docs/layout.md "Outputs" documents; a change here is a change users see."""
    assert layout.questions("hotpotqa") == "results/data/hotpotqa.parquet"
    assert layout.questions("hotpotqa.shard1", "qwen") == "results/qwen/data/hotpotqa.shard1.parquet"
    assert layout.samples("qwen", "musique", "proposals") == "results/qwen/musique/samples/proposals.parquet"
    assert layout.predictions("qwen", "musique", "lmad") == "results/qwen/musique/predictions/lmad.parquet"
    assert layout.judgments("qwen", "musique") == "results/qwen/musique/judgments.parquet"
    assert layout.lmad_table("qwen", "musique", "lmad", 2) == "results/qwen/musique/lmad/iter2/generate.parquet"
    assert layout.lmad_iteration("qwen", 2, "state") == "results/qwen/lmad/iter2/state.parquet"
    assert layout.lmad_iteration("qwen", 2, "state", shard=1) == "results/qwen/lmad/shard1/iter2/state.parquet"
    assert layout.lmad_trace("qwen", "musique", "lmad") == "results/qwen/musique/lmad/trace.parquet"
    assert layout.debate_round("qwen", "musique", "mad", 1, "_steps") == "results/qwen/musique/mad/round1_steps.parquet"
    assert layout.analysis("qwen", "table.md") == "results/qwen/analysis/table.md"
    assert layout.judge_validation("judge", "validation.md") == "results/judge/judge/validation.md"
    assert layout.paper("table1.md") == "results/paper/table1.md"
    assert layout.MANIFEST == "results/manifest.json"


def test_parse_reads_the_end_of_a_path():
    """Tables kept outside ./results (tests, tools) parse the same."""
    at = layout.parse("/tmp/x/y/qwen/2wikimultihopqa/mad/round0.parquet")
    assert (at.backbone, at.dataset, at.method, at.round) == ("qwen", "2wikimultihopqa", "mad", 0)
    at = layout.parse("results/qwen/seed2/analysis/table.md")
    assert (at.kind, at.backbone, at.stage) == ("analysis", "qwen/seed2", "table.md")
    with pytest.raises(ValueError, match="not a path of the results layout"):
        layout.parse("results/paper/table1.md")


def test_schema_method_enums_are_the_registry():
    schema = config_schema.schema()
    props = schema["properties"]
    # methods are validated by their parts, <base>[@tone][+society]: every registry name matches,
    # and the pattern's bases are the registry's
    pattern = re.compile(props["methods"]["items"]["pattern"])
    assert all(pattern.match(m) for m in METHODS)
    bases = pattern.pattern.split(")(")[0].lstrip("^(").split("|")
    assert sorted(bases) == sorted(m for m in METHODS if "@" not in m and "+" not in m)
    # per-method overrides name a debate method at its neutral tone; a toned variant takes its base's setting,
    # a society variant (mad+ac-greedy) its base's rounds and manners
    assert sorted(props["debate"]["properties"]["methods"]["propertyNames"]["enum"]) == sorted(
        m for m in names("debate") if METHODS[m].tone == "neutral" and METHODS[m].society is None)


def test_a_society_method_has_its_own_folder_and_parses_back():
    path = layout.debate_round("qwen", "hotpotqa", "mad+ac-greedy", 1, "_state")
    assert layout.parse(path) == layout.Location("debate_round", "qwen", "hotpotqa", "mad+ac-greedy", round=1,
                                                 part="_state")
    assert layout.parse(layout.predictions("qwen", "hotpotqa", "mad+top-k")).method == "mad+top-k"


def test_schema_dataset_types_are_the_benchmarks_the_loaders_and_scorer_know():
    from lmad.answers.official import SCORING_RULES
    from lmad.data import DATASETS
    from lmad.data import ANSWER_TYPE
    from lmad.paper import DATASET_LABELS

    props = config_schema.schema()["properties"]
    types = props["datasets"]["additionalProperties"]["properties"]["type"]["enum"]
    assert sorted(types) == sorted(DATASETS) == sorted(ANSWER_TYPE) == sorted(DATASET_LABELS)
    # official span/yes-no scripts for the benchmarks the judge scores; the others are scored by their type
    assert sorted(SCORING_RULES) == sorted(b for b, t in ANSWER_TYPE.items() if t in ("span", "yes_no"))


def test_registry():
    from lmad.protocols.debate import PROTOCOLS
    from lmad.societies import SELECTORS

    assert names("single") == ["cot", "sc", "sc-matched"]
    assert [m for m in names("lmad") if METHODS[m].tone == "neutral" and not METHODS[m].society
            and METHODS[m].structure == "chain"] == TABLE2_METHODS == ["lmad", "lmad-concrete", "lmad-always"]
    assert names("lmad")[5:8] == ["lmad-dag", "lmad-dag-concrete", "lmad-dag-always"]  # graph LMAD, no Table 2 column
    assert names("lmad")[3:5] == ["lmad@friendly", "lmad@hostile"]  # toned Strict LMAD, not Table 2 columns
    assert {m.rule for m in METHODS.values()} == {"predict", "lmad_predict", "debate_predict"}
    assert all(m.protocol is not None for m in METHODS.values() if m.family == "debate")
    assert [m.label for m in METHODS.values() if m.tone == "neutral" and m.society is None] == [
        "CoT", "SC", "SC (matched tokens)", "LMAD", "Concrete", "Always", "LMAD-DAG", "Concrete (DAG)", "Always (DAG)",
        "MAD", "Cons.", "PromptMAD", "TrueMAD", "ComputeMAD",
        "Self-AdviceMAD", "dMAD-manners", "TrueDMAD", "dMAD", "Chair", "Chair-none"]
    # every debating method with each selector's society: a method (and label) of its own, after the rest
    societies = [m for m in METHODS.values() if m.society]
    assert {(m.protocol.name, m.society) for m in societies if m.protocol} == {(p, s) for p in PROTOCOLS
                                                                             for s in SELECTORS}
    assert list(METHODS)[-len(societies):] == [m.name for m in societies]
    assert METHODS["mad+ac-greedy"].label == "MAD (AC-Greedy society)" and METHODS["mad+ac-greedy"].protocol.name == "mad"
    # and each LMAD policy with each society: the same commit policy, its own method, not a Table 2 column
    lmad = [m for m in societies if m.family == "lmad"]
    assert {(m.name, m.policy) for m in lmad} == {(f"{b}+{s.replace('_', '-')}", p) for b, p in (
        ("lmad", "strict"), ("lmad-concrete", "concrete"), ("lmad-always", "always")) for s in SELECTORS}
    assert METHODS["lmad+ac-greedy"].label == "LMAD (AC-Greedy society)" and not any(m.table2 for m in lmad)
    assert len({m.label for m in METHODS.values()}) == len(METHODS)


def test_a_misaligned_unit_list_fails():
    from lmad.stages.units import check_unit_paths

    units = [("hotpotqa", "lmad"), ("hotpotqa", "lmad-always")]
    good = [layout.lmad_table("b", "hotpotqa.shard1", m, 0) for _, m in units]
    check_unit_paths("lmad", units, samples=good, questions=[layout.questions("hotpotqa.shard1")] * 2)
    with pytest.raises(ValueError, match="is not of unit"):
        check_unit_paths("lmad", units, samples=good[::-1])


def test_the_front_door_and_the_shared_rules_stay_small():
    """README.md is a front door (reference lives in docs/); rules/common.smk holds only what
    needs Snakemake's own objects (the planning is lmad.plan's)."""
    assert len((REPO / "README.md").read_text().splitlines()) <= 250
    assert len((REPO / "rules" / "common.smk").read_text().splitlines()) <= 200
