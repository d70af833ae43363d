"""Committees (lmad.committees): agents on different models in every debate method, LMAD
included, the chair with its timing modes, costs split by model, and a mixed run's cache shared
with the single models' (docs/methods.md "Committees and the chair")."""
import copy
import os
from collections import Counter

import polars as pl
import pytest
from hypothesis import given, strategies as st
from snakemake.utils import validate

from conftest import REPO, make_config, snakemake, write_config
from lmad.backends.scripted import ScriptedBackend
from lmad.committees import call_model, committee_param, crew, role_spec
from lmad.config_checks import check_config
from lmad.config_schema import schema_file
from lmad.plan import Plan
from lmad.prompts import load_prompt
from lmad.protocols.debate import chair_rounds, protocol, run_round, setting_of
from lmad.protocols.debate.engine import Member
from lmad.schemas import read_table
from lmad.stages.costs import by_model
from test_plan import demo_config, wildcards

SCHEMA = schema_file()
ENV = {"PYTHONPATH": os.pathsep.join([str(REPO / "workflow"), str(REPO / "tests")])}
WORD = {"a": "alpha", "b": "beta", "c": "gamma"}
MODELS = {m: {"backend": "scripted", "model": m, "responder": f"committee_oracle:respond_{m}"} for m in "abc"}
COMMITTEES = {"duo": {"members": [{"model": "a"}, {"model": "b"}]},
              "trio": {"members": [{"model": "a"}, {"model": "b"}, {"model": "c"}],
                       "roles": {"extractor": "c", "chair": "b"}}}


def committee_config(workdir, backbones, methods, **extra):
    config = make_config(workdir, n=2, models=copy.deepcopy(MODELS), backbones=backbones, methods=methods,
                         committees=copy.deepcopy(COMMITTEES), debate={"rounds": 1}, lmad={"iterations": 1}, **extra)
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    write_config(workdir, config)
    return config


def said(df: pl.DataFrame) -> list[tuple[int, str]]:
    """(agent, the model whose word it answered) of every row."""
    back = {w: m for m, w in WORD.items()}
    return [(a, back[x]) for a, x in df.select("agent", "answer").rows()]


# ---------------------------------------------------------------------------- the workflow

