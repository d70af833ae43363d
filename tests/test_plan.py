"""The run's plan (lmad.plan) without Snakemake: which tables a job reads, for a config dict."""
from types import SimpleNamespace

import yaml

from conftest import REPO
from lmad import layout
from lmad.config_checks import serve_by_default
from lmad.plan import Plan


def demo_config(**changes) -> dict:
    """The demo config with the schema defaults the plan reads (Snakemake's validate fills them)."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update({"shards": 1, "finalizers": {"enabled": False}, "societies": {"enabled": False},
                   "disagreement": {"self_report": False, "pushback": False, "probe": False, "persistence": 0},
                   "jury": {"pair": [], "judges": []}, "process": {"rubric": False, "battery_questions": 0},
                   "debate": {"rounds": 2, "methods": {}}})
    config.update(changes)
    return config


def wildcards(**values):
    return SimpleNamespace(**values, keys=lambda: values.keys())


def test_replicates_are_runs_with_their_own_call_seed_and_paths():
    plan = Plan(demo_config(seeds=[0, 3]))
    assert plan.backbones == ["smollm2-135m/seed0", "smollm2-135m/seed3"]
    job = wildcards(backbone="smollm2-135m/seed3")
    assert plan.call_seed(job) == 3 and plan.call_seed(wildcards(backbone="smollm2-135m")) == 0
    assert plan.questions.proposal_tables(job)[0] == "results/smollm2-135m/seed3/hotpotqa/samples/proposals.parquet"
    assert plan.models.spec("smollm2-135m/seed3")["name"] == "smollm2-135m"
    assert "results/smollm2-135m/analysis/replicates.md" in plan.all_outputs()
    assert plan.analysis.replicate_accuracies(wildcards(model="smollm2-135m")) == [
        layout.analysis("smollm2-135m/seed0", "accuracy.parquet"), layout.analysis("smollm2-135m/seed3", "accuracy.parquet")]


def test_lmad_tables_follow_the_units_order():
    plan = Plan(demo_config())
    job = wildcards(backbone="smollm2-135m", iteration="1")
    units = plan.lmad.units()
    assert units[:3] == [["hotpotqa", "lmad"], ["hotpotqa", "lmad-concrete"], ["hotpotqa", "lmad-always"]]
    paths = plan.lmad.unit_tables("generate", "smollm2-135m", 0, job)
    assert [(layout.parse(p).dataset, layout.parse(p).method) for p in paths] == [tuple(u) for u in units]
    # every other stage: one file of every unit per iteration
    state = plan.lmad.unit_tables("state", "smollm2-135m", 0, job)
    assert state == "results/smollm2-135m/lmad/iter0/state.parquet"
    assert plan.lmad.state(job) == {"state": state} and plan.lmad.state(wildcards(backbone="b", iteration="0")) == {}
    assert plan.lmad.final_state(job) == f"results/smollm2-135m/lmad/iter{plan.config['lmad']['iterations'] - 1}/state.parquet"


def test_served_models_clients_are_local_rules_and_offline_ones_are_not():
    models = {"v": {"backend": "vllm", "model": "org/v"}, "t": {"backend": "transformers", "model": "org/t"}}
    config = demo_config(models=models, backbones=["v"], judge={"model": "t", "max_tokens": 4})
    serve_by_default(config)
    plan = Plan(config)
    defined = {"generate", "judge", "lmad_generate", "jury"}
    assert plan.models.served_client_rules(defined) == ["generate", "lmad_generate"]
    assert plan.models.threads("v") == 1 and plan.models.spec("v")["server_resources"]["gpu"] == 1
    config["models"]["v"]["serve"] = False
    assert Plan(config).models.served_client_rules(defined) == []
