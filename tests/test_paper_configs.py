"""Each paper's own setting (config/{truemad,wdh,opinion,du-et-al}.yaml, docs/paper-configs.md) is a
stand-alone config: `snakemake --dry-run --configfile config/<name>.yaml` plans it, and the plan
has the paper's datasets, methods, rounds, agents and (TrueMAD) one set of jobs per seed."""
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from functools import cache

import pytest
import yaml

from conftest import REPO
from lmad import layout
from lmad.data import ANSWER_TYPE, dataset_type
from lmad.protocols.debate import setting_of
from test_profiles import planned_jobs

CONFIGS = ("truemad", "wdh", "opinion", "opinion-probe", "du-et-al")


@cache
def plan(name: str) -> tuple[dict, list]:
    """(config, planned jobs) of one paper config, planned once per session; --forceall plans every
    job whatever results/ holds."""
    config = yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())
    return config, planned_jobs("--forceall", "--configfile", f"config/{name}.yaml")


def rules_of(jobs) -> Counter:
    return Counter(rule for rule, _, _ in jobs)


def wildcard(jobs, rule: str, key: str) -> set[str]:
    return {w[key] for r, w, _ in jobs if r == rule}


def rounds_per_method(jobs) -> dict[str, set[int]]:
    out = defaultdict(set)
    for rule, w, _ in jobs:
        if rule == "debate_round":
            out[w["debate_method"]].add(int(w["debate_round"]))
    return dict(out)


@pytest.mark.parametrize("name", CONFIGS)
def test_every_paper_config_plans_stand_alone(name):
    config, jobs = plan(name)
    assert set(wildcard(jobs, "prepare_data", "dataset")) == set(config["datasets"])
    # the backbone's runs (one per replicate seed where the config lists seeds) judge every dataset
    assert {layout.model_of(b) for b in wildcard(jobs, "judge", "backbone")} == set(config["backbones"])
    # every dataset comes from its usual Hugging Face copy (downloaded by the run)
    assert all(spec["source"] == "hf" and spec["hf_id"] for spec in config["datasets"].values())
    opinion = any(ANSWER_TYPE[dataset_type(d, s)] == "opinion" for d, s in config["datasets"].items())
    assert ("opinion_table" in rules_of(jobs)) == opinion


def test_truemad():
    config, jobs = plan("truemad")
    types = Counter(dataset_type(d, s) for d, s in config["datasets"].items())
    assert types == {"aime": 4, "gpqa-diamond": 1, "truthfulqa": 1}
    n = Counter()
    for d, s in config["datasets"].items():
        n[dataset_type(d, s)] += s["n"]
    assert n == {"aime": 90, "gpqa-diamond": 198, "truthfulqa": 200}   # §A.1
    assert config["datasets"]["truthfulqa"]["hf_config"] == "multiple_choice" and config["seed"] == 0
    methods = {"mad", "promptmad", "dmad-manners", "truemad", "truedmad", "computemad", "selfadvicemad"}
    assert set(config["methods"]) == methods
    # 4 agents and five response rounds (rounds 0..4) for every method; DMAD's four manners
    assert rounds_per_method(jobs) == {m: set(range(5)) for m in methods}
    for m in methods:
        setting = setting_of(m, config)
        assert len(setting.temperatures) == 4 and setting.rounds == 4
    assert setting_of("truedmad", config).manners == ("io", "cot", "stepback", "selfrefine")
    assert all(config["models"][b]["backend"] == "vllm" for b in config["backbones"])
    assert {"paper_dynamics", "process_table"} <= set(rules_of(jobs))
    # TrueMAD's own Table 1 and Tables 4-11 (results/paper/truemad/): one job each over every seed
    assert rules_of(jobs)["paper_truemad"] == 1 and rules_of(jobs)["paper_truemad_process"] == 1
    # three replicates of each backbone, each planning the same round jobs
    runs = wildcard(jobs, "debate_round", "backbone")
    assert {(layout.model_of(r), layout.replicate_of(r)) for r in runs} == {
        (b, s) for b in config["backbones"] for s in (0, 1, 2)}
    per_run = Counter(w["backbone"] for r, w, _ in jobs if r == "debate_round")
    assert set(per_run.values()) == {len(methods) * 5}


def test_when_debate_helps():
    config, jobs = plan("wdh")
    types = {dataset_type(d, s) for d, s in config["datasets"].items()}
    assert types == {"amc12", "math500", "gpqa-diamond", "mmlu-redux", "olympiadbench"}
    assert config["datasets"]["gpqa"]["hf_config"] == "gpqa_main"
    debating = {"mad", "mad+ac-greedy", "mad+sc-greedy", "mad+top-k"}
    assert rounds_per_method(jobs) == {m: set(range(6)) for m in debating}
    assert wildcard(jobs, "predict", "method") == {"sc"} and len(config["agents"]["temperatures"]) == 20  # vote20
    assert len(setting_of("mad", config).temperatures) == 4 and config["societies"]["k"] == 4
    assert {"finalizers", "paper_readout", "paper_headroom_lift", "society_pool", "society_select",
            "paper_societies", "paper_headroom", "paper_dynamics", "paper_wdh", "paper_wdh_table20"} <= set(rules_of(jobs))
    assert config["finalizers"]["names"] == ["vote", "vote_judge", "lvd"]


