"""Layer D (lmad.studies.disagreement.probe): renormalization and the degenerate guard on hand-built
distributions, the paired TREAT−CONTROL contrast, length-matched filler in the same frame,
a backend without log-probabilities reported as not measured, and the rules end to end with
the test double."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import make_config, snakemake, write_config
from lmad.backends.base import Backend
from lmad.backends.scripted import ScriptedBackend
from lmad.studies.disagreement.probe import CONDITIONS, LETTERS, cells, paired, probe_request, read
from lmad.schemas import read_table

Q = {"qid": "q1", "question": "Which city is the capital?", "answer_type": "span"}
PROPOSALS = [{"agent": 0, "answer": "Paris", "response": "It is Paris, as the passage says.\nAnswer: Paris"},
             {"agent": 1, "answer": "Lyon", "response": "The second passage points to Lyon.\nAnswer: Lyon"},
             {"agent": 2, "answer": "paris", "response": "Paris.\nAnswer: paris"}]


def test_renormalizes_the_seven_letters_and_reads_expected_stance():
    probs = [0.0, 0.0, 0.1, 0.1, 0.2, 0.0, 0.0]  # 40 % of the mass on letters C, D, E
    got = read([math.log(p) if p else -math.inf for p in probs], min_mass=0.3)
    assert not got["degenerate"] and math.isclose(got["mass"], 0.4)
    assert [round(p, 6) for p in got["dist"]] == [0, 0, 0.25, 0.25, 0.5, 0, 0]
    assert math.isclose(got["expected"], 3 * 0.25 + 4 * 0.25 + 5 * 0.5) and math.isclose(got["margin"], 0.25)
    assert read([math.log(p) if p else -math.inf for p in probs], min_mass=0.5)["degenerate"]  # under the floor


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.lists(st.one_of(st.floats(allow_nan=True), st.text(max_size=3), st.none()),
                                     max_size=9)))
def test_a_read_never_raises_and_is_degenerate_or_a_distribution(logprobs):
    got = read(logprobs, min_mass=0.5)
    if not got["degenerate"]:
        assert math.isclose(sum(got["dist"]), 1.0) and 1 <= got["expected"] <= 7


def test_cells_pair_each_answer_with_the_first_peer_answering_otherwise_and_match_the_filler_length():
    out = cells(Q, PROPOSALS)
    assert [(c["agent"], c["opponent"]) for c in out] == [(0, 1), (1, 0), (2, 1)]
    prior, treat, control = out[0]["requests"]
    said = PROPOSALS[1]["response"]
    assert said in treat.messages[1][1] and said not in control.messages[1][1] and "participant" not in prior.messages[1][1]
    filled = control.messages[1][1].split("Another participant wrote:\n")[1].split("\n\nProposition")[0]
    assert len(filled.split()) == len(said.split()) == out[0]["argument_words"]
    assert all("The answer to the question is Paris." in r.messages[1][1] for r in out[0]["requests"])
    assert cells(Q, [PROPOSALS[0], PROPOSALS[2]]) == []  # everyone agrees: no opposing argument


def test_a_rival_differs_by_the_questions_answer_type():
    """Math: "1/2" and "0.5" are one answer, so agent 1 is nobody's rival; choice: "(B)" and "B"."""
    said = [{"agent": i, "answer": a, "response": f"Answer: {a}"} for i, a in enumerate(["1/2", "0.5", "3"])]
    math_q = Q | {"answer_type": "math"}
    assert [(c["agent"], c["opponent"]) for c in cells(math_q, said)] == [(0, 2), (1, 2), (2, 0)]
    assert [(c["agent"], c["opponent"]) for c in cells(Q, said)] == [(0, 1), (1, 0), (2, 0)]  # as spans
    letters = [{"agent": i, "answer": a, "response": f"Answer: {a}"} for i, a in enumerate(["(B)", "B"])]
    assert cells(Q | {"answer_type": "choice"}, letters) == []


def test_shift_is_signed_toward_the_opponent_and_margin_loss_is_separate():
    def row(cond, e):
        return {"dataset": "d", "qid": "q", "agent": 0, "condition": cond, "expected": e, "margin": abs(e - 4),
                "degenerate": False}
    pairs = paired([row("prior", 6.0), row("treat", 5.0), row("control", 6.5)])
    assert pairs[0]["shift"] == 1.5 and pairs[0]["margin_loss"] == 1.5
    flipped = paired([row("prior", 6.0), row("treat", 2.0), row("control", 6.0)])[0]  # crossed the midpoint
    assert flipped["shift"] == 4.0 and flipped["margin_loss"] == 0.0
    assert paired([row("prior", 6.0), {**row("treat", 5.0), "degenerate": True}, row("control", 6.5)]) == []


def test_the_test_double_gives_a_fixed_read_per_prompt():
    backend = ScriptedBackend()
    reqs = [probe_request("Q?", "X", None), probe_request("Q?", "X", "argument")]
    a, b = backend.next_token_logprobs(reqs, LETTERS), backend.next_token_logprobs(reqs, LETTERS)
    assert a == b and a[0] != a[1] and all(0.5 <= sum(math.exp(x) for x in r) < 1 for r in a)


def test_a_backend_without_logprobs_says_so():
    class Plain(Backend):
        model_id = "plain"

        def generate(self, requests):
            return []
    try:
        Plain().next_token_logprobs([probe_request("Q?", "X", None)], LETTERS)
    except NotImplementedError as exc:
        assert "no next-token log-probabilities" in str(exc)
    else:
        raise AssertionError("expected NotImplementedError")


def test_probe_rules_through_snakemake(workdir):
    config = make_config(workdir, n=2, methods=["cot", "sc"], disagreement={"probe": True})
    config["datasets"] = {d: config["datasets"][d] for d in ("hotpotqa", "musique")}
    write_config(workdir, config)
    snakemake(workdir)
    reads = read_table("probe_reads", workdir / "results/scripted/disagreement/probe.parquet")
    assert reads.height and reads.height % len(CONDITIONS) == 0 and not any(reads["error"])
    assert set(reads["condition"]) == set(CONDITIONS)
    md = (workdir / "results/paper/probe.md").read_text()
    cells_n = reads.height // 3
    assert f"| scripted | {cells_n} / {cells_n} | 0 |" in md  # the double's reads hold 50-99 % of the mass
    assert (workdir / "results/paper/probe.png").stat().st_size


def test_a_probe_on_a_backbone_without_logprobs_fails_before_any_job(tmp_path):
    from lmad.config_checks import check_config

    config = make_config(tmp_path, n=1, disagreement={"probe": True})
    config["models"]["scripted"] = {"backend": "openai", "model": "m", "base_url": "http://localhost:1/v1"}
    with pytest.raises(ValueError, match=r"config disagreement.probe: backbone scripted \(openai\)"):
        check_config(config, allow_test_double=True)
    # vLLM reads its log-probabilities embedded (VLLMBackend.next_token_logprobs), not as a served model
    config["models"]["scripted"] = {"backend": "vllm", "model": "m"}
    check_config(config, allow_test_double=True)
    config["models"]["scripted"]["serve"] = True
    with pytest.raises(ValueError, match=r"backbone scripted \(vllm, served\)"):
        check_config(config, allow_test_double=True)
