"""Scale-out without a cluster: the profiles, which jobs ask for GPUs (read from what
`snakemake -n` plans under the SLURM profile), and the run manifest."""
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import REPO, make_config, snakemake, write_config

SLURM_PROFILE = REPO / "workflow" / "profiles" / "slurm"
LOCAL_PROFILE = REPO / "workflow" / "profiles" / "local"
# every rule that calls a model (rules/{generate,judge,lmad,debate}.smk)
MODEL_RULES = {"generate", "judge", "judge_validation", "debate_round", "lmad_generate", "lmad_extract", "lmad_localize",
               "lmad_debate", "lmad_resolve"}
GPU_DEFAULTS = {"mem_mb_per_gpu": 32000, "runtime": 720, "cpus_per_gpu": 8}


def _pairs(line):
    """'a=1, b=x y, c=<TBD>' -> {'a': '1', 'b': 'x y', 'c': '<TBD>'}"""
    return dict(item.split("=", 1) for item in line.split(", ") if "=" in item) if line else {}


def planned_jobs(*args, cwd=REPO):
    """(rule, wildcards, resources) of every job a dry run plans."""
    env = {**os.environ, "LMAD_ALLOW_TEST_DOUBLE": "1"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", out):
        head = re.match(r"(?:local)?rule (\w+):\n", block)
        if not head:
            continue
        wildcards = re.search(r"^ +wildcards: (.*)$", block, flags=re.MULTILINE)
        resources = re.search(r"^ +resources: (.*)$", block, flags=re.MULTILINE)
        jobs.append((head.group(1), _pairs(wildcards and wildcards.group(1)), _pairs(resources and resources.group(1))))
    assert jobs, out[-3000:]
    return jobs


def model_of(rule, wildcards, config):
    return config["judge"]["model"] if rule in ("judge", "judge_validation") else wildcards["backbone"]


@pytest.fixture(scope="module")
def paper_plan():
    """The brief's command: the paper config under the SLURM profile (dry run)."""
    config = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    jobs = planned_jobs("--profile", str(SLURM_PROFILE), "--configfile", "config/paper.yaml")
    return config, jobs


def test_paper_config_serves_every_model_and_no_planned_job_holds_a_gpu(paper_plan):
    """Every vLLM model of the paper config is served (the default): its stage jobs are light
    clients with the profile's defaults, and the GPUs go to one server job per model, sized
    like an offline stage job (lmad.job_resources)."""
    from lmad.job_resources import model_sizing

    config, jobs = paper_plan
    rules = {rule for rule, _, _ in jobs}
    assert {"generate", "judge", "debate_round", "prepare_data", "predict", "analyze", "manifest"} <= rules
    for rule, wildcards, res in jobs:
        assert res.get("gpu", "0") == "0" and "cpus_per_gpu" not in res, (rule, res)
        assert (res["mem_mb"], res["runtime"]) == ("4000", "60"), (rule, res)
    models = [*config["backbones"], config["judge"]["model"]]
    served = {m: {**config["models"][m], "serve": True} for m in models}
    assert all("serve" not in config["models"][m] for m in models)   # by default, not by a setting
    for m in models:
        gpus = config["models"][m]["tensor_parallel_size"]
        assert model_sizing(served, m, served_as_client=False) == {
            "gpu": gpus, "mem_mb": GPU_DEFAULTS["mem_mb_per_gpu"] * gpus, "runtime": GPU_DEFAULTS["runtime"],
            "cpus_per_gpu": GPU_DEFAULTS["cpus_per_gpu"]}
    # the judge still judges every dataset of a backbone in one job (Table 1's ten backbones)
    assert sum(rule == "judge" for rule, _, _ in jobs) == len(config["backbones"]) == 10


def test_model_resources_follow_each_backbone_and_overrides(workdir):
    """A vllm backbone with overrides, a CPU backbone beside it, and LMAD's model stages."""
    models = {
        # offline (serve: false): every stage job loads its own engine and holds its GPUs
        "big": {"backend": "vllm", "model": "org/big", "tensor_parallel_size": 2, "serve": False,
                "resources": {"mem_mb": 90000, "runtime": 240, "cpus_per_gpu": 4}},
        "small": {"backend": "vllm", "model": "org/small", "serve": False},
        "cpu": {"backend": "transformers", "model": "org/cpu", "resources": {"mem_mb": 6000}},
    }
    config = make_config(workdir, n=1, models=models, backbones=("big", "small", "cpu"),
                         methods=("cot", "sc", "lmad", "mad"), lmad={"iterations": 1})
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    config["judge"]["model"] = "small"
    write_config(workdir, config)
    jobs = planned_jobs("--profile", str(SLURM_PROFILE), "--directory", str(workdir), "--snakefile",
                        str(REPO / "Snakefile"), "--configfile", str(workdir / "config.yaml"))
    rules = {rule for rule, _, _ in jobs}
    assert MODEL_RULES <= rules, MODEL_RULES - rules
    want = {
        "big": {"gpu": "2", "mem_mb": "90000", "runtime": "240", "cpus_per_gpu": "4"},
        "small": {"gpu": "1", "mem_mb": "32000", "runtime": "720", "cpus_per_gpu": "8"},
        # not on a GPU: its own mem_mb; no runtime of its own (the cluster's default)
        "cpu": {"gpu": "0", "mem_mb": "6000"},
    }
    for rule, wildcards, res in jobs:
        if rule in MODEL_RULES:
            got = {k: res[k] for k in ("gpu", "mem_mb", "runtime", "cpus_per_gpu") if k in res}
            assert got == want[model_of(rule, wildcards, config)], (rule, wildcards, res)
        else:
            assert res.get("gpu", "0") == "0" and (res["mem_mb"], res["runtime"]) == ("4000", "60"), (rule, res)

    # locally, the default profile's pool of one GPU caps every job at one slot
    local = planned_jobs("--profile", str(LOCAL_PROFILE), "--directory", str(workdir), "--snakefile",
                         str(REPO / "Snakefile"), "--configfile", str(workdir / "config.yaml"))
    assert {res.get("gpu", "0") for _, _, res in local} == {"0", "1"}


def test_cpu_only_config_keeps_the_profile_defaults(workdir):
    make_config(workdir, n=1)
    jobs = planned_jobs("--profile", str(SLURM_PROFILE), "--directory", str(workdir), "--snakefile",
                        str(REPO / "Snakefile"), "--configfile", str(workdir / "config.yaml"))
    for rule, _, res in jobs:
        assert res.get("gpu", "0") == "0" and (res["mem_mb"], res["runtime"]) == ("4000", "60"), (rule, res)
        assert "cpus_per_gpu" not in res


def test_profiles_settings():
    slurm = yaml.safe_load((SLURM_PROFILE / "config.yaml").read_text())
    assert slurm["executor"] == "slurm"
    assert slurm["slurm-status-command"] == "squeue"
    # squeue sees a finished job for MinJobAge (default 300 s); the plugin needs >= 3 x this
    assert 3 * slurm["slurm-init-seconds-before-status-checks"] <= 300
    # partition and account are the user's to give (profile or CLI), never the workflow's
    assert not {"slurm_partition", "slurm_account"} & set(slurm["default-resources"])
    for path in [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]:
        assert not re.search(r"slurm_(partition|account)", path.read_text()), path
    local = yaml.safe_load((LOCAL_PROFILE / "config.yaml").read_text())
    assert "executor" not in local and local["resources"]["gpu"] == 1


def test_pinned_slurm_plugin_knows_the_status_command():
    plugin = pytest.importorskip("snakemake_executor_plugin_slurm")
    from dataclasses import fields
    from importlib.metadata import version

    names = {f.name for f in fields(plugin.ExecutorSettings)}
    assert {"status_command", "init_seconds_before_status_checks"} <= names
    pins = re.findall(r'"snakemake-executor-plugin-slurm==([\d.]+)"', (REPO / "pyproject.toml").read_text())
    assert pins and set(pins) == {version("snakemake-executor-plugin-slurm")}


# ---- run manifest


def test_manifest_counts_model_loads_from_the_stage_logs(workdir):
    from lmad import __version__

    config = make_config(workdir, n=1)
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    write_config(workdir, config)
    snakemake(workdir)
    manifest = json.loads((workdir / "results" / "manifest.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{64}", manifest["config_sha256"])
    assert manifest["package_version"] == __version__
    assert manifest["git_commit"] is None or re.fullmatch(r"[0-9a-f]{40}", manifest["git_commit"])
    # generate cot, generate proposals, judge and judge_validation each loaded the (scripted) model once
    assert manifest["model_loads"] == {"scripted": 4}
    first = manifest["models"]["scripted"]
    assert {k: first[k] for k in ("backend", "stage_logs", "loads", "engine_starts")} == \
        {"backend": "scripted", "stage_logs": 4, "loads": 4, "engine_starts": 4}
    # each model job's statistics, from the backend's counters (not its log text)
    stats = {name: json.loads((workdir / "logs" / "scripted" / name).read_text())
             for name in ("judge.stats.json", "generate/proposals.stats.json", "generate/cot.stats.json")}
    stats["validation"] = json.loads((workdir / "logs" / "judge_validation" / "scripted.stats.json").read_text())
    judge = stats["judge.stats.json"]
    # (two methods' identical answers make one judge request: computed once, the copy a hit)
    assert judge["calls"] == judge["hits"] + judge["misses"] and judge["misses"] > 0 and judge["loads"] == 1
    # the tokens the model computed: every job's, summed per model
    assert judge["computed_prompt_tokens"] > judge["misses"] and judge["computed_completion_tokens"] > 0
    for key in ("computed_prompt_tokens", "computed_completion_tokens"):
        assert first[key] == sum(s[key] for s in stats.values())

    # stages whose calls are all cached never load the model, and a config change reruns
    # the manifest: the new one counts no loads under a new config hash
    config["analysis"]["bootstrap_resamples"] = 100
    write_config(workdir, config)
    snakemake(workdir, "--forcerun", "generate")
    again = json.loads((workdir / "results" / "manifest.json").read_text())
    # judge_validation reads only the questions, so it did not rerun: its log is the first run's
    assert again["models"]["scripted"] == {"backend": "scripted", "stage_logs": 4, "loads": 1, "engine_starts": 1,
                                           **{k: stats["validation"][k] for k in ("computed_prompt_tokens",
                                                                                 "computed_completion_tokens")}}
    rejudged = json.loads((workdir / "logs" / "scripted" / "judge.stats.json").read_text())
    assert rejudged == {**judge, "hits": judge["calls"], "misses": 0, "loads": 0,
                        "computed_prompt_tokens": 0, "computed_completion_tokens": 0}
    assert again["config_sha256"] != manifest["config_sha256"]


def test_manifest_tokens_are_unknown_when_a_jobs_statistics_lack_them(tmp_path):
    """A stats file from before token counts (or a log-text fallback) makes the model's sum None,
    never a number that leaves that job out."""
    from lmad.stages.manifest import count_loads

    logs = tmp_path / "logs" / "m" / "generate"
    logs.mkdir(parents=True)
    counted = {"calls": 2, "hits": 0, "misses": 2, "loads": 1,
               "computed_prompt_tokens": 30, "computed_completion_tokens": 7}
    (logs / "cot.stats.json").write_text(json.dumps(counted))
    (logs / "cot.log").write_text("")
    assert count_loads([logs / "cot.log"], tmp_path / "logs", "j")["m"] == \
        {"stage_logs": 1, "loads": 1, "computed_prompt_tokens": 30, "computed_completion_tokens": 7}
    (logs / "proposals.stats.json").write_text(json.dumps({"calls": 1, "hits": 1, "misses": 0, "loads": 0}))
    (logs / "proposals.log").write_text("")
    both = count_loads([logs / "cot.log", logs / "proposals.log"], tmp_path / "logs", "j")["m"]
    assert both == {"stage_logs": 2, "loads": 1, "computed_prompt_tokens": None, "computed_completion_tokens": None}
    # a served model: the job that started its server counts it, and its own statistics too
    (logs / "cot.log").write_text("started a server for m (port 8000)\n")
    served = count_loads([logs / "cot.log"], tmp_path / "logs", "j")["m"]
    assert served == {"stage_logs": 1, "loads": 1, "server_starts": 1,
                      "computed_prompt_tokens": 30, "computed_completion_tokens": 7}


def test_a_gpu_for_a_non_vllm_model_is_refused(workdir):
    config = make_config(workdir, n=1)
    config["models"]["scripted"]["resources"] = {"gpu": 1}
    write_config(workdir, config)
    proc = snakemake(workdir, "--dry-run", check=False)
    assert proc.returncode != 0 and "models.scripted.resources.gpu" in proc.stdout + proc.stderr


def test_a_served_backbone_beside_an_offline_one_plans_with_the_profiles_memory(workdir):
    """A model rule over both: the offline GPU backbone's jobs keep their sizing, the served one's
    clients get the profile's mem_mb (Snakemake takes no unset memory per job: the dry run failed)."""
    models = {
        "offline": {"backend": "vllm", "model": "org/offline", "serve": False},
        "served": {"backend": "vllm", "model": "org/served", "serve": True},
    }
    config = make_config(workdir, n=1, models=models, backbones=("offline", "served"), methods=("cot", "mad"))
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    config["judge"]["model"] = "offline"
    write_config(workdir, config)
    jobs = planned_jobs("--profile", str(SLURM_PROFILE), "--directory", str(workdir), "--snakefile",
                        str(REPO / "Snakefile"), "--configfile", str(workdir / "config.yaml"))
    seen = set()
    for rule, wildcards, res in jobs:
        if rule in ("generate", "debate_round"):
            model = model_of(rule, wildcards, config)
            seen.add(model)
            want = ("1", "32000") if model == "offline" else ("0", "4000")
            assert (res.get("gpu", "0"), res["mem_mb"]) == want, (rule, wildcards, res)
    assert seen == {"offline", "served"}
