"""Disagreement layers (docs/studies.md "Disagreement layers"): tone reaches only debate turns; layer A
(self-report) in the turn's own conversation, one batch per round, every fallback recorded,
never counted as cost; layer B's judge is blind (parent + reply only) and is validated on its
authored battery with a two-sided floor; the table's edges (0 / 100 % cells, n = 1, every reply
unparsable, a FAILED judge); and the whole thing through Snakemake with the test double."""
import json
import math
import os
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import REPO, make_config, snakemake, write_config
from lmad.backends.scripted import ScriptedBackend
from lmad.disagreement_labels import (AGREEMENT, CHANGED, MOVES, PUSHBACK_SCHEMA, SELF_REPORT_SCHEMA, STANCE,
                                      SELF_REPORT_STEP, parse_pushback, parse_self_report)
from lmad.studies.disagreement.pushback import (build_battery, parent_text, pushback_request, replies_with_parents,
                                        validate)
from lmad.studies.disagreement.tables import disagreement_markdown, disagreement_rows
from lmad.prompts import load_prompt
from lmad.protocols.debate import debate_prediction_rows, resolve_setting, run_round
from lmad.protocols.debate.decisions import JUDGE_SCHEMA, MODERATOR_SCHEMA
from lmad.registry import METHODS, method
from lmad.schemas import read_table
from lmad.tones import TONES, split_tone, toned, with_tone

PROMPTS = {p.stem: load_prompt(p) for p in (REPO / "config" / "prompts").glob("*.txt")}
PERSONAS = [0.1, 0.5, 0.9]
AUX = {"advice": 32, "judge": 32, "moderator": 32}
CONTEXT = [{"title": "Alpha", "sentences": ["Alpha is a city."]}, {"title": "Beta", "sentences": ["Beta is a town."]}]
QUESTIONS = [{"qid": f"q{i}", "dataset": "hotpotqa", "benchmark": "hotpotqa", "answer_type": "span",
              "question": f"Which place is meant in question {i}?", "context": CONTEXT, "answer": "Alpha",
              "aliases": []} for i in range(2)]
TONE = "TONE-INSTRUCTION-XYZ"


def text(req) -> str:
    return "\n".join(c for _, c in req.messages)


def kind(req) -> str:
    schema = (req.constraint or {}).get("json")
    if schema == SELF_REPORT_SCHEMA:
        return "self_report"
    if schema in (JUDGE_SCHEMA, MODERATOR_SCHEMA):
        return "judge"
    return "turn"


def run(name, tone="", self_report=None, responder=None, rounds=2, persistence=0.0):
    """Every round of a debating method on QUESTIONS; (backend, batches, results)."""
    spec = method(name)
    setting = resolve_setting(spec.protocol, {"rounds": rounds}, PERSONAS)
    backend = ScriptedBackend(responder=responder)
    batches, real = [], backend.generate

    def generate(requests):
        batches.append([kind(r) for r in requests])
        return real(requests)

    backend.generate = generate
    results, prev, state = [], (), None
    for t in range(setting.rounds + 1):
        res = run_round(spec.protocol, name, t, t == setting.rounds, QUESTIONS, backend, PROMPTS,
                        setting.temperatures, setting.manners, 0, 64, AUX, previous=prev, previous_state=state,
                        tone=tone, self_report=self_report, persistence=persistence)
        results.append(res)
        prev, state = res.samples, res.state
    return backend, batches, results


# ------------------------------------------------------------------------------ tone

def test_tone_names_and_registry():
    assert split_tone("mad@hostile") == ("mad", "hostile") and split_tone("mad") == ("mad", "neutral")
    assert toned("dmad", "neutral") == "dmad" and toned("dmad", "friendly") == "dmad@friendly"
    for bad in ("mad@angry", "mad@neutral"):
        with pytest.raises(ValueError, match="unknown tone"):
            split_tone(bad)
    for name, spec in METHODS.items():
        if spec.family == "debate" and spec.society is None:  # a society variant is neutral only (lmad.societies)
            assert spec.base in METHODS and METHODS[spec.base].protocol == spec.protocol
            assert name == toned(spec.base, spec.tone)
            assert all(toned(spec.base, t) in METHODS for t in TONES)
    assert method("mad@hostile").label == "MAD (hostile)"
    assert with_tone((("user", "u"),), "T") == (("system", "T"), ("user", "u"))
    assert with_tone((("system", "s"), ("user", "u")), "") == (("system", "s"), ("user", "u"))


def undecided(req) -> str:
    """The test double, except that dMAD's judge never decides (so its debate reaches round 2)."""
    if (req.constraint or {}).get("json") == JUDGE_SCHEMA:
        return json.dumps({"decided": False, "answer": ""})
    return ScriptedBackend()._default(req)