def test_workflow_two_and_three_models_debate_chair_and_split_their_costs(workdir):
    committee_config(workdir, ("duo", "trio"), ("cot", "sc", "mad", "truemad", "dmad", "lmad", "chair"),
                     chair={"timing": "after"})
    log = workdir / "calls.log"
    targets = [f"results/{b}/analysis/costs_by_model.md" for b in ("duo", "trio")]
    snakemake(workdir, *targets, env=ENV | {"COMMITTEE_CALL_LOG": str(log)})
    for b, k in (("duo", 2), ("trio", 3)):
        root = workdir / "results" / b / "hotpotqa"
        members = [m["model"] for m in COMMITTEES[b]["members"]]
        # every agent speaks on its member's model, in every round of MAD, TrueMAD and the chair
        for m in ("mad", "truemad", "chair"):
            for t in (0, 1):
                rows = said(read_table("samples", root / m / f"round{t}.parquet"))
                assert rows and all(model == members[a] for a, model in rows), (b, m, t)
        advice = read_table("debate_steps", root / "truemad" / "round1_steps.parquet")
        assert len(advice) == 2 * k * (k - 1) and all(
            WORD[members[a]] in text for a, text in advice.select("agent", "response").rows())
        # dMAD: the first two members are its sides
        assert {model for _, model in said(read_table("samples", root / "dmad" / "round0.parquet"))} == {"a", "b"}
        # round 0 of MAD is the committee's proposals, which are its members' solver calls
        proposals = read_table("samples", root / "samples" / "proposals.parquet")
        assert said(proposals) == said(read_table("samples", root / "mad" / "round0.parquet"))
        assert said(read_table("samples", root / "samples" / "cot.parquet")) == [(0, "a")] * 2  # the first member
        # LMAD: its agents are the members, iteration 0 the proposals
        trace = read_table("lmad_trace", root / "lmad" / "trace.parquet")
        assert trace["answers"].to_list() == [[WORD[m] for m in members]] * 2
        # the chair's synthesis is its model's (trio: roles.chair b; duo: the first member, a)
        chair = read_table("debate_steps", root / "chair" / "round1_steps.parquet").filter(pl.col("step") == "chair")
        want = "beta" if b == "trio" else "alpha"
        assert len(chair) == 2 and all(want in r for r in chair["response"])
        preds = read_table("predictions", workdir / "results" / b / "hotpotqa" / "predictions" / "chair.parquet")
        assert set(preds["prediction"]) == {want} and set(preds["stop_reason"]) == {"chair"}
        # costs by model add up to the predictions' totals, method by method
        costs = read_table("costs_by_model", workdir / "results" / b / "analysis" / "costs_by_model.parquet")
        for method in ("cot", "sc", "mad", "truemad", "dmad", "lmad", "chair"):
            p = read_table("predictions", workdir / "results" / b / "hotpotqa" / "predictions" / f"{method}.parquet")
            mine = costs.filter(pl.col("method") == method)
            for col in ("calls", "prompt_tokens", "completion_tokens"):
                assert mine[col].sum() == p[col].sum(), (b, method, col)
        assert set(costs.filter(pl.col("method") == "sc")["model"]) == set(members)
    # the roles: trio's extractor is c, every other role of no agent the first member a (trio's chair b)
    calls = Counter(tuple(line.split("\t")) for line in log.read_text().splitlines())
    assert {m for m, role in calls if role == "extractor"} == {"a", "c"}  # duo's extractor a, trio's c
    assert {m for m, role in calls if role == "chair"} == {"a", "b"}
    assert {m for m, role in calls if role in ("localizer", "resolver", "relation_check", "debate_judge")} == {"a"}
    md = (workdir / "results" / "trio" / "analysis" / "costs_by_model.md").read_text()
    assert "| Chair | b |" in md and "| LMAD | c |" in md


def test_workflow_a_mixed_run_shares_the_single_models_cache_where_the_request_is_the_same(workdir):
    committee_config(workdir, ("a", "b", "duo"), ("cot", "sc", "mad", "lmad"))
    singles = [f"results/{m}/hotpotqa/predictions/{x}.parquet" for m in "ab" for x in ("cot", "mad", "lmad")]
    snakemake(workdir, *singles, env=ENV)
    snakemake(workdir, "results/duo/analysis/costs_by_model.md", env=ENV)
    root = workdir / "results" / "duo" / "hotpotqa"
    # the proposals (member i = model i's agent i: same prompt, temperature and seed) and CoT are cache hits
    assert read_table("samples", root / "samples" / "proposals.parquet")["cached"].all()
    assert read_table("samples", root / "samples" / "cot.parquet")["cached"].all()
    # a revision sees the other model's answer: a new request
    assert not read_table("samples", root / "mad" / "round1.parquet")["cached"].any()


def test_workflow_config_errors_name_their_key(workdir):
    cases = [({"committees": {"a": {"members": [{"model": "b"}]}}}, "committees.a: the name is also a model"),
             ({"committees": {"duo": {"members": [{"model": "zz"}]}}}, "committees.duo.members[0].model"),
             ({"committees": {"duo": {"members": []}}}, "committees.duo.members"),
             ({"committees": {"duo": {"members": [{"model": "a"}], "roles": {"chair": "zz"}}}},
              "committees.duo.roles.chair")]
    for change, key in cases:
        config = committee_config(workdir, ("a", "duo") if "duo" in change["committees"] else ("a",), ("cot",))
        write_config(workdir, config | change)
        failed = snakemake(workdir, "--dry-run", check=False, env=ENV)
        assert failed.returncode != 0 and key in failed.stdout + failed.stderr, key


