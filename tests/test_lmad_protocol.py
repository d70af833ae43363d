"""LMAD end to end through its stage functions (the bodies of rules/lmad.smk) on tmp_path
tables, with scripted agents: the paper's Appendix B traces and every stop reason."""
import pathlib

import json
import re

import pytest

from lmad.answers import majority_vote
from lmad.answers.span import normalize_answer
from lmad.backends import CachedBackend
from lmad.backends.scripted import ScriptedBackend
from lmad.schemas import read_table, read_units, write_table
from lmad.stages import generate as generate_stage
from lmad.stages import localized_debate as stages

REPO = pathlib.Path(__file__).resolve().parents[1]
PROMPTS = REPO / "config" / "prompts"
TEMPERATURES = [0.1, 0.5, 0.9]
SPEC = {"name": "scripted", "backend": "scripted", "model": "scripted"}
ROLE_MARKERS = {  # the system message of each role's template
    "extractor": "rewrite a worked solution",
    "localizer": "compare several agents",
    "debater": "in a short, focused debate",
    "resolver": "settle a disputed reasoning step",
    "relation": "stay on the question",
    "solver": "answers multi-hop questions",
}


def role_of(req) -> str:
    system = dict(req.messages).get("system", "")
    return next(role for role, marker in ROLE_MARKERS.items() if marker in system)


def agent_of(req) -> int:
    """Zero-based agent: solver calls by persona temperature, debater calls by their prompt."""
    if role_of(req) == "debater":
        return int(re.search(r"You are agent (\d+)\.", dict(req.messages)["user"]).group(1)) - 1
    return TEMPERATURES.index(req.temperature)


def user(req) -> str:
    return dict(req.messages)["user"]


def make_question(qid, question, answer, context, dataset="hotpotqa"):
    return {"qid": qid, "dataset": dataset, "benchmark": dataset, "question": question,
            "context": [{"title": t, "sentences": s} for t, s in context], "answer": answer, "aliases": [],
            "qtype": "bridge", "supporting_facts": [], "source": "test", "answer_type": "span"}