@pytest.mark.parametrize("name", ["mad", "truemad", "dmad-manners", "dmad"])
def test_tone_reaches_debate_turns_only(name):
    backend, _, _ = run(name, tone=TONE, responder=undecided)
    neutral = run(name, responder=undecided)[0].calls  # the same method without a tone
    opening = {r.key("m") for r in run(name, responder=undecided, rounds=0)[0].calls if kind(r) == "turn"}
    toned_turns = [r for r in backend.calls if TONE in text(r)]
    for req in toned_turns:
        assert req.messages[0][0] == "system" and req.messages[0][1].endswith(TONE) and kind(req) == "turn"
    # round 0 (proposals, openings) is the neutral method's; every later turn carries the tone; no judge
    # or moderator ever does
    assert {r.key("m") for r in backend.calls if kind(r) == "turn" and TONE not in text(r)} == opening
    assert len(toned_turns) == sum(kind(r) == "turn" for r in neutral) - len(opening) > 0
    assert not any(TONE in text(r) for r in backend.calls if kind(r) == "judge")


def test_neutral_tone_sends_todays_requests():
    plain = run("mad")[0].calls
    explicit = run("mad", tone="")[0].calls
    assert [r.key("m") for r in plain] == [r.key("m") for r in explicit]


# -------------------------------------------------------------------------- layer A

def test_self_report_in_the_turns_conversation_one_batch_per_round_not_costed():
    prompt = PROMPTS["self_report"]
    backend, batches, results = run("mad", tone=TONE, self_report=prompt)
    # round 0 reuses no proposals here: 6 solver calls; then per round 6 revisions and 6 self-reports
    assert batches == [["turn"] * 6, ["turn"] * 6, ["self_report"] * 6, ["turn"] * 6, ["self_report"] * 6]
    replies = {(r["qid"], r["round"], r["agent"]): r["response"] for res in results for r in res.samples}
    reports = [s for res in results for s in res.steps if s["step"] == SELF_REPORT_STEP]
    assert len(reports) == 12 and {s["round"] for s in reports} == {1, 2}
    for req in (r for r in backend.calls if kind(r) == "self_report"):
        roles = [role for role, _ in req.messages]
        assert roles == ["system", "user", "assistant", "user"] and TONE in req.messages[0][1]
        assert req.messages[2][1] in replies.values() and req.messages[3][1] == prompt.user
    for s in reports:
        label = json.loads(s["parsed"])
        assert label["agreement"] in AGREEMENT and label["changed_mind"] in CHANGED and s["parse_error"] == ""
    preds = debate_prediction_rows(QUESTIONS, "mad", [r for res in results for r in res.samples],
                                   [s for res in results for s in res.steps], results[-1].state)
    assert {p["calls"] for p in preds} == {9}  # the self-reports are a measurement, not the method's cost


def test_every_unparsable_self_report_is_recorded_never_raises():
    def garbage(req):
        return "I mostly agree!" if kind(req) == "self_report" else f"Reasoning.\nAnswer: Alpha {req.seed % 2}"

    _, _, results = run("mad", self_report=PROMPTS["self_report"], responder=garbage)
    reports = [s for res in results for s in res.steps if s["step"] == SELF_REPORT_STEP]
    assert reports and all(s["parsed"] == "" and s["parse_error"].startswith("invalid JSON") for s in reports)
    rows = disagreement_rows([s | {"backbone": "b", "method": "mad", "dataset": "d"} for s in reports], [], "off")
    assert [r["a_unlabelled"] for r in rows] == [6, 6] and all(math.isnan(r["a_full"]) for r in rows)


@given(st.text(max_size=300))
def test_label_parsers_never_raise(reply):
    for parse in (parse_self_report, parse_pushback):
        label, error = parse(reply)
        assert (label is None) == bool(error)


@given(st.sampled_from(AGREEMENT), st.sampled_from(CHANGED), st.sampled_from(STANCE), st.sampled_from(MOVES),
       st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))
def test_label_parsers_are_strict(agreement, changed, stance, move, extra):
    assert parse_self_report(json.dumps({"agreement": agreement, "changed_mind": changed}))[0] == {
        "agreement": agreement, "changed_mind": changed}
    assert parse_pushback(json.dumps({"stance": stance, "move": move}))[0] == {"stance": stance, "move": move}
    extra = {k: v for k, v in extra.items() if k not in ("agreement", "changed_mind", "stance", "move")}
    if extra:
        assert parse_self_report(json.dumps({"agreement": agreement, "changed_mind": changed, **extra}))[0] is None
    assert parse_self_report(json.dumps({"agreement": agreement.upper() + "!", "changed_mind": changed}))[0] is None
    assert parse_pushback(json.dumps([stance, move]))[0] is None


# -------------------------------------------------------------------------- layer B

def test_blind_judge_sees_parent_and_reply_only():
    prompt = PROMPTS["self_report"]
    _, _, results = run("mad@hostile", tone=TONE, self_report=prompt)
    samples = [r for res in results for r in res.samples]
    items = replies_with_parents(method("mad").protocol, samples)
    assert len(items) == 12  # 2 questions x 3 agents x rounds 1, 2
    by = {(r["qid"], r["round"], r["agent"]): r["response"] for r in samples}
    for it in items:
        req = pushback_request(PROMPTS["pushback_judge"], it["parent"], it["reply"], 48)
        seen = text(req)
        for forbidden in (TONE, "hostile", "friendly", "Agent 1", "Agent 2", "Agent 3", "scripted", "agreement",
                          "changed_mind", "Alpha is a city", "Which place is meant"):
            assert forbidden not in seen, forbidden
        peers = [by[(it["qid"], it["round"] - 1, j)] for j in range(3) if j != it["agent"]]
        assert it["parent"] == parent_text(dict(enumerate(peers)))
        assert req.constraint == {"json": PUSHBACK_SCHEMA} and req.temperature == 0.0