@pytest.mark.parametrize("methods, key", [
    (["mad+top-k"], "selected society"),
    (["sc-matched"], "'sc-matched' does not run on committee"),
    (["dmad"], r"committees.solo.members: 1 member\(s\); dMAD on a committee needs at least 2"),
    (["lmad"], "LMAD on a committee needs at least 2 members"),
])
def test_what_does_not_run_on_a_committee_fails_naming_its_key(methods, key):
    config = demo_config(methods=methods, models={"a": MODELS["a"]}, backbones=["solo"], judge={"model": "a"},
                         committees={"solo": {"members": [{"model": "a"}]}},
                         societies={"enabled": "+" in methods[0], "k": 2, "pool": {}})
    with pytest.raises(ValueError, match=key):
        check_config(config, allow_test_double=True)


# ---------------------------------------------------------------------------- the plan

def test_a_committee_job_needs_every_member_model():
    models = {"q": {"backend": "vllm", "model": "Q", "serve": False, "tensor_parallel_size": 2,
                    "resources": {"runtime": 30}},
              "s": {"backend": "transformers", "gguf": {"package": "p", "file": "f.gguf"}, "threads": 4},
              "s2": {"backend": "transformers", "gguf": {"package": "p", "file": "f.gguf"}, "threads": 2,
                     "perturb": {"seed": 1, "scale": 0.01}}}
    plan = Plan(demo_config(models=models, backbones=["s", "mix"], judge={"model": "s"}, methods=["mad"],
                            committees={"mix": {"members": [{"model": "s2", "temperature": 0.3}, {"model": "q"}]}}))
    assert plan.models.of("mix") == ["s2", "q"]
    # a perturbed copy of a GGUF model converts nothing twice
    assert plan.models.files("mix") == ["resources/models/s"] and plan.models.spec("s2")["model"] == "resources/models/s"
    assert plan.models.threads("mix") == 2 and plan.models.threads("s") == 4
    assert plan.models.sizing("mix") == {"gpu": 2, "mem_mb": 64000, "runtime": 30, "cpus_per_gpu": 8}
    spec = plan.models.spec("mix")
    assert spec["name"] == "s2" and spec["committee"]["roles"]["chair"] == "s2"
    assert [a.model for a in crew(spec)] == ["s2", "q"] and crew(plan.models.spec("s")) is None
    assert role_spec(spec, "resolver")["name"] == "s2" and role_spec(plan.models.spec("s"), "resolver")["name"] == "s"
    assert plan.models.agent_temperatures("mix") == [0.3, 0.5] and plan.models.agent_temperatures("s") == [0.1, 0.5, 0.9]
    mad = plan.debate.setting("mad", "mix")
    assert mad.temperatures == (0.3, 0.5) and mad.shares_proposals
    assert plan.debate.setting("mad", "s").temperatures == (0.1, 0.5, 0.9)
    inputs = plan.debate.round_inputs(wildcards(backbone="mix", debate_method="mad", debate_round="0"))
    assert inputs["proposals"] == ["results/mix/hotpotqa/samples/proposals.parquet"] + [
        f"results/mix/{d}/samples/proposals.parquet" for d in plan.datasets[1:]]
    assert plan.analysis.cost_models("mix") == {"members": ["s2", "q"], "roles": dict.fromkeys(
        ("extractor", "localizer", "resolver", "relation_check", "debate_judge", "chair"), "s2")}
    assert "results/mix/analysis/costs_by_model.md" in plan.all_outputs()


def test_the_chair_timing_sets_its_rounds():
    assert [chair_rounds({"chair": {"timing": t}}) for t in ("none", "after", "per_turn")] == [0, 1, 3]
    assert chair_rounds({"chair": {"timing": "per_turn", "rounds": 2}}) == 2
    config = demo_config(methods=["chair"], chair={"timing": "none"})
    assert setting_of("chair", config).rounds == 0 and setting_of("chair@hostile", config).rounds == 0
    for timing in ("none", "after", "per_turn"):  # chair-none: the no-debate synthesis beside any timing
        config = demo_config(methods=["chair", "chair-none"], chair={"timing": timing})
        assert setting_of("chair-none", config).rounds == 0 and setting_of("chair-none@hostile", config).rounds == 0


