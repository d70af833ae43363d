"""The workflow on a real SLURM cluster (marker `slurm`): a one-node cluster on this
machine — munged, slurmctld and slurmd from Debian's `slurm-wlm` (installed with apt when
missing; needs root) — runs the demo DAG with the test double through
`--profile workflow/profiles/slurm`.

Checks: every non-local job went through sbatch and finished COMPLETED in SLURM's own
books, no local rule was submitted, the manifest counts the model loads, and a rule that
fails inside a SLURM job fails the run. A served judge's server, started by judge_validation,
goes to the partition, account, GPUs, memory and time of the judge model's config, never its
client's: the node is in two partitions, `cpu` (the default) and `gpu`, and has two GPUs that
SLURM knows by name only (GRES without devices). The cluster has no accounting (no slurmdbd), so
the profile's `slurm-status-command: squeue` is what lets the run finish at all.

The daemons this module starts (and only those) are stopped by pid at its end.
"""
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import REPO, make_config, write_config

pytestmark = pytest.mark.slurm

SLURM_PROFILE = REPO / "workflow" / "profiles" / "slurm"
DAEMONS = {"slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd", "munged": "/usr/sbin/munged"}
CLIENTS = ["sbatch", "squeue", "sinfo", "scontrol", "srun", "scancel"]
# rules whose jobs go to SLURM in the cot+sc DAG; everything else is a localrule
REMOTE_RULES = {"generate", "judge", "judge_validation"}
INIT_CHECK_S = 2  # --slurm-init-seconds-before-status-checks; MinJobAge below is 300 >= 3 x this
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+) \(log: (\S+?)\)")


def _run(cmd, timeout=60, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def _installed():
    return all(Path(p).exists() for p in DAEMONS.values()) and all(shutil.which(c) for c in CLIENTS)


def _install_slurm():
    """apt-get install slurm-wlm munge (~20 s); None on success, else why not."""
    if _installed():
        return None
    if shutil.which("apt-get") is None:
        return "SLURM is not installed and there is no apt-get to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "slurm-wlm", "munge"]
    proc = _run(install, timeout=900, env=env)
    if proc.returncode != 0:  # stale or missing package lists
        _run(["apt-get", "update", "-q"], timeout=900, env=env)
        proc = _run(install, timeout=900, env=env)
    if proc.returncode != 0 or not _installed():
        return f"`apt-get install slurm-wlm munge` failed: {(proc.stdout + proc.stderr)[-600:]}"
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mem_total_mb():
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


def _wait_for(check, timeout, what, logs=()):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.3)
    tails = "\n".join(f"--- {p}:\n{Path(p).read_text()[-2000:] if Path(p).exists() else '(none)'}" for p in logs)
    raise RuntimeError(f"timed out after {timeout} s waiting for {what}\n{tails}")


