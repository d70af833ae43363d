"""A SLURM run's placement, checked as the run starts, before its first sbatch: the partition and
account each submission (a rule's job, or the server a served model's client starts) lacks."""
from __future__ import annotations

from .job_resources import server_unplaced
from .smk import served_placement


def slurm_submissions(jobs, defaults: dict) -> list[tuple[str, dict]]:
    """(what, resources) of each sbatch the run's Snakemake ``jobs`` will make: every non-local job,
    and once per served model the server its first client job (a local rule) starts, sized from the
    model's config and the profile's default resources ``defaults`` (lmad.smk.served_placement)."""
    out, servers = [], {}
    for job in jobs:
        if not job.is_local:
            out.append((f"rule {job.rule.name}", dict(job.resources.items())))
        for spec in served_placement(dict(job.params.items()), defaults).values():
            servers.setdefault(spec["name"], spec["server_resources"])
    return out + [(f"the {name} server", sizing) for name, sizing in servers.items()]


def server_errors(submissions: list[tuple[str, dict]]) -> list[str]:
    """Each served model's server that cannot be submitted as sized (lmad.job_resources.server_unplaced)."""
    return [why for what, sizing in submissions if what.startswith("the ") and what.endswith(" server")
            and (why := server_unplaced(what[4:-7], sizing))]


def cluster_default_partition() -> str | None:
    """The partition sbatch uses when none is given (``sinfo`` marks it with ``*``), or None."""
    import subprocess

    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return next((p.rstrip("*") for p in out.split() if p.endswith("*")), None)


def placement_notes(submissions: list[tuple[str, dict]], default_partition) -> list[str]:
    """What the run tells the user before submitting: each of slurm_account and slurm_partition
    that some submission lacks, and what happens instead. A missing account is a warning, not an
    error: clusters without accounting take none, and the SLURM plugin guesses one from the user's
    latest job (sacct); only the user knows which is right. ``default_partition``: called once, if
    a partition is missing."""
    notes = []
    for key in ("slurm_account", "slurm_partition"):
        lacking = sorted({what for what, resources in submissions if not resources.get(key)})
        if not lacking:
            continue
        who = ", ".join(lacking[:6]) + (f" and {len(lacking) - 6} more" if len(lacking) > 6 else "")
        give = (f"give it as --default-resources {key}=<name> (repeat mem_mb and runtime there) or in "
                f"workflow/profiles/slurm/config.yaml (docs/running.md \"Run on SLURM\")")
        if key == "slurm_account":
            notes.append(f"WARNING: no slurm_account for {who}: the SLURM plugin guesses your latest job's "
                         f"account (sacct) or submits without one, and a server job takes sbatch's default "
                         f"(SBATCH_ACCOUNT); if your cluster bills jobs to an account, stop and {give}")
            continue
        partition = default_partition()
        if partition:
            notes.append(f"no slurm_partition for {who}: they go to the cluster's default partition "
                         f"{partition!r} (sinfo); to choose another, {give}")
        else:
            notes.append(f"WARNING: no slurm_partition for {who}, and sinfo names no default partition: "
                         f"sbatch may refuse them; {give}")
    return notes


def check_slurm_placement(dag, defaults: dict, log=print) -> list[str]:
    """Name, as a SLURM run starts, the partition and account its submissions lack (placement_notes);
    a served model's server that lacks its partition, memory or time stops the run here, before any
    sbatch. ``defaults``: the profile's default resources (lmad.job_resources.profile_defaults)."""
    submissions = slurm_submissions(dag.needrun_jobs(), defaults)
    if errors := server_errors(submissions):
        raise ValueError("; ".join(errors))
    notes = placement_notes([s for s in submissions if s[1].get("slurm_partition") or not s[0].endswith(" server")],
                            cluster_default_partition)
    for note in notes:
        log(f"lmad: {note}")
    return notes
