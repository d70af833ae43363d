"""LMAD with a selected society (``lmad+ac-greedy``; docs/methods.md "Coverage-selected societies"): agent i
is member i in the solver and debater calls (temperature, persona, variant, weights), iteration 0
is the members' own pool calls (cache hits), the model roles that are not agents stay on the
unperturbed model, a plain LMAD unit in the same job is untouched; the society file is an input of
the LMAD stages only when such a method is configured; its config errors."""
import pathlib
import re
from collections import defaultdict
from string import Template

import pytest

from conftest import make_config, snakemake, write_config
from lmad import societies as so
from lmad.config_checks import check_lmad_society, check_method_names
from lmad.schemas import read_table, read_units, write_table
from lmad.solver import derive_seed
from lmad.stages import generate as generate_stage
from lmad.stages import localized_debate as stages
from lmad.studies.disagreement import stages as layers
from lmad.stages import societies as society_stage

REPO = pathlib.Path(__file__).resolve().parents[1]
PROMPTS = REPO / "config" / "prompts"
SPEC = {"name": "scripted", "backend": "scripted", "model": "scripted"}
TEMPERATURES = [0.1, 0.5, 0.9]
PERTURB = {"seed": 1, "scale": 0.001}
POOL = {"temperatures": [0.1, 0.9], "personas": ["plain", "skeptic"], "variants": ["standard", "verify"],
        "perturbations": [PERTURB]}


def read(text: str) -> str:
    """A persona or variant as a multi-hop question reads it (the render fills its fields)."""
    return Template(text).safe_substitute(evidence="passages", quote_source="passage")


def question(i):
    titles = [f"Place{i}a", f"Place{i}b"]
    return {"qid": f"q{i}", "dataset": "hotpotqa", "benchmark": "hotpotqa", "answer_type": "span",
            "question": f"Which place is meant in question {i}?",
            "context": [{"title": t, "sentences": [f"{t} is a city."]} for t in titles], "answer": titles[0],
            "aliases": [], "qtype": "bridge", "supporting_facts": [], "source": "test"}


def system(req):
    return dict(req.messages).get("system", "")


def user(req):
    return dict(req.messages)["user"]


@pytest.fixture
def job(tmp_path, monkeypatch):
    """Questions, the shared proposals, the pool and a top-K society file of three members: the
    skeptic/verify agent at 0.9, the perturbed agent at 0.9 and the plain agent at 0.1; the LMAD
    stages' backends record every batch by model identity."""
    cache = str(tmp_path / "cache")
    qpath = str(tmp_path / "questions.parquet")
    write_table("questions", [question(i) for i in range(6)], qpath)
    proposals = str(tmp_path / "proposals.parquet")
    generate_stage.generate(questions=[qpath], prompt=str(PROMPTS / "solver.txt"), samples=[proposals], model=SPEC,
                            cache_dir=cache, stage="proposals", temperatures=TEMPERATURES, max_tokens=64, seed=0,
                            provenance={})
    pool, split = str(tmp_path / "pool.parquet"), str(tmp_path / "split.parquet")
    society_stage.society_split(questions=[qpath], split=split, seed=0, size=3, provenance={})
    society_stage.society_pool(questions=[qpath], split=split, pool=pool, model=SPEC, cache_dir=cache,
                               prompt=str(PROMPTS / "solver.txt"), max_tokens=64, seed=0, provenance={}, **POOL)
    agents = {a.name: a for a in so.pool_agents(POOL["temperatures"], POOL["personas"], POOL["variants"],
                                               POOL["perturbations"])}
    picked = [agents["t0.9-skeptic-verify"], agents["t0.9-plain-standard-w1x0.001"], agents["t0.1-plain-standard"]]
    members = str(tmp_path / "members.parquet")
    write_table("society_members", [
        {"selector": "top_k", "rank": r, "agent": a.index, "agent_name": a.name, "temperature": a.temperature,
         "persona": a.persona, "variant": a.variant, "perturb_seed": a.perturb_seed,
         "perturb_scale": a.perturb_scale if a.perturb_seed is not None else None, "marginal": None,
         "selection_accuracy": 0.0, "selection_support": 0.0} for r, a in enumerate(picked)], members)

    sent = defaultdict(list)  # model identity -> its batches (lists of requests)
    real = stages.open_backend

    def opener(spec, cache_dir):
        backend = real(spec, cache_dir)
        generate = backend.generate

        def recorded(requests):
            sent[backend.model_id].append(list(requests))
            return generate(requests)

        backend.generate = recorded
        return backend

    monkeypatch.setattr(stages, "open_backend", opener)
    monkeypatch.setattr(layers, "open_backend", opener)

    class Job:
        pass

    j = Job()
    j.dir, j.cache, j.questions, j.proposals, j.pool, j.members, j.picked, j.sent = (
        tmp_path, cache, qpath, proposals, pool, members, picked, sent)
    return j


