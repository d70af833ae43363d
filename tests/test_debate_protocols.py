"""Debate protocols on the round engine with scripted backends: who sees what in which
round, stop rules, vote ties, judge / moderator paths, advice and note counts, manners,
and the shared round-0 proposals."""
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from conftest import REPO
from lmad.answers import reading_of
from lmad.backends import ChatRequest
from lmad.backends.scripted import ScriptedBackend
from lmad.prompts import load_prompt
from lmad.protocols.debate import (PROTOCOLS, DEBATE_STOP_REASONS, deal_notes, debate_prediction_rows, protocol,
                                   resolve_setting, run_round)
from lmad.protocols.debate.decisions import JUDGE_SCHEMA
from lmad.solver import derive_seed, sample_rows, solver_request

PROMPTS = {p.stem: load_prompt(p) for p in (REPO / "config" / "prompts").glob("*.txt")}
PERSONAS = [0.1, 0.5, 0.9]
AUX = {"advice": 32, "judge": 32, "moderator": 32, "chair": 32}
CONTEXT = [{"title": "Alpha", "sentences": ["Alpha is a city."]}, {"title": "Beta", "sentences": ["Beta is a town."]}]
QUESTIONS = [{"qid": f"q{i}", "dataset": "hotpotqa", "benchmark": "hotpotqa", "answer_type": "span",
              "question": f"Which place is meant in question {i}?",
              "context": CONTEXT} for i in range(2)]


class Recorder(ScriptedBackend):
    """A scripted backend that also records each ``generate`` batch."""

    def __init__(self, responder=None):
        super().__init__(responder=responder)
        self.batches: list[int] = []

        self.request_of: dict[str, ChatRequest] = {}

    def generate(self, requests):
        self.batches.append(len(requests))
        out = super().generate(requests)
        self.request_of.update((c.text, r) for r, c in zip(requests, out))
        return out

    def prompt_of(self, response: str) -> str:
        """The prompt text of the call that produced ``response`` (responses are unique)."""
        return text(self.request_of[response])


def text(req: ChatRequest) -> str:
    return "\n".join(c for _, c in req.messages)


def system(req: ChatRequest) -> str:
    return req.messages[0][1] if req.messages[0][0] == "system" else ""


def qid_of(req: ChatRequest) -> str:
    return re.search(r"question (\d+)\?", text(req)).group(0).replace("question ", "q").rstrip("?")


def proposals(questions, responder, temperatures=PERSONAS, seed=0):
    """The shared self-consistency proposals, made by a separate backend."""
    jobs = [{"qid": q["qid"], "stage": "proposals", "round": 0, "agent": a, "temperature": t,
             "seed": (s := derive_seed(seed, q["qid"], a)), "reading": reading_of(q),
             "request": solver_request(PROMPTS["solver"], q, t, s, 64)}
            for q in questions for a, t in enumerate(temperatures)]
    return sample_rows(ScriptedBackend(responder=responder), jobs)


def debate(method, responder, questions=QUESTIONS, rounds=2, own=None, share=True, seed=0):
    """All rounds of ``method``; returns (round results, predictions, debate backend)."""
    p = protocol(method)
    setting = resolve_setting(p, {"rounds": rounds, "methods": {method: own or {}}}, PERSONAS)
    backend = Recorder(responder)
    shared = proposals(questions, responder, seed=seed) if share and setting.shares_proposals else None
    results, prev, state = [], (), None
    for t in range(setting.rounds + 1):
        res = run_round(p, method, t, t == setting.rounds, questions, backend, PROMPTS, setting.temperatures,
                        setting.manners, seed, 64, AUX, previous=prev, previous_state=state,
                        proposals=shared if t == 0 else None)
        results.append(res)
        prev, state = res.samples, res.state
    preds = debate_prediction_rows(questions, method, [r for res in results for r in res.samples],
                            [r for res in results for r in res.steps], state)
    return results, {p["qid"]: p for p in preds}, backend


def by_agent(rows, qid):
    return {r["agent"]: r for r in rows if r["qid"] == qid}