class Run:
    """Runs the LMAD stages in rule order for one method, like the Snakemake DAG does."""

    def __init__(self, tmp_path, monkeypatch, questions, responder, iterations=2, rounds=1, relation="model",
                 guard_last_iteration=True):
        self.dir, self.iterations, self.rounds = tmp_path, iterations, rounds
        self.relation, self.guard_last_iteration = relation, guard_last_iteration
        # the real call cache in front of the scripted agents: policies share identical calls
        self.scripted = ScriptedBackend(responder=responder)
        self.backend = CachedBackend(lambda: self.scripted, self.scripted.model_id, tmp_path / "cache")
        self.opened = []

        def open_backend(spec, cache_dir):
            self.opened.append(spec["name"])
            return self.backend

        monkeypatch.setattr(stages, "open_backend", open_backend)
        monkeypatch.setattr(generate_stage, "open_backend", open_backend)
        self.questions = str(tmp_path / "questions.parquet")
        write_table("questions", questions, self.questions)
        self.proposals = str(tmp_path / "samples" / "proposals.parquet")
        generate_stage.generate(questions=[self.questions], prompt=str(PROMPTS / "solver.txt"), samples=[self.proposals],
                                model=SPEC, cache_dir=str(tmp_path / "cache"), stage="proposals",
                                temperatures=TEMPERATURES, max_tokens=64, seed=0, provenance={})

    def path(self, method, k, stage):
        """A unit's generations; any other stage table: the iteration's one file of every unit."""
        if stage == "generate":
            return str(self.dir / method / f"iter{k}" / f"{stage}.parquet")
        return str(self.dir / "lmad" / f"iter{k}" / f"{stage}.parquet")

    def __call__(self, method="lmad"):
        return self.jointly([method])[method]

    def jointly(self, methods):
        """The methods as units of one stage job per stage, like rules/lmad.smk runs them;
        returns each method's predictions by qid."""
        units = [["hotpotqa", m] for m in methods]
        common = {"model": SPEC, "cache_dir": str(self.dir / "cache"), "provenance": {}, "units": units,
                  "questions": [self.questions] * len(methods)}
        for k in range(self.iterations):
            p = lambda stage: ([self.path(m, k, stage) for m in methods] if stage == "generate"  # noqa: E731
                               else self.path(None, k, stage))
            state = {"state": self.path(None, k - 1, "state")} if k else {}
            source = {"proposals": [self.proposals] * len(methods)} if k == 0 else state
            stages.generate(prompt=str(PROMPTS / "solver.txt"), samples=p("generate"), iteration=k,
                            temperatures=TEMPERATURES, max_tokens=64, seed=0, **source, **common)
            stages.extract(samples=p("generate"), prompt=str(PROMPTS / "extractor.txt"), chains=p("extract"),
                           iteration=k, max_tokens=256, max_nodes=12, max_node_words=40, iterations=self.iterations,
                           guard_last_iteration=self.guard_last_iteration, **common)
            stages.localize(chains=p("extract"), prompt=str(PROMPTS / "localizer.txt"),
                            localizations=p("localize"), iteration=k, max_tokens=128, **state, **common)
            stages.debate(localizations=p("localize"), prompt=str(PROMPTS / "debater.txt"), positions=p("debate"),
                          iteration=k, rounds=self.rounds, temperatures=TEMPERATURES, seed=0, max_tokens=128,
                          **state, **common)
            stages.resolve(localizations=p("localize"), positions=p("debate"), prompt=str(PROMPTS / "resolver.txt"),
                           repairs=p("resolve"), relation_prompt=str(PROMPTS / "relation_check.txt"),
                           relations=p("relation"), iteration=k, max_tokens=192, **state, **common)
            stages.commit(questions=common["questions"], samples=p("generate"), repairs=p("resolve"),
                          relations=p("relation"), commits=p("commit"), next_state=p("state"), units=units,
                          iteration=k, iterations=self.iterations, min_quote_words=3, relation=self.relation,
                          guard_last_iteration=self.guard_last_iteration, provenance={}, **state)
        out = {}
        for method in methods:
            tables = {s: [self.path(method, k, s) for k in range(self.iterations)]
                      for s in ("generate", "extract", "localize", "debate", "resolve", "relation", "commit")}
            path = self.dir / method / "predictions.parquet"
            stages.predict(questions=self.questions, final_state=self.path(method, self.iterations - 1, "state"),
                           samples=tables["generate"], chains=tables["extract"], localizations=tables["localize"],
                           positions=tables["debate"], repairs=tables["resolve"], relations=tables["relation"],
                           commits=tables["commit"],
                           predictions=str(path), trace=str(self.dir / method / "trace.parquet"), method=method,
                           provenance={}, dataset="hotpotqa")
            out[method] = {p["qid"]: p for p in read_table("predictions", path).to_dicts()}
        return out

    def table(self, name, method, k, stage):
        if stage == "generate":
            return read_table(name, self.path(method, k, stage)).to_dicts()
        return read_units(name, self.path(method, k, stage), [("hotpotqa", method)])[0]

    def trace(self, method="lmad"):
        return read_table("lmad_trace", self.dir / method / "trace.parquet").to_dicts()

    def calls(self, role):
        return [r for r in self.scripted.calls if role_of(r) == role]


def scripted(solutions, committed_solutions, chains, localization, debate, repair):
    """A responder keyed on the role read from the prompt. ``solutions[i]`` is agent i's
    rationale with P empty, ``committed_solutions[i]`` once a repair is committed;
    ``chains`` maps a rationale to its claims; ``debate[i]`` is agent i's round-1 reply."""
    def respond(req):
        role = role_of(req)
        if role == "solver":
            pool = committed_solutions if "Established facts" in user(req) else solutions
            return pool[agent_of(req)]
        if role == "extractor":
            return json.dumps({"claims": next(c for r, c in chains.items() if r in user(req))})
        if role == "localizer":
            return json.dumps(localization)
        if role == "debater":
            return debate[agent_of(req)]
        if role == "relation":
            return "yes"
        return json.dumps(repair)
    return respond


# ------------------------------------------------------------------ Appendix B, case 1

