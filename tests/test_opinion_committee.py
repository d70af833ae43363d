"""The layered-disagreement setting as the paper runs it (config/opinion.yaml, docs/paper-configs.md):
a committee of three models from three families with a chairman, the chair's debated (PER-TURN) and
no-debate (NONE, ``chair-none``) syntheses in one run, and the swap-checked jury judging those
syntheses — the chairman's text, not an extracted option letter — on the four anchored sub-scores,
validated on the severity battery, which a question without gold never enters."""
import copy
import os

import polars as pl
import yaml
from snakemake.utils import validate

from conftest import REPO, SMOLLM2, make_config, snakemake, write_config
from lmad.plan import Plan
from lmad.protocols.debate import setting_of
from lmad.config_schema import schema_file
from lmad.schemas import read_table
from test_plan import wildcards

SCHEMA = schema_file()  # the registries' lists filled in, as a run validates
ENV = {"PYTHONPATH": os.pathsep.join([str(REPO / "workflow"), str(REPO / "tests")])}


def opinion_config() -> dict:
    config = yaml.safe_load((REPO / "config" / "opinion.yaml").read_text())
    validate(config, schema=SCHEMA)  # fills the schema's defaults, as the Snakefile does
    return config


def test_the_config_is_a_three_model_committee_with_a_chair():
    config = opinion_config()
    (name,) = config["backbones"]
    committee = config["committees"][name]
    members = [m["model"] for m in committee["members"]]
    assert len(members) == 3 and len(set(members)) == 3
    assert committee["roles"]["chair"] in config["models"]
    # the jurors and the layer-B judge are of families no member is of
    assert not {config["judge"]["model"], *config["jury"]["judges"]} & {*members, committee["roles"]["chair"]}
    # PER-TURN: three debate rounds before the chairman, at every tone; NONE: the drafts go to him
    for m in ("chair", "chair@friendly", "chair@hostile"):
        assert setting_of(m, config, name).rounds == 3 and len(setting_of(m, config, name).temperatures) == 3
    assert setting_of("chair-none", config, name).rounds == 0
    assert config["jury"]["pair"] == ["chair-none", "chair"] and config["jury"]["subscores"]
    assert not config["disagreement"]["probe"]  # layer D: config/opinion-probe.yaml


def test_the_jury_reads_each_chairs_synthesis_from_its_last_round():
    plan = Plan(opinion_config())
    got = plan.study("jury").syntheses(wildcards(backbone="tri3"))
    assert got == [f"results/tri3/{d}/{m}/round{t}_steps.parquet" for d in ("globalopinionqa", "gpqa-diamond")
                   for m, t in (("chair-none", 0), ("chair", 3))]
    # a pair of methods without a chair reads their predictions only
    config = opinion_config()
    config["jury"]["pair"] = ["sc", "chair"]
    assert Plan(config).study("jury").syntheses(wildcards(backbone="tri3")) == [
        "results/tri3/globalopinionqa/chair/round3_steps.parquet", "results/tri3/gpqa-diamond/chair/round3_steps.parquet"]


def _stand_in(workdir) -> dict:
    """config/opinion.yaml with every model a weight-perturbed copy of the demo model (CPU): three members,
    the chair and the judges each its own seeded copy, on the demo questions of both datasets."""
    config = opinion_config()
    names = {m: i + 1 for i, m in enumerate(config["models"])}
    config["models"] = {m: {**copy.deepcopy(SMOLLM2), "perturb": {"seed": seed, "scale": 0.001}}
                        for m, seed in names.items()}
    config["datasets"] = {"globalopinionqa": {"source": "local", "path": str(REPO / "data/demo/globalopinionqa.csv"),
                                              "n": 2},
                          "gpqa-diamond": {"source": "local", "path": str(REPO / "data/demo/gpqa-diamond.csv"), "n": 2}}
    config["cache_dir"] = str(workdir / "cache")
    config["prompts"] = {k: str(REPO / v) for k, v in config["prompts"].items()}
    write_config(workdir, config)
    return config


def test_three_perturbed_copies_of_the_demo_model_plan_the_whole_setting(workdir):
    _stand_in(workdir)
    out = snakemake(workdir, "-n", "--forceall", env=ENV)
    text = out.stdout + out.stderr
    for rule in ("debate_round", "jury", "jury_table", "pushback", "pushback_validation", "disagreement_table",
                 "opinion_table", "costs_by_model"):
        assert f"rule {rule}:" in text, rule
    assert "results/tri3/gpqa-diamond/chair-none/round0_steps.parquet" in text
    assert "results/tri3/gpqa-diamond/chair/round3_steps.parquet" in text
    assert "rule probe:" not in text


# ------------------------------------------------------------------ a scripted run of the same shape

MODELS = {m: {"backend": "scripted", "model": m, "responder": f"committee_oracle:respond_{m}"} for m in "abc"}


def test_scripted_committee_run_judges_the_syntheses(workdir):
    config = make_config(workdir, n=2, models={**copy.deepcopy(MODELS),
                                               "j": {"backend": "scripted", "model": "j",
                                                     "responder": "test_jury_subscores:by_rule"}},
                         backbones=["tri"], methods=["sc", "chair-none", "chair"],
                         committees={"tri": {"members": [{"model": "a"}, {"model": "b"}, {"model": "c"}],
                                             "roles": {"chair": "b"}}},
                         chair={"timing": "per_turn", "rounds": 1, "max_tokens": 64},
                         jury={"pair": ["chair-none", "chair"], "judges": ["j"], "subscores": True,
                               "battery": {"questions": 2, "tiers": ["severe", "moderate", "subtle"],
                                           "pass_tier": "severe"}, "min_rate": 0.8})
    config["judge"]["model"] = "j"
    config["datasets"] = {"globalopinionqa": {"source": "local", "path": str(REPO / "data/demo/globalopinionqa.csv"),
                                              "n": 2},
                          "gpqa-diamond": {"source": "local", "path": str(REPO / "data/demo/gpqa-diamond.csv"), "n": 2}}
    write_config(workdir, config)
    snakemake(workdir, "results/paper/jury.md", env=ENV)
    verdicts = read_table("jury_verdicts", workdir / "results/tri/disagreement/jury_j.parquet")
    pairs = verdicts.filter(pl.col("kind") == "pair")
    assert len(pairs) == 2 * 2 * 2  # two datasets x two questions x two orders
    # both sides are the chairman's (model b's) synthesis text, not its extracted answer
    assert set(pairs["a"]) == set(pairs["b"]) == {"Model b reasons briefly.\nAnswer: beta"}
    none = read_table("debate_steps", workdir / "results/tri/gpqa-diamond/chair-none/round0_steps.parquet")
    assert none.filter(pl.col("step") == "chair").height == 2
    # the battery comes from the question with gold only: GlobalOpinionQA has none, never a known-better text
    battery = verdicts.filter(pl.col("kind") == "battery")
    assert set(battery["dataset"]) == {"gpqa-diamond"} and len(battery) == 2 * 3 * 2
    md = (workdir / "results/paper/jury.md").read_text()
    assert "`globalopinionqa` (2 pairs)" in md and "unvalidated there" in md
