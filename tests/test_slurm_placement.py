"""A SLURM run names the partition and account its submissions lack as it starts, before the first
sbatch (lmad.slurm_placement.placement_notes): a missing account is a warning naming
`slurm_account`, a missing partition resolves to the cluster's default (sinfo) or is named.
The workflow test runs the SLURM profile against stand-in SLURM commands on PATH: `sinfo`
names a default partition, every other command fails, so the run ends at its first sbatch."""
import os

import pytest
import yaml

from conftest import REPO, make_config, snakemake
from lmad.job_resources import server_unplaced
from lmad.slurm_placement import placement_notes, server_errors, slurm_submissions

SLURM_PROFILE = REPO / "workflow" / "profiles" / "slurm"
PLACED = {"slurm_account": "proj", "slurm_partition": "gpu"}


def test_a_missing_account_is_a_warning_naming_the_key():
    notes = placement_notes([("rule generate", {"slurm_partition": "gpu"}), ("rule judge", PLACED)], lambda: "cpu")
    assert len(notes) == 1 and notes[0].startswith("WARNING: no slurm_account for rule generate:")
    assert "--default-resources slurm_account=<name>" in notes[0]


def test_a_missing_partition_resolves_to_the_clusters_default_or_is_named():
    asked = []
    jobs = [("rule generate", {"slurm_account": "proj"})]
    notes = placement_notes(jobs, lambda: asked.append(1) or "debug")
    assert notes == [notes[0]] and "go to the cluster's default partition 'debug'" in notes[0]
    assert not notes[0].startswith("WARNING")
    (none,) = placement_notes(jobs, lambda: None)
    assert none.startswith("WARNING: no slurm_partition for rule generate, and sinfo names no default partition")
    assert placement_notes([("rule generate", PLACED)], lambda: asked.append(1)) == [] and asked == [1]


def test_a_served_models_server_is_placed_from_its_config_then_the_profile_never_its_client():
    class Job:
        def __init__(self, rule, local, resources, params):
            self.rule, self.is_local = type("Rule", (), {"name": rule}), local
            self.resources, self.params = resources, params

    served = {"name": "qwen", "serve": True, "server_resources": {"gpu": 1, "slurm_partition": "gpu"}}
    defaults = {"slurm_account": "proj", "slurm_partition": "cpu", "mem_mb": 4000, "runtime": 60}
    jobs = [Job("judge_validation", True, {"slurm_partition": "cpu", "slurm_account": "other"}, {"model": served}),
            Job("generate", True, {}, {"model": served}),   # a second client: still one server
            Job("judge", False, {"slurm_partition": "cpu"}, {}), Job("analyze", True, {}, {})]
    assert slurm_submissions(jobs, defaults) == [
        ("rule judge", {"slurm_partition": "cpu"}),
        ("the qwen server", {"gpu": 1, "slurm_partition": "gpu", "slurm_account": "proj", "mem_mb": 4000, "runtime": 60})]
    unplaced = slurm_submissions(jobs, {"mem_mb": 4000})
    assert server_errors(unplaced) == [server_unplaced("qwen", unplaced[1][1])]
    assert "no runtime: set models.qwen.resources.runtime" in server_errors(unplaced)[0]


