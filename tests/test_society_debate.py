"""Debating methods with a selected society (docs/methods.md "Coverage-selected societies"): a method
``mad+ac-greedy`` runs with the society file's members — each agent at its member's temperature,
persona and prompt variant, on the backend of its member's weights, one batch per set of weights —
its config errors, and (workflow) the society file as an input of every round."""
import hashlib
import re
from string import Template

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import DATASETS, REPO, make_config, snakemake, write_config
from lmad import societies as so
from lmad.backends.scripted import ScriptedBackend
from lmad.config_checks import check_method_names
from lmad.prompts import load_prompt
from lmad.protocols.debate import protocol, run_round, setting_of
from lmad.protocols.debate.engine import Member
from lmad.registry import METHODS, method
from lmad.schemas import read_table, write_table
from lmad.solver import derive_seed, solver_request

PROMPTS = {p.stem: load_prompt(p) for p in (REPO / "config" / "prompts").glob("*.txt")}
AUX = {"advice": 32, "judge": 32, "moderator": 32}
CONTEXT = [{"title": "Alpha", "sentences": ["Alpha is a city."]}, {"title": "Beta", "sentences": ["Beta is a town."]}]
QUESTIONS = [{"qid": f"q{i}", "dataset": "hotpotqa", "benchmark": "hotpotqa", "answer_type": "span",
              "question": f"Which place is meant in question {i}?", "context": CONTEXT} for i in range(3)]
SEED = 7


def read(text: str) -> str:
    """A persona or variant as a multi-hop question reads it (the render fills its fields)."""
    return Template(text).safe_substitute(evidence="passages", quote_source="passage")



class Recorder(ScriptedBackend):
    """A scripted backend that records each ``generate`` batch; its answers name the backend, so
    a response tells which weights produced it."""

    def __init__(self, name="base", perturb=None):
        super().__init__(perturb=perturb)
        self.label, self.batches = name, []

    def _default(self, req):
        pick = int(hashlib.sha256(repr((req.messages, req.seed, req.temperature)).encode()).hexdigest()[:6], 16)
        return f"By {self.label} #{pick}.\nAnswer: {['Alpha', 'Beta'][pick % 2]}"

    def generate(self, requests):
        self.batches.append(len(requests))
        return super().generate(requests)


def system(req):
    return req.messages[0][1] if req.messages[0][0] == "system" else ""


def user(req):
    return req.messages[-1][1]


def society(*specs, backends):
    """Members from (temperature, persona, variant, perturb seed or None) specs."""
    out = []
    for i, (t, persona, variant, w) in enumerate(specs):
        agent = so.PoolAgent(10 + i, t, persona, variant, w, 0.001 if w is not None else 0.0)
        out.append(Member(agent, backends[w]))
    return out


def rounds(name, members, base, n=2, **kw):
    """Rounds 0..n-1 of ``name`` with ``members``: the result of every round."""
    spec = method(name)
    prev, state, out = (), None, []
    for t in range(n):
        res = run_round(spec.protocol, name, t, t == n - 1, QUESTIONS, base, PROMPTS, [], ["cot"] * len(members), SEED,
                        64, AUX, previous=prev, previous_state=state, members=members, **kw)
        prev, state = res.samples, res.state
        out.append(res)
    return out


def test_each_agent_speaks_with_its_members_temperature_persona_variant_and_weights():
    base, bent = Recorder("base"), Recorder("bent", perturb={"seed": 1, "scale": 0.001})
    members = society((0.1, "plain", "standard", None), (0.9, "skeptic", "verify", None), (0.5, "plain", "standard", 1),
                      backends={None: base, 1: bent})
    r0, r1 = rounds("mad+ac-greedy", members, base)
    # round 0: exactly each member's pool call (prompt and seed), so it is what the member was selected on
    solver = PROMPTS["solver"]
    by_key = {(c.seed, c.temperature): c for c in base.calls + bent.calls}
    for q in QUESTIONS:
        for m in members:
            seed = derive_seed(SEED, q["qid"], "society", m.agent.name)
            want = solver_request(so.agent_prompt(solver, m.agent), q, m.agent.temperature, seed, 64)
            got = by_key[(seed, m.agent.temperature)]
            assert got.messages == want.messages
    assert {system(c) for c in base.calls[:6] if c.temperature == 0.9} == {read(so.PERSONAS["skeptic"])}
    # one batch per set of weights per step: round 0 and the revision round each 6 base + 3 perturbed calls
    assert base.batches == [6, 6] and bent.batches == [3, 3]
    assert {c.temperature for c in bent.calls} == {0.5} and {c.temperature for c in base.calls} == {0.1, 0.9}
    # answers of agent 2 come from the perturbed model, the others' from the base model
    for row in r0.samples + r1.samples:
        assert row["response"].startswith("By bent" if row["agent"] == 2 else "By base")
        assert row["temperature"] == members[row["agent"]].agent.temperature
    # the revision: the persona before the turn's instructions, the variant after the answer line
    revise = [c for c in base.calls if "debate between agents" in system(c)]
    skeptic = [c for c in revise if c.temperature == 0.9]
    assert len(skeptic) == 3 and all(system(c).startswith(read(so.PERSONAS["skeptic"])) and "You are Agent 2" in system(c)
                                     and user(c).endswith(read(so.VARIANTS["verify"])) for c in skeptic)
    plain = [c for c in revise if c.temperature == 0.1]
    assert all(system(c).startswith("You are Agent 1") and read(so.VARIANTS["verify"]) not in user(c) for c in plain)
    assert r1.state and all(not s["active"] for s in r1.state)