def counter_responder():
    """Every call gets a unique marker <<n>> and answer."""
    n = iter(range(10 ** 6))

    def respond(req):
        i = next(n)
        if req.constraint:  # an undecided judge (and an unparsable moderator reply)
            return json.dumps({"decided": False, "answer": f"<<{i}>>"})
        return f"I reason <<{i}>>.\nAnswer: Place {i}"
    return respond


# ------------------------------------------------------------------ visibility (MAD family)

def test_mad_round_t_sees_round_t_minus_1_only():
    results, preds, backend = debate("mad", counter_responder())
    assert [r.calls for r in results] == [0, 6, 6]  # round 0 = the shared proposals
    rows = {(t, r["qid"], r["agent"]): r["response"] for t, res in enumerate(results) for r in res.samples}
    marker = {k: re.search(r"<<\d+>>", v).group(0) for k, v in rows.items()}
    for t in (1, 2):
        for q in (q["qid"] for q in QUESTIONS):
            for a in range(3):
                prompt = backend.prompt_of(rows[(t, q, a)])
                own = prompt.split("Your previous response:\n")[1].split("\n\nThe other agents")[0]
                assert own == rows[(t - 1, q, a)].strip()
                others = prompt.split("The other agents' previous responses:\n")[1]
                assert f"Agent {a + 1}:" not in others
                for b in range(3):
                    if b != a:
                        assert f"Agent {b + 1}:\n{rows[(t - 1, q, b)].strip()}" in others
                    assert marker[(t, q, b)] not in prompt  # never a same-round reply
                    if t == 2:
                        assert marker[(0, q, b)] not in prompt  # never round t-2
                other_q = "q1" if q == "q0" else "q0"
                assert all(marker[(t - 1, other_q, b)] not in prompt for b in range(3))
    assert all(p["calls"] == 9 for p in preds.values())  # 3 shared proposals + 2 x 3 revisions


def test_mad_and_consensus_send_identical_revisions():
    """Consensus is MAD with an early stop: same prompts and seeds, so the cache shares them."""
    resp = lambda req: f"Answer: {'Alpha' if req.temperature < 0.3 else 'Beta'}"  # noqa: E731
    _, _, mad = debate("mad", resp)
    _, _, consensus = debate("consensus", resp)
    assert [r.key("m") for r in mad.calls] == [r.key("m") for r in consensus.calls]


def test_promptmad_adds_the_engagement_instruction_only():
    _, _, mad = debate("mad", counter_responder(), rounds=1)
    _, _, prompt_mad = debate("promptmad", counter_responder(), rounds=1)
    assert "counterarguments" in text(prompt_mad.calls[0]) and "counterarguments" not in text(mad.calls[0])
    assert len(mad.calls) == len(prompt_mad.calls) == 6


# ------------------------------------------------------------------------- stop rules, votes

def test_consensus_stops_as_soon_as_all_answers_agree():
    def respond(req):
        q = qid_of(req)
        if q == "q0" or "Your previous response" in text(req):  # q0 agrees at once, q1 after round 1
            return "Answer: Alpha"
        return f"Answer: {['Alpha', 'Beta', 'Gamma'][PERSONAS.index(req.temperature)]}"

    results, preds, backend = debate("consensus", respond)
    assert (preds["q0"]["stop_reason"], preds["q0"]["stop_round"], preds["q0"]["calls"]) == ("consensus", 0, 3)
    assert (preds["q1"]["stop_reason"], preds["q1"]["stop_round"], preds["q1"]["calls"]) == ("consensus", 1, 6)
    assert [r.calls for r in results] == [0, 3, 0]  # round 1 only q1; round 2 nobody
    assert [r.active for r in results] == [2, 1, 0]
    assert {s["qid"]: s["active"] for s in results[0].state} == {"q0": False, "q1": True}
    # MAD has no early stop
    _, mad, _ = debate("mad", respond)
    assert {p["stop_reason"] for p in mad.values()} == {"vote"} and {p["calls"] for p in mad.values()} == {9}