def test_sequential_turns_see_this_rounds_earlier_speaker():
    samples = [{"qid": "q", "round": t, "agent": a, "response": f"r{t}a{a}"} for t in range(3) for a in range(2)]
    items = {(i["round"], i["agent"]): i["parent"] for i in replies_with_parents(method("dmad").protocol, samples)}
    assert items == {(1, 0): "r0a1", (1, 1): "r1a0", (2, 0): "r1a1", (2, 1): "r2a0"}


def test_battery_is_balanced_and_the_floor_is_two_sided():
    qs = QUESTIONS + [{"qid": "y", "dataset": "strategyqa", "benchmark": "strategyqa", "question": "Is it?", "context": CONTEXT,
                       "answer": "yes", "aliases": [], "answer_type": "yes_no"}]
    items = build_battery(qs, 20, seed=0)
    kinds = [i.kind for i in items]
    assert kinds.count("rebuttal") == kinds.count("endorsement") == 6
    assert items == build_battery(qs, 20, seed=0)
    assert all("no" in i.reply for i in items if i.qid == "y" and i.kind == "rebuttal")

    def judged(answer):
        return [{"kind": i.kind, "stance": answer(i)} for i in items]

    perfect = validate(judged(lambda i: i.expected), 0.8)
    assert perfect["passed"] and perfect["rebuttal_recall"] == perfect["endorsement_recall"] == 1.0
    always_agree = validate(judged(lambda i: "agree"), 0.8)
    assert not always_agree["passed"] and always_agree["rebuttal_recall"] == 0.0
    assert "rebuttals" in always_agree["reason"]
    unparsed = validate(judged(lambda i: ""), 0.8)
    assert not unparsed["passed"] and unparsed["n_unparsed"] == len(items)
    assert not validate([], 0.8)["passed"]


def test_lmad_local_turns_rebuild_the_requests_the_local_debate_sent():
    from lmad.studies.disagreement.local import local_turns
    from lmad.protocols.localized_debate.local_debate import run_debate

    items = [{"qid": q["qid"], "question": q, "committed": ["Alpha is a city."] if i else [],
              "segments": [["Alpha is a city."], ["Beta is a town."], ["Beta is a town.", "So Beta."]],
              "conflict": "Alpha or Beta", "witness_claims": ["Alpha", "Beta", "So Beta."], "tone": TONE}
             for i, q in enumerate(QUESTIONS)]
    backend = ScriptedBackend()
    [rows0, rows1] = run_debate(backend, PROMPTS["debater"], items, 1, 2, PERSONAS, 0, 32)
    sent = {r.key("m") for r in backend.calls}
    assert all(TONE in r.messages[0][1] for r in backend.calls)
    rebuilt = []
    for item, rows in zip(items, (rows0, rows1)):
        loc = [{k: item[k] for k in ("qid", "segments", "conflict", "witness_claims")}]
        turns = local_turns(PROMPTS["debater"], TONE, {item["qid"]: item["question"]},
                            {item["qid"]: item["committed"]}, loc, rows, 32)
        assert [(t["round"], t["agent"]) for t in turns] == [(r, a) for r in (1, 2) for a in range(3)]
        assert turns[0]["parent"] == "Earlier response 1:\nBeta\n\nEarlier response 2:\nSo Beta."
        rebuilt += [t["request"].key("m") for t in turns]
    assert set(rebuilt) == sent and len(rebuilt) == len(backend.calls) == 12


# ---------------------------------------------------------------------------- table

CELL = st.lists(st.tuples(st.sampled_from([*AGREEMENT, None]), st.sampled_from([*STANCE, None])), min_size=1,
                max_size=12)


@given(CELL, st.sampled_from(["PASSED", "FAILED", "off"]))
def test_table_edges(cell, status):
    reports = [{"backbone": "b", "method": "mad@hostile", "dataset": "d", "qid": f"q{i}", "round": 1, "agent": 0,
                "parsed": json.dumps({"agreement": a, "changed_mind": "no"}) if a else ""}
               for i, (a, _) in enumerate(cell)]
    labels = [{"backbone": "b", "method": "mad@hostile", "dataset": "d", "qid": f"q{i}", "round": 1, "agent": 0,
               "stance": s or "", "move": "challenge" if s else ""} for i, (_, s) in enumerate(cell)]
    [row] = disagreement_rows(reports, labels, status)
    assert row["base"] == "mad" and row["tone"] == "hostile" and row["turns"] == len(cell)
    assert row["a_labelled"] + row["a_unlabelled"] == len(cell)
    for key in ("a_full", "b_agree", "b_challenge"):
        if math.isfinite(row[key]):
            assert 0 <= row[f"{key}_lo"] <= row[key] <= row[f"{key}_hi"] <= 1
    if row["a_labelled"] and all(a == "full" for a, _ in cell if a):
        assert row["a_full"] == row["a_full_hi"] == 1.0
    if status != "PASSED":
        assert row["b_labelled"] == 0 and math.isnan(row["b_agree"]) and math.isnan(row["ab_exact"])
    else:
        both = [(a, s) for a, s in cell if a and s]
        assert row["ab_pairs"] == len(both)
    md = disagreement_markdown([row], "validation line", True)
    assert "| b | mad | hostile | 1 |" in md