def run_iteration(j, methods, k, rounds=1):
    units = [["hotpotqa", m] for m in methods]
    # a unit's generations; any other stage table: the iteration's one file of every unit
    p = lambda stage: ([str(j.dir / m / f"iter{k}" / f"{stage}.parquet") for m in methods]  # noqa: E731
                       if stage == "generate" else str(j.dir / "lmad" / f"iter{k}" / f"{stage}.parquet"))
    common = {"model": SPEC, "cache_dir": j.cache, "provenance": {}, "units": units, "questions": [j.questions] * len(
        methods)}
    state = {"state": str(j.dir / "lmad" / f"iter{k - 1}" / "state.parquet")} if k else {}
    plain = [m for m in methods if "+" not in m]  # the shared proposals: units without a society only
    source = {"proposals": [j.proposals] * len(plain)} if k == 0 else state
    stages.generate(prompt=str(PROMPTS / "solver.txt"), samples=p("generate"), iteration=k, temperatures=TEMPERATURES,
                    max_tokens=64, seed=0, members=j.members, **source, **common)
    stages.extract(samples=p("generate"), prompt=str(PROMPTS / "extractor.txt"), chains=p("extract"), iteration=k,
                   max_tokens=256, max_nodes=12, max_node_words=40, iterations=3, guard_last_iteration=True, **common)
    stages.localize(chains=p("extract"), prompt=str(PROMPTS / "localizer.txt"), localizations=p("localize"),
                    iteration=k, max_tokens=128, **state, **common)
    stages.debate(localizations=p("localize"), prompt=str(PROMPTS / "debater.txt"), positions=p("debate"),
                  iteration=k, rounds=rounds, temperatures=TEMPERATURES, seed=0, max_tokens=128, members=j.members,
                  **state, **common)
    stages.resolve(localizations=p("localize"), positions=p("debate"), prompt=str(PROMPTS / "resolver.txt"),
                   repairs=p("resolve"), relation_prompt=str(PROMPTS / "relation_check.txt"), relations=p("relation"),
                   iteration=k, max_tokens=192, **state, **common)
    stages.commit(questions=common["questions"], samples=p("generate"), repairs=p("resolve"), relations=p("relation"),
                  commits=p("commit"), next_state=p("state"), units=units, iteration=k, iterations=3,
                  min_quote_words=3, relation="model", provenance={}, **state)
    return lambda name, method, stage: (read_table(name, p(stage)[methods.index(method)]).to_dicts()
                                        if stage == "generate" else read_units(name, p(stage), [("hotpotqa", method)])[0])