def test_consensus_without_agreement_votes_after_the_last_round():
    respond = lambda req: f"Answer: {['Alpha', 'Beta', 'Beta'][PERSONAS.index(req.temperature)]}"  # noqa: E731
    _, preds, _ = debate("consensus", respond)
    assert all((p["prediction"], p["stop_reason"], p["stop_round"], p["calls"]) == ("Beta", "vote", 2, 9)
               for p in preds.values())


def test_vote_tie_goes_to_the_lowest_agent_index():
    respond = lambda req: f"Answer: {['Gamma', 'Alpha', 'Beta'][PERSONAS.index(req.temperature)]}"  # noqa: E731
    _, preds, _ = debate("mad", respond)
    assert all((p["prediction"], p["stop_reason"]) == ("Gamma", "vote_tie") for p in preds.values())
    # 4 agents, 2-2: the group whose first member has the lower index wins
    four = {"temperatures": [0.1, 0.5, 0.9, 0.7]}
    respond4 = lambda req: "Answer: " + {0.1: "Beta", 0.5: "alpha", 0.9: "Alpha.", 0.7: "beta"}[req.temperature]  # noqa
    _, preds, _ = debate("truemad", respond4, own=four, rounds=1)
    assert all((p["prediction"], p["stop_reason"]) == ("Beta", "vote_tie") for p in preds.values())



def test_a_choice_questions_prediction_is_keyed_by_its_reader():
    """The stop state's key is the answer type's (the letter "B"), not the span normalization ("b")."""
    mcq = [q | {"answer_type": "choice", "choices": ["Alpha", "Beta", "Gamma", "Delta"], "benchmark": "gpqa-diamond"}
           for q in QUESTIONS]
    respond = lambda req: f"Answer: {['(B)', 'B', 'C'][PERSONAS.index(req.temperature)]}"  # noqa: E731
    _, preds, _ = debate("mad", respond, questions=mcq, rounds=1)
    assert {(p["prediction"], p["prediction_norm"], p["stop_reason"]) for p in preds.values()} == {("B", "B", "vote")}


# ------------------------------------------------------------------------------- dMAD

def dmad_responder(judge, moderator='{"answer": "Beta"}'):
    def respond(req):
        if req.constraint:
            return judge(req) if "judge" in system(req) else moderator
        side = "affirmative" if "affirmative side in" in system(req) else "negative"
        return f"The {side} says so.\nAnswer: {'Alpha' if side == 'affirmative' else 'Beta'}"
    return respond


def test_dmad_judge_decides_after_round_0():
    results, preds, backend = debate("dmad", dmad_responder(lambda r: '{"decided": true, "answer": "Alpha"}'))
    assert all((p["prediction"], p["stop_reason"], p["stop_round"], p["calls"]) == ("Alpha", "judge", 0, 3)
               for p in preds.values())
    assert backend.batches == [2, 2, 2]  # affirmative, negative (same round, sequential), judge
    judge = [s for s in results[0].steps if s["step"] == "judge"]
    assert len(judge) == 2 and all(j["parse_error"] == "" and json.loads(j["parsed"])["decided"] for j in judge)
    assert [req.constraint for req in backend.calls if req.constraint] == [{"json": JUDGE_SCHEMA}] * 2
    assert all(req.temperature == 0.0 for req in backend.calls if req.constraint)


def test_dmad_turns_see_the_opponents_latest_argument():
    results, _, backend = debate("dmad", counter_responder())  # the judge never decides
    turn = {(t, r["qid"], r["agent"]): r["response"] for t, res in enumerate(results) for r in res.samples}
    mark = {k: re.search(r"<<\d+>>", v).group(0) for k, v in turn.items()}
    for q in ("q0", "q1"):
        aff0, neg0 = backend.prompt_of(turn[(0, q, 0)]), backend.prompt_of(turn[(0, q, 1)])
        assert "argued" not in aff0 and "previous argument" not in aff0  # the opening
        assert f"Affirmative side argued:\n{turn[(0, q, 0)].strip()}" in neg0  # same round
        for t in (1, 2):
            aff, neg = backend.prompt_of(turn[(t, q, 0)]), backend.prompt_of(turn[(t, q, 1)])
            # the affirmative answers the negative's previous turn, the negative this round's affirmative
            assert f"Negative side argued:\n{turn[(t - 1, q, 1)].strip()}" in aff
            assert f"Your previous argument:\n{turn[(t - 1, q, 0)].strip()}" in aff
            assert f"Affirmative side argued:\n{turn[(t, q, 0)].strip()}" in neg
            assert mark[(t - 1, q, 0)] not in neg.split("Affirmative side argued")[1]
            assert f"Your previous argument:\n{turn[(t - 1, q, 1)].strip()}" in neg
            judge = backend.prompt_of(next(s["response"] for s in results[t].steps
                                           if s["qid"] == q and s["step"] == "judge"))
            assert mark[(t, q, 0)] in judge and mark[(t, q, 1)] in judge and mark[(t - 1, q, 0)] not in judge


