"""LMAD rules (rules/lmad.smk): one function per stage, run once per iteration.

Iteration ℓ of method m lives in ``results/{backbone}/{dataset}/{m}/iter{ℓ}/``:

  generate.parquet  (samples)             the agents' rationales and answers given P
  extract.parquet   (lmad_chains)         node chains of the questions whose answers disagree
  localize.parquet  (lmad_localizations)  conflict δ, witness indices, segments
  debate.parquet    (lmad_positions)      local-debate positions, R rounds
  resolve.parquet   (lmad_repairs)        proposed repair Ẑ and quotations Q̂
  commit.parquet    (lmad_commits)        guard checks, admission, stop reason
  state.parquet     (lmad_state)          every question's state after ℓ (input of ℓ + 1)

Each stage works on the questions still active and batches all of them x all agents
into one model call (one per round for the debate). A stage with nothing to do writes
an empty table and never opens the model. ``state`` is absent at iteration 0: every
question is active and P is empty, so iteration 0's generation IS the shared
self-consistency proposals, reused without a call.
"""
from __future__ import annotations

import logging
from collections import Counter, defaultdict

from ..answers import normalize_answer
from ..backends import open_backend
from ..prompts import load_prompt
from ..protocols.lmad import controller, nodes as node_lib
from ..protocols.lmad.batch import call_columns, run_batch
from ..protocols.lmad.commit_guard import METHOD_POLICY, commit_guard
from ..protocols.lmad.local_debate import run_debate
from ..protocols.lmad.localize import localization_request, localization_row, parse_localization
from ..protocols.lmad.resolve import parse_repair, resolution_request
from ..protocols.lmad.trace import build_trace, prediction_rows
from ..schemas import read_table, write_table
from ..solver import derive_seed, sample_rows, solver_request

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- helpers

def _questions(path: str) -> dict[str, dict]:
    return {q["qid"]: q for q in read_table("questions", path).to_dicts()}


def _state(state: str | None, qids) -> list[dict]:
    """The state entering this iteration: the previous commit's, or the initial one."""
    return read_table("lmad_state", state).to_dicts() if state else controller.initial_state(sorted(qids))


def _committed(state: str | None) -> dict[str, list[str]]:
    """P per question entering this iteration (empty for every question at iteration 0)."""
    if not state:
        return defaultdict(list)
    return defaultdict(list, {s["qid"]: s["committed"] for s in read_table("lmad_state", state).to_dicts()})


def _by_qid(rows: list[dict]) -> dict[str, list[dict]]:
    """Per-agent rows grouped by question, in agent order."""
    grouped: dict[str, list[dict]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["qid"], r["agent"])):
        grouped[r["qid"]].append(r)
    return dict(grouped)


def _table(name: str, path: str) -> list[dict]:
    return read_table(name, path).to_dicts()


# ----------------------------------------------------------------------------- stages

def generate(questions: str, prompt: str, samples: str, model: dict, cache_dir: str, method: str, iteration: int,
             temperatures: list[float], max_tokens: int, seed: int, provenance: dict,
             proposals: str | None = None, state: str | None = None) -> None:
    """Each active agent samples (r_i, a_i) given (q, x, P) with the seed of its
    proposal, so iteration 0 (P empty) is exactly the proposals: reused, zero calls."""
    qs = _questions(questions)
    if iteration == 0:
        rows = _table("samples", proposals)
        got = {(r["qid"], r["agent"]): r["temperature"] for r in rows}
        want = {(q, a): float(t) for q in qs for a, t in enumerate(temperatures)}
        if got != want:
            raise ValueError(f"{proposals}: proposals do not match the questions x agent temperatures "
                             f"{temperatures}; rerun rule generate")
        write_table("samples", rows, samples, provenance)
        log.info("iteration 0: reused %d proposal samples of %d questions; 0 model calls", len(rows), len(qs))
        return
    solver = load_prompt(prompt)
    active = [s for s in _state(state, qs) if s["active"]]
    jobs = [{"qid": s["qid"], "stage": method, "round": iteration, "agent": agent, "temperature": float(t),
             "seed": (sd := derive_seed(seed, s["qid"], agent)),
             "request": solver_request(solver, qs[s["qid"]], t, sd, max_tokens, committed=s["committed"])}
            for s in active for agent, t in enumerate(temperatures)]
    backend = open_backend(model, cache_dir) if jobs else None
    rows = sample_rows(backend, jobs) if backend else []
    write_table("samples", rows, samples, provenance)
    log.info("iteration %d: %d active questions, %d solver calls; %s", iteration, len(active), len(jobs),
             _stats(backend))