@pytest.fixture
def fake_slurm(tmp_path):
    """SLURM commands that log their calls: sinfo lists partitions (debug the default), sacctmgr the
    user's one account; the rest fail."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    answers = {"sinfo": 'printf "cpu\\ndebug*\\n"', "sacctmgr": "echo proj"}  # partitions; the user's accounts
    for name in ("sbatch", "squeue", "sacct", "sacctmgr", "sshare", "scontrol", "scancel", "srun", "sinfo"):
        out = f"{answers[name]}; exit 0" if name in answers else 'echo "fake SLURM" >&2; exit 1'
        (bin_dir / name).write_text(f'#!/bin/sh\necho "$(basename "$0") $*" >> {calls}\n{out}\n')
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, calls


@pytest.mark.parametrize("placed", [False, True], ids=["profile-defaults", "account-and-partition-given"])
def test_a_slurm_run_names_what_it_lacks_before_its_first_sbatch(tmp_path, fake_slurm, placed):
    env, calls = fake_slurm
    make_config(tmp_path, n=1, methods=["cot"])
    resources = ["--default-resources", "mem_mb=100", "runtime=1", *([f"{k}={v}" for k, v in PLACED.items()] if placed else [])]
    proc = snakemake(tmp_path, "--profile", str(SLURM_PROFILE), "--slurm-init-seconds-before-status-checks", "1", *resources,
                     check=False, env=env, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "sbatch" in calls.read_text(), out[-3000:]  # it got as far as submitting
    if placed:
        assert "lmad: " not in out
        return
    warning = out.index("lmad: WARNING: no slurm_account for rule generate, rule judge, rule judge_validation")
    assert warning < out.index("localrule prepare_data") and "slurm_account=<name>" in out[warning:]
    assert "lmad: no slurm_partition for rule generate, rule judge, rule judge_validation: they go to the cluster's " \
           "default partition 'debug'" in out


def served_judge_config(tmp_path, resources):
    """The demo with a 2-GPU served vLLM judge (tests/fake_vllm stands in for vLLM)."""
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    models = {"scripted": make_config(tmp_path)["models"]["scripted"],
              "judge32": {"backend": "vllm", "model": str(weights), "serve": True, "tensor_parallel_size": 2,
                          "serve_timeout_s": 5, "resources": resources}}
    make_config(tmp_path, n=1, models=models, backbones=["scripted"], methods=["cot"])
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["judge"]["model"] = "judge32"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return {"PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "fake_vllm"), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize("resources, expect", [
    ({"slurm_partition": "gpu", "slurm_account": "lab", "mem_mb": 90000}, ["--partition=gpu", "--account=lab", "--mem=90000M"]),
    ({}, ["--partition=batch", "--account=proj", "--mem=64000M"]),   # the profile's default-resources
], ids=["model-config", "profile-defaults"])
def test_the_judges_server_started_by_judge_validation_is_placed_from_its_config(tmp_path, fake_slurm, resources, expect):
    """judge_validation (a served client, a local rule on SLURM) starts the judge's server: its
    sbatch takes the judge model's resources, then the profile's defaults, never the client
    job's own (here --set-resources judge_validation:slurm_partition=cpu)."""
    env, calls = fake_slurm
    env = {**env, **served_judge_config(tmp_path, resources)}
    proc = snakemake(tmp_path, "--profile", str(SLURM_PROFILE), "--until", "judge_validation",
                     "--default-resources", "mem_mb=100", "runtime=1", "slurm_partition=batch", "slurm_account=proj",
                     "--set-resources", "judge_validation:slurm_partition=cpu", "judge_validation:slurm_account=other",
                     check=False, env=env, timeout=300)
    out = proc.stdout + proc.stderr
    (server,) = [line for line in calls.read_text().splitlines() if line.startswith("sbatch ")] or [out[-3000:]]
    assert server.startswith("sbatch --parsable --job-name=lmad-serve-judge32"), server
    argv = server.split()
    assert {*expect, "--gpus=2", "--cpus-per-gpu=8", "--time=720"} <= set(argv), argv
    assert not {"--partition=cpu", "--account=other"} & set(argv), argv


def test_an_unplaceable_server_stops_the_run_before_any_sbatch(tmp_path, fake_slurm):
    env, calls = fake_slurm
    env = {**env, **served_judge_config(tmp_path, {})}
    proc = snakemake(tmp_path, "--profile", str(SLURM_PROFILE), "--until", "judge_validation",
                     "--default-resources", "mem_mb=100", "runtime=1",
                     "--set-resources", "judge_validation:slurm_partition=gpu", check=False, env=env, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "sbatch" not in calls.read_text(), out[-3000:]
    assert "the judge32 server's SLURM job has no slurm_partition: set models.judge32.resources.slurm_partition" in out


def test_profile_defaults_read_both_kinds_of_snakemake_default_resources():
    from lmad.job_resources import profile_defaults

    class Parsed:  # Snakemake before 9.2x: DefaultResources, names evaluated per job (functions)
        _args = {"slurm_partition": "gpu", "slurm_account": "'proj'", "mem_mb": "4000", "disk_mb": "2*input.size_mb"}
        parsed = {"slurm_partition": lambda *a: None, "slurm_account": lambda *a: None, "mem_mb": 4000,
                  "disk_mb": lambda *a: None}

    assert profile_defaults(Parsed()) == {"slurm_partition": "gpu", "slurm_account": "proj", "mem_mb": 4000}
    assert profile_defaults({"runtime": 60, "mem_mb": None}) == {"runtime": 60}
    assert profile_defaults(None) == {}