def test_dmad_moderator_answers_when_the_judge_never_decides():
    results, preds, backend = debate("dmad", dmad_responder(lambda r: '{"decided": false, "answer": ""}'))
    assert all((p["prediction"], p["stop_reason"], p["stop_round"], p["calls"]) == ("Beta", "moderator", 2, 10)
               for p in preds.values())
    moderator = [s for s in results[2].steps if s["step"] == "moderator"]
    assert len(moderator) == 2 and all(s["agent"] == -1 and s["parse_error"] == "" for s in moderator)
    assert all(r.active == 2 for r in results)


@pytest.mark.parametrize("reply", ["{'answer': 'Beta'}", '{"answer": "Beta", "why": "x"}', '{"answer": ""}',
                                   '{"answer": 3}', "Beta", '{"answer": "Beta"'])
def test_dmad_unparsable_moderator_falls_back_to_the_vote(reply):
    _, preds, _ = debate("dmad", dmad_responder(lambda r: '{"decided": false, "answer": ""}', moderator=reply),
                         questions=QUESTIONS[:1], rounds=0)
    # two sides disagree: the tie goes to the affirmative (agent 0)
    assert (preds["q0"]["prediction"], preds["q0"]["stop_reason"]) == ("Alpha", "moderator_fallback")


@pytest.mark.parametrize("reply", ['{"decided": "yes", "answer": "Alpha"}', "{'decided': True, 'answer': 'Alpha'}",
                                   '{"decided": true, "answer": ""}', '{"decided": true}', "true",
                                   '{"decided": true, "answer": "Alpha", "extra": 1}'])
def test_dmad_malformed_judge_is_recorded_and_not_a_decision(reply):
    results, preds, _ = debate("dmad", dmad_responder(lambda r: reply), questions=QUESTIONS[:1], rounds=1)
    assert preds["q0"]["stop_reason"] == "moderator" and preds["q0"]["stop_round"] == 1
    judged = [s for res in results for s in res.steps if s["step"] == "judge"]
    assert len(judged) == 2 and all(s["parse_error"] and s["parsed"] == "" for s in judged)


def test_dmad_has_exactly_two_agents():
    with pytest.raises(ValueError, match="exactly 2 agents"):
        resolve_setting(protocol("dmad"), {"methods": {"dmad": {"agents": 3}}}, PERSONAS)


# ----------------------------------------------------------------- the TrueMAD family

