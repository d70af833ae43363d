"""The cost forecast (lmad.forecast) against the counts of real runs with the test double: calls
equal for methods with a fixed number of calls, never above the bound for early-stopping ones,
generated tokens never above theirs; after the run every call is cached and costs nothing."""
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from conftest import make_config, snakemake, write_config
from lmad.forecast import load_config, main
from lmad.forecast_calls import forecast


def planned(workdir: Path):
    return forecast(load_config([str(workdir / "config.yaml")], allow_test_double=True), workdir)


def job_stats(workdir: Path) -> dict[str, dict]:
    """Every model job's run statistics, by its log path under logs/ (without .stats.json)."""
    return {str(p.relative_to(workdir / "logs")).removesuffix(".stats.json"): json.loads(p.read_text())
            for p in (workdir / "logs").rglob("*.stats.json")}


def computed(stats: dict, prefix: str) -> tuple[int, int]:
    """Calls and generated tokens the jobs under ``prefix`` computed (their cache misses)."""
    jobs = [s for k, s in stats.items() if k.startswith(prefix)]
    return sum(s["misses"] for s in jobs), sum(s["computed_completion_tokens"] for s in jobs)


def groups(fc, *starts):
    return [g for g in fc.groups if g.stage.startswith(starts)]


def test_fixed_call_methods_are_exact_and_a_finished_run_costs_nothing(workdir):
    config = make_config(workdir, n=2, methods=["cot", "sc", "mad", "truemad", "chair", "chair-none"],
                         debate={"rounds": 2},
                         chair={"timing": "after"})
    config["datasets"] = {d: config["datasets"][d] for d in ("hotpotqa", "strategyqa")}
    write_config(workdir, config)
    before = planned(workdir)
    assert not any(g.bound for g in groups(before, "generate", "mad", "truemad", "chair", "judge validation"))
    assert sum(g.cached for g in before.groups) == 0

    snakemake(workdir)
    stats = job_stats(workdir)
    for stage in ("cot", "proposals"):
        (g,) = groups(before, f"generate {stage}")
        assert (g.to_compute, g.max_tokens) == (computed(stats, f"scripted/generate/{stage}")[0], 64)
    # MAD's and the chair's first revision round are the same calls: counted once, by whichever job ran first
    debates = groups(before, "mad", "truemad", "chair")
    got = [computed(stats, f"scripted/{m}/") for m in ("mad", "truemad", "chair", "chair-none")]
    # chair-none: no debate round, the drafts go straight to the chair, one call per question
    assert [(g.stage, g.to_compute) for g in groups(before, "chair-none")] == [("chair-none round 0 chair", 4)]
    assert sum(g.to_compute for g in debates) == sum(c for c, _ in got)
    assert sum(t for _, t in got) <= sum(g.generated for g in debates)
    (battery,) = groups(before, "judge validation")
    assert battery.to_compute == computed(stats, "judge_validation/")[0]
    (judge,) = [g for g in before.groups if g.stage == "judge"]
    assert judge.bound and computed(stats, "scripted/judge")[0] <= judge.to_compute
    total = sum(s["misses"] for s in stats.values())
    assert total <= sum(g.to_compute for g in before.groups)
    manifest = json.loads((workdir / "results" / "manifest.json").read_text())
    assert manifest["models"]["scripted"]["computed_completion_tokens"] <= sum(g.generated for g in before.groups)

    after = planned(workdir)
    assert [g.stage for g in after.groups] == [g.stage for g in before.groups]
    assert all(g.to_compute == 0 and g.cached == g.calls for g in after.groups)


def test_early_stopping_methods_stay_within_their_bounds(workdir):
    config = make_config(workdir, n=2, methods=["sc", "consensus", "dmad", "lmad", "lmad-always"],
                         debate={"rounds": 2}, lmad={"iterations": 2})
    config["datasets"] = {d: config["datasets"][d] for d in ("hotpotqa", "musique")}
    write_config(workdir, config)
    before = planned(workdir)
    snakemake(workdir)
    stats = job_stats(workdir)
    for prefix, stages in (("scripted/consensus/", ("consensus",)), ("scripted/dmad/", ("dmad",)),
                           ("scripted/lmad/", ("lmad",))):
        bound = groups(before, *stages)
        got_calls, got_tokens = computed(stats, prefix)
        assert all(g.bound for g in bound if " round 0 " not in g.stage), prefix
        assert got_calls <= sum(g.to_compute for g in bound), prefix
        assert got_tokens <= sum(g.generated for g in bound), prefix
    total = sum(s["misses"] for s in stats.values())
    assert total <= sum(g.to_compute for g in before.groups)
    assert sum(s["computed_completion_tokens"] for s in stats.values()) <= sum(g.generated for g in before.groups)
    assert all(g.to_compute == 0 for g in planned(workdir).groups)


def test_one_dataset_one_question_and_the_command(workdir, capsys):
    """Edge: one dataset, n = 1, CoT absent (no CoT generation); the command prints the table."""
    config = make_config(workdir, n=1, methods=["sc", "mad"], debate={"rounds": 1})
    config["datasets"] = {"strategyqa": config["datasets"]["strategyqa"]}
    write_config(workdir, config)
    fc = planned(workdir)
    assert not groups(fc, "generate cot")
    assert [(g.stage, g.calls) for g in groups(fc, "generate", "mad")] == [("generate proposals", 3),
                                                                         ("mad round 1 revise", 3)]
    import os

    os.environ["LMAD_ALLOW_TEST_DOUBLE"] = "1"
    try:
        assert main(["--configfile", str(workdir / "config.yaml"), "--tokens-per-s", "scripted=10",
                     "--workdir", str(workdir)]) == 0
    finally:
        del os.environ["LMAD_ALLOW_TEST_DOUBLE"]
    out = capsys.readouterr().out
    assert "| scripted |" in out and "tok/s, --tokens-per-s" in out and "strategyqa 1" in out


@given(agents=st.integers(2, 4), rounds=st.integers(0, 3), iterations=st.integers(1, 3), n=st.integers(1, 3),
       last=st.booleans())
def test_call_counts_follow_the_plans_rounds_and_iterations(tmp_path_factory, agents, rounds, iterations, n, last):
    """Per question: MAD K·R revisions after the shared proposals, TrueMAD K(K−1)+K per round, dMAD
    3 per round (R+1 rounds) plus its moderator, one LMAD policy K·(L−1) generations and, per
    iteration with the guard's stages, K extractions, a localization, K·R' debate turns, a
    resolution and a relation check (R' = lmad.local_rounds)."""
    workdir = tmp_path_factory.mktemp("plan")
    temps = [0.1, 0.5, 0.9, 0.3][:agents]
    config = make_config(workdir, n=n, methods=["sc", "mad", "truemad", "dmad", "lmad"], debate={"rounds": rounds},
                         agents={"temperatures": temps},
                         lmad={"iterations": iterations, "local_rounds": 2, "guard_last_iteration": last})
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    write_config(workdir, config)
    fc = planned(workdir)

    def per_q(*starts):
        return sum(g.calls for g in groups(fc, *starts)) / n

    assert per_q("generate proposals") == agents
    assert per_q("mad") == agents * rounds
    assert per_q("truemad") == (agents * (agents - 1) + agents) * rounds
    assert per_q("dmad") == 3 * (rounds + 1) + 1
    aux = iterations if last else iterations - 1
    assert per_q("lmad") == agents * (iterations - 1) + aux * (agents + 1 + 2 * agents + 1 + 1)