def test_society_lmad_agents_are_the_members_and_iteration0_is_their_pool_calls(job):
    methods = ["lmad", "lmad+top-k"]
    t0 = run_iteration(job, methods, 0)
    # the plain unit in the same job: exactly the shared proposals, as without a society
    assert t0("samples", "lmad", "generate") == read_table("samples", job.proposals).to_dicts()
    # the society unit: agent i is member i, its opening is its pool call (pool prompt and seed), a cache hit
    pool = {(r["qid"], r["agent_name"]): r for r in read_table("society_pool", job.pool).to_dicts()}
    rows = t0("samples", "lmad+top-k", "generate")
    assert len(rows) == 6 * 3 and all(r["cached"] for r in rows)
    for r in rows:
        member = job.picked[r["agent"]]
        mine = pool[(r["qid"], member.name)]
        assert (r["temperature"], r["seed"], r["response"]) == (member.temperature, mine["seed"], mine["response"])
        assert r["seed"] == derive_seed(0, r["qid"], "society", member.name)
    base, bent = "scripted@test-double|scripted", "scripted@test-double+perturb=seed1:scale0.001|scripted"
    assert set(job.sent) == {base, bent}
    # one batch per set of weights: the perturbed member's 6 openings alone on its weights
    assert [len(b) for b in job.sent[bent]][:1] == [6] and {r.temperature for r in job.sent[bent][0]} == {0.9}
    assert len(job.sent[base][0]) == 12

    # the local debate: each member debates at its temperature, under its persona, on its weights
    debated = t0("lmad_positions", "lmad+top-k", "debate")
    assert debated, "the test double should make the society disagree on some question"
    for r in debated:
        assert r["temperature"] == job.picked[r["agent"]].temperature
    debater = [q for b in job.sent[base] + job.sent[bent] for q in b if "in a short, focused debate" in system(q)]
    society_turns = [q for q in debater if system(q).startswith(read(so.PERSONAS["skeptic"]))]
    assert society_turns and all(q.temperature == 0.9 and "You are agent 1." in user(q) for q in society_turns)
    bent_turns = [q for b in job.sent[bent] for q in b]
    assert all("in a short, focused debate" in system(q) or "answers multi-hop" in system(q) for q in bent_turns)
    assert {re.search(r"You are agent (\d+)\.", user(q)).group(1) for q in bent_turns
            if "focused debate" in system(q)} == {"2"}
    # the roles that are no agent (extractor, localizer, resolver, relation check) use the model's own weights
    roles = {"rewrite a worked solution", "compare several agents", "settle a disputed reasoning step"}
    assert not any(m in system(q) for b in job.sent[bent] for q in b for m in roles)
    assert all(any(m in system(q) for q in sum(job.sent[base], [])) for m in roles)

    # iteration 1: the society unit's active questions regenerate at the members' temperatures and prompts
    job.sent.clear()
    t1 = run_iteration(job, methods, 1, rounds=0)
    regen = t1("samples", "lmad+top-k", "generate")
    active = {s["qid"] for s in t0("lmad_state", "lmad+top-k", "state") if s["active"]}
    assert {r["qid"] for r in regen} == active
    for r in regen:
        assert r["temperature"] == job.picked[r["agent"]].temperature
        assert r["seed"] == derive_seed(0, r["qid"], r["agent"], "lmad-iter1")
    solver = [q for b in job.sent[base] for q in b if q.temperature == 0.9 and system(q) == read(so.PERSONAS["skeptic"])]
    assert len(solver) == len(active) and all(read(so.VARIANTS["verify"]) in user(q) for q in solver)
    if active:
        assert {q.temperature for b in job.sent[bent] for q in b} == {0.9}