@pytest.mark.parametrize("agents", [3, 4])
def test_truemad_advice_is_k_k_minus_1_calls_per_round_and_reaches_only_its_target(agents):
    temps = [0.1, 0.5, 0.9, 0.7][:agents]
    results, preds, backend = debate("truemad", counter_responder(), own={"temperatures": temps})
    k = agents
    advice = [s for res in results for s in res.steps]
    assert {s["step"] for s in advice} == {"advise"}
    for t, res in enumerate(results):
        per_q = Counter(s["qid"] for s in res.steps)
        assert all(n == (k * (k - 1) if t > 0 else 0) for n in per_q.values())
        for q in QUESTIONS:
            pairs = sorted((s["agent"], s["target"]) for s in res.steps if s["qid"] == q["qid"])
            assert pairs == ([(a, b) for a in range(k) for b in range(k) if a != b] if t > 0 else [])
    assert backend.batches[-2:] == [2 * k * (k - 1), 2 * k]  # advice batch, then revision batch
    # an advice call sees the source's and the target's round t-1 responses, no third agent's
    for t in (1, 2):
        prev = {(r["qid"], r["agent"]): re.search(r"<<\d+>>", r["response"]).group(0) for r in results[t - 1].samples}
        for s in results[t].steps:
            prompt = backend.prompt_of(s["response"])
            seen = {a for a in range(k) if prev[(s["qid"], a)] in prompt}
            assert seen == {s["agent"], s["target"]}
            assert prompt.index(prev[(s["qid"], s["agent"])]) < prompt.index(prev[(s["qid"], s["target"])])
    # each revision prompt carries the advice addressed to it, in source order, and no other advice
    for t in (1, 2):
        res = results[t]
        for q in QUESTIONS:
            for target, row in by_agent(res.samples, q["qid"]).items():
                prompt = backend.prompt_of(row["response"])
                for s in res.steps:
                    if s["qid"] != q["qid"]:
                        continue
                    marker = re.search(r"<<\d+>>", s["response"]).group(0)
                    assert (marker in prompt) == (s["target"] == target)
                mine = [re.search(r"<<\d+>>", s["response"]).group(0)
                        for s in sorted(res.steps, key=lambda s: s["agent"])
                        if s["qid"] == q["qid"] and s["target"] == target]
                assert [prompt.index(m) for m in mine] == sorted(prompt.index(m) for m in mine)
    assert all(p["calls"] == k + 2 * (k * (k - 1) + k) for p in preds.values())


def test_truemad_paper_setting_four_agents_five_response_rounds():
    setting = resolve_setting(protocol("truemad"), {"methods": {"truemad": {"agents": 4, "rounds": 4}}}, PERSONAS)
    assert setting.temperatures == (0.1, 0.5, 0.9, 0.1) and setting.rounds == 4
    assert not setting.shares_proposals  # 4 agents: round 0 issues its own solver calls
    results, preds, _ = debate("truemad", counter_responder(), questions=QUESTIONS[:1],
                               own={"agents": 4}, rounds=4)
    assert len(results) == 5 and preds["q0"]["calls"] == 4 + 4 * (12 + 4)


def test_computemad_deal_is_seeded_and_gives_every_agent_k_minus_1_notes():
    for k in (3, 4):
        deal = deal_notes(k, 0, "q0", 1)
        assert deal == deal_notes(k, 0, "q0", 1)
        assert Counter(deal) == {a: k - 1 for a in range(k)} and len(deal) == k * (k - 1)
    deals = {tuple(deal_notes(4, seed, "q0", 1)) for seed in range(10)}
    assert len(deals) > 1  # the seed matters
    assert {tuple(deal_notes(4, 0, f"q{i}", t)) for i in range(5) for t in (1, 2)} != {tuple(deal_notes(4, 0, "q0", 1))}


def test_computemad_notes_are_untargeted_and_dealt_as_advice():
    results, preds, backend = debate("computemad", counter_responder())
    for t, res in ((1, results[1]), (2, results[2])):
        for q in QUESTIONS:
            notes = [s for s in res.steps if s["qid"] == q["qid"]]
            assert len(notes) == 6 and {s["step"] for s in notes} == {"note"}
            assert Counter(s["agent"] for s in notes) == {0: 2, 1: 2, 2: 2}
            assert [s["target"] for s in sorted(notes, key=lambda s: (s["agent"], s["slot"]))] == \
                deal_notes(3, 0, q["qid"], t)
            for target, row in by_agent(res.samples, q["qid"]).items():
                prompt = backend.prompt_of(row["response"])
                for s in notes:
                    assert (re.search(r"<<\d+>>", s["response"]).group(0) in prompt) == (s["target"] == target)
    note_prompt = next(text(r) for r in backend.calls if "useful note for the debate" in text(r))
    assert all(f"Agent {a}:" in note_prompt for a in (1, 2, 3))  # all previous answers, no target
    assert all(p["calls"] == 21 for p in preds.values())


