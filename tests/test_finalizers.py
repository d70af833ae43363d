"""Finalizers (lmad.studies.finalizers.finalize, lmad.studies.finalizers.stages) with the scripted test double: the
vote reproduces every method's own tie rule, the judge is called on ties only and picks among
the tied answers, LVD overturns the majority only with verbatim evidence, no reply can raise,
and a debate method's own final answer is its last round's vote."""
import json

from hypothesis import given, strategies as st

from lmad.answers import Gold, majority_vote
from lmad.answers.span import normalize_answer
from lmad.backends.scripted import ScriptedBackend
from lmad.studies.finalizers.finalize import (Ballot, candidates, parse_judge_choice, parse_verification, tied)
from lmad.prompts import load_prompt
from lmad.studies.finalizers.stages import ballots, finalize_ballots

from conftest import REPO

JUDGE = load_prompt(REPO / "config" / "prompts" / "finalize_judge.txt")
VERIFIER = load_prompt(REPO / "config" / "prompts" / "verifier.txt")
MAX = {"judge": 16, "verifier": 64}
CONTEXT = [{"title": "Paris", "sentences": ["Paris is the capital of France.", "It lies on the Seine."]},
           {"title": "Lyon", "sentences": ["Lyon is a city in France."]}]


def question(qid="q1"):
    return {"qid": qid, "dataset": "hotpotqa", "benchmark": "hotpotqa", "question": "What is the capital of France?",
            "context": CONTEXT, "answer": "Paris", "aliases": [], "qtype": "bridge", "supporting_facts": [], "source": "t",
            "answer_type": "span"}


def ballot(answers, qid="q1", t=0):
    return Ballot(qid, "hotpotqa", "mad", t, t, list(answers), question(qid))


def run(ballots_, responder, names=("vote", "vote_judge", "lvd"), weight=1.5):
    backend = ScriptedBackend(responder=responder)
    rows, sent = finalize_ballots(ballots_, list(names), backend, JUDGE, VERIFIER, MAX, weight, 3)
    return {(r["qid"], r["round"], r["finalizer"]): r for r in rows}, backend.calls, sent


def kind(req):
    c = req.constraint or {}
    return "judge" if "choice" in c else "verify" if "json" in c else "other"


def verifier_says(supported_for: dict):
    """A verifier that supports (with the given quote) exactly the candidates in the dict."""
    def respond(req):
        if kind(req) == "judge":
            return req.constraint["choice"][-1]  # picks the last tied answer
        cand = req.messages[-1][1].split("Proposed answer: ")[1].split("\n")[0]
        quote = supported_for.get(cand)
        return json.dumps({"supported": quote is not None, "quote": quote or ""})
    return respond


answer = st.sampled_from(["Paris", "paris", "Lyon", "Nice", "", "the Paris", "Lyon."])


@given(st.lists(answer, min_size=1, max_size=6))
def test_vote_is_the_methods_own_tie_rule(answers):
    rows, calls, _ = run([ballot(answers)], verifier_says({}), names=["vote"])
    row = rows[("q1", 0, "vote")]
    assert row["prediction"] == majority_vote(answers, "span")[0] and calls == []
    assert row["source"] == ("vote" if any(normalize_answer(a) for a in answers) else "empty")


@given(st.lists(answer, min_size=1, max_size=6))
def test_judge_only_on_ties_and_only_among_the_tied(answers):
    rows, calls, _ = run([ballot(answers)], verifier_says({}), names=["vote", "vote_judge"])
    vote, judged = rows[("q1", 0, "vote")], rows[("q1", 0, "vote_judge")]
    top = tied(candidates(answers, "span"))
    if len(top) > 1:
        assert [kind(c) for c in calls] == ["judge"] and judged["calls"] == 1
        assert calls[0].constraint["choice"] == [c.answer for c in top]
        assert judged["prediction"] == top[-1].answer and judged["source"] == "judge"
    else:
        assert calls == [] and judged["calls"] == 0 and judged["prediction"] == vote["prediction"]


def test_tie_goes_to_agent_0_without_a_judge_and_to_the_judges_pick_with_one():
    rows, calls, _ = run([ballot(["Lyon", "Paris"]), ballot(["Paris", "Paris", "Lyon"], qid="q2")],
                         verifier_says({}), names=["vote", "vote_judge"])
    assert rows[("q1", 0, "vote")]["prediction"] == "Lyon" and rows[("q1", 0, "vote")]["tie"]
    assert rows[("q1", 0, "vote_judge")]["prediction"] == "Paris"
    assert rows[("q2", 0, "vote_judge")]["calls"] == 0 and len(calls) == 1  # no tie, no call