def test_layer_a_asks_a_society_members_turn_in_its_own_conversation_on_its_weights(job):
    """lmad_self_report rebuilds each local-debate turn of a society method under its member's
    persona (the request the debate sent) and asks it on the member's weights."""
    run_iteration(job, ["lmad", "lmad+top-k"], 0)
    sent = {id(q): (model_id, q) for model_id, batches in job.sent.items() for b in batches for q in b}
    debater = {(q.seed, q.messages): model_id for model_id, q in sent.values() if "focused debate" in system(q)}
    job.sent.clear()
    paths = lambda stage: [str(job.dir / "lmad" / "iter0" / f"{stage}.parquet")]  # noqa: E731
    reports = str(job.dir / "reports.parquet")
    layers.lmad_self_report(questions=[job.questions], localizations=paths("localize"), positions=paths("debate"),
                            prompt=str(PROMPTS / "debater.txt"), prompt_self_report=str(PROMPTS / "self_report.txt"),
                            reports=reports, model=SPEC, cache_dir=job.cache, max_tokens=128, seed=0, provenance={},
                            members=job.members)
    asked = [(model_id, q) for model_id, batches in job.sent.items() for b in batches for q in b]
    rows = read_table("lmad_self_reports", reports).to_dicts()
    assert len(asked) == len(rows) > 0 and {r["method"] for r in rows} == {"lmad", "lmad+top-k"}
    for model_id, q in asked:
        turn = q.messages[:-2]  # the turn's conversation, then the debater's reply and the question
        # the turn's own request (its persona, its seed among the local debate's) and the weights it ran on
        assert any(messages == turn and debater_model == model_id
                   for (_, messages), debater_model in debater.items()), system(q)[:80]
    assert any(system(q).startswith(read(so.PERSONAS["skeptic"])) for _, q in asked)
    assert {m for m, _ in asked} == {"scripted@test-double|scripted", "scripted@test-double+perturb=seed1:scale0.001|scripted"}


def test_without_a_society_unit_the_stages_need_no_society_file(job):
    """The plain unit alone: no society file is read and nothing runs on perturbed weights."""
    job.members = None
    run_iteration(job, ["lmad"], 0)
    assert set(job.sent) == {"scripted@test-double|scripted"}
    with pytest.raises(ValueError, match="no society file"):
        run_iteration(job, ["lmad+top-k"], 0)


# ----------------------------------------------------------------------------- config

def config_with(methods, societies=None):
    return {"methods": methods, "agents": {"temperatures": [0.1, 0.5, 0.9]},
            "societies": societies if societies is not None else {"enabled": True, "k": 3, "pool": {
                "temperatures": [0.1, 0.5, 0.9], "personas": ["plain", "skeptic"], "variants": ["standard"]}}}


def test_lmad_society_config():
    for name in ("lmad+ac-greedy", "lmad-concrete+sc-greedy", "lmad-always+top-k"):
        check_method_names(config_with([name]))
        assert check_lmad_society(name, config_with([name])) == 3
    assert check_lmad_society("lmad+default", config_with(["lmad+default"])) == 3  # plain agents at the temperatures


@pytest.mark.parametrize("methods, societies, key, message", [
    (["lmad+ac-greedy"], {"enabled": False}, "methods", "societies.enabled is false"),
    (["lmad+best"], None, "methods", "unknown society 'best'"),
    (["lmad@hostile+top-k"], None, "methods", "or an LMAD policy"),
    (["lmad+sc-greedy"], {"enabled": True, "k": 1, "pool": {"temperatures": [0.1, 0.5], "personas": ["plain"],
                                                            "variants": ["standard"]}}, "societies.k", "1 member"),
])
def test_lmad_society_config_errors_name_their_key(methods, societies, key, message):
    config = config_with(methods, societies)
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        check_method_names(config)
        check_lmad_society(methods[0], config)
    assert f"config {key}" in str(err.value)


# ----------------------------------------------------------------------------- workflow (planning only)

SOCIETIES = {"enabled": True, "k": 2, "split": {"size": 1, "construct_on": {"2wikimultihopqa": "hotpotqa", "musique": "hotpotqa",
                                                 "strategyqa": "hotpotqa"}},
             "pool": {"temperatures": [0.1, 0.9], "personas": ["plain", "skeptic"],
                                               "variants": ["standard"], "perturbations": []}}


def planned_inputs(plan: str, rule: str) -> list[str]:
    return [m.group(1) for m in re.finditer(rf"rule {rule}:\n    input: ([^\n]+)", plan)]