# ------------------------------------------------------------------------- workflow

def test_layers_through_snakemake(workdir):
    config = make_config(workdir, n=2, methods=["cot", "sc", "mad", "mad@hostile", "mad@friendly", "lmad",
                                                "lmad@hostile"], lmad={"iterations": 2},
                         models={"scripted": {"backend": "scripted", "model": "scripted",
                                              "responder": "pushback_oracle:respond"}},
                         disagreement={"self_report": True, "pushback": True, "battery_questions": 2,
                                       "persistence": 1.0},
                         process={"rubric": True}, jury={"pair": ["mad", "mad@hostile"]})
    config["datasets"] = {d: config["datasets"][d] for d in ("hotpotqa", "strategyqa")}
    write_config(workdir, config)
    env = {"PYTHONPATH": os.pathsep.join([str(REPO / "workflow"), str(REPO / "tests")])}
    snakemake(workdir, env=env)
    md = (workdir / "results/paper/disagreement.md").read_text()
    assert "validation PASSED" in md and (workdir / "results/paper/disagreement.png").stat().st_size
    for tone in ("neutral", "hostile"):  # LMAD: 1 local round, questions that disagree only
        assert f"| scripted | lmad | {tone} | 1 |" in md
    assert read_table("lmad_self_reports", workdir / "results/scripted/disagreement/lmad_self_report.parquet").height
    import polars as pl  # layer C on LMAD's toned local debate too, re-asked turn for turn (persistence 1.0)
    cells = {r["method"]: r for r in pl.read_csv(workdir / "results/paper/disagreement.csv").to_dicts()
             if r["method"].startswith("lmad")}
    assert cells["lmad@hostile"]["c_pairs"] == cells["lmad@hostile"]["a_labelled"] > 0 and not cells["lmad"]["c_pairs"]
    for tone in TONES:
        for t in (1, 2):
            # 2 datasets x 2 questions x 3 agents; the oracle's self-reports all say "none"
            assert f"| scripted | mad | {tone} | {t} | 12 | 12 / 0 | 0.0 [0.0, " in md, (tone, t)
    # layer C on the toned MAD rounds only: 12 re-ask pairs per round
    assert "| scripted | mad | hostile | 1 | 12 | 12 / 0 |" in md and md.count("| 12 | ") >= 4
    labels = read_table("pushback_labels", workdir / "results/scripted/disagreement/pushback.parquet")
    debate_labels = labels.filter(~labels["method"].str.starts_with("lmad"))
    assert set(debate_labels["method"]) == {"mad", "mad@hostile", "mad@friendly"} and len(debate_labels) == 3 * 24
    assert {"lmad", "lmad@hostile"} <= set(labels["method"])
    # round 0 of a toned method is the shared proposals (no call), and its prompts carry the tone after
    assert "0 model calls" in (workdir / "logs/scripted/mad@hostile/round0.log").read_text()
    for tone in ("hostile", "friendly"):
        assert (workdir / f"results/scripted/hotpotqa/mad@{tone}/round2_steps.parquet").exists()

    # the trace viewer shows each turn's labels (layers A, B and C) of debate and LMAD methods alike
    html = (workdir / "results/paper/viewer/scripted.html").read_text()
    data = json.loads(html.split('id="data">', 1)[1].split("</script>", 1)[0])
    assert data["pushback"]["passed"]
    shown = {(m, tuple(sorted(v))) for q in data["questions"] for m, turns in q["labels"].items() for v in turns.values()}
    for name in ("mad@hostile", "lmad@hostile"):
        assert (name, ("A", "B", "C kept", "C removed")) in shown, name
    assert ("mad", ("A", "B")) in shown

    process = (workdir / "results/paper/process.md").read_text()
    for name in ("| scripted | mad | friendly | 24 / 0 |", "| scripted | lmad | hostile |", "CMP1v2"):
        assert name in process, name
    # the test double scores every reply alike, so the rubric judge fails its battery: its means are withheld
    assert "| 24 / 0 | FAILED | FAILED | FAILED |" in process and "RP / EI / NC are not shown" in process
    assert "validation FAILED" in (workdir / "results/judge/scripted/rubric_validation.md").read_text()
    scores = read_table("process_scores", workdir / "results/scripted/disagreement/process_scores.parquet")
    assert scores.height == labels.height  # the rubric scores exactly the replies layer B labels

    verdicts = read_table("jury_verdicts", workdir / "results/scripted/disagreement/jury_scripted.parquet")
    pairs = verdicts.filter(verdicts["kind"] == "pair")
    assert pairs.height == 2 * 4 and sorted(pairs["order"].to_list()) == [0] * 4 + [1] * 4  # the swap doubles
    jury_md = (workdir / "results/paper/jury.md").read_text()
    assert "MAD (A) vs MAD (hostile) (B)" in jury_md and "Swap-consistency per juror" in jury_md

    # the default (layers off) plans no disagreement, process or jury job
    config["disagreement"], config["process"], config["jury"] = {}, {}, {}
    write_config(workdir, config)
    dry = snakemake(workdir, "--dry-run", "--forceall", env=env).stdout
    assert "pushback" not in dry and "disagreement_table" not in dry and "process_" not in dry
    assert "rule jury" not in dry