GORE_Q = make_question(
    "2wiki-gore", "Who is the paternal grandfather of Arthur Gore, 2nd Earl of Arran?", "Sir Arthur Gore, 2nd Baronet",
    [("Arthur Gore, 2nd Earl of Arran", ["Arthur Saunders Gore, 2nd Earl of Arran (1734–1809), was an Irish peer "
                                         "and politician.", "He was the son of Arthur Gore, 1st Earl of Arran."]),
     ("Arthur Gore, 1st Earl of Arran", ["Arthur Gore, 1st Earl of Arran (1703–1773), was an Irish peer.",
                                         "He was the son of Sir Arthur Gore, 2nd Baronet, and Elizabeth Annesley."]),
     ("Sir Arthur Gore, 2nd Baronet", ["Sir Arthur Gore, 2nd Baronet (died 1742), sat in the Irish House of Commons.",
                                       "He was the son of Paul Gore, whose father was Sir Arthur Gore, 1st Baronet."])],
    dataset="2wikimultihopqa")
GORE_FACTS = ["Arthur Gore, 2nd Earl of Arran was the son of Arthur Gore, 1st Earl of Arran.",
              "Arthur Gore, 1st Earl of Arran was the son of Sir Arthur Gore, 2nd Baronet."]
GORE_TOO_FAR = ("The paternal grandfather of Arthur Gore, 2nd Earl of Arran is Sir Arthur Gore, 1st Baronet, "
                "the father of Paul Gore.")
GORE_RIGHT = "The paternal grandfather of Arthur Gore, 2nd Earl of Arran is Sir Arthur Gore, 2nd Baronet."
GORE_WRONG_RATIONALE = (f"{GORE_FACTS[0]} {GORE_FACTS[1]} Sir Arthur Gore, 2nd Baronet was the son of Paul Gore, "
                        "whose father was Sir Arthur Gore, 1st Baronet.\nAnswer: Sir Arthur Gore, 1st Baronet")
GORE_RIGHT_RATIONALE = (f"{GORE_FACTS[0]} {GORE_FACTS[1]} The father's father is the paternal grandfather.\n"
                        "Answer: Sir Arthur Gore, 2nd Baronet")
GORE_REPAIR = "Sir Arthur Gore, 2nd Baronet is the paternal grandfather of Arthur Gore, 2nd Earl of Arran."
GORE_REVISE = ("Paul Gore is one generation beyond the grandfather.\nPosition: " + GORE_RIGHT)


def gore_responder(repair_quotes=("He was the son of Arthur Gore, 1st Earl of Arran.",
                                  "He was the son of Sir Arthur Gore, 2nd Baronet")):
    return scripted(
        solutions=[GORE_WRONG_RATIONALE, GORE_RIGHT_RATIONALE, GORE_WRONG_RATIONALE],
        committed_solutions=[f"{GORE_REPAIR}\nAnswer: Sir Arthur Gore, 2nd Baronet"] * 3,
        chains={GORE_WRONG_RATIONALE: [*GORE_FACTS, GORE_TOO_FAR], GORE_RIGHT_RATIONALE: [*GORE_FACTS, GORE_RIGHT]},
        localization={"conflict": "Who the paternal grandfather is: the final deduction goes to Sir Arthur Gore, "
                                  "1st Baronet in some chains and stops at the 2nd Baronet in another.",
                      "witness": [3, 3, 3]},
        debate=[GORE_REVISE, "The 1st Earl's father is the grandfather.\nPosition: " + GORE_RIGHT, GORE_REVISE],
        repair={"nodes": [GORE_REPAIR], "quotes": list(repair_quotes)},
    )