def _stats(backend) -> str:
    """The cache-stats line the run manifest counts model loads from."""
    return backend.stats() if backend else "no model calls"


def extract(questions: str, samples: str, prompt: str, chains: str, model: dict, cache_dir: str, iteration: int,
            max_tokens: int, max_nodes: int, max_node_words: int, provenance: dict) -> None:
    """Node extraction + quality check for the questions whose answers disagree."""
    qs = _questions(questions)
    extractor = load_prompt(prompt)
    todo = [r for rows in _by_qid(_table("samples", samples)).values()
            if controller.needs_repair([r["answer"] for r in rows]) for r in rows]
    requests = [node_lib.extraction_request(extractor, qs[r["qid"]]["question"], r["response"], max_tokens,
                                            max_nodes, max_node_words) for r in todo]
    backend = open_backend(model, cache_dir) if requests else None
    completions = run_batch(backend, requests) if backend else []
    out = []
    for r, c in zip(todo, completions):
        chain = node_lib.build_chain(c.text, r["response"], r["answer"], max_nodes, max_node_words)
        out.append({"qid": r["qid"], "iteration": iteration, "agent": r["agent"], "answer": r["answer"],
                    "answer_norm": normalize_answer(r["answer"]), "rationale": r["response"], "raw_output": c.text,
                    "parse_error": chain.parse_error, "raw_nodes": chain.raw_nodes, "node_flags": chain.node_flags,
                    "nodes": chain.nodes, "fallback": chain.fallback, **call_columns(c)})
    write_table("lmad_chains", out, chains, provenance)
    fallbacks = sum(bool(r["fallback"]) for r in out)
    log.info("iteration %d: %d chains extracted (%d fallbacks); %s", iteration, len(out), fallbacks, _stats(backend))


def localize(questions: str, chains: str, prompt: str, localizations: str, model: dict, cache_dir: str,
             iteration: int, max_tokens: int, provenance: dict, state: str | None = None) -> None:
    """One localizer call per disagreeing question; invalid witnesses fall back per agent."""
    qs = _questions(questions)
    committed = _committed(state)
    localizer = load_prompt(prompt)
    groups = _by_qid(_table("lmad_chains", chains))
    requests = [localization_request(localizer, qs[qid], committed[qid], [r["nodes"] for r in rows],
                                     [r["answer"] for r in rows], max_tokens) for qid, rows in groups.items()]
    backend = open_backend(model, cache_dir) if requests else None
    completions = run_batch(backend, requests) if backend else []
    out = []
    for (qid, rows), c in zip(groups.items(), completions):
        chain_list = [r["nodes"] for r in rows]
        loc = parse_localization(c.text, [len(ch) for ch in chain_list])
        out.append(localization_row(qid, iteration, chain_list, loc, c.text) | call_columns(c))
    write_table("lmad_localizations", out, localizations, provenance)
    fell = sum(any(r["witness_fallback"]) for r in out)
    log.info("iteration %d: %d conflicts localized (%d with a witness fallback); %s", iteration, len(out), fell,
             _stats(backend))


def debate(questions: str, localizations: str, prompt: str, positions: str, model: dict, cache_dir: str,
           iteration: int, rounds: int, temperatures: list[float], seed: int, max_tokens: int, provenance: dict,
           state: str | None = None) -> None:
    """R local rounds over the segments ending at the witnesses."""
    qs = _questions(questions)
    committed = _committed(state)
    items = [{"qid": r["qid"], "question": qs[r["qid"]], "committed": committed[r["qid"]],
              "segments": r["segments"], "conflict": r["conflict"], "witness_claims": r["witness_claims"]}
             for r in _table("lmad_localizations", localizations)]
    backend = open_backend(model, cache_dir) if items and rounds else None
    rows = run_debate(backend, load_prompt(prompt), items, iteration, rounds, temperatures, seed,
                      max_tokens) if backend else []
    write_table("lmad_positions", rows, positions, provenance)
    log.info("iteration %d: %d questions debated, %d rounds, %d turns; %s", iteration, len(items), rounds, len(rows),
             _stats(backend))