def test_the_mixed_config_validates():
    import yaml

    config = yaml.safe_load((REPO / "config" / "mixed.yaml").read_text())
    validate(config, schema=SCHEMA)
    assert set(config["committees"]["mix"]["members"][i]["model"] for i in range(3)) <= set(config["models"])


# ---------------------------------------------------------------------------- the chair, in-process

QUESTION = {"qid": "q1", "dataset": "hotpotqa", "benchmark": "hotpotqa", "question": "Which?", "context": [],
            "answer": "x", "aliases": [], "answer_type": "span", "choices": [], "choice_order": [], "survey": ""}


@pytest.mark.parametrize("timing", ["none", "after", "per_turn"])
def test_the_chair_synthesizes_after_its_timings_rounds_on_its_model(timing):
    from committee_oracle import respond_a, respond_b, respond_c

    backends = {m: ScriptedBackend(name=m, responder=r) for m, r in
                (("a", respond_a), ("b", respond_b), ("c", respond_c))}
    config = demo_config(methods=["chair"], chair={"timing": timing}, models=MODELS, backbones=["trio"],
                         committees=COMMITTEES)
    setting = setting_of("chair", config, "trio")
    model = committee_param(config, "trio", lambda m: {"name": m, **MODELS[m]})
    members = [Member(a, backends[a.model], society=False) for a in crew(model)]
    prompts = {r: load_prompt(REPO / "config" / "prompts" / f"{r}.txt") for r in ("solver", "debate_revise", "chair")}
    rounds, previous, state = setting.rounds, [], None
    assert rounds == {"none": 0, "after": 1, "per_turn": 3}[timing]
    for t in range(rounds + 1):
        result = run_round(protocol("chair"), "chair", t, t == rounds, [QUESTION], backends["b"], prompts,
                           setting.temperatures, setting.manners, 0, 32, {"chair": 32}, previous=previous,
                           previous_state=state, members=members)
        previous, state = result.samples, result.state
        assert said(pl.DataFrame(result.samples)) == [(0, "a"), (1, "b"), (2, "c")]
    chair = [s for s in result.steps if s["step"] == "chair"]
    assert len(chair) == 1 and chair[0]["agent"] == -1 and "Model b" in chair[0]["response"]
    assert state[0]["stop_reason"] == "chair" and state[0]["prediction"] == "beta" and state[0]["stop_round"] == rounds


# ---------------------------------------------------------------------------- costs by model

ROLE_NAMES = ["solver", "debater", "extractor", "localizer", "resolver", "relation", "judge", "moderator", "chair",
              "advise", "revise"]


@given(st.lists(st.tuples(st.sampled_from(ROLE_NAMES), st.integers(-1, 5), st.integers(0, 500), st.integers(0, 90)),
                max_size=40),
       st.lists(st.sampled_from("abc"), min_size=1, max_size=4))
def test_per_model_costs_add_up_to_the_totals(calls, members):
    roles = {"extractor": "c", "chair": "b"}
    rows = [(role, agent, {"prompt_tokens": p, "completion_tokens": c}) for role, agent, p, c in calls]
    split = by_model(rows, members, roles)
    assert sum(c["calls"] for c in split.values()) == len(rows)
    assert sum(c["prompt_tokens"] for c in split.values()) == sum(r[2]["prompt_tokens"] for r in rows)
    assert sum(c["completion_tokens"] for c in split.values()) == sum(r[2]["completion_tokens"] for r in rows)
    assert set(split) <= set(members) | set(roles.values())


def test_each_call_goes_to_its_agents_member_or_its_roles_model():
    members, roles = ["a", "b"], {"extractor": "c", "relation_check": "b", "debate_judge": "c"}
    assert call_model(members, roles, "solver", 1) == "b" and call_model(members, roles, "debater", 2) == "a"
    assert call_model(members, roles, "advise", 1) == "b"  # a debate step of agent 1: its author's model
    assert call_model(members, roles, "extractor", 1) == "c" and call_model(members, roles, "relation", -1) == "b"
    assert call_model(members, roles, "moderator", -1) == "c" and call_model(members, roles, "chair", -1) == "a"