def test_case1_lineage_off_by_one_is_repaired(tmp_path, monkeypatch):
    run = Run(tmp_path, monkeypatch, [GORE_Q], gore_responder())
    pred = run()["2wiki-gore"]

    proposals = read_table("samples", run.proposals).sort("agent")["answer"].to_list()
    assert majority_vote(proposals, "span")[0] == "Sir Arthur Gore, 1st Baronet"  # answer-level voting fails, 2 to 1
    loc = run.table("lmad_localizations", "lmad", 0, "localize")[0]
    assert loc["witness"] == [3, 3, 3] and loc["witness_fallback"] == ["", "", ""]
    assert loc["witness_claims"] == [GORE_TOO_FAR, GORE_RIGHT, GORE_TOO_FAR]
    assert loc["segments"][1] == [*GORE_FACTS, GORE_RIGHT]  # the antecedent facts lead to the final node
    turns = run.table("lmad_positions", "lmad", 0, "debate")
    assert [t["round"] for t in turns] == [1, 1, 1] and {t["position"] for t in turns} == {GORE_RIGHT}
    commit0 = run.table("lmad_commits", "lmad", 0, "commit")[0]
    assert commit0["admitted"] and all(c["passed"] for c in commit0["checks"])
    assert commit0["committed"] == [GORE_REPAIR] and commit0["stop_reason"] is None
    assert pred["prediction"] == "Sir Arthur Gore, 2nd Baronet"
    assert (pred["stop_reason"], pred["stop_round"]) == ("agreement", 1)
    # proposals 3 (shared, reused at iteration 0) + extract 3 + localize 1 + debate 3 + resolve 1
    # + relation check 1 + generate 3
    assert pred["calls"] == 15
    # agents 1 and 3 wrote the same rationale: one extractor request, computed once by the cache
    assert len(run.scripted.calls) == 14 and len(run.calls("extractor")) == 2
    assert len(run.calls("relation")) == 1
    assert len(run.calls("solver")) == 6  # iteration 0 issued no solver call of its own
    trace = run.trace()
    assert [t["iteration"] for t in trace] == [0, 1]
    assert trace[1]["committed_before"] == [GORE_REPAIR] and trace[1]["agreed"]
    assert trace[0]["positions"] == [[GORE_TOO_FAR, GORE_RIGHT, GORE_TOO_FAR], [GORE_RIGHT] * 3]
    assert sum(t["calls"] for t in trace) == pred["calls"]


def test_debate_sees_only_the_other_agents_previous_positions(tmp_path, monkeypatch):
    run = Run(tmp_path, monkeypatch, [GORE_Q], gore_responder(), rounds=2)
    run()
    turns = run.table("lmad_positions", "lmad", 0, "debate")
    assert [(t["round"], t["agent"]) for t in turns] == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
    agent0_round1 = next(r for r in run.calls("debater") if agent_of(r) == 0)
    others = user(agent0_round1).split("The other agents' positions:")[1]
    assert f"Agent 2: {GORE_RIGHT}" in others and f"Agent 3: {GORE_TOO_FAR}" in others
    assert "Agent 1:" not in others
    assert f"Your current position: {GORE_TOO_FAR}" in user(agent0_round1)
    # round 2 sees round 1's positions (all revised), not its own round's
    agent0_round2 = [r for r in run.calls("debater") if agent_of(r) == 0][1]
    assert f"Agent 3: {GORE_RIGHT}" in user(agent0_round2)


# ------------------------------------------------------------------ Appendix B, case 2

BUCK_Q = make_question(
    "hotpot-bucktick", "Hayden is a singer-songwriter from Canada, but where does Buck-Tick hail from?",
    "Fujioka, Gunma",
    [("Hayden (musician)", ["Paul Hayden Desser, known as Hayden, is a Canadian singer-songwriter from Thornhill, "
                            "Ontario."]),
     ("Buck-Tick", ["Buck-Tick (stylized as BUCK-TICK) is a Japanese rock band, formed in Fujioka, Gunma in 1983.",
                    "The band has released more than twenty studio albums."])])
BUCK_FORMED = "Buck-Tick is a Japanese rock band formed in Fujioka, Gunma in 1983."
BUCK_JAPANESE = "Buck-Tick is a Japanese rock band."
BUCK_LOCAL = "Buck-Tick hails from Fujioka, Gunma, where the band was formed in 1983."
BUCK_CHAINS = {
    "A1": [BUCK_FORMED, "So Buck-Tick hails from Fujioka, Gunma."],
    "A2": ["Hayden is a Canadian singer-songwriter.", BUCK_JAPANESE, "So Buck-Tick hails from Japan."],
    "A3": [BUCK_JAPANESE, "Buck-Tick was formed in Fujioka, Gunma in 1983.", "Buck-Tick hails from Japan."],
}
BUCK_RATIONALES = {a: " ".join(c) + f"\nAnswer: {'Fujioka, Gunma' if a == 'A1' else 'Japan'}"
                   for a, c in BUCK_CHAINS.items()}