def test_unusable_judge_reply_falls_back_to_the_tie_rule_recorded():
    rows, _, _ = run([ballot(["Lyon", "Paris"])], lambda req: "Marseille", names=["vote_judge"])
    row = rows[("q1", 0, "vote_judge")]
    assert (row["prediction"], row["source"]) == ("Lyon", "judge_fallback") and "not one of" in row["parse_error"]


def test_lvd_overturns_a_wrong_majority_only_with_verbatim_evidence():
    majority_wrong = ["Lyon", "Lyon", "Paris"]
    verified = verifier_says({"Paris": "Paris is the capital of France."})
    rows, calls, _ = run([ballot(majority_wrong)], verified, names=["vote", "lvd"], weight=1.5)
    lvd = rows[("q1", 0, "lvd")]
    assert [kind(c) for c in calls] == ["verify", "verify"]  # one per distinct candidate
    assert (lvd["prediction"], lvd["source"], lvd["evidence"]) == ("Paris", "lvd", [False, True])
    assert lvd["scores"] == [2.0, 2.5] and rows[("q1", 0, "vote")]["prediction"] == "Lyon"
    # a quotation that is not in the context is no evidence: the majority stands
    invented = verifier_says({"Paris": "Paris has always been the capital of France."})
    rows, _, _ = run([ballot(majority_wrong)], invented, names=["lvd"])
    assert rows[("q1", 0, "lvd")]["prediction"] == "Lyon" and rows[("q1", 0, "lvd")]["source"] == "lvd_unchanged"
    # a weight below the count gap cannot overturn
    rows, _, _ = run([ballot(majority_wrong)], verified, names=["lvd"], weight=0.5)
    assert rows[("q1", 0, "lvd")]["prediction"] == "Lyon"


def test_lvd_calls_nothing_when_all_agree():
    rows, calls, _ = run([ballot(["Paris", "paris", "Paris."])], verifier_says({}), names=["lvd"])
    assert calls == [] and rows[("q1", 0, "lvd")]["prediction"] == "Paris"


@given(st.lists(answer, min_size=1, max_size=6),
       st.sampled_from(["", "{", "[" * 1000, "null", '{"supported": "yes", "quote": 1}', "9" * 5000,
                        '{"supported": true}', '{"supported": true, "quote": "x", "extra": 1}']))
def test_every_reply_unparseable_never_raises_and_leaves_the_vote(answers, garbage):
    rows, _, _ = run([ballot(answers)], lambda req: garbage)
    vote = rows[("q1", 0, "vote")]["prediction"]
    assert rows[("q1", 0, "lvd")]["prediction"] == vote
    assert rows[("q1", 0, "vote_judge")]["prediction"] == vote
    for f in ("lvd", "vote_judge"):
        row = rows[("q1", 0, f)]
        assert bool(row["parse_error"]) == (row["calls"] > 0)


@given(st.text(max_size=300))
def test_parsers_never_raise(text):
    assert parse_judge_choice(text, ["a", "b"], "span")[0] in (None, 0, 1)
    assert parse_verification(text, CONTEXT, 3).evidence in (True, False)


def test_identical_requests_of_different_rounds_are_sent_once_and_counted_in_each():
    same = [ballot(["Lyon", "Paris"], t=0), ballot(["Lyon", "Paris"], t=1)]
    rows, calls, sent = run(same, verifier_says({}), names=["vote_judge", "lvd"])
    assert sent == 3 and len(calls) == 3  # one judge + two verifier calls, shared by both rounds
    assert rows[("q1", 0, "lvd")]["calls"] == rows[("q1", 1, "lvd")]["calls"] == 2


def test_a_question_that_stopped_keeps_its_stop_rounds_answers():
    def rows(qids_answers, t):
        return [{"qid": q, "agent": a, "answer": x} for q, xs in qids_answers.items() for a, x in enumerate(xs)]

    qs = {"q1": question("q1"), "q2": question("q2")}
    tables = [rows({"q1": ["A", "A", "A"], "q2": ["A", "B", "C"]}, 0), rows({"q2": ["B", "B", "C"]}, 1)]
    got = {(b.qid, b.round): (b.answers_round, b.answers) for b in ballots(qs, "hotpotqa", "consensus", tables)}
    assert got[("q1", 1)] == (0, ["A", "A", "A"]) and got[("q2", 1)] == (1, ["B", "B", "C"])