def test_a_society_never_reuses_the_shared_proposals():
    base = Recorder()
    members = society((0.1, "plain", "standard", None), (0.5, "plain", "standard", None), backends={None: base})
    proposals = [{"qid": q["qid"], "agent": a, "temperature": t} for q in QUESTIONS for a, t in enumerate((0.1, 0.5))]
    with pytest.raises(ValueError, match="never the shared proposals"):
        run_round(protocol("mad"), "mad+top-k", 0, False, QUESTIONS, base, PROMPTS, [0.1, 0.5], [], SEED, 64, AUX,
                  proposals=proposals, members=members)


def test_dmad_with_a_society_debates_its_two_members_and_judges_on_the_base_model():
    base, bent = Recorder("base"), Recorder("bent", perturb={"seed": 1, "scale": 0.001})
    members = society((0.5, "plain", "standard", 1), (0.1, "bridge", "standard", None), backends={None: base, 1: bent})
    r0, = rounds("dmad+sc-greedy", members, base, n=1)
    judge = [s for s in r0.steps if s["step"] in ("judge", "moderator")]
    assert judge and all(s["response"].startswith("By base") for s in judge)
    assert not any(c.constraint for c in bent.calls) and sum(bool(c.constraint) for c in base.calls) == len(judge)
    assert all(c.temperature == 0.5 for c in bent.calls) and len(bent.calls) == len(QUESTIONS)
    assert all(system(c).startswith(so.PERSONAS["bridge"]) for c in base.calls if c.temperature == 0.1)


def test_the_round_job_opens_one_backend_per_distinct_perturbation(tmp_path):
    from lmad.stages.debate import society_members

    rows = [{"selector": "top_k", "rank": r, "agent": a, "temperature": t, "persona": "plain", "variant": "standard",
             "perturb_seed": w, "perturb_scale": 0.001 if w is not None else None}
            for r, (a, t, w) in enumerate([(7, 0.5, 1), (0, 0.1, None), (8, 0.9, 1), (9, 0.9, 2)])]
    path = tmp_path / "members.parquet"
    rows = [r | {"agent_name": so.members_of([r], "top_k")[0].name, "marginal": None, "selection_accuracy": 0.0,
                 "selection_support": 0.0} for r in rows]
    write_table("society_members", rows, path)
    model = {"backend": "scripted", "model": "scripted"}
    from lmad.backends import open_backend

    base = open_backend(model, tmp_path / "cache")
    members = society_members("top_k", str(path), None, model, str(tmp_path / "cache"), base)
    assert [m.agent.temperature for m in members] == [0.5, 0.1, 0.9, 0.9]
    assert members[1].backend is base and members[0].backend is members[2].backend is not base
    assert members[0].backend.model_id.endswith("+perturb=seed1:scale0.001|scripted")
    assert members[3].backend.model_id.endswith("+perturb=seed2:scale0.001|scripted")
    assert len(society_members("top_k", str(path), 2, model, str(tmp_path / "cache"), base)) == 2  # dMAD's two
    assert society_members(None, None, None, model, "", base) == []


def test_a_table_with_a_society_method_says_it_is_not_held_out():
    assert so.held_out_note(["sc", "mad", "mad@hostile"]) == ""
    assert so.held_out_note(["mad", "mad+top-k"], 50).startswith("\nHeld out: every method is scored on the evaluation")
    assert "the first 50 questions" in so.held_out_note(["mad", "mad+top-k"], 50)


@given(st.sampled_from(sorted(METHODS)), st.sampled_from(so.SELECTORS))
def test_society_names_round_trip(name, selector):
    spec = METHODS[name]
    if spec.family == "debate" and spec.tone == "neutral" and spec.society is None:
        full = so.with_society(name, selector)
        assert so.split_society(full) == (name, selector) and METHODS[full].society == selector
        assert METHODS[full].label != spec.label and METHODS[full].protocol == spec.protocol
    elif spec.family == "lmad" and spec.structure == "chain" and spec.tone == "neutral" and spec.society is None:
        # a chain LMAD policy too (graph LMAD takes no society)
        full = so.with_society(name, selector)
        assert METHODS[full].society == selector and METHODS[full].policy == spec.policy
    else:
        assert so.with_society(name, selector) not in METHODS


