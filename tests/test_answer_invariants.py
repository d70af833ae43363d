"""Cross-method invariants of answer comparison, over every method of the registry.

Each method runs on the real code that decides its prediction (the solver's reading, the debate
round engine with its stop rules, judge, moderator and chair, LMAD's controller) with scripted
agents, on questions of every answer type:

- unanimity: every agent giving X every round predicts X, scored as X alone, for X over option
  letters A-J, yes and no, spans with articles and punctuation, signed and decimal numbers,
  fractions, LaTeX and tuples;
- option order: agents that pick options by their text score the same under every order;
- equivalent forms vote together, different answers never merge;
- verdicts naming a letter, a negative number or an expression are read as that answer;
- hypothesis-generated answer lists: every method predicts the reference typed vote.

A method added to the registry is covered without editing this file.
"""
import itertools
import json
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from answer_reference import reference_vote
from conftest import REPO
from lmad.answers import Gold, Reading, reading_of
from lmad.backends.scripted import ScriptedBackend
from lmad.prompts import load_prompt
from lmad.protocols.debate import debate_prediction_rows, resolve_setting, run_round
from lmad.protocols.debate.decisions import parse_judge, parse_moderator
from lmad.protocols.debate.engine import Member
from lmad.protocols.localized_debate import controller
from lmad.registry import METHODS
from lmad.societies import PoolAgent
from lmad.solver import derive_seed, sample_rows, solver_request
from lmad.tones import tone_role

PROMPTS = {p.stem: load_prompt(p) for p in (REPO / "config" / "prompts").glob("*.txt")}
PERSONAS = (0.1, 0.5, 0.9)
AUX = {"advice": 32, "judge": 32, "moderator": 32, "chair": 32}
LETTERS = "ABCDEFGHIJ"
OPTIONS10 = ("Paris", "Lyon", "Rome", "Madrid", "Berlin", "Vienna", "Oslo", "Lisbon", "Athens", "Dublin")
_TAG = re.compile(r"\[\[(q\d+)\]\]")


def question(i: int, answer_type: str, answer: str = "", choices=(), text: str = "Which one is meant?") -> dict:
    benchmark = {"span": "hotpotqa", "yes_no": "strategyqa", "numeric": "gsm8k", "math": "math500", "choice": "mmlu",
                 "opinion": "globalopinionqa"}[answer_type]
    return {"qid": f"q{i}", "dataset": benchmark, "benchmark": benchmark, "question": f"{text} [[q{i}]]",
            "context": [], "answer": answer, "aliases": [], "answer_type": answer_type, "choices": list(choices),
            "supporting_facts": []}


class Script:
    """What each call says, by question (its [[qid]] tag) and by agent (its temperature):
    ``agent(qid, index, request)`` gives an agent's answer, ``verdict(qid, request)`` the judge,
    moderator and chair's (None: undecided, unparsable, no answer: the protocol then votes)."""

    def __init__(self, agent, verdict=lambda qid, req: None):
        self.agent, self.verdict = agent, verdict

    def __call__(self, req) -> str:
        prompt = "\n".join(c for _, c in req.messages)
        qid = _TAG.search(prompt).group(1)
        if req.role == "judge":  # the judge, the moderator and the chair
            said = self.verdict(qid, req)
            schema = ((req.constraint or {}).get("json") or {}).get("properties", {})
            if "decided" in schema:
                return json.dumps({"decided": said is not None, "answer": said or ""})
            if schema:
                return json.dumps({"answer": said}) if said is not None else "not JSON"
            return f"Having weighed the members.\nAnswer: {said}" if said is not None else ""
        if req.constraint:
            return ScriptedBackend()._default(req)
        said = self.agent(qid, PERSONAS.index(req.temperature) if req.temperature in PERSONAS else 0, req)
        return f"Let me work it out.\nAnswer: {said}" if said else "I do not know."


def agents_of(method) -> int:
    if method.family == "debate":
        return len(resolve_setting(method.protocol, {"rounds": 2}, PERSONAS).temperatures)
    return 1 if method.name == "cot" else len(PERSONAS)