# ------------------------------------------------------------------------ process metrics

@given(st.text(max_size=200))
def test_rubric_parser_never_raises(reply):
    from lmad.studies.process.metrics import parse_rubric

    label, error = parse_rubric(reply)
    assert (label is None) == bool(error)


@given(st.integers(-3, 13), st.integers(1, 10), st.integers(1, 10), st.booleans())
def test_rubric_parser_is_strict(rp, ei, nc, as_bool):
    from lmad.studies.process.metrics import parse_rubric

    label, _ = parse_rubric(json.dumps({"rp": rp, "ei": ei, "nc": True if as_bool else nc}))
    assert (label is not None) == (1 <= rp <= 10 and not as_bool)
    assert parse_rubric(json.dumps({"rp": 5, "ei": 5, "nc": 5.0}))[0] is None


@given(st.lists(st.integers(1, 10), max_size=20))
def test_rubric_means_stay_on_the_scale(scores):
    from lmad.studies.process.metrics import mean_ci, rubric_summary

    m, lo, hi = mean_ci([float(s) for s in scores])
    if not scores:
        assert math.isnan(m)
    else:
        assert 1 <= lo <= m <= hi <= 10
        if len(set(scores)) == 1:
            assert lo == m == hi
    rows = [{"rp": s, "ei": s, "nc": s} for s in scores] + [{"rp": None, "ei": None, "nc": None}]
    summary = rubric_summary(rows)
    assert summary["unscored"] == 1 and summary["scored"] == len(scores)


def test_rubric_judge_is_blind_to_tone_and_identity():
    from lmad.studies.process.metrics import RUBRIC_SCHEMA, rubric_request

    _, _, results = run("mad@hostile", tone=TONE, self_report=PROMPTS["self_report"])
    samples = [r for res in results for r in res.samples]
    for it in replies_with_parents(method("mad").protocol, samples):
        req = rubric_request(PROMPTS["process_rubric"], QUESTIONS[0]["question"], it["parent"], it["own"],
                             it["reply"], 48)
        seen = text(req)
        assert it["reply"].strip() in seen and it["own"].strip() in seen
        for forbidden in (TONE, "hostile", "Agent 1", "Agent 2", "changed_mind", "Alpha is a city"):
            assert forbidden not in seen, forbidden
        assert req.constraint == {"json": RUBRIC_SCHEMA}


def _rubric_items():
    from lmad.studies.process.metrics import build_rubric_battery

    qs = [q | {"qid": f"q{i}", "answer": ans, "dataset": d, "supporting_facts": [{"title": "Beta", "sent_id": 0,
                                                                                   "paragraph": 1}]}
          for i, (d, ans) in enumerate([("hotpotqa", "Alpha"), ("hotpotqa", "yes"), ("musique", "Gamma")])
          for q in QUESTIONS[:1]]
    return build_rubric_battery(qs, 5, 0)


def test_rubric_battery_is_balanced_and_the_floor_is_two_sided():
    from lmad.studies.process.metrics import DIMENSIONS, HIGH_MIN, validate_rubric

    items = _rubric_items()
    assert Counter((it.dimension, it.kind) for it in items) == {(d, k): 3 for d in DIMENSIONS for k in ("high", "low")}
    for it in items:  # the judge's inputs are the rubric's: no gold answer key, no tone, no agent label
        assert "Beta is a town." in it.reply or it.kind == "low"
        assert it.own != it.parent and it.reply.strip()
    nc_low = [it for it in items if (it.dimension, it.kind) == ("nc", "low")]
    assert all(it.reply == it.own for it in nc_low)  # repeats its own previous response

    def judged(score):
        return [{"dimension": it.dimension, "kind": it.kind, **{d: score(it, d) for d in DIMENSIONS}} for it in items]

    careful = validate_rubric(judged(lambda it, d: 9 if it.kind == "high" else 2), 0.8)
    assert careful["passed"] and careful["rp_high"] == careful["nc_low"] == 1.0 and careful["n_unparsed"] == 0
    for constant in (10, 1, HIGH_MIN):
        v = validate_rubric(judged(lambda it, d: constant), 0.8)
        assert not v["passed"] and "recall under 80 %" in v["reason"]
    # fine on RP and EI, blind on NC: fails, naming NC
    nc_blind = validate_rubric(judged(lambda it, d: 8 if it.kind == "high" or d == "nc" else 2), 0.8)
    assert not nc_blind["passed"] and "NC low 0.0 %" in nc_blind["reason"] and "RP" not in nc_blind["reason"]
    unparsed = validate_rubric(judged(lambda it, d: None), 0.8)
    assert not unparsed["passed"] and unparsed["n_unparsed"] == len(items) and "unscored" in unparsed["reason"]
    assert not validate_rubric([], 0.8)["passed"]