def test_round_level_vote_reproduces_mad_and_consensus_final_answers():
    """The engine's own final rule, replayed by the vote finalizer on the saved rounds."""
    from lmad.protocols.debate import protocol, run_round
    qs = _demo_questions()
    backend = ScriptedBackend()
    prompts = {r: load_prompt(REPO / "config" / "prompts" / f"{f}.txt")
               for r, f in (("solver", "solver"), ("debate_revise", "debate_revise"))}
    for method in ("mad", "consensus"):
        tables, state = [], None
        for t in range(3):
            res = run_round(protocol(method), method, t, t == 2, qs, backend, prompts, [0.1, 0.5, 0.9], ["cot"] * 3,
                            0, 64, {"advice": 16, "judge": 16, "moderator": 16},
                            previous=tables[-1] if tables else (), previous_state=state)
            tables.append(res.samples)
            state = res.state
        by_q = {q["qid"]: q for q in qs}
        final = ballots(by_q, "hotpotqa", method, tables)
        rows, _, _ = run([b for b in final if b.round == 2], verifier_says({}), names=["vote"])
        own = {s["qid"]: s["prediction"] for s in state}
        assert {q: rows[(q, 2, "vote")]["prediction"] for q in own} == own


def _demo_questions():
    """Two demo HotpotQA questions as canonical question rows."""
    from lmad.data.loaders import load_jsonl, select

    return select(load_jsonl(REPO / "data" / "demo" / "hotpotqa.jsonl", "hotpotqa"), 2, 0)



# ---- typed questions: candidates, votes and keys by the answer type

def typed_question(qid, answer_type, answer, choices=()):
    return question(qid) | {"dataset": "set", "answer_type": answer_type, "answer": answer, "choices": list(choices)}


def typed_ballot(answers, qid, answer_type, answer, choices=(), t=0):
    return Ballot(qid, "set", "mad", t, t, list(answers), typed_question(qid, answer_type, answer, choices))


def test_equivalent_answers_are_one_candidate_and_vote_together():
    """Math: "1/2" and "0.5" are one candidate (span normalization keeps them apart and ties with
    "3"); choice: "(B)" and "B"; the prediction's key is the type's canonical form."""
    assert [(c.norm, c.count) for c in candidates(["3", "1/2", "0.5"], "math")] == [("1/2", 2), ("3", 1)]
    assert [c.count for c in candidates(["3", "1/2", "0.5"], "span")] == [1, 1, 1]
    bs = [typed_ballot(["3", "1/2", "0.5"], "q1", "math", "\\frac{1}{2}"),
          typed_ballot(["C", "(B)", "B"], "q2", "choice", "B", ["w", "x", "y", "z"])]
    rows, calls, _ = run(bs, verifier_says({}), names=["vote", "vote_judge"])
    assert calls == []  # no tie: no judge
    assert [(rows[(q, 0, "vote")]["prediction"], rows[(q, 0, "vote")]["prediction_norm"]) for q in ("q1", "q2")] == [
        ("1/2", "1/2"), ("(B)", "B")]
    assert rows[("q1", 0, "vote")]["counts"] == [2, 1] and not rows[("q2", 0, "vote")]["tie"]


def test_the_judge_reply_is_matched_by_the_types_key():
    assert parse_judge_choice("0.5", ["1/2", "3"], "math") == (0, "")
    assert parse_judge_choice("(B)", ["C", "B"], "choice") == (1, "")
    assert parse_judge_choice("0.5", ["1/2", "3"], "span")[0] is None


def test_lvd_keeps_the_vote_when_it_picks_an_equivalent_answer():
    verified = verifier_says({"0.5": "Paris is the capital of France.", "1/2": "Paris is the capital of France."})
    rows, _, _ = run([typed_ballot(["1/2", "0.5", "3"], "q1", "math", "\\frac{1}{2}")], verified, names=["lvd"])
    assert (rows[("q1", 0, "lvd")]["prediction"], rows[("q1", 0, "lvd")]["source"]) == ("1/2", "lvd_unchanged")


def test_readout_of_typed_questions_counts_equivalent_answers_right_and_unturned():
    """A finalizer's "0.5" against the round's vote "1/2" is no overturn; both are the gold
    "\\frac{1}{2}"; "(B)" and "B" alike."""
    import polars as pl

    from lmad.paper.readout import readout_rows

    bs = [typed_ballot(["1/2", "0.5", "3"], "q1", "math", "\\frac{1}{2}"),
          typed_ballot(["(B)", "B", "C"], "q2", "choice", "B", ["w", "x", "y", "z"])]
    rows, _, _ = run(bs, verifier_says({}), names=["vote"])
    frame = pl.DataFrame([r | {"backbone": "bb", "prediction": {"q1": "0.5", "q2": "B"}[r["qid"]]}
                          for r in rows.values()])
    golds = {("set", "q1"): Gold(("\\frac{1}{2}",), "math"), ("set", "q2"): Gold(("B",), "choice")}
    (row,) = readout_rows(frame, golds, {})
    assert (row["vote_acc"], row["hit_rate"], row["final_em"], row["round_vote_acc"], row["overturns"]) == (
        100, 100, 100, 100, 0)
    (span,) = readout_rows(frame, {k: Gold(tuple(g), "span") for k, g in golds.items()}, {})
    assert span["final_em"] == 50 and span["overturns"] == 50  # as spans: 0.5 is not 1/2, nor the gold