def test_layered_disagreement():
    config, jobs = plan("opinion")
    assert {dataset_type(d, s) for d, s in config["datasets"].items()} == {"globalopinionqa", "gpqa-diamond"}
    assert config["datasets"]["globalopinionqa"]["n"] == 50
    # one committee of three models with a chairman; the chair debates three rounds (rounds 0..3) at the
    # three tones, chair-none (NONE) goes from the drafts to the chairman; sc: no debate
    assert wildcard(jobs, "judge", "backbone") == {"tri3"}
    assert rounds_per_method(jobs) == {**{m: set(range(4)) for m in ("chair", "chair@friendly", "chair@hostile")},
                                       "chair-none": {0}}
    assert wildcard(jobs, "predict", "method") == {"sc"}
    assert len(setting_of("chair@hostile", config, "tri3").temperatures) == 3
    assert {"pushback_validation", "pushback", "disagreement_table", "jury", "jury_table", "opinion_table",
            "costs_by_model", "paper_layered", "paper_layered_jury"} <= set(rules_of(jobs))
    assert "paper_layered_probe" not in rules_of(jobs)
    assert rules_of(jobs)["jury"] == len(config["backbones"]) * len(config["jury"]["judges"])
    # the judges come from families no member is of
    members = {m["model"] for m in config["committees"]["tri3"]["members"]}
    assert not {config["judge"]["model"], *config["jury"]["judges"]} & members


def test_layered_disagreement_layer_d():
    config, jobs = plan("opinion-probe")
    assert {d: s["n"] for d, s in config["datasets"].items()} == {"globalopinionqa": 50}
    assert rules_of(jobs)["probe"] == len(config["backbones"]) == 3 and "probe_table" in rules_of(jobs)
    assert "paper_layered_probe" in rules_of(jobs) and "paper_layered" not in rules_of(jobs)
    assert config["judge"]["model"] not in config["backbones"]


def test_du_et_al():
    config, jobs = plan("du-et-al")
    assert {d: s["n"] for d, s in config["datasets"].items()} == {"gsm8k": 100, "mmlu": 100}
    # 3 agents, 2 rounds: the initial answers (round 0, the shared proposals) and one revision
    assert rounds_per_method(jobs) == {"mad": {0, 1}}
    setting = setting_of("mad", config)
    assert len(setting.temperatures) == 3 and setting.shares_proposals
    assert wildcard(jobs, "predict", "method") == {"cot", "sc"}
    assert rules_of(jobs)["paper_du"] == 1


def _paper_outputs(*names: str) -> list[str]:
    """The results/paper/ outputs of one paper config (and its overlays, merged as Snakemake merges them)."""
    from snakemake.utils import validate

    from lmad.config_schema import schema_file
    from lmad.plan import Plan

    config: dict = {}
    for name in names:
        for k, v in yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text()).items():
            config[k] = {**config[k], **v} if isinstance(v, dict) and isinstance(config.get(k), dict) else v
    validate(config, schema=schema_file())
    return Plan(config).paper.outputs()


@pytest.mark.parametrize("names, folder, tables", [
    (("opinion",), "layered", ["table2", "layer_b", "layer_c", "jury"]),
    (("opinion-probe",), "layered", ["layer_d"]),
    (("du-et-al",), "du", ["accuracy"]),
    (("du-et-al", "du-et-al-scaling"), "du", ["accuracy", "scaling"]),
    (("du-et-al-cross-model",), "du", ["accuracy", "cross_model"]),
])
def test_each_paper_plans_its_own_tables_in_its_folder(names, folder, tables):
    got = [p for p in _paper_outputs(*names) if p.startswith(f"results/paper/{folder}/")]
    assert got == [f"results/paper/{folder}/{t}.{e}" for t in tables for e in ("csv", "md")]


def test_du_et_al_agent_and_round_scaling_overlay():
    """config/du-et-al-scaling.yaml over config/du-et-al.yaml: every agent count a backbone of its own
    (a committee of copies of the one model), MAD over four revision rounds."""
    config = yaml.safe_load((REPO / "config" / "du-et-al.yaml").read_text())
    overlay = yaml.safe_load((REPO / "config" / "du-et-al-scaling.yaml").read_text())
    config |= {k: v if not isinstance(v, dict) or k not in config else {**config[k], **v} for k, v in overlay.items()}
    jobs = planned_jobs("--forceall", "--configfile", "config/du-et-al.yaml", "config/du-et-al-scaling.yaml")
    counts = {b: len(setting_of("mad", config, b).temperatures) for b in config["backbones"]}
    assert counts == {"agents-2": 2, "gpt-3.5-turbo": 3, "agents-4": 4, "agents-5": 5, "agents-6": 6}
    assert all({m["model"] for m in c["members"]} == {"gpt-3.5-turbo"} for c in config["committees"].values())
    per_backbone = defaultdict(set)
    for rule, w, _ in jobs:
        if rule == "debate_round":
            per_backbone[w["backbone"]].add(int(w["debate_round"]))
    assert per_backbone == {b: set(range(5)) for b in counts}
    assert {"paper_table1", "paper_dynamics", "paper_du"} <= set(rules_of(jobs))


