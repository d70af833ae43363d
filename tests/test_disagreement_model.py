"""The disagreement layers on the real embedded model (SmolLM2-135M-Instruct on CPU), 2 demo
questions (distractor passages trimmed, two agents, a written round 0, short budgets): MAD's
first revision round at the three tones with layer A, then layer B's judge
on every reply and on its authored battery. What is checked is the instruments' contract on
real, messy output (every constrained reply parses unless cut by its budget; every fallback is
recorded), not the model's quality."""
import math
import time

import polars as pl
import pytest

from conftest import REPO
from lmad.backends.transformers_backend import TransformersBackend
from lmad.disagreement_labels import SELF_REPORT_STEP, parse_pushback
from lmad.studies.disagreement.probe import LETTERS, read
from lmad.studies.disagreement.probe import cells as probe_cells
from lmad.studies.disagreement.pushback import build_battery, pushback_request, replies_with_parents, validate
from lmad.prompts import load_prompt
from lmad.protocols.debate import run_round
from lmad.registry import method
from lmad.tones import TONES, tone_role

pytestmark = pytest.mark.model

PROMPTS = {p.stem: load_prompt(p) for p in (REPO / "config" / "prompts").glob("*.txt")}


def test_layers_on_the_real_model(smollm2_dir, tmp_path):
    pytest.importorskip("xgrammar")
    from lmad.data.loaders import load_dataset_spec

    qs = load_dataset_spec({"name": "hotpotqa", "source": "jsonl", "path": "data/demo/hotpotqa.jsonl", "n": 2,
                            "seed": 0, "max_context_chars": 700}, REPO)
    agents, budget = [0.1, 0.9], 24
    backend = TransformersBackend("smollm2-135m", str(smollm2_dir), batch_size=16, threads=2)
    start = time.perf_counter()
    aux = {"advice": 32, "judge": 32, "moderator": 32}
    # round 0 is written, not generated (the proposals are not what this test measures)
    r0_samples = [{"qid": q["qid"], "stage": "proposals", "round": 0, "agent": a, "temperature": t, "seed": a,
                   "response": f"The passages point to {q['context'][a]['title']}.\nAnswer: {q['context'][a]['title']}",
                   "answer": q["context"][a]["title"], "answer_norm": q["context"][a]["title"].lower(),
                   "answer_method": "answer_line", "prompt_tokens": 0, "completion_tokens": 0,
                   "finish_reason": "stop", "cached": False} for q in qs for a, t in enumerate(agents)]
    r0_state = [{"qid": q["qid"], "round": 0, "active": True, "stop_reason": None, "stop_round": None,
                 "prediction": None, "prediction_norm": None} for q in qs]
    replies, reports = {}, []
    for tone in TONES:
        name = f"mad@{tone}" if tone != "neutral" else "mad"
        role = tone_role(tone)
        r1 = run_round(method(name).protocol, name, 1, True, qs, backend, PROMPTS, agents, [], 0, budget, aux,
                       previous=r0_samples, previous_state=r0_state, tone=PROMPTS[role].user if role else "",
                       self_report=PROMPTS["self_report"])
        replies[name] = replies_with_parents(method(name).protocol, [*r0_samples, *r1.samples])
        reports += [s for s in r1.steps if s["step"] == SELF_REPORT_STEP]
    assert len(reports) == 3 * 4
    for s in reports:  # constrained: valid unless the budget cut it; a failure is recorded, never raised
        assert (s["parsed"] != "") == (s["parse_error"] == "")
        assert s["parsed"] or s["finish_reason"] == "length", s["response"]
    items = [it for its in replies.values() for it in its]
    assert len(items) == 12
    battery = build_battery(qs, 2, seed=0)
    print(f"debate rounds + self-reports: {time.perf_counter() - start:.1f} s")
    judge = load_prompt(REPO / "config/prompts/pushback_judge.txt")
    out = backend.generate([pushback_request(judge, it["parent"], it["reply"], 48) for it in items]
                           + [pushback_request(judge, b.parent, b.reply, 48) for b in battery])
    labels = [parse_pushback(c.text) for c in out]
    assert all((lab is None) == bool(err) for lab, err in labels)
    assert sum(lab is not None for lab, _ in labels) >= len(labels) - sum(c.finish_reason == "length" for c in out)
    rows = [{"kind": b.kind, "stance": lab["stance"] if lab else ""} for b, (lab, _) in
            zip(battery, labels[len(items):])]
    verdict = validate(rows, 0.8)
    assert verdict["n_rebuttals"] == verdict["n_endorsements"] == 4
    assert isinstance(verdict["passed"], bool) and verdict["reason"]
    # layer D: the model's own next-token reads over the seven letters, argument vs filler
    cells = [c for q in qs for c in probe_cells(q, [r for r in r0_samples if r["qid"] == q["qid"]])]
    assert len(cells) == 4  # two agents answering differently: each is the other's opponent
    got = backend.next_token_logprobs([r for c in cells for r in c["requests"]], LETTERS)
    assert len(got) == 12 and all(len(lp) == 7 and all(x <= 0 and math.isfinite(x) for x in lp) for lp in got)
    reads = [read(lp, 0.5) for lp in got]
    assert all(0 < r["mass"] <= 1 + 1e-6 for r in reads)
    print("layer D letter mass per read:", [round(r["mass"], 3) for r in reads])
    print(pl.DataFrame(rows), verdict, f"total {time.perf_counter() - start:.1f} s")