def resolve(questions: str, localizations: str, positions: str, prompt: str, repairs: str, model: dict,
            cache_dir: str, iteration: int, max_tokens: int, provenance: dict, state: str | None = None) -> None:
    """The resolver turns the final positions into a proposed repair (Ẑ, Q̂)."""
    qs = _questions(questions)
    committed = _committed(state)
    resolver = load_prompt(prompt)
    locs = _table("lmad_localizations", localizations)
    final = {r["qid"]: list(r["witness_claims"]) for r in locs}  # p^(0), kept when R = 0
    for r in sorted(_table("lmad_positions", positions), key=lambda r: r["round"]):
        final[r["qid"]][r["agent"]] = r["position"]  # the last round wins
    requests = [resolution_request(resolver, qs[r["qid"]], committed[r["qid"]], r["conflict"], final[r["qid"]],
                                   max_tokens) for r in locs]
    backend = open_backend(model, cache_dir) if requests else None
    completions = run_batch(backend, requests) if backend else []
    out = []
    for r, c in zip(locs, completions):
        rep = parse_repair(c.text)
        out.append({"qid": r["qid"], "iteration": iteration, "nodes": rep.nodes, "quotes": rep.quotes,
                    "raw_output": c.text, "parse_error": rep.parse_error, **call_columns(c)})
    write_table("lmad_repairs", out, repairs, provenance)
    log.info("iteration %d: %d repairs proposed; %s", iteration, len(out), _stats(backend))


def commit(questions: str, samples: str, repairs: str, commits: str, next_state: str, method: str,
           iteration: int, iterations: int, min_quote_words: int, provenance: dict, state: str | None = None) -> None:
    """Commit guard and state transition for every active question; stopped ones pass through."""
    qs = _questions(questions)
    policy = METHOD_POLICY[method]
    answers = {qid: [r["answer"] for r in rows] for qid, rows in _by_qid(_table("samples", samples)).items()}
    proposed = {r["qid"]: r for r in _table("lmad_repairs", repairs)}
    decisions, states = [], []
    for s in _state(state, qs):
        if not s["active"]:
            states.append(s)
            continue
        qid, agent_answers = s["qid"], answers[s["qid"]]
        agreed = not controller.needs_repair(agent_answers)
        rep = None if agreed else proposed.get(qid)
        # the guard re-parses the resolver's raw output: the same parse, plus its shape verdict
        guard = commit_guard(policy, qs[qid], parse_repair(rep["raw_output"]), min_quote_words) if rep else None
        new, reason = controller.transition(s, agent_answers, guard, rep["nodes"] if rep else [], iteration,
                                            iterations)
        states.append(new)
        decisions.append({"qid": qid, "iteration": iteration, "policy": policy, "answers": agent_answers,
                          "agreed": agreed, "repair_nodes": rep["nodes"] if rep else [],
                          "quotes": rep["quotes"] if rep else [], "checks": guard.records() if guard else [],
                          "admitted": guard.admitted if guard else None, "committed": new["committed"],
                          "stop_reason": reason, "prediction": new["prediction"]})
    write_table("lmad_commits", decisions, commits, provenance)
    write_table("lmad_state", states, next_state, provenance)
    outcomes = Counter(d["stop_reason"] or "continues" for d in decisions)
    log.info("iteration %d (%s policy): %s", iteration, policy, dict(sorted(outcomes.items())))


def predict(questions: str, final_state: str, samples: list[str], chains: list[str], localizations: list[str],
            positions: list[str], repairs: list[str], commits: list[str], predictions: str, trace: str, method: str,
            provenance: dict) -> None:
    """Final answers, costed over every call the method made for a question (the shared
    proposals included), and the trace: one row per question per iteration it was active."""
    qs = _questions(questions)
    per_iteration = [
        {"samples": _table("samples", g), "chains": _table("lmad_chains", e),
         "localizations": _table("lmad_localizations", lo), "positions": _table("lmad_positions", d),
         "repairs": _table("lmad_repairs", r), "commits": _table("lmad_commits", c)}
        for g, e, lo, d, r, c in zip(samples, chains, localizations, positions, repairs, commits, strict=True)
    ]
    rows = build_trace(qs, method, per_iteration)
    write_table("lmad_trace", rows, trace, provenance)
    write_table("predictions", prediction_rows(qs, method, _table("lmad_state", final_state), rows),
                predictions, provenance)
    log.info("%s: %d predictions over %d iterations", method, len(qs), len(per_iteration))