def buck_responder():
    return scripted(
        solutions=[BUCK_RATIONALES["A1"], BUCK_RATIONALES["A2"], BUCK_RATIONALES["A3"]],
        committed_solutions=[f"{BUCK_LOCAL}\nAnswer: Fujioka, Gunma"] * 3,
        chains={BUCK_RATIONALES[a]: c for a, c in BUCK_CHAINS.items()},
        localization={"conflict": "Whether Buck-Tick's origin is the country Japan or the formation place "
                                  "Fujioka, Gunma.", "witness": [1, 2, 1]},
        debate=["The passage names the formation place.\nPosition: " + BUCK_LOCAL,
                "The same sentence says the band was formed in Fujioka, Gunma, which is more specific.\n"
                "Position: " + BUCK_LOCAL,
                "My own chain has the formation fact.\nPosition: " + BUCK_LOCAL],
        repair={"nodes": [BUCK_LOCAL],
                # curly quotes, doubled space and a trailing period: normalized before the verbatim test
                "quotes": ["“a Japanese rock band,  formed in Fujioka, Gunma in 1983.”"]},
    )


@pytest.mark.parametrize("relation", ["model", "lexical"])
def test_case2_answer_granularity_is_repaired(tmp_path, monkeypatch, relation):
    run = Run(tmp_path, monkeypatch, [BUCK_Q], buck_responder(), relation=relation)
    pred = run()["hotpot-bucktick"]

    proposals = read_table("samples", run.proposals).sort("agent")["answer"].to_list()
    assert normalize_answer(majority_vote(proposals, "span")[0]) == "japan"
    loc = run.table("lmad_localizations", "lmad", 0, "localize")[0]
    assert loc["witness"] == [1, 2, 1] and loc["witness_fallback"] == ["", "", ""]  # indices need not align
    assert loc["segments"] == [[BUCK_FORMED], BUCK_CHAINS["A2"][:2], [BUCK_JAPANESE]]
    commit0 = run.table("lmad_commits", "lmad", 0, "commit")[0]
    checks = {c["check"]: c for c in commit0["checks"]}
    assert commit0["admitted"] and all(c["passed"] for c in checks.values())  # both relation checks recorded
    assert {c for c in checks if checks[c]["required"]} == (
        {"concrete", "relation_model", "evidence"} if relation == "model" else
        {"concrete", "subject", "relation", "evidence"})
    assert "buck-tick" in checks["subject"]["detail"] and "hail" in checks["relation"]["detail"]
    assert commit0["committed"] == [BUCK_LOCAL]
    gen1 = run.table("samples", "lmad", 1, "generate")
    assert all("Established facts" in user(r) for r in run.calls("solver")[3:]) and len(gen1) == 3
    assert pred["prediction"] == "Fujioka, Gunma"
    assert (pred["stop_reason"], pred["stop_round"]) == ("agreement", 1)


# ---------------------------------------------------------------------- stop reasons

def test_agreement_at_iteration_0_costs_only_the_proposals(tmp_path, monkeypatch):
    same = "Jane Austen was born in Steventon, Hampshire.\nAnswer: Hampshire"
    run = Run(tmp_path, monkeypatch, [GORE_Q], lambda req: same)
    pred = run()["2wiki-gore"]
    assert (pred["stop_reason"], pred["stop_round"], pred["calls"]) == ("agreement", 0, 3)
    assert run.opened == ["scripted"]  # only the proposals opened the model; no LMAD stage did
    for stage, table in [("extract", "lmad_chains"), ("localize", "lmad_localizations"),
                         ("debate", "lmad_positions"), ("resolve", "lmad_repairs")]:
        assert run.table(table, "lmad", 0, stage) == []
    assert run.table("samples", "lmad", 1, "generate") == []  # the stopped question passes through
    state = run.table("lmad_state", "lmad", 1, "state")[0]
    assert (state["active"], state["stop_reason"], state["stop_iteration"]) == (False, "agreement", 0)