@pytest.mark.parametrize("passed", [True, False, None])
def test_process_table_shows_the_rubric_means_only_when_its_judge_passed(tmp_path, monkeypatch, passed):
    import lmad.studies.process.stages as stage
    from lmad.schemas import write_table

    monkeypatch.chdir(tmp_path)
    call = {"prompt_tokens": 0, "completion_tokens": 0, "finish_reason": "stop", "cached": False}
    write_table("questions", [q | {"qtype": "", "supporting_facts": [], "source": ""} for q in QUESTIONS], "q.parquet")
    scores = "results/b/disagreement/process_scores.parquet"
    write_table("process_scores", [
        {"dataset": "hotpotqa", "method": "mad@hostile", "qid": "q0", "iteration": 0, "round": 1, "agent": a,
         "judge_model": "j", "rp": 7, "ei": 7, "nc": 4, "raw": "", "parse_error": "", **call} for a in range(3)],
        scores)
    write_table("judge_validation", [{"judge_model": "j", "n_correct_items": 4, "n_incorrect_items": 4, "tpr": 1.0,
                                      "tnr": 1.0, "balanced_acc": 1.0, "n_unscored": 0, "unscored_rate": 0.0,
                                      "min_recall": 0.8, "passed": True, "reason": "fine"}], "jv.parquet")
    validation = []
    if passed is not None:
        write_table("rubric_validation", [{"judge_model": "j", "n_items": 6, "n_unparsed": 0, "min_recall": 0.8,
                                           **{f"{d}_{k}": 1.0 if passed else 0.0 for d in ("rp", "ei", "nc")
                                              for k in ("high", "low")}, "passed": passed,
                                           "reason": "because"}], "rv.parquet")
        validation = ["rv.parquet"]
    stage.process_table(["q.parquet"], [scores], [], "p.csv", "p.md", "jv.parquet", {},
                        rubric_validation=validation)
    md = (tmp_path / "p.md").read_text()
    if passed:
        assert "| 3 / 0 | 7.00 [7.00, 7.00] | 7.00 [7.00, 7.00] | 4.00 [4.00, 4.00] |" in md and "PASSED" in md
    else:
        status = "FAILED" if passed is False else "unvalidated"
        assert f"| 3 / 0 | {status} | {status} | {status} |" in md and "RP / EI / NC are not shown" in md
    import polars as pl

    assert pl.read_csv(tmp_path / "p.csv")["rubric_status"].to_list() == [
        {True: "PASSED", False: "FAILED", None: "unvalidated"}[passed]]


def test_transitions_of_lmad_iterations(tmp_path):
    from lmad import layout
    from lmad.answers import Gold
    from lmad.schemas import write_table
    from lmad.studies.process.stages import _transitions

    def table(k, answers):
        path = tmp_path / layout.lmad_table("b", "hotpotqa", "lmad@hostile", k, "generate")
        rows = [{"qid": "q0", "stage": "lmad@hostile", "round": k, "agent": a, "temperature": 0.1, "seed": 0,
                 "response": x, "answer": x, "answer_norm": x.lower(), "answer_method": "answer_line",
                 "prompt_tokens": 1, "completion_tokens": 1, "finish_reason": "stop", "cached": False}
                for a, x in enumerate(answers)]
        write_table("samples", rows, path)
        return str(path)

    golds = {("hotpotqa", "q0"): Gold(("Alpha",), "span")}
    # one agent right at the start (wrong majority), two right after the regeneration, one never
    out = _transitions(golds, [table(1, ["Alpha", "Alpha", "Beta"]), table(0, ["Alpha", "Beta", "Gamma"])])
    assert out["k"] == 3 and out["cmp_name"] == "CMP1v2" and out["cmp"] == 100.0
    assert out["cpl"] == math.inf  # one correction (1 of 2 wrong states), no corruption
    assert math.isnan(out["ame"])  # no question started with a correct majority


# --------------------------------------------------------------------------------- jury

def jury_rows(juror, pick, kinds=("pair",) * 4 + ("battery",) * 4):
    """Rows of one juror that answers ``pick(kind, order)`` (a choice) for each item and order."""
    from lmad.studies.jury.verdicts import winner

    return [{"kind": kind, "judge_model": juror, "dataset": "d", "qid": f"q{i}", "order": order,
             "winner": winner(pick(kind, order), order)} for i, kind in enumerate(kinds) for order in (0, 1)]