def _start_munged(root: Path):
    """The system munged when one answers already; else start one as user munge, in the
    foreground, so its pid is the one to stop. Returns the process started, or None."""
    if _run(["munge", "-n"]).returncode == 0:
        return None
    run_dir = Path("/run/munge")
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.chown(run_dir, "munge", "munge")
    run_dir.chmod(0o755)
    if not Path("/etc/munge/munge.key").exists():
        _run(["runuser", "-u", "munge", "--", "/usr/sbin/mungekey", "--create"], check=True)
    log = open(root / "munged.out", "w")
    proc = subprocess.Popen([DAEMONS["munged"], "--foreground"], user="munge", group="munge", extra_groups=[],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for(lambda: proc.poll() is None and _run(["munge", "-n"]).returncode == 0, 20, "munged",
                  logs=[root / "munged.out", "/var/log/munge/munged.log"])
    except RuntimeError:
        _stop(proc)
        raise
    return proc


def _stop(proc, timeout=15):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


SLURM_CONF = """\
ClusterName=lmadtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MpiDefault=none
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
DefMemPerCPU={def_mem}
MinJobAge=300
ReturnToService=2
InactiveLimit=0
KillWait=5
Waittime=0
SlurmctldTimeout=30
SlurmdTimeout=30
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
GresTypes=gpu
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={real_mem} Gres=gpu:{gpus} State=UNKNOWN
PartitionName=cpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes={host} MaxTime=INFINITE State=UP
"""
# The node's GPUs are stand-in device files: slurmd (22.05) drops a GPU with no File= ("Removing
# file-less GPU") and refuses a File= that is not a device, so each is a character device with
# /dev/null's numbers. That is enough for slurmctld to accept and schedule --gpus and for slurmd to
# run the job. gres.conf is read beside slurm.conf.
GRES_CONF = """\
AutoDetect=off
NodeName={host} Name=gpu File={root}/gpu[0-{last}]
"""
GPUS = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A one-node SLURM cluster; yields the environment its clients need."""
    if os.geteuid() != 0:
        pytest.skip("the SLURM test needs root (it installs slurm-wlm and starts munged, slurmctld, slurmd)")
    why = _install_slurm()
    if why:
        pytest.skip(why)
    pytest.importorskip("snakemake_executor_plugin_slurm",
                        reason='the SLURM executor plugin is missing: pip install -e ".[slurm]"')
    root = tmp_path_factory.mktemp("slurm")
    root.chmod(0o755)
    for sub in ("state", "spool"):
        (root / sub).mkdir()
    host = _run(["hostname", "-s"]).stdout.strip() or socket.gethostname().split(".")[0]
    real_mem = _mem_total_mb() // 2
    conf = root / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=host, root=root, ctld_port=_free_port(), slurmd_port=_free_port(),
                                      cpus=len(os.sched_getaffinity(0)), real_mem=real_mem,
                                      def_mem=min(1000, real_mem // 4), gpus=GPUS))
    for i in range(GPUS):
        os.mknod(root / f"gpu{i}", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    (root / "gres.conf").write_text(GRES_CONF.format(host=host, root=root, last=GPUS - 1))
    # snakemake-executor-plugin-slurm-jobstep (0.6.1) drops every SLURM_* variable, SLURM_CONF
    # included, before the `srun` that runs a job; on a real cluster srun finds
    # /etc/slurm/slurm.conf. This cluster's config lives here, so jobs get an srun that
    # knows where (docs/running.md "Job status, logs, tests": SLURM_CONF is not passed into jobs).
    shim = root / "bin"
    shim.mkdir()
    (shim / "srun").write_text(f'#!/bin/sh\nSLURM_CONF="${{SLURM_CONF:-{conf}}}" exec {shutil.which("srun")} "$@"\n')
    (shim / "srun").chmod(0o755)
    env = {**os.environ, "SLURM_CONF": str(conf), "PATH": f"{shim}{os.pathsep}{os.environ.get('PATH', '')}"}
    started = []
    try:
        started.append(_start_munged(root))
        for daemon, extra in (("slurmctld", ["-i"]), ("slurmd", ["-N", host])):
            out = open(root / f"{daemon}.out", "w")
            started.append(subprocess.Popen([DAEMONS[daemon], "-D", "-f", str(conf), *extra], env=env,
                                            stdout=out, stderr=subprocess.STDOUT))

        def node_idle():
            if any(p is not None and p.poll() is not None for p in started):
                raise RuntimeError("a SLURM daemon exited: " + "\n".join(
                    (root / f).read_text()[-2000:] for f in ("slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log")
                    if (root / f).exists()))
            state = _run(["sinfo", "-h", "-o", "%T"], env=env, timeout=20).stdout.split()  # both partitions: one line
            return state == ["idle"]

        _wait_for(node_idle, 60, "the node to come up idle",
                  logs=[root / "slurmctld.log", root / "slurmd.log", root / "slurmd.out"])
        yield {"env": env, "root": root, "real_mem": real_mem}
    finally:
        if any(p is not None and p.poll() is None for p in started[1:]):
            _run(["scancel", "--full", "--user", "root"], env=env, timeout=30)
        for proc in reversed(started):
            _stop(proc)


def slurm_command(cluster, workdir, *extra, placement=()):
    """``placement``: default resources such as slurm_partition=…, as a user gives them."""
    args = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(workdir / "config.yaml"), "--profile", str(SLURM_PROFILE),
            "--slurm-init-seconds-before-status-checks", str(INIT_CHECK_S), "--slurm-keep-successful-logs",
            "--latency-wait", "10", "--local-cores", "1"]
    if cluster["real_mem"] < 3 * 4000 or placement:  # the profile's default mem_mb would not fit this node
        args += ["--default-resources", f"mem_mb={min(4000, cluster['real_mem'] // 4)}", "runtime=60", *placement]
    return [*args, *extra]


def run_on_slurm(cluster, workdir, *extra, timeout=900, placement=()):
    args = slurm_command(cluster, workdir, *extra, placement=placement)
    env = {**cluster["env"], "LMAD_ALLOW_TEST_DOUBLE": "1"}
    start = time.time()
    proc = subprocess.run(args, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    proc.seconds = time.time() - start
    return proc


def slurm_states(cluster, job_ids):
    out = _run(["squeue", "--states=all", "-h", "-o", "%i %T", "--jobs", ",".join(job_ids)], env=cluster["env"]).stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


def planned_counts(output):
    """Jobs per rule, from Snakemake's 'Job stats' table."""
    table = output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, flags=re.MULTILINE)}