def test_guard_rejection_falls_back_to_the_majority_vote(tmp_path, monkeypatch):
    # the quotation is not in the context: strict rejects, concrete and always admit
    run = Run(tmp_path, monkeypatch, [GORE_Q], gore_responder(repair_quotes=["He was the grandson of Paul Gore"]))
    pred = run("lmad")["2wiki-gore"]
    assert (pred["stop_reason"], pred["stop_round"]) == ("guard_rejected", 0)
    assert pred["prediction"] == "Sir Arthur Gore, 1st Baronet"  # the majority of the current answers
    checks = {c["check"]: c for c in run.table("lmad_commits", "lmad", 0, "commit")[0]["checks"]}
    assert not checks["evidence"]["passed"] and "not in any passage" in checks["evidence"]["detail"]
    assert checks["subject"]["passed"] and checks["relation"]["passed"]
    state = run.table("lmad_state", "lmad", 0, "state")[0]
    assert state["committed"] == []

    for method in ("lmad-concrete", "lmad-always"):
        pred = run(method)["2wiki-gore"]
        assert (pred["stop_reason"], pred["stop_round"]) == ("agreement", 1), method
        commit0 = run.table("lmad_commits", method, 0, "commit")[0]
        assert commit0["admitted"] and commit0["committed"] == [GORE_REPAIR]
        assert not {c["check"]: c for c in commit0["checks"]}["evidence"]["required"]


def test_budget_after_the_last_iteration(tmp_path, monkeypatch):
    # L = 1: the repair is admitted, but no iteration is left to use it
    run = Run(tmp_path, monkeypatch, [GORE_Q], gore_responder(), iterations=1)
    pred = run()["2wiki-gore"]
    assert (pred["stop_reason"], pred["stop_round"]) == ("budget", 0)
    assert pred["prediction"] == "Sir Arthur Gore, 1st Baronet"
    commit0 = run.table("lmad_commits", "lmad", 0, "commit")[0]
    assert commit0["admitted"] and commit0["stop_reason"] == "budget"


def test_budget_when_agents_keep_disagreeing(tmp_path, monkeypatch):
    respond = gore_responder()

    def stubborn(req):  # committed state does not help: the agents still split
        if role_of(req) == "solver":
            return [GORE_WRONG_RATIONALE, GORE_RIGHT_RATIONALE, GORE_WRONG_RATIONALE][agent_of(req)]
        return respond(req)

    run = Run(tmp_path, monkeypatch, [GORE_Q], stubborn, iterations=2)
    pred = run()["2wiki-gore"]
    assert (pred["stop_reason"], pred["stop_round"]) == ("budget", 1)
    trace = run.trace()
    assert [t["stop_reason"] for t in trace] == [None, "budget"]
    assert trace[1]["committed_after"] == [GORE_REPAIR, GORE_REPAIR]


def test_always_admits_an_unparseable_repair_and_concrete_does_not(tmp_path, monkeypatch):
    respond = gore_responder()

    def broken_resolver(req):
        return '{"nodes": ["cut off' if role_of(req) == "resolver" else respond(req)

    run = Run(tmp_path, monkeypatch, [GORE_Q], broken_resolver)
    assert run("lmad-concrete")["2wiki-gore"]["stop_reason"] == "guard_rejected"
    pred = run("lmad-always")["2wiki-gore"]
    commit0 = run.table("lmad_commits", "lmad-always", 0, "commit")[0]
    assert commit0["admitted"] and commit0["committed"] == []  # nothing to append; P unchanged
    assert (pred["stop_reason"], pred["stop_round"]) == ("budget", 1)


def test_stopped_questions_pass_through_later_iterations(tmp_path, monkeypatch):
    same = make_question("agree", "Where was Jane Austen born?", "Steventon",
                         [("Jane Austen", ["Jane Austen was born in Steventon, Hampshire."])])
    respond = gore_responder()

    def both(req):
        if role_of(req) == "solver" and "Jane Austen" in user(req):
            return "She was born in Steventon.\nAnswer: Steventon"
        return respond(req)

    run = Run(tmp_path, monkeypatch, [GORE_Q, same], both)
    preds = run()
    assert preds["agree"]["stop_reason"] == "agreement" and preds["agree"]["calls"] == 3
    assert preds["2wiki-gore"]["stop_reason"] == "agreement" and preds["2wiki-gore"]["stop_round"] == 1
    assert {r["qid"] for r in run.table("samples", "lmad", 1, "generate")} == {"2wiki-gore"}
    state1 = {s["qid"]: s for s in run.table("lmad_state", "lmad", 1, "state")}
    assert state1["agree"] == {s["qid"]: s for s in run.table("lmad_state", "lmad", 0, "state")}["agree"]