def test_swap_check_and_majority():
    from lmad.studies.jury.verdicts import jury_verdict, summarize, swap_checked

    assert swap_checked("a", "a") == ("a", True) and swap_checked("a", "b") == ("tie", False)
    assert swap_checked("", "") == ("tie", False) and swap_checked("tie", "tie") == ("tie", True)
    assert jury_verdict(["a", "a", "b"]) == "a" and jury_verdict(["a", "b"]) == "tie"
    assert jury_verdict(["a", "tie", "b"]) == "tie" and jury_verdict([]) == "tie"
    # a juror with pure position bias (always "1") is never swap-consistent: every pair is a tie
    biased = summarize(jury_rows("j", lambda kind, order: "1"), 0.8)
    assert biased["ties"] == 4 and biased["consistency"] == 0.0 and not biased["passed"]
    # an always-tie jury is perfectly consistent, yet its sensitivity is 0: it fails, visibly
    tie = summarize(jury_rows("j", lambda kind, order: "tie"), 0.8)
    assert tie["consistency"] == 1.0 and tie["sensitivity"] == 0.0 and not tie["passed"]
    assert "sensitivity" in tie["reason"]
    # a juror that always prefers the better (A) answer, in either position, passes
    good = summarize(jury_rows("j", lambda kind, order: "1" if order == 0 else "2"), 0.8)
    assert good["passed"] and good["a_wins"] == 4 and good["sensitivity"] == 1.0
    # majority over three jurors: two good, one biased
    three = summarize(jury_rows("j1", lambda k, o: "1" if o == 0 else "2")
                      + jury_rows("j2", lambda k, o: "1" if o == 0 else "2") + jury_rows("j3", lambda k, o: "1"), 0.8)
    assert three["a_wins"] == 4 and three["juror_consistency"] == {"j1": 1.0, "j2": 1.0, "j3": 0.0}


@given(st.lists(st.tuples(st.sampled_from(["pair", "battery"]), st.sampled_from(["1", "2", "tie", ""]),
                          st.sampled_from(["1", "2", "tie", ""])), min_size=1, max_size=10),
       st.integers(1, 3))
def test_jury_counts_add_up(items, jurors):
    from lmad.studies.jury.verdicts import summarize, winner

    rows = [{"kind": kind, "judge_model": f"j{j}", "dataset": "d", "qid": f"q{i}", "order": order,
             "winner": winner(choice, order)}
            for j in range(jurors) for i, (kind, c0, c1) in enumerate(items) for order, choice in ((0, c0), (1, c1))]
    s = summarize(rows, 0.8)
    # without a battery pair the dataset is unvalidated: its pairs are counted apart, never as wins or ties
    apart = sum(s["unvalidated"].values())
    assert s["a_wins"] + s["ties"] + s["b_wins"] + apart == s["pairs"] == sum(k == "pair" for k, *_ in items)
    assert apart == (s["pairs"] if not s["battery"] else 0)
    assert s["battery"] == sum(k == "battery" for k, *_ in items)
    assert s["passed"] == (s["battery"] > 0 and s["consistency"] >= 0.8 and s["sensitivity"] >= 0.8)


@given(st.text(max_size=50))
def test_choice_parser_never_raises(reply):
    from lmad.studies.jury.verdicts import CHOICES, parse_choice

    assert parse_choice(reply) in (*CHOICES, "")


# ----------------------------------------------------------------------------- layer C

def test_persistence_reasks_delete_or_keep_the_tone_in_the_same_batch():
    from lmad.disagreement_labels import PERSIST_KEPT, PERSIST_REMOVED

    backend, batches, results = run("mad@hostile", tone=TONE, self_report=PROMPTS["self_report"])
    plain = len(backend.calls)
    backend, batches, results = run("mad@hostile", tone=TONE, self_report=PROMPTS["self_report"], persistence=1.0)
    assert batches[2] == ["self_report"] * 18 and len(backend.calls) == plain + 2 * 12
    steps = [s for res in results for s in res.steps]
    assert Counter(s["step"] for s in steps) == {"self_report": 12, PERSIST_REMOVED: 12, PERSIST_KEPT: 12}
    reasks = [r for r in backend.calls if kind(r) == "self_report"]
    assert sum(TONE not in text(r) for r in reasks) == 12  # exactly the deleted-tone re-asks
    preds = debate_prediction_rows(QUESTIONS, "mad@hostile", [r for res in results for r in res.samples], steps,
                                   results[-1].state)
    assert {p["calls"] for p in preds} == {9}
    # a neutral round has no tone to delete: no re-ask
    _, _, neutral = run("mad", self_report=PROMPTS["self_report"], persistence=1.0)
    assert {s["step"] for res in neutral for s in res.steps} == {"self_report"}


def test_persistence_table_and_sign_test():
    from lmad.studies.disagreement.tables import persistence, sign_test

    none, full = {"agreement": "none", "changed_mind": "no"}, {"agreement": "full", "changed_mind": "no"}
    keys = [("d", f"q{i}", 0, a) for i in range(5) for a in range(2)]
    out = persistence({k: none for k in keys}, {k: full for k in keys}, {k: none for k in keys})
    assert out["c_pairs"] == 10 and out["c_removed"] == 1.0 and out["c_kept"] == 0.0 and out["c_excess"] == 1.0
    assert out["c_questions"] == 5 and out["c_p"] == sign_test([1] * 5) == 0.0625
    assert sign_test([0.5, -0.5]) == 1.0 and math.isnan(sign_test([0, 0]))
    empty = persistence({keys[0]: none}, {keys[0]: None}, {})
    assert empty["c_pairs"] == 0 and math.isnan(empty["c_excess"])