@pytest.fixture(scope="module")
def workdir_on_slurm(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("slurm_run")
    config = make_config(workdir, n=2, methods=("cot", "sc"))
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    write_config(workdir, config)
    return workdir


def test_demo_dag_runs_through_sbatch(cluster, workdir_on_slurm):
    workdir = workdir_on_slurm
    proc = run_on_slurm(cluster, workdir)
    out = proc.stdout + proc.stderr
    print(f"SLURM run took {proc.seconds:.0f} s")
    assert proc.returncode == 0, out[-8000:]

    submitted = SUBMITTED.findall(out)
    rules = Counter(re.search(r"slurm_logs/rule_(\w+)/", log).group(1) for _, log in submitted)
    planned = planned_counts(out)
    # every non-local job was submitted once, and no local rule was
    assert rules == Counter({r: n for r, n in planned.items() if r in REMOTE_RULES}), (rules, planned)
    # Snakemake itself ran the light rules here, as localrules
    local = set(re.findall(r"^localrule (\w+):", out, flags=re.MULTILINE))
    assert local == set(planned) - REMOTE_RULES >= {"all", "prepare_data", "predict", "analyze", "plot_accuracy",
                                                    "manifest"}
    assert set(re.findall(r"^rule (\w+):", out, flags=re.MULTILINE)) == REMOTE_RULES

    job_ids = [job_id for job_id, _ in submitted]
    assert len(set(job_ids)) == len(job_ids)
    assert slurm_states(cluster, job_ids) == {j: "COMPLETED" for j in job_ids}
    for _, log in submitted:  # kept by --slurm-keep-successful-logs
        assert (workdir / log).is_file(), log
    # no warm worker on SLURM (lmad.worker): every job ran its stage in its own process
    stage_logs = [p.read_text() for p in (workdir / "logs").rglob("*.log")]
    assert stage_logs and not any("forked from the warm worker" in text for text in stage_logs)

    assert (workdir / "results" / "scripted" / "analysis" / "table.md").stat().st_size > 0
    manifest = json.loads((workdir / "results" / "manifest.json").read_text())
    # generate cot, generate proposals, judge and its validation: one model load each, in their SLURM jobs
    assert manifest["model_loads"] == {"scripted": 4}


def test_a_failing_job_fails_the_run(cluster, workdir_on_slurm):
    workdir = workdir_on_slurm
    prompt = workdir / "prompts" / "judge.txt"
    prompt.write_text(prompt.read_text().replace("$prediction", "$no_such_field"))
    proc = run_on_slurm(cluster, workdir)
    out = proc.stdout + proc.stderr
    print(f"failing SLURM run took {proc.seconds:.0f} s")
    assert proc.returncode != 0, out[-6000:]
    submitted = SUBMITTED.findall(out)
    # the judge and its known-answer validation both read the broken prompt
    assert {re.search(r"slurm_logs/rule_(\w+)/", log).group(1) for _, log in submitted} == {"judge", "judge_validation"}
    job_ids = [job_id for job_id, _ in submitted]
    assert set(slurm_states(cluster, job_ids).values()) == {"FAILED"}
    assert "Error in rule judge" in out and "failed" in out
    assert "no_such_field" in (workdir / "logs" / "scripted" / "judge.log").read_text()
    assert "no_such_field" in (workdir / "logs" / "judge_validation" / "scripted.log").read_text()


def test_a_served_model_gets_one_server_job(cluster, tmp_path):
    """One engine per model under the SLURM profile: the model's stage jobs are clients that
    run on the submit host; the first submits the server as the model's one SLURM job, with
    the partition and account the user gave the profile; every other job finds its published
    address, and the run's end cancels it. The server is tests/fake_vllm (vLLM's OpenAI
    server, answered by the test double), on the jobs' PYTHONPATH."""
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    # a CPU cluster: the server job asks for no GPU, as with vLLM's CPU build
    models = {"smol": {"backend": "vllm", "model": str(weights), "serve": True, "serve_timeout_s": 240,
                       "resources": {"gpu": 0}}}
    config = make_config(tmp_path, n=2, models=models, backbones=["smol"], methods=("cot", "sc"))
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    write_config(tmp_path, config)
    cluster = {**cluster, "env": {**cluster["env"], "PYTHONPATH": os.pathsep.join(
        [str(REPO / "tests" / "fake_vllm"), str(REPO / "workflow"), os.environ.get("PYTHONPATH", "")])}}
    proc = run_on_slurm(cluster, tmp_path, placement=("slurm_partition=cpu", "slurm_account=lmad-test"))
    out = proc.stdout + proc.stderr
    print(f"served SLURM run took {proc.seconds:.0f} s")
    assert proc.returncode == 0, out[-8000:]
    # the clients ran here, as local rules: Snakemake submitted nothing, the server went by sbatch
    assert not SUBMITTED.findall(out), SUBMITTED.findall(out)
    assert REMOTE_RULES <= set(re.findall(r"^localrule (\w+):", out, flags=re.MULTILINE))
    server_log = (tmp_path / "logs" / "serve" / "smol.log").read_text()
    assert server_log.count("serving: ") == 1 and "--host 0.0.0.0" in server_log
    servers = _run(["squeue", "--states=all", "-h", "-n", "lmad-serve-smol", "-o", "%i %T %P %a"],
                   env=cluster["env"]).stdout.split("\n")
    servers = [line.split() for line in servers if line.strip()]
    assert len(servers) == 1 and servers[0][1] in ("CANCELLED", "COMPLETING", "COMPLETED"), servers
    assert servers[0][2:] == ["cpu", "lmad-test"], servers   # the profile's placement
    assert not list((tmp_path / ".lmad" / "serve").glob("*.json"))
    assert (tmp_path / "results" / "smol" / "analysis" / "table.md").stat().st_size > 0


def scontrol_job(cluster, job_id):
    """`scontrol -d show job` of one job (kept MinJobAge seconds after it ends), as a dict."""
    out = _run(["scontrol", "-o", "-d", "show", "job", job_id], env=cluster["env"]).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


def test_the_judges_server_started_by_judge_validation_is_placed_from_its_model_config(cluster, tmp_path):
    """The judge is a served 2-GPU model whose config places its server (models.<name>.resources:
    partition gpu, an account, memory, time) while every client job is placed in partition cpu
    (the profile's default-resources, and --set-resources for judge_validation itself). Only
    judge_validation runs, so it is the client that starts the server: SLURM itself must hold
    the server job in partition gpu with the model's account, GPUs, memory and time, and none
    of the client's placement. The node's GPUs are GRES names (no device), which SLURM schedules."""
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    mem_mb = min(1234, cluster["real_mem"] // 4 - 1)  # neither the profile's default mem_mb nor the client's
    server = {"slurm_partition": "gpu", "slurm_account": "lab-gpu", "gpu": GPUS, "cpus_per_gpu": 1,
              "mem_mb": mem_mb, "runtime": 30}
    models = {"scripted": make_config(tmp_path)["models"]["scripted"],
              "judge32": {"backend": "vllm", "model": str(weights), "serve": True, "tensor_parallel_size": GPUS,
                          "serve_timeout_s": 240, "resources": server}}
    config = make_config(tmp_path, n=1, models=models, backbones=["scripted"], methods=("cot",))
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    config["judge"]["model"] = "judge32"
    write_config(tmp_path, config)
    cluster = {**cluster, "env": {**cluster["env"], "PYTHONPATH": os.pathsep.join(
        [str(REPO / "tests" / "fake_vllm"), str(REPO / "workflow"), os.environ.get("PYTHONPATH", "")])}}
    proc = run_on_slurm(cluster, tmp_path, "--until", "judge_validation",
                        "--set-resources", "judge_validation:slurm_partition=cpu",
                        "judge_validation:slurm_account=client-acct",
                        placement=("slurm_partition=cpu", "slurm_account=lmad-cpu"))
    out = proc.stdout + proc.stderr
    print(f"judge_validation's SLURM run took {proc.seconds:.0f} s")
    assert proc.returncode == 0, out[-8000:]
    # the client ran here, as a local rule; Snakemake submitted nothing, the server went by sbatch
    assert not SUBMITTED.findall(out), SUBMITTED.findall(out)
    assert "judge_validation" in re.findall(r"^localrule (\w+):", out, flags=re.MULTILINE)
    assert not re.findall(r"^rule (\w+):", out, flags=re.MULTILINE)
    assert (tmp_path / "logs" / "serve" / "judge32.log").read_text().count("serving: ") == 1

    listed = _run(["squeue", "--states=all", "-h", "-n", "lmad-serve-judge32", "-o", "%i"],
                  env=cluster["env"]).stdout.split()
    assert len(listed) == 1, listed
    job = scontrol_job(cluster, listed[0])
    print("the judge32 server's job:", " ".join(f"{k}={job.get(k)}" for k in (
        "JobId", "JobName", "JobState", "Partition", "Account", "TresPerJob", "CpusPerTres", "JOB_GRES", "TRES",
        "MinMemoryNode", "TimeLimit", "NumCPUs", "NodeList")))
    assert job["JobState"] in ("CANCELLED", "COMPLETING", "COMPLETED"), job   # it ran, and the run's end stopped it
    # where: the model's config, never the client's (cpu, client-acct) or the profile's (cpu, lmad-cpu)
    assert job["Partition"] == "gpu", f"the server took partition {job['Partition']!r}, not its model's gpu"
    assert job["Account"] == "lab-gpu", f"the server took account {job['Account']!r}, not its model's lab-gpu"
    # what: the model's GPUs, asked for and given (JOB_GRES; without slurmdbd, TRES cannot track
    # gres/gpu), one CPU per GPU, its memory and time
    assert job["TresPerJob"] in (f"gres:gpu:{GPUS}", f"gres/gpu:{GPUS}") and job["JOB_GRES"] == f"gpu:{GPUS}", job
    tres = dict(item.split("=", 1) for item in job["TRES"].split(","))
    assert tres["cpu"] == str(GPUS) and tres["mem"] == job["MinMemoryNode"] == f"{mem_mb}M", job
    assert job["TimeLimit"] == "00:30:00", job
    # and the GPUs are real to SLURM: a job asking for more than the node has is refused
    more = _run(["sbatch", "--test-only", "--partition=gpu", f"--gpus={GPUS + 1}", "--wrap", "true"], env=cluster["env"])
    assert more.returncode != 0, more.stdout + more.stderr
    assert (tmp_path / "results" / "judge" / "judge32" / "validation.parquet").is_file()


def test_kill_9_of_the_slurm_run_then_the_same_command_resumes(cluster, tmp_path):
    """Resume under the SLURM profile (docs/running.md "Resume after a kill"): the head process
    is killed -9 mid-run at a seeded call count; the jobs it had submitted run on in SLURM and
    are left to end, as after a lost login node. The same command then completes, re-issues no
    call the store held when it started, and writes the tables of an uninterrupted local run."""
    import random
    import signal

    import test_resume as rh
    from conftest import stored_calls

    baseline = tmp_path / "uninterrupted"
    baseline.mkdir()
    rh.setup_small(baseline)
    rh.run(baseline)
    base_calls, base_tables = rh.logged(baseline), rh.tables(baseline)
    assert len(base_calls) == len(set(base_calls)) > 10

    workdir = tmp_path / "killed"
    workdir.mkdir()
    rh.setup_small(workdir)
    keylog = rh.env(workdir)  # the responder's log and the jobs' PYTHONPATH, over the cluster's environment
    env = {**cluster["env"], **{k: keylog[k] for k in ("KEYLOG_PATH", "KEYLOG_MODEL", "PYTHONPATH")}}
    cluster = {**cluster, "env": env}
    kill_at = int(len(base_calls) * random.Random(2026).uniform(0.3, 0.7))
    args = slurm_command(cluster, workdir)
    head_log = open(tmp_path / "head.log", "w")
    head = subprocess.Popen(args, cwd=workdir, env={**env, "LMAD_ALLOW_TEST_DOUBLE": "1"}, stdout=head_log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 600
    while len(rh.logged(workdir)) < kill_at and head.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert head.poll() is None, "the run ended before its kill point:\n" + (tmp_path / "head.log").read_text()[-6000:]
    os.killpg(head.pid, signal.SIGKILL)  # Snakemake and its local jobs; the SLURM jobs are not its children
    head.wait()
    _wait_for(lambda: not _run(["squeue", "-h", "-t", "PD,R,CG"], env=env).stdout.strip(), 300,
              "the dead run's SLURM jobs to end")
    before = rh.logged(workdir)
    finished = {key for _, key in stored_calls(workdir / "cache")}

    proc = run_on_slurm(cluster, workdir)  # the same command as the first run
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    after = rh.logged(workdir)[len(before):]
    print(f"SLURM kill at {len(before)} of {len(base_calls)} calls ({kill_at} asked); {len(finished)} stored; "
          f"resume issued {len(after)} in {proc.seconds:.0f} s")
    assert not finished & set(after)
    assert set(after) | finished == set(base_calls)
    got = rh.tables(workdir)
    assert got.keys() == base_tables.keys()
    for name, table in base_tables.items():
        assert got[name].equals(table) if hasattr(table, "equals") else got[name] == table, name