def test_du_et_al_cross_model_debate():
    config = yaml.safe_load((REPO / "config" / "du-et-al-cross-model.yaml").read_text())
    jobs = planned_jobs("--forceall", "--configfile", "config/du-et-al-cross-model.yaml")
    assert {d: s["n"] for d, s in config["datasets"].items()} == {"gsm8k": 20}
    (name,) = config["committees"]
    members = [m["model"] for m in config["committees"][name]["members"]]
    assert len(set(members)) == 2 and config["backbones"] == [*members, name]
    assert all(config["models"][m]["backend"] == "openai" for m in members)
    assert rounds_per_method(jobs) == {"mad": {0, 1}}
    assert wildcard(jobs, "debate_round", "backbone") == set(config["backbones"])
    assert len(setting_of("mad", config, name).temperatures) == 2
    assert rules_of(jobs)["paper_du"] == 1


def test_when_debate_helps_thicket_overlay():
    """config/wdh-thicket.yaml over config/wdh.yaml: each backbone on the embedded backend (the one that
    loads perturbed weights), its society pool the base agent plus 100 seeded perturbations at each of
    the paper's three scales, and the whole study planned on it."""
    from lmad.backend_registry import backend
    from lmad.societies import pool_agents

    config = yaml.safe_load((REPO / "config" / "wdh.yaml").read_text())
    overlay = yaml.safe_load((REPO / "config" / "wdh-thicket.yaml").read_text())
    jobs = planned_jobs("--forceall", "--configfile", "config/wdh.yaml", "config/wdh-thicket.yaml")
    models = overlay["models"]
    assert overlay["backbones"] == list(models) and all(backend(m["backend"]).perturbable for m in models.values())
    assert {m["model"] for m in models.values()} == {config["models"][b]["model"] for b in config["backbones"]}
    pool = {**config["societies"]["pool"], **overlay["societies"]["pool"]}
    perturbed = [a for a in pool_agents(pool["temperatures"], pool["personas"], pool["variants"], pool["perturbations"])
                 if a.perturb is not None]
    by_scale = Counter(a.perturb_scale for a in perturbed)
    assert by_scale == {0.0005: 100, 0.001: 100, 0.002: 100}
    assert len({(a.perturb_seed, a.perturb_scale) for a in perturbed}) == 300
    assert wildcard(jobs, "society_pool", "backbone") == set(models)
    assert {"society_select", "paper_societies", "paper_wdh", "paper_readout"} <= set(rules_of(jobs))
    assert {m: set(r) for m, r in rounds_per_method(jobs).items()} == {
        m: set(range(6)) for m in ("mad", "mad+ac-greedy", "mad+sc-greedy", "mad+top-k")}


# The tables When Debate Helps reports that any config with the finalizers or the societies builds: under
# results/paper/wdh/ beside the paper's own tables where config paper.wdh is on, in results/paper/ otherwise.
WDH_BORN = [f"{name}.{ext}" for name in ("readout", "headroom_lift") for ext in ("csv", "md", "png")] + [
    "headroom.csv", "headroom.md", "societies.csv", "societies.md", "society_debates.csv",
    "societies_sweep.csv", "societies_sweep.md"]


def planned_outputs(*configfiles) -> list[str]:
    """Every output file a forced dry run of the config files (merged in order) plans, once per job."""
    env = {**os.environ, "LMAD_ALLOW_TEST_DOUBLE": "1"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--forceall", "--configfile",
                           *map(str, configfiles)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return [p for line in re.findall(r"^ +output: (.*)$", proc.stdout, flags=re.MULTILINE) for p in line.split(", ")]


@pytest.mark.parametrize("configs, sizes, folder", [
    (("config/wdh.yaml",), [25, 50], "results/paper/wdh"),
    (("config/config.yaml", "config/readout.yaml"), [1, 2], "results/paper"),
])
def test_when_debate_helps_tables_go_with_the_paper_tables(tmp_path, configs, sizes, folder):
    """With paper.wdh (config/wdh.yaml) the readout, headroom-lift, headroom and society tables are planned
    under results/paper/wdh/ and none in results/paper/ itself; without it (config/readout.yaml over the
    demo) they stay in results/paper/. An overlay adds the construction-set size sweep so that its
    table is planned too; each file is one job's output, written once."""
    overlay = tmp_path / "sweep.yaml"
    overlay.write_text(yaml.safe_dump({"societies": {"split": {"sizes": sizes}}}))
    outputs = planned_outputs(*configs, overlay)
    born = [p for p in outputs if p.startswith("results/paper/") and p.rsplit("/", 1)[-1] in WDH_BORN]
    assert sorted(born) == sorted(f"{folder}/{n}" for n in WDH_BORN)
    # every config's generic tables stay in results/paper/
    assert {"results/paper/table1.csv", "results/paper/dynamics.csv", "results/paper/cost.csv"} <= set(outputs)