def test_lmad_persistence_reasks_pair_each_sampled_turn_in_one_batch(tmp_path, monkeypatch):
    """Layer C on LMAD's local debate (stages.disagreement.lmad_self_report): a sampled turn of a
    toned method is re-asked twice beside its self-report, in the one batch, once without the
    tone and once with it, each after the turn's own reply; a neutral method is never re-asked."""
    import lmad.studies.disagreement.stages as stage
    from lmad.disagreement_labels import PERSIST_KEPT, PERSIST_REMOVED
    from lmad.protocols.localized_debate.local_debate import run_debate
    from lmad.schemas import write_table, write_units

    monkeypatch.chdir(tmp_path)
    qs = [q | {"qtype": "", "supporting_facts": [], "source": ""} for q in QUESTIONS]
    write_table("questions", qs, "questions.parquet")
    loc = {"conflict": "Alpha or Beta", "conflict_fallback": False, "witness": [0, 1, 2], "witness_fallback": [],
           "witness_claims": ["Alpha", "Beta", "So Beta."],
           "segments": [["Alpha is a city."], ["Beta is a town."], ["Beta is a town.", "So Beta."]],
           "raw_output": "", "parse_error": "", "prompt_tokens": 0, "completion_tokens": 0, "finish_reason": "stop",
           "cached": False}
    # the iteration's one file of every (dataset, method) unit, per stage
    localizations, positions = ["results/scripted/lmad/iter0/localize.parquet"], ["results/scripted/lmad/iter0/debate.parquet"]
    loc_parts, position_parts = [], []
    for name, tone in (("lmad", ""), ("lmad@hostile", TONE)):
        items = [{"qid": q["qid"], "question": q, "committed": [], "tone": tone} | {k: loc[k] for k in
                 ("segments", "conflict", "witness_claims")} for q in qs]
        rows = [r for rs in run_debate(ScriptedBackend(), PROMPTS["debater"], items, 0, 2, PERSONAS, 0, 32) for r in rs]
        loc_parts.append(("hotpotqa", name, [loc | {"qid": q["qid"], "iteration": 0} for q in qs]))
        position_parts.append(("hotpotqa", name, rows))
    write_units("lmad_localizations", loc_parts, localizations[0])
    write_units("lmad_positions", position_parts, positions[0])
    (tmp_path / "tone.txt").write_text(f"### user\n{TONE}\n")
    backend, batches = ScriptedBackend(responder=lambda req: '{"agreement": "none", "changed_mind": "no"}'), []
    real = backend.generate
    backend.generate = lambda requests: batches.append(list(requests)) or real(requests)
    backend.stats = lambda: ""
    monkeypatch.setattr(stage, "open_backend", lambda *a, **k: backend)
    prompts = REPO / "config" / "prompts"
    kwargs = dict(questions=["questions.parquet"], localizations=localizations, positions=positions,
                  prompt=str(prompts / "debater.txt"), prompt_self_report=str(prompts / "self_report.txt"),
                  model={}, cache_dir="cache", max_tokens=32, seed=0, provenance={}, prompt_tone_hostile="tone.txt")
    stage.lmad_self_report(reports="half.parquet", persistence=0.5, **kwargs)
    stage.lmad_self_report(reports="all.parquet", persistence=1.0, **kwargs)
    [half, everything] = batches  # one batch per job
    rows = read_table("lmad_self_reports", "all.parquet").to_dicts()
    turns = 2 * 2 * 3  # questions x rounds x agents, per method
    assert Counter((r["method"], r["step"]) for r in rows) == {
        ("lmad", "self_report"): turns, ("lmad@hostile", "self_report"): turns,
        ("lmad@hostile", PERSIST_REMOVED): turns, ("lmad@hostile", PERSIST_KEPT): turns}
    assert len(everything) == len(rows) and turns * 2 < len(half) < turns * 4  # a seeded share, not all
    by = {(r["method"], r["qid"], r["round"], r["agent"], r["step"]): r for r in rows}
    assert len({r["seed"] for r in rows if r["method"] == "lmad@hostile"}) == 3 * turns  # new seeds
    # rows are written sorted; the batch goes method by method (lmad first), seeds unique within one
    sent = {"lmad": {q.seed: q for q in everything[:turns]}, "lmad@hostile": {q.seed: q for q in everything[turns:]}}
    for r in rows:
        req = sent[r["method"]][r["seed"]]
        assert req.messages[-2][0] == "assistant"  # after the turn's own reply
        assert (TONE in text(req)) == (r["method"] == "lmad@hostile" and r["step"] != PERSIST_REMOVED)
        if r["step"] != "self_report":  # the same turn, its reply and its question, the tone aside
            base = sent[r["method"]][by[(r["method"], r["qid"], r["round"], r["agent"], "self_report")]["seed"]]
            assert req.messages[-2:] == base.messages[-2:]
            assert text(req).replace(f"\n\n{TONE}", "") == text(base).replace(f"\n\n{TONE}", "")
    # the table pairs each re-ask with its turn's own label: the oracle never reverts
    reports = [r | {"backbone": "scripted"} for r in rows]
    cells = {(c["method"], c["round"]): c for c in disagreement_rows(reports, [], "off")}
    assert cells[("lmad@hostile", 1)]["c_pairs"] == 6 and cells[("lmad@hostile", 1)]["c_excess"] == 0.0
    assert cells[("lmad", 1)]["c_pairs"] == 0