# ---- the readout: the headroom identity with every finalizer, at every round

ROUND = st.lists(answer, min_size=1, max_size=4)


@given(st.lists(st.tuples(st.lists(ROUND, min_size=1, max_size=3), st.sampled_from(["Paris", "Lyon", "Nice"])),
                min_size=1, max_size=5),
       st.sampled_from(["garbage", "supports_all", "picks_last"]))
def test_headroom_identity_holds_with_every_finalizer(questions, mode):
    """Random rounds of answers and golds (0 % and 100 % cells, one question, one agent, all
    replies unusable): gain over the R0 vote = recovered + new-correct − damage on every row."""
    import polars as pl

    from lmad.paper.readout import readout_rows, with_average

    def respond(req):
        if mode == "garbage":
            return "?"
        if kind(req) == "judge":
            return req.constraint["choice"][-1]
        return json.dumps({"supported": True, "quote": "Paris is the capital of France."})

    bs, golds = [], {}
    for i, (rounds, gold) in enumerate(questions):
        qid = f"q{i}"
        golds[("hotpotqa", qid)] = Gold((gold,), "span")
        width = len(rounds[0])
        for t, answers in enumerate(rounds):
            bs.append(ballot((answers * width)[:width], qid=qid, t=t))
    # every question needs every round: pad with the question's last round (a stopped question)
    last = max(b.round for b in bs)
    for i in range(len(questions)):
        mine = [b for b in bs if b.qid == f"q{i}"]
        for t in range(len(mine), last + 1):
            bs.append(ballot(mine[-1].answers, qid=f"q{i}", t=t))
    rows, _, _ = run(bs, respond)
    frame = pl.DataFrame([r | {"backbone": "bb"} for r in rows.values()])
    out = readout_rows(frame, golds, {})
    assert len(out) == (last + 1) * 3
    for r in with_average(out).to_dicts():
        assert abs(r["gain"] - (r["recovered"] + r["new_correct"] - r["damage"])) < 1e-9
        assert 0 <= r["final_em"] <= 100 and 0 <= r["overturns_correct"] <= r["overturns"] <= 100


def test_new_tables_have_their_place_in_the_layout():
    from lmad import layout

    assert layout.finalized("qwen", "musique") == "results/qwen/musique/finalizers.parquet"
    assert layout.parse(layout.finalized("qwen", "musique")) == layout.Location("finalized", "qwen", "musique")
    assert layout.society("qwen", "pool") == "results/qwen/societies/pool.parquet"
    assert layout.parse(layout.society("qwen", "members")) == layout.Location("society", "qwen", stage="members")
    assert layout.parse(layout.samples("qwen", "musique", "matched")).stage == "matched"


def test_headroom_lift_correlations_and_their_edges():
    import math

    from lmad.paper.readout import correlations

    line = [{"headroom": h, "lift": 2 * h - 1} for h in (0.0, 10.0, 25.0, 40.0)]
    got = correlations(line)
    assert got["pearson_r"] == 1.0 or abs(got["pearson_r"] - 1) < 1e-12
    assert abs(got["spearman_rho"] - 1) < 1e-12 and got["n_cells"] == 4 and got["note"] == ""
    monotone = [{"headroom": h, "lift": h ** 3} for h in (1.0, 2.0, 3.0, 10.0)]
    assert abs(correlations(monotone)["spearman_rho"] - 1) < 1e-12 and correlations(monotone)["pearson_r"] < 1
    for cells, why in ((line[:2], "at least 3"), ([{"headroom": 5.0, "lift": x} for x in (1, 2, 3)], "same")):
        got = correlations(cells)
        assert math.isnan(got["pearson_r"]) and math.isnan(got["spearman_rho"]) and why in got["note"]


def test_a_method_without_predictions_is_left_out_of_the_scatter():
    import polars as pl

    from lmad.paper.readout import lift_cells

    rows, _, _ = run([ballot(["Paris", "Lyon", "Lyon"])], verifier_says({}), names=["vote"])
    fin = pl.DataFrame([r | {"backbone": "bb"} for r in rows.values()]
                       + [r | {"backbone": "bb", "method": "consensus"} for r in rows.values()])
    preds = pl.DataFrame([{"backbone": "bb", "dataset": "hotpotqa", "method": "mad", "qid": "q1", "prediction": "Paris"}])
    cells = lift_cells(fin, preds, {("hotpotqa", "q1"): Gold(("Paris",), "span")})
    assert [(c["method"], c["headroom"], c["lift"]) for c in cells] == [("mad", 100.0, 100.0)]
    assert lift_cells(fin.clear(), preds, {}) == []