def test_selfadvicemad_critiques_only_the_agents_own_answer():
    results, preds, backend = debate("selfadvicemad", counter_responder())
    for res in results[1:]:
        for q in QUESTIONS:
            notes = [s for s in res.steps if s["qid"] == q["qid"]]
            assert len(notes) == 6 and all(s["target"] == s["agent"] for s in notes)
            assert Counter(s["agent"] for s in notes) == {0: 2, 1: 2, 2: 2}
    critique = next(r for r in backend.calls if "Critique your previous response" in text(r))
    assert "Agent 2:" not in text(critique) and "other agents" not in text(critique)
    assert all(p["calls"] == 21 for p in preds.values())


# ------------------------------------------------------------------------------- DMAD

def manner_responder():
    n = iter(range(10 ** 6))

    def respond(req):
        i = next(n)
        if "step back" in text(req):
            return f"CONCEPT <<{i}>>"
        if "Give feedback on the draft" in text(req):
            return f"CRITIQUE <<{i}>>"
        if "Your draft answer" in text(req):
            return f"REFINED <<{i}>>\nAnswer: Alpha"
        return f"ANSWER <<{i}>>\nAnswer: {'Alpha' if i % 2 else 'Beta'}"
    return respond


def test_dmad_manners_call_counts_per_manner():
    four = {"temperatures": [0.1, 0.5, 0.9, 0.7]}
    results, preds, backend = debate("dmad-manners", manner_responder(), own=four, questions=QUESTIONS[:1])
    res0 = results[0]
    extra = Counter(s["agent"] for s in res0.steps)
    calls = {a: 1 + extra.get(a, 0) for a in range(4)}
    assert calls == {0: 1, 1: 1, 2: 2, 3: 3}  # IO, CoT, Step-Back, Self-Refine
    assert sorted(s["step"] for s in res0.steps) == ["selfrefine_critique", "selfrefine_draft", "stepback_concept"]
    assert backend.batches[:3] == [4, 2, 1]  # step k of every agent in one batch
    assert res0.calls == 7 and preds["q0"]["calls"] == 3 * 7


def test_dmad_debate_context_has_final_answers_only():
    four = {"temperatures": [0.1, 0.5, 0.9, 0.7]}
    results, _, backend = debate("dmad-manners", manner_responder(), own=four, questions=QUESTIONS[:1], rounds=1)
    hidden = [re.search(r"<<\d+>>", s["response"]).group(0) for s in results[0].steps]
    finals = {r["agent"]: r["response"] for r in results[0].samples}
    for row in results[1].samples:
        prompt = backend.prompt_of(row["response"])
        assert all(m not in prompt for m in hidden)  # no concept, draft or critique of round 0
        assert all(finals[a].strip() in prompt for a in range(4))
        assert prompt.index("Your previous final answer:\n" + finals[row["agent"]].strip()) >= 0
    assert "Your previous final answer" not in text(backend.calls[0])  # round 0: no debate context


def test_truedmad_adds_advice_to_dmad():
    results, preds, _ = debate("truedmad", manner_responder(), questions=QUESTIONS[:1])
    assert [r.calls for r in results] == [4, 10, 10]  # IO + CoT + 2 Step-Back; + 6 advice
    assert preds["q0"]["calls"] == 24
    _, dmad, _ = debate("dmad-manners", manner_responder(), questions=QUESTIONS[:1])
    assert dmad["q0"]["calls"] == 12


# ------------------------------------------------------------------ shared proposals, costs

@pytest.mark.parametrize("method", ["mad", "consensus", "promptmad", "truemad", "computemad", "selfadvicemad"])
def test_round_0_reuses_the_proposals_with_zero_calls(method):
    results, preds, backend = debate(method, counter_responder(), rounds=0)
    assert backend.calls == [] and results[0].calls == 0
    shared = proposals(QUESTIONS, counter_responder())
    assert results[0].samples == shared
    assert all(p["calls"] == 3 for p in preds.values())  # the proposals count toward the method's cost


def test_own_round_0_sends_the_proposal_requests():
    """A method that cannot reuse the table (4 agents) sends the same requests for the
    agents that coincide with a persona, so the call cache serves them."""
    results, _, backend = debate("mad", counter_responder(), own={"temperatures": [0.1, 0.5, 0.9, 0.7]},
                                 rounds=0)
    solver = [solver_request(PROMPTS["solver"], q, t, derive_seed(0, q["qid"], a), 64)
              for q in QUESTIONS for a, t in enumerate(PERSONAS)]
    assert set(solver) <= set(backend.calls) and len(backend.calls) == 8