def predictions(name: str, questions: list[dict], script: Script) -> dict[str, str]:
    """{qid: prediction} of method ``name`` on ``questions``, through the code its rule runs."""
    method = METHODS[name]
    k = agents_of(method)
    backend = ScriptedBackend(responder=script)
    temps = PERSONAS[:k] if name != "cot" else (0.1,)
    if method.family in ("single", "lmad"):
        jobs = [{"qid": q["qid"], "stage": "proposals", "round": 0, "agent": a, "temperature": t,
                 "seed": derive_seed(0, q["qid"], a), "request": solver_request(PROMPTS["solver"], q, t, 0, 64),
                 "reading": reading_of(q)} for q in questions for a, t in enumerate(temps)]
        rows = sample_rows(backend, jobs)
        out = {}
        for q in questions:
            answers = [r["answer"] for r in rows if r["qid"] == q["qid"]]
            reading = reading_of(q)
            if method.family == "single":
                out[q["qid"]] = reading.vote(answers)[0]
            else:  # iteration 0 of the last iteration: agreement, else the budget's vote
                state = controller.initial_state([q["qid"]])[0]
                agree = not controller.needs_repair(answers, reading)
                new, _ = controller.transition(state, answers, None, [], 0, 1, reading, skipped=not agree)
                out[q["qid"]] = new["prediction"]
        return out
    setting = resolve_setting(method.protocol, {"rounds": 2}, PERSONAS)
    members = [Member(PoolAgent(i, t, "plain", "standard"), backend) for i, t in enumerate(setting.temperatures)
               ] if method.society else []
    role = tone_role(method.tone)
    tone = PROMPTS[role].user if role else ""
    shared = None
    if setting.shares_proposals and not members:
        shared = sample_rows(backend, [{"qid": q["qid"], "stage": "proposals", "round": 0, "agent": a,
                                        "temperature": t, "seed": (s := derive_seed(0, q["qid"], a)),
                                        "request": solver_request(PROMPTS["solver"], q, t, s, 64),
                                        "reading": reading_of(q)}
                                       for q in questions for a, t in enumerate(setting.temperatures)])
    samples, steps, prev, state = [], [], (), None
    for t in range(setting.rounds + 1):
        res = run_round(method.protocol, name, t, t == setting.rounds, questions, backend, PROMPTS,
                        setting.temperatures, setting.manners, 0, 64, AUX, previous=prev, previous_state=state,
                        proposals=shared if t == 0 else None, tone=tone, members=members)
        samples += res.samples
        steps += res.steps
        prev, state = res.samples, res.state
    return {p["qid"]: p["prediction"] for p in debate_prediction_rows(questions, name, samples, steps, state)}


ALL = sorted(METHODS)


def test_the_registry_is_what_the_invariants_cover():
    assert len(ALL) >= 93 and {METHODS[m].family for m in ALL} == {"single", "lmad", "debate"}


# ------------------------------------------------------------------------------ unanimity

UNANIMOUS = (
    [("choice", x, OPTIONS10) for x in LETTERS]
    + [("yes_no", x, ()) for x in ("yes", "no")]
    + [("span", x, ()) for x in ("The Eiffel Tower.", "U.S.A.", "A", "the Beatles", "Rock-and-roll!")]
    + [("numeric", x, ()) for x in ("-3", "-0.25", "2.5", "1/2", "1,000")]
    + [("math", x, ()) for x in ("\\frac{3}{4}", "x^2+1", "\\sqrt{2}", "(1,2)", "-3", "x-1")]
    + [("opinion", x, ("Agree", "Disagree", "Unsure")) for x in ("A", "C")]
)
UNANIMOUS_QS = [question(i, kind, x, choices) for i, (kind, x, choices) in enumerate(UNANIMOUS)]
YES_NO_SPAN = [question(100 + i, "span", x, text="Are both of them from the same country?") for i, x in
               enumerate(("yes", "no"))]


@pytest.mark.parametrize("name", ALL)
def test_unanimity_predicts_the_shared_answer_and_scores_as_it(name):
    said = {q["qid"]: q["answer"] for q in UNANIMOUS_QS + YES_NO_SPAN}
    script = Script(lambda qid, i, req: said[qid], lambda qid, req: said[qid])
    preds = predictions(name, UNANIMOUS_QS + YES_NO_SPAN, script)
    for q in UNANIMOUS_QS + YES_NO_SPAN:
        reading = reading_of(q)
        alone = reading.extract(f"Answer: {q['answer']}")[0]
        pred = preds[q["qid"]]
        assert pred == alone, (name, q["answer_type"], q["answer"], pred)
        gold = Gold((q["answer"],), q["answer_type"], choices=tuple(q["choices"]))
        assert gold.correct(pred) == gold.correct(alone) == (q["answer_type"] != "opinion"), (name, q["answer"])