def test_workflow_the_society_file_is_an_lmad_input_only_with_a_society_method(workdir):
    config = make_config(workdir, n=1, methods=("sc", "lmad"), societies=SOCIETIES, lmad={"iterations": 2})
    config["datasets"]["hotpotqa"]["n"] = 2  # 1 construction + 1 held-out question; the others transfer
    write_config(workdir, config)
    plain = snakemake(workdir, "--dry-run").stdout
    for rule in ("lmad_generate", "lmad_debate"):
        assert planned_inputs(plain, rule) and not any("members.parquet" in i for i in planned_inputs(plain, rule))
    write_config(workdir, config | {"methods": ["sc", "lmad", "lmad+ac-greedy"]})
    plan = snakemake(workdir, "--dry-run").stdout
    for rule in ("lmad_generate", "lmad_debate"):
        inputs = planned_inputs(plan, rule)
        assert len(inputs) == 2 and all("results/scripted/societies/members.parquet" in i for i in inputs)
    assert not any("members.parquet" in i for i in planned_inputs(plan, "lmad_extract"))
    assert "lmad+ac-greedy/iter1/generate.parquet" in plan and "predictions/lmad+ac-greedy.parquet" in plan
    # society LMAD alone: its stages never read the shared proposals (its iteration 0 is the pool's calls)
    write_config(workdir, config | {"methods": ["cot", "lmad+ac-greedy"]})
    alone = planned_inputs(snakemake(workdir, "--dry-run").stdout, "lmad_generate")
    assert len(alone) == 2 and not any("proposals.parquet" in i for i in alone)
    # layer A rebuilds the members' local turns: the society file is its input too (only then)
    write_config(workdir, config | {"disagreement": {"self_report": True}})
    assert not any("members.parquet" in i for i in planned_inputs(snakemake(workdir, "--dry-run").stdout,
                                                                  "lmad_self_report"))
    write_config(workdir, config | {"methods": ["sc", "lmad", "lmad+ac-greedy"], "disagreement": {"self_report": True}})
    inputs = planned_inputs(snakemake(workdir, "--dry-run").stdout, "lmad_self_report")
    assert len(inputs) == 1 and "results/scripted/societies/members.parquet" in inputs[0]


def test_workflow_lmad_with_a_society_runs_to_the_paper(workdir):
    config = make_config(workdir, n=1, methods=("sc", "lmad", "lmad+ac-greedy"), societies=SOCIETIES,
                         lmad={"iterations": 2, "local_rounds": 1})
    config["datasets"]["hotpotqa"]["n"] = 2  # 1 construction + 1 held-out question; the others transfer
    write_config(workdir, config)
    snakemake(workdir)
    root = workdir / "results" / "scripted"
    import polars as pl

    members = read_table("society_members", root / "societies" / "members.parquet")
    pool = read_table("society_pool", root / "societies" / "pool.parquet")
    ac = members.filter((pl.col("selector") == "ac_greedy") & (pl.col("dataset") == "hotpotqa")).sort("rank")
    for d in config["datasets"]:
        g0 = read_table("samples", root / d / "lmad+ac-greedy" / "iter0" / "generate.parquet").sort("qid", "agent")
        # agent i is member i; its iteration 0 is its pool answer (same prompt and seed: a cache hit)
        assert g0["temperature"].to_list() == ac["temperature"].to_list() * g0["qid"].n_unique()
        mine = pool.filter(pl.col("dataset") == d).join(ac.select("agent", "rank"), on="agent")
        assert g0.select("qid", "agent", "response").rows() == mine.sort("qid", "rank").select(
            "qid", "rank", "response").rows()
        assert g0["cached"].all()
        preds = read_table("predictions", root / d / "predictions" / "lmad+ac-greedy.parquet")
        assert set(preds["method"]) == {"lmad+ac-greedy"}
    debates = pl.read_csv(workdir / "results" / "paper" / "society_debates.csv")
    assert set(debates["method"]) == {"lmad", "lmad+ac-greedy"}
    table = (root / "analysis" / "table.md").read_text()
    assert "| lmad+ac-greedy |" in table and "Held out: every method is scored on the evaluation split" in table