@pytest.mark.parametrize("method", ["lmad", "lmad-concrete", "lmad-always"])
def test_iteration_0_is_shared_by_the_three_policies(tmp_path, monkeypatch, method):
    run = Run(tmp_path, monkeypatch, [BUCK_Q], buck_responder())
    run(method)
    gen0 = run.table("samples", method, 0, "generate")
    assert gen0 == read_table("samples", run.proposals).to_dicts()  # the proposals, verbatim
    assert {r["stage"] for r in gen0} == {"proposals"}


def test_one_job_serves_the_three_policies_with_one_batch_per_stage(tmp_path, monkeypatch):
    """rules/lmad.smk runs all policies in one job per stage: identical calls are made once,
    each stage is one backend batch, and every policy ends exactly as when run alone."""
    policies = ["lmad", "lmad-concrete", "lmad-always"]
    responder = gore_responder(repair_quotes=["He was the grandson of Paul Gore"])
    alone = {}
    for m in policies:
        solo = Run(tmp_path / m, monkeypatch, [GORE_Q], responder)
        alone[m] = solo(m)
    run = Run(tmp_path / "joint", monkeypatch, [GORE_Q], responder)
    batches = []
    generate = run.backend.generate
    monkeypatch.setattr(run.backend, "generate", lambda reqs: batches.append(len(reqs)) or generate(reqs))
    joint = run.jointly(policies)
    for m in policies:
        drop = ("cached",)
        assert {q: {k: v for k, v in p.items() if k not in drop} for q, p in joint[m].items()} == \
            {q: {k: v for k, v in p.items() if k not in drop} for q, p in alone[m].items()}, m
    # iteration 0: extract, localize, debate (1 round), resolve, relation check: one batch each,
    # holding the three policies' identical requests; iteration 1: strict stopped (guard
    # rejected), and concrete and always regenerate from the same state and agree
    assert batches == [9, 3, 9, 3, 3, 6]
    lone = Run(tmp_path / "count", monkeypatch, [GORE_Q], responder)
    lone("lmad-concrete")
    assert len(run.scripted.calls) == len(lone.scripted.calls)  # strict adds no call of its own


# ------------------------------------------------------------- paper-fidelity settings

def test_model_relation_check_is_one_batched_call_per_repair_and_recorded(tmp_path, monkeypatch):
    respond = gore_responder()
    verdict = {"value": "no"}

    def deny(req):
        return verdict["value"] if role_of(req) == "relation" else respond(req)

    run = Run(tmp_path, monkeypatch, [GORE_Q, {**BUCK_Q, "dataset": "2wikimultihopqa", "benchmark": "2wikimultihopqa"}],
              lambda req: deny(req) if "Gore" in user(req) else buck_responder()(req) if role_of(req) != "relation"
              else "yes")
    preds = run("lmad")
    checks = run.calls("relation")
    assert len(checks) == 2  # one per repair, both repairs in ONE batch with temperature 0 and a choice
    assert all(r.temperature == 0 and r.constraint == {"choice": ["yes", "no"]} for r in checks)
    assert GORE_REPAIR in user(next(r for r in checks if "Gore" in user(r)))
    rows = {r["qid"]: r for r in run.table("lmad_relations", "lmad", 0, "relation")}
    assert rows["2wiki-gore"]["verdict"] == "no" and rows["hotpot-bucktick"]["verdict"] == "yes"
    commit = {c["qid"]: {k["check"]: k for k in c["checks"]} for c in run.table("lmad_commits", "lmad", 0, "commit")}
    gore = commit["2wiki-gore"]
    assert not gore["relation_model"]["passed"] and gore["relation_model"]["detail"] == "model: no"
    assert gore["subject"]["passed"] and gore["relation"]["passed"]  # lexical recorded beside it
    assert preds["2wiki-gore"]["stop_reason"] == "guard_rejected"
    assert preds["hotpot-bucktick"]["stop_reason"] == "agreement"
    trace = {(t["qid"], t["iteration"]): t for t in run.trace()}
    assert [c["role"] for c in trace[("2wiki-gore", 0)]["call_log"]].count("relation") == 1
    # lexical policy: the model's "no" is recorded but does not gate
    lexical = Run(tmp_path / "lexical", monkeypatch, [GORE_Q], deny, relation="lexical")
    assert lexical("lmad")["2wiki-gore"]["stop_reason"] == "agreement"