# ------------------------------------------------------------------------------ option order

def _permuted(i: int, order: tuple[int, ...]) -> dict:
    options = [OPTIONS10[j] for j in order]
    return question(200 + i, "choice", LETTERS[options.index("Paris")], options)


PERMUTED = ([_permuted(i, p) for i, p in enumerate(itertools.permutations(range(4)))]
            + [_permuted(24 + i, tuple(random.Random(i).sample(range(10), 10))) for i in range(20)])


def _pick(target: str):
    """An agent that answers the letter of the option whose text is ``target``, as the prompt lists it."""
    def letter(req) -> str:
        prompt = "\n".join(c for _, c in req.messages)
        return re.search(rf"^\(([A-J])\) {target}$", prompt, re.MULTILINE).group(1)
    return letter


@pytest.mark.parametrize("name", ALL)
def test_option_order_never_changes_the_score(name):
    # two agents of three pick Paris, the third Lyon; a verdict names Paris's letter
    paris, lyon = _pick("Paris"), _pick("Lyon")
    script = Script(lambda qid, i, req: (lyon if i == 2 else paris)(req), lambda qid, req: paris(req))
    preds = predictions(name, PERMUTED, script)
    scores = {Gold((q["answer"],), "choice", choices=tuple(q["choices"])).correct(preds[q["qid"]]) for q in PERMUTED}
    assert scores == {True}, name


# ------------------------------------------------------------------------------ equivalence

SURFACES = [  # (type, what agents 0, 1, 2 say, choices, the vote's group)
    ("numeric", ("1/2", "0.5", "\\frac{1}{2}"), (), "1/2"),
    ("math", ("1/2", "0.5", "\\frac{1}{2}"), (), "1/2"),
    ("choice", ("(B)", "B", "B) Lyon"), OPTIONS10[:4], "B"),
    ("math", ("x-1", "x+1", "x+1"), (), "x+1"),
    ("math", ("(1,2)", "12", "12"), (), "12"),
    ("numeric", ("-3", "3", "3"), (), "3"),
    ("math", ("-3", "3", "3"), (), "3"),
    ("choice", ("A", "A", "B"), OPTIONS10[:4], "A"),
]
SURFACE_QS = [question(300 + i, kind, choices=choices) for i, (kind, _, choices, _) in enumerate(SURFACES)]


@pytest.mark.parametrize("name", ALL)
def test_equivalent_forms_vote_together_and_different_ones_never_merge(name):
    said = {q["qid"]: s[1] for q, s in zip(SURFACE_QS, SURFACES)}
    preds = predictions(name, SURFACE_QS, Script(lambda qid, i, req: said[qid][i]))
    k = agents_of(METHODS[name])
    for q, (kind, forms, _, group) in zip(SURFACE_QS, SURFACES):
        reading = reading_of(q)
        want = reference_vote([reading.extract(f"Answer: {f}")[0] for f in forms[:k]], kind)
        assert preds[q["qid"]] == want, (name, forms, preds[q["qid"]])
        if k == 3:
            assert reading.key(preds[q["qid"]]) == group


# ------------------------------------------------------------------------------ verdicts

@pytest.mark.parametrize("kind, said, choices, want", [
    ("choice", "A", OPTIONS10, "A"), ("choice", "(J)", OPTIONS10, "J"), ("choice", "Paris", OPTIONS10, "A"),
    ("numeric", "-3", (), "-3"), ("numeric", "-0.5", (), "-1/2"), ("math", "x-1", (), "x-1"),
    ("math", "\\frac{-3}{4}", (), "-3/4"), ("math", "(1,2)", (), "(1,2)"), ("yes_no", "No.", (), "no"),
    ("span", "The Beatles", (), "The Beatles"), ("span", "A", (), "A"),
])
def test_a_verdict_naming_any_answer_is_read_as_it(kind, said, choices, want):
    reading = Reading(kind, kind == "yes_no", tuple(choices))
    judge = parse_judge(json.dumps({"decided": True, "answer": said}), reading)
    moderator = parse_moderator(json.dumps({"answer": said}), reading)
    assert (judge.decided, judge.answer, judge.error) == (True, want, "")
    assert (moderator.decided, moderator.answer, moderator.error) == (True, want, "")


VERDICT_QS = [question(400, "choice", "A", OPTIONS10[:4]), question(401, "numeric", "-3"),
              question(402, "math", "x-1")]