def test_every_method_at_the_defaults_has_the_documented_call_count():
    """3 agents, R = 2; agents never agree and the judge never decides (worst case)."""
    def respond(req):
        if req.constraint:
            return '{"decided": false, "answer": ""}' if "judge" in system(req) else '{"answer": "Alpha"}'
        if req.temperature not in PERSONAS:  # the chair (temperature 0)
            return "Answer: Alpha"
        return f"Answer: {['Alpha', 'Beta', 'Gamma'][PERSONAS.index(req.temperature)]}"

    expected = {"mad": 9, "consensus": 9, "promptmad": 9, "truemad": 21, "computemad": 21, "selfadvicemad": 21,
                "dmad-manners": 12, "truedmad": 24, "dmad": 10, "chair": 10, "chair-none": 4}
    assert set(expected) == set(PROTOCOLS)
    for method, calls in expected.items():
        # chair-none is the chair at timing none, whatever the config's rounds (lmad.protocols.debate.setting_of)
        _, preds, _ = debate(method, respond, rounds=0 if method == "chair-none" else 2)
        assert {p["calls"] for p in preds.values()} == {calls}, method
        assert {p["stop_reason"] for p in preds.values()} <= set(DEBATE_STOP_REASONS)


def test_prompt_roles_per_round():
    mad, dmad = protocol("mad"), protocol("dmad")
    assert mad.prompt_roles(0, False, (), shared=True) == []
    assert mad.prompt_roles(0, False, (), shared=False) == ["solver"]
    assert mad.prompt_roles(1, True, (), shared=True) == ["debate_revise"]
    assert dmad.prompt_roles(2, True, (), shared=False) == ["debate_affirmative", "debate_judge",
                                                             "debate_moderator", "debate_negative"]
    manners = ("io", "cot", "stepback", "selfrefine")
    assert set(protocol("truedmad").prompt_roles(1, False, manners, False)) == {
        "debate_advise", "debate_io", "debate_cot", "debate_stepback_concept", "debate_stepback_solve",
        "debate_refine_critique", "debate_refine"}
    every = {r for p in PROTOCOLS.values() for t in (0, 1) for r in p.prompt_roles(t, True, manners, False)}
    assert every <= set(PROMPTS)  # every role has a template


def test_settings_resolve_from_config():
    assert resolve_setting(protocol("mad"), {}, PERSONAS).shares_proposals
    assert resolve_setting(protocol("mad"), {"rounds": 3}, PERSONAS).rounds == 3
    assert not resolve_setting(protocol("mad"), {"methods": {"mad": {"temperatures": [0.2, 0.5, 0.9]}}},
                               PERSONAS).shares_proposals
    assert not resolve_setting(protocol("dmad-manners"), {}, PERSONAS).shares_proposals
    assert resolve_setting(protocol("dmad-manners"), {}, PERSONAS).manners == ("io", "cot", "stepback")
    assert resolve_setting(protocol("truedmad"), {"methods": {"truedmad": {"manners": ["cot"]}}},
                           PERSONAS).manners == ("cot",) * 3
    assert resolve_setting(protocol("dmad"), {}, PERSONAS).temperatures == (0.1, 0.5)
    with pytest.raises(ValueError, match="agents=2 but 3"):
        resolve_setting(protocol("mad"), {"methods": {"mad": {"agents": 2, "temperatures": PERSONAS}}}, PERSONAS)
    with pytest.raises(ValueError, match="unknown debate method"):
        protocol("madd")


def test_templates_exist_for_every_config_role():
    config_roles = {p.stem for p in Path(REPO / "config" / "prompts").glob("debate_*.txt")} | {"chair"}
    used = {r for p in PROTOCOLS.values() for t in (0, 1)
            for r in p.prompt_roles(t, True, ("io", "cot", "stepback", "selfrefine"), False)} - {"solver"}
    assert used == config_roles