PERSONA = st.sampled_from(sorted(so.PERSONAS))
VARIANT = st.sampled_from(sorted(so.VARIANTS))
SPEC = st.tuples(st.sampled_from([0.1, 0.5, 0.9]), PERSONA, VARIANT, st.sampled_from([None, 1, 2]))


@given(st.lists(SPEC, min_size=2, max_size=4), st.booleans())
def test_any_society_one_batch_per_weights_each_call_at_its_members_temperature(specs, identical):
    """Every member identical (one pool agent, K times) or any mix: each step sends one batch per
    distinct set of weights, and every call of agent i is at member i's temperature, on its weights."""
    specs = [specs[0]] * len(specs) if identical else specs
    backends = {w: Recorder(str(w), perturb=None if w is None else {"seed": w, "scale": 0.001}) for w in (None, 1, 2)}
    members = society(*specs, backends=backends)
    r0, r1 = rounds("truemad+default", members, backends[None])
    used = {s[3] for s in specs}
    steps = {0: 1, 1: 2}  # round 0: solve; TrueMAD's exchange: advice, then revision
    for w, b in backends.items():
        assert len(b.batches) == (sum(steps.values()) if w in used else 0)
    for row in r0.samples + r1.samples + [s for s in r1.steps if s["agent"] >= 0]:
        spec = specs[row["agent"]]
        assert row["temperature"] == spec[0]
        assert row["response"].startswith(f"By {spec[3]} ")
    if identical:  # identical members still debate as K agents: K answers per question and round
        assert len(r1.samples) == len(specs) * len(QUESTIONS)


# ----------------------------------------------------------------------------- config


def config_with(methods, societies=None, **extra):
    config = {"methods": methods, "agents": {"temperatures": [0.1, 0.5, 0.9]}, "debate": {"rounds": 2},
              "societies": societies if societies is not None else {
                  "enabled": True, "k": 3, "pool": {"temperatures": [0.1, 0.5, 0.9], "personas": ["plain", "skeptic"],
                                                    "variants": ["standard"], "perturbations": []}}}
    return config | extra


def test_society_setting_comes_from_the_society_and_the_base_methods_rounds():
    config = config_with(["mad+ac-greedy", "dmad+top-k", "dmad-manners+default"])
    config["debate"]["methods"] = {"mad": {"rounds": 1, "temperatures": [0.2, 0.3]}}
    mad = setting_of("mad+ac-greedy", config)
    assert (mad.society, mad.members, mad.rounds, mad.temperatures, mad.shares_proposals) == ("ac_greedy", 3, 1, (),
                                                                                            False)
    assert setting_of("dmad+top-k", config).members == 2  # dMAD: the first two of the society
    manners = setting_of("dmad-manners+default", config)
    assert manners.members == 3 and manners.manners == ("io", "cot", "stepback")


@pytest.mark.parametrize("methods, societies, key, message", [
    (["mad+ac-greedy"], {"enabled": False}, "methods", "societies.enabled is false"),
    (["mad+best"], None, "methods", "unknown society 'best'"),
    (["cot+ac-greedy"], None, "methods", "only a debating method"),
    (["lmad@hostile+top-k"], None, "methods", "only a debating method"),
    (["mad+sc-greedy"], {"enabled": True, "k": 1, "pool": {"temperatures": [0.1, 0.5], "personas": ["plain"],
                                                           "variants": ["standard"]}}, "societies.k", "1 member"),
    (["consensus+default"], {"enabled": True, "pool": {"temperatures": [0.1], "personas": ["plain"],
                                                       "variants": ["standard"]}}, "agents.temperatures", "1 member"),
])
def test_config_errors_name_their_key(methods, societies, key, message):
    config = config_with(methods, societies)
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        check_method_names(config)
        for name in methods:
            setting_of(name, config)
    assert f"config {key}" in str(err.value)


# ----------------------------------------------------------------------------- workflow

SOCIETIES = {"enabled": True, "k": 2, "split": {"size": 1, "construct_on": {"2wikimultihopqa": "hotpotqa", "musique": "hotpotqa",
                                                 "strategyqa": "hotpotqa"}},
             "pool": {"temperatures": [0.1, 0.9], "personas": ["plain", "skeptic"],
                                               "variants": ["standard", "verify"],
                                               "perturbations": [{"seed": 1, "scale": 0.001}]}}