@pytest.mark.parametrize("name", [m for m in ALL if METHODS[m].family == "debate"
                                  and (METHODS[m].protocol.stop == "judge" or METHODS[m].protocol.final != "vote")])
def test_judges_moderators_and_chairs_decide_with_any_answer(name):
    # the agents disagree every round; the verdict names the gold, which no agent majority holds
    verdict = {"q400": "A", "q401": "-3", "q402": "x-1"}
    agents = {"q400": ("B", "C", "D"), "q401": ("3", "4", "5"), "q402": ("x+1", "x+2", "x+3")}
    preds = predictions(name, VERDICT_QS, Script(lambda qid, i, req: agents[qid][i], lambda qid, req: verdict[qid]))
    for q in VERDICT_QS:
        assert Gold((q["answer"],), q["answer_type"]).correct(preds[q["qid"]]), (name, q["qid"], preds[q["qid"]])


# ------------------------------------------------------------------------------ any answers

FORMS = {
    "choice": st.sampled_from(["A", "(A)", "a", "B", "B) Lyon", "(C)", "D", "", "A or B", "Paris"]),
    "numeric": st.sampled_from(["-3", "3", "1/2", "0.5", "\\frac12", "2.50", "", "five", "1,000", "1000"]),
    "math": st.sampled_from(["x-1", "x+1", "(1,2)", "12", "\\frac{1}{2}", "0.5", "", "\\sqrt{2}", "-3", "3"]),
    "span": st.sampled_from(["Paris", "paris.", "The Paris", "A", "", "London", "-3", "3", "U.S.A.", "usa"]),
    "yes_no": st.sampled_from(["yes", "Yes, it is.", "no", "No.", "", "maybe"]),
}
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_method_predicts_the_reference_typed_vote(data):
    cases = []
    for i in range(8):
        kind = data.draw(st.sampled_from(sorted(FORMS)))
        forms = data.draw(st.lists(FORMS[kind], min_size=3, max_size=3))
        cases.append((question(500 + i, kind, choices=OPTIONS10[:4] if kind == "choice" else ()), forms))
    said = {q["qid"]: forms for q, forms in cases}
    qs = [q for q, _ in cases]
    for name in ALL:
        preds = predictions(name, qs, Script(lambda qid, i, req: said[qid][i]))
        k = agents_of(METHODS[name])
        for q, forms in cases:
            reading = reading_of(q)
            read = [reading.extract(f"Answer: {f}" if f else "I do not know.")[0] for f in forms[:k]]
            assert preds[q["qid"]] == reference_vote(read, q["answer_type"]), (name, q["answer_type"], forms)


# ------------------------------------------------------------------------------ the workflow

@pytest.fixture(scope="module")
def unanimous_run(tmp_path_factory):
    from conftest import make_config, scripted_model, snakemake

    workdir = tmp_path_factory.mktemp("unanimous")
    sets = {"mmlu": "mmlu.jsonl", "gsm8k": "gsm8k.jsonl", "math500": "math500.jsonl"}
    datasets = {d: {"source": "local", "path": str(REPO / "data" / "demo" / f), "n": 3} for d, f in sets.items()}
    make_config(workdir, models={"oracle": {**scripted_model(), "responder": "unanimous_oracle:respond"}},
                backbones=["oracle"], methods=("cot", "sc", "consensus", "dmad", "lmad", "lmad-dag"), datasets=datasets,
                lmad={"iterations": 2, "local_rounds": 1}, debate={"rounds": 1})
    snakemake(workdir, env={"PYTHONPATH": f"{REPO / 'tests'}:{REPO / 'workflow'}"})
    return workdir


def test_unanimous_agents_predict_their_answer_in_every_family_through_the_workflow(unanimous_run):
    import polars as pl

    preds = pl.concat([pl.read_parquet(p) for p in sorted((unanimous_run / "results").glob("oracle/*/predictions/*"))],
                      how="diagonal_relaxed")
    assert set(preds["method"]) == {"cot", "sc", "consensus", "dmad", "lmad", "lmad-dag"}
    want = {"mmlu": "A", "gsm8k": "-3", "math500": "x-1"}
    for row in preds.to_dicts():
        assert row["prediction"] == want[row["dataset"]], row
    stops = dict(zip(preds["method"], preds["stop_reason"]))
    assert stops["consensus"] == "consensus" and stops["dmad"] == "judge" and stops["lmad"] == "agreement"