def test_truncated_resolver_reply_is_its_own_stop_reason(tmp_path, monkeypatch):
    respond = gore_responder()
    run = Run(tmp_path, monkeypatch, [GORE_Q], respond)
    real = run.scripted.generate

    def cut_resolver(reqs):  # the resolver's reply runs into its budget
        out = real(reqs)
        return [type(c)(text=c.text[:20], prompt_tokens=c.prompt_tokens, completion_tokens=r.max_tokens,
                        finish_reason="length") if role_of(r) == "resolver" else c for r, c in zip(reqs, out)]

    monkeypatch.setattr(run.scripted, "generate", cut_resolver)
    preds = run.jointly(["lmad", "lmad-concrete", "lmad-always"])
    for method, pred in preds.items():
        p = pred["2wiki-gore"]
        assert (p["stop_reason"], p["stop_round"]) == ("resolver_truncated", 0), method
        assert p["prediction"] == "Sir Arthur Gore, 1st Baronet"
        commit0 = run.table("lmad_commits", method, 0, "commit")[0]
        assert commit0["admitted"] is None and commit0["checks"]  # checks recorded, nothing decided
    assert run.calls("relation") == []  # a cut-off reply is not judged
    log = run.trace("lmad")[0]["call_log"]
    assert [c["finish_reason"] for c in log if c["role"] == "resolver"] == ["length"]
    from lmad.paper.guard_rejections import gate_activated
    from lmad.stages.paper import load
    assert gate_activated(load("lmad_trace", [str(run.dir / "lmad" / "trace.parquet")])).is_empty()  # not in Table 2's subset


def test_regeneration_with_unchanged_state_gets_new_samples(tmp_path, monkeypatch):
    respond = gore_responder()

    def empty_repair(req):  # always admits an empty repair: P stays empty
        return '{"nodes": [], "quotes": []}' if role_of(req) == "resolver" else respond(req)

    run = Run(tmp_path, monkeypatch, [GORE_Q], empty_repair, iterations=3)
    run("lmad-always")
    seeds = {k: [r["seed"] for r in run.table("samples", "lmad-always", k, "generate")] for k in range(3)}
    assert len({tuple(v) for v in seeds.values()}) == 3  # every iteration its own seeds
    assert all(len(set(v)) == 3 for v in seeds.values())
    solver = [r for r in run.scripted.calls if role_of(r) == "solver"]
    assert len(solver) == 3 + 3 + 3  # proposals, then each regeneration reaches the model: no cache replay
    again = Run(tmp_path / "again", monkeypatch, [GORE_Q], empty_repair, iterations=3)
    again("lmad-always")
    assert seeds == {k: [r["seed"] for r in again.table("samples", "lmad-always", k, "generate")] for k in range(3)}


def test_stop_after_the_last_generation_makes_no_auxiliary_call_there(tmp_path, monkeypatch):
    respond = gore_responder()

    def stubborn(req):
        if role_of(req) == "solver":
            return [GORE_WRONG_RATIONALE, GORE_RIGHT_RATIONALE, GORE_WRONG_RATIONALE][agent_of(req)]
        return respond(req)

    full = Run(tmp_path / "full", monkeypatch, [GORE_Q], stubborn, iterations=2)
    short = Run(tmp_path / "short", monkeypatch, [GORE_Q], stubborn, iterations=2, guard_last_iteration=False)
    p_full, p_short = full()["2wiki-gore"], short()["2wiki-gore"]
    assert (p_short["stop_reason"], p_short["stop_round"]) == ("budget", 1)
    assert p_short["prediction"] == p_full["prediction"]  # the same majority vote either way
    last = short.trace()[1]
    assert {c["role"] for c in last["call_log"]} == {"solver"} and last["final_iteration"]
    assert last["checks"] == [] and last["admitted"] is None
    aux = lambda t: sum(c["role"] != "solver" for c in t["call_log"])  # noqa: E731
    assert aux(full.trace()[1]) == 3 + 1 + 3 + 1 + 1 and aux(last) == 0
    assert p_full["calls"] - p_short["calls"] == 9