def test_workflow_a_society_method_debates_the_selected_members_and_reruns_on_reselection(workdir):
    config = make_config(workdir, n=1, methods=("sc", "mad", "mad+ac-greedy", "dmad+default"), societies=SOCIETIES,
                         debate={"rounds": 1})
    config["datasets"]["hotpotqa"]["n"] = 2  # 1 construction + 1 held-out question; the others transfer
    # a society method while societies are off fails at plan time, naming the key
    write_config(workdir, config | {"societies": {"enabled": False}})
    failed = snakemake(workdir, "--dry-run", check=False)
    assert failed.returncode != 0 and "societies.enabled is false" in failed.stdout + failed.stderr
    write_config(workdir, config)
    targets = [f"results/scripted/{d}/predictions/{m}.parquet" for d in DATASETS for m in ("mad", "mad+ac-greedy",
                                                                                            "dmad+default")]
    snakemake(workdir, *targets, "results/paper/society_debates.csv", "results/scripted/analysis/table.md")
    root = workdir / "results" / "scripted"
    members = read_table("society_members", root / "societies" / "members.parquet")
    pool = read_table("society_pool", root / "societies" / "pool.parquet")
    ac = members.filter((pl.col("selector") == "ac_greedy") & (pl.col("dataset") == "hotpotqa")).sort("rank")
    assert set(members["constructed_on"]) == {"hotpotqa"}  # societies.split.construct_on
    for d in DATASETS:
        r0 = read_table("samples", root / d / "mad+ac-greedy" / "round0.parquet").sort("qid", "agent")
        # agent i is member i: its temperature, and its round-0 answer is its own pool answer (same prompt and seed)
        assert r0["temperature"].to_list() == ac["temperature"].to_list() * r0["qid"].n_unique()
        mine = pool.filter(pl.col("dataset") == d).join(ac.select("agent", "rank"), on="agent")
        assert r0.select("qid", "agent", "response").rows() == mine.sort("qid", "rank").select(
            "qid", "rank", "response").rows()
        plain = read_table("samples", root / d / "mad" / "round0.parquet")
        assert plain["temperature"].to_list()[:3] == [0.1, 0.5, 0.9]  # the plain method keeps the default agents
        preds = read_table("predictions", root / d / "predictions" / "mad+ac-greedy.parquet")
        assert set(preds["method"]) == {"mad+ac-greedy"} and preds["calls"].min() == 4  # 2 agents x 2 rounds
    assert "society" not in read_table("samples", root / DATASETS[0] / "mad" / "round1.parquet").columns
    # honest evaluation: each society method (and its plain method) on the held-out split apart from the selection split
    debates = pl.read_csv(workdir / "results" / "paper" / "society_debates.csv")
    assert set(debates["method"]) == {"mad", "mad+ac-greedy", "dmad+default"}
    split = dict(pool.unique(["dataset", "qid"]).group_by("split").len().rows())
    assert dict(debates.filter(pl.col("method") == "mad+ac-greedy").select("split", "n").rows()) == split
    md = (workdir / "results" / "paper" / "societies.md").read_text()
    assert "MAD (AC-Greedy society)" in md and "Construction split (not held out)" in md
    table = (workdir / "results" / "scripted" / "analysis" / "table.md").read_text()
    assert "| mad+ac-greedy |" in table and "Held out: every method is scored on the evaluation split" in table
    assert "the first 1 questions of each benchmark's seeded ranking" in table
    # the analysis cells: HotpotQA's construction question is in no method's cell, plain or society
    built_on = set(pool.filter(pl.col("split") == "construction")["qid"])
    assert len(built_on) == 1 and set(pool.filter(pl.col("dataset") == "hotpotqa")["qid"]) > built_on
    acc = pl.read_parquet(root / "analysis" / "accuracy.parquet")
    assert set(acc.filter(pl.col("dataset") == "hotpotqa")["n"]) == {1}
    assert set(acc.filter(pl.col("dataset") != "hotpotqa")["n"]) == {1}  # transfer targets: every question held out

    # a re-selection (here: AC-Greedy's members in the other order; Snakemake compares the file's
    # content, so a touch alone is not one) reruns every round of the society methods, nothing of plain MAD
    rows = members.to_dicts()
    for r in rows:
        r["rank"] = (1 - r["rank"]) if r["selector"] == "ac_greedy" else r["rank"]
    write_table("society_members", rows, root / "societies" / "members.parquet")
    plan = snakemake(workdir, "--dry-run", *targets).stdout
    rounds = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", plan):
        wildcards = re.search(r"wildcards: ([^\n]+)", block)
        if block.startswith("rule debate_round:") and wildcards:
            rounds.append(dict(kv.split("=", 1) for kv in wildcards.group(1).split(", ")))
    assert sorted((r["debate_method"], r["debate_round"]) for r in rounds) == [
        ("dmad+default", "0"), ("dmad+default", "1"), ("mad+ac-greedy", "0"), ("mad+ac-greedy", "1")]
    assert "rule society_pool:" not in plan
