"""LMAD rules (rules/lmad.smk): one function per stage, run once per iteration.

Iteration ℓ's generations of method m on a dataset are ``results/{backbone}/{dataset}/{m}/iter{ℓ}/generate.parquet``
(samples: the agents' rationales and answers given P); its other tables hold every (dataset, method)
unit in one file each, ``results/{backbone}/lmad/iter{ℓ}/`` (lmad.layout.lmad_iteration; the
``dataset`` and ``method`` key columns tell the units apart, lmad.schemas.write_units):

  extract.parquet   (lmad_chains)         node chains of the questions whose answers disagree
  localize.parquet  (lmad_localizations)  conflict δ, witness indices, segments
  debate.parquet    (lmad_positions)      local-debate positions, R rounds
  resolve.parquet   (lmad_repairs)        proposed repair Ẑ and quotations Q̂
  relation.parquet  (lmad_relations)      the backbone's yes/no: does Ẑ keep subject and relation?
  commit.parquet    (lmad_commits)        guard checks, admission, stop reason
  state.parquet     (lmad_state)          every question's state after ℓ (input of ℓ + 1)

``resolve`` and ``commit`` run in one job (``resolve_and_commit``, rule ``lmad_resolve``): five jobs
per iteration. One job per (backbone, stage, iteration) serves every *unit* — a (dataset, method) pair,
in the order of the ``units`` param; the generations' path lists are aligned with it. The
job batches the still-active questions of all units x all agents into ONE model call
(one per round for the debate), so the policies' identical calls (all of iteration 0,
and later ones wherever their states agree) are computed once inside the batch. A stage
with nothing to do writes empty tables and never opens the model. ``state`` is absent at
iteration 0: every question is active and P is empty, so iteration 0's generation IS the
shared self-consistency proposals, reused without a call.

A method with a selected society (``lmad+ac-greedy``; docs/methods.md "Coverage-selected societies")
is a unit like any other whose agents are the society file's members (input ``members`` of
``generate`` and ``debate``): agent i samples and debates at member i's temperature, persona and
prompt variant, on the backend of its weights (one batch per set of weights). Its iteration 0
is the members' own pool calls (pool prompt and seed: cache hits), never the shared proposals.
The model roles that are not agents (extractor, localizer, resolver, relation check) stay on
the unperturbed model.
"""
from __future__ import annotations

import logging
from collections import Counter

import polars as pl

from .. import societies as so
from ..backends import Backend, open_backend
from ..backends.batch import by_backend, run_batch
from ..prompts import load_prompt
from ..committees import crew, role_spec
from ..call_accounting import call_columns
from ..protocols.debate.engine import Member
from ..protocols.localized_debate import controller, nodes as node_lib
from ..protocols.localized_debate.commit_guard import commit_guard
from ..protocols.localized_debate.graph_localize import graph_localization_row, localize_graphs
from ..protocols.localized_debate.local_debate import run_debate
from ..protocols.localized_debate.localize import localization_request, localization_row, parse_localization
from ..protocols.localized_debate.premises import build_graph, chain_premises, premise_request
from ..protocols.localized_debate.relation_check import parse_verdict, relation_request
from ..protocols.localized_debate.resolve import parse_repair, resolution_request
from ..protocols.localized_debate.trace import ITERATION, build_trace_frames, lmad_prediction_rows
from ..registry import method as registered_method
from ..schemas import read_table, read_unit_files, read_units, stack, to_frame, write_table
from ..answers import reading_of
from ..solver import derive_seed, sample_rows, solver_request
from ..tones import tone_role
from .society_agents import JobWeights, SocietyFile
from .lmad_inputs import Units, cache_stats, rows_by_qid, table_rows
from .units import check_aligned, check_unit_paths, per_unit, split_rows

log = logging.getLogger(__name__)


def _open(spec: dict, cache_dir: str) -> Backend:
    return open_backend(spec, cache_dir)  # looked up when called: tests stand in for open_backend


# ----------------------------------------------------------------------------- stages

def generate(questions: list[str], prompt: str, samples: list[str], units: list, model: dict, cache_dir: str,
             iteration: int, temperatures: list[float], max_tokens: int, seed: int, provenance: dict,
             proposals: list[str] | None = None, state: str | None = None, members: str | None = None) -> None:
    """Each active agent samples (r_i, a_i) given (q, x, P). Iteration 0 (P empty) is
    exactly the proposals: reused, zero calls. Iteration ℓ ≥ 1 draws with a seed derived
    from (question, agent, ℓ), so a regeneration whose P did not change (e.g. an admitted
    empty repair) gets new samples instead of the cached ones of the previous iteration.
    A society unit's agents are its members (``members``: the society file); its iteration 0
    repeats each member's pool call (the pool's prompt and seed), so the cache serves it."""
    us = Units(units, questions, samples=samples)
    entering = us.state(state)
    # the shared proposals: one table per unit without a society, in unit order
    plain = [u for u, (_, m) in enumerate(us.names) if registered_method(m).society is None]
    if iteration == 0:
        if plain and proposals is None:
            raise ValueError("lmad generate: iteration 0 of a unit without a society needs its proposals")
        check_aligned("lmad", len(plain), proposals=proposals)
        check_unit_paths("lmad", [us.names[u] for u in plain], proposals=proposals)
    shared = dict(zip(plain, proposals or []))
    society = SocietyFile(members)
    solver = load_prompt(prompt)
    weights = JobWeights(model, cache_dir, _open)
    jobs, owners, reused = [], [], {}
    for u, qs in enumerate(us.questions):
        method = us.names[u][1]
        agents = society.agents(method, us.names[u][0])
        if iteration == 0 and agents is None:  # a committee's too: its proposals are its members' calls
            rows = table_rows("samples", shared[u])
            got = {(r["qid"], r["agent"]): r["temperature"] for r in rows}
            want = {(q, a): float(t) for q in qs for a, t in enumerate(temperatures)}
            if got != want:
                raise ValueError(f"{shared[u]}: proposals do not match the questions x agent temperatures "
                                 f"{temperatures}; rerun rule generate")
            reused[u] = rows
            continue
        for s in entering[u][0]:  # the active questions'
            q = qs[s["qid"]]
            for agent, member in enumerate(agents or crew(model, len(temperatures)) or [None] * len(temperatures)):
                t = member.temperature if member else float(temperatures[agent])
                ask = so.agent_prompt(solver, member) if member else solver
                # a member's opening is its pool call (lmad.stages.societies: the pool's seed)
                sd = (derive_seed(seed, s["qid"], "society", member.name) if iteration == 0 and agents else
                      derive_seed(seed, s["qid"], agent, f"lmad-iter{iteration}"))
                jobs.append((weights.of(member), {
                    "qid": s["qid"], "stage": method, "round": iteration, "agent": agent, "temperature": float(t),
                    "seed": sd, "request": solver_request(ask, q, t, sd, max_tokens, committed=s["committed"]),
                    "reading": reading_of(q)}))
                owners.append(u)
    fresh = split_rows(len(us), owners, by_backend(jobs, sample_rows))  # one batch per set of weights
    for u in range(len(us)):
        write_table("samples", reused.get(u, fresh[u]), samples[u], provenance)
    if reused and not jobs:
        log.info("iteration 0: reused the proposal samples of %d units; 0 model calls", len(us))
        return
    log.info("iteration %d: %d solver calls over %d units (%d reused the proposals); %s", iteration, len(jobs),
             len(us), len(reused), weights.stats())


def _is_dag(method: str) -> bool:
    return registered_method(method).structure == "dag"


def extract(questions: list[str], samples: list[str], prompt: str, chains: str, units: list, model: dict,
            cache_dir: str, iteration: int, max_tokens: int, max_nodes: int, max_node_words: int,
            provenance: dict, iterations: int | None = None, guard_last_iteration: bool = True,
            premise_prompt: str | None = None) -> None:
    """Node extraction + quality check for the questions whose answers disagree (none at
    the last iteration with ``guard_last_iteration`` off: the later stages then have
    nothing to do either, and the commit stops each disagreement with ``budget``). A graph
    unit (``lmad-dag``) asks ``premise_prompt`` instead: claims with premises and sources,
    validated (``premises.build_graph``); its calls are its own, not the chain's."""
    us = Units(units, questions, samples=samples)
    extractor = load_prompt(prompt)
    dag = [_is_dag(m) for _, m in us.names]
    if any(dag) and not premise_prompt:
        raise ValueError("lmad extract: a graph LMAD unit (lmad-dag) needs the premise_prompt file")
    graph_prompt = load_prompt(premise_prompt) if any(dag) else None
    todo, owners = [], []
    skip = iterations is not None and controller.skips_auxiliary(iteration, iterations, guard_last_iteration)
    for u, qs in enumerate([] if skip else us.questions):
        for qid, rows in rows_by_qid(table_rows("samples", samples[u])).items():
            if controller.needs_repair([r["answer"] for r in rows], reading_of(qs[qid])):
                todo += rows
                owners += [u] * len(rows)
    requests = [premise_request(graph_prompt, us.questions[u][r["qid"]], r["response"], max_tokens, max_nodes,
                                max_node_words) if dag[u] else
                node_lib.extraction_request(extractor, us.questions[u][r["qid"]]["question"], r["response"],
                                            max_tokens, max_nodes, max_node_words) for u, r in zip(owners, todo)]
    backend = open_backend(role_spec(model, "extractor"), cache_dir) if requests else None
    completions = run_batch(backend, requests) if backend else []
    out = []
    for r, u, c in zip(todo, owners, completions):
        graph = {"premises": [], "sources": [], "graph_fallback": "", "graph_detail": ""}
        if dag[u]:
            g = build_graph(c.text, r["response"], r["answer"], max_nodes, max_node_words,
                            len(us.questions[u][r["qid"]]["context"] or []))
            chain, graph = g.chain, {"premises": g.premises, "sources": g.sources, "graph_fallback": g.fallback,
                                     "graph_detail": g.detail}
        else:
            chain = node_lib.build_chain(c.text, r["response"], r["answer"], max_nodes, max_node_words)
        out.append({"qid": r["qid"], "iteration": iteration, "agent": r["agent"], "answer": r["answer"],
                    "answer_norm": reading_of(us.questions[u][r["qid"]]).key(r["answer"]),
                    "rationale": r["response"], "raw_output": c.text,
                    "parse_error": chain.parse_error, "raw_nodes": chain.raw_nodes, "node_flags": chain.node_flags,
                    "nodes": chain.nodes, "fallback": chain.fallback, **graph, **call_columns(c)})
    us.write("lmad_chains", split_rows(len(us), owners, out), chains, provenance)
    fallbacks = sum(bool(r["fallback"]) for r in out)
    graph_fallbacks = Counter(r["graph_fallback"] for r, u in zip(out, owners) if dag[u] and r["graph_fallback"])
    log.info("iteration %d: %d chains extracted over %d units (%d fallbacks; graph fallbacks to the chain: %s); %s",
             iteration, len(out), len(us), fallbacks, dict(sorted(graph_fallbacks.items())), cache_stats(backend))


def localize(questions: list[str], chains: str, prompt: str, localizations: str, units: list,
             model: dict, cache_dir: str, iteration: int, max_tokens: int, provenance: dict,
             state: str | None = None, max_conflicts: int = 1, align_jaccard: float = 0.8) -> None:
    """One localizer call per disagreeing question; invalid witnesses fall back per agent. A
    graph unit (``lmad-dag``) is localized on its claim graphs without a call
    (``graph_localize``: up to ``max_conflicts`` minimal conflicts, claims aligned at
    ``align_jaccard``); its row's call columns read "skipped", which the trace does not count."""
    us = Units(units, questions)
    held, unit_chains = us.committed(state), us.rows("lmad_chains", chains)
    localizer = load_prompt(prompt)
    groups, owners, requests, out = [], [], [], []
    for u, qs in enumerate(us.questions):
        committed = held[u]
        dag = _is_dag(us.names[u][1])
        for qid, rows in rows_by_qid(unit_chains[u]).items():
            owners.append(u)
            chain_list = [r["nodes"] for r in rows]
            if dag:
                premises = [r["premises"] if len(r["premises"] or []) == len(r["nodes"]) else
                            chain_premises(len(r["nodes"])) for r in rows]
                sources = [r["sources"] if len(r["sources"] or []) == len(r["nodes"]) else [0] * len(r["nodes"])
                           for r in rows]
                loc = localize_graphs(chain_list, premises, sources, max_conflicts, align_jaccard)
                out.append(graph_localization_row(qid, iteration, chain_list, loc) | call_columns(None))
                continue
            groups.append((len(out), qid, rows))
            out.append(None)
            requests.append(localization_request(localizer, qs[qid], committed[qid], chain_list,
                                                 [r["answer"] for r in rows], max_tokens))
    backend = open_backend(role_spec(model, "localizer"), cache_dir) if requests else None
    completions = run_batch(backend, requests) if backend else []
    for (at, qid, rows), c in zip(groups, completions):
        chain_list = [r["nodes"] for r in rows]
        loc = parse_localization(c.text, [len(ch) for ch in chain_list])
        out[at] = localization_row(qid, iteration, chain_list, loc, c.text) | call_columns(c)
    us.write("lmad_localizations", split_rows(len(us), owners, out), localizations, provenance)
    fell = sum(any(r["witness_fallback"]) for r in out)
    log.info("iteration %d: %d conflicts localized over %d units (%d with a witness fallback); %s", iteration,
             len(out), len(us), fell, cache_stats(backend))


def debate(questions: list[str], localizations: str, prompt: str, positions: str, units: list,
           model: dict, cache_dir: str, iteration: int, rounds: int, temperatures: list[float], seed: int,
           max_tokens: int, provenance: dict, state: str | None = None, members: str | None = None,
           **tone_prompts: str) -> None:
    """R local rounds over the segments ending at the witnesses. ``tone_prompts``: the
    ``prompt_tone_<tone>`` instruction files of the toned methods among the units (lmad.tones);
    ``members``: the society file, whose members are a society unit's debaters."""
    us = Units(units, questions)
    held, unit_locs = us.committed(state), us.rows("lmad_localizations", localizations)
    society, weights = SocietyFile(members), JobWeights(model, cache_dir, _open)
    tones = {role.removeprefix("prompt_"): load_prompt(path).user for role, path in tone_prompts.items()}
    items, owners = [], []
    for u, qs in enumerate(us.questions):
        committed = held[u]
        role = tone_role(registered_method(us.names[u][1]).tone)
        if role and role not in tones:
            raise ValueError(f"lmad debate: unit {us.names[u]} needs the {role} prompt file")
        agents, bound = society.agents(us.names[u][1], us.names[u][0]) or crew(model, len(temperatures)), None
        for r in unit_locs[u]:
            items.append({"qid": r["qid"], "question": qs[r["qid"]], "committed": committed[r["qid"]],
                          "segments": r["segments"], "conflict": r["conflict"],
                          "witness_claims": r["witness_claims"], "tone": tones[role] if role else ""})
            owners.append(u)
            if agents and rounds:  # bound to their weights only when they will speak
                bound = bound or [Member(a, weights.of(a), society=a.model is None) for a in agents]
                items[-1]["members"] = bound
    todo = bool(items and rounds)
    backend = weights.of(None) if todo and not all(it.get("members") for it in items) else None
    per_item = run_debate(backend, load_prompt(prompt), items, iteration, rounds, temperatures, seed,
                          max_tokens) if todo else [[] for _ in items]
    grouped: list[list[dict]] = [[] for _ in range(len(us))]
    for u, rows in zip(owners, per_item):
        grouped[u] += rows
    us.write("lmad_positions", grouped, positions, provenance)
    log.info("iteration %d: %d questions debated over %d units, %d rounds, %d turns; %s", iteration, len(items),
             len(us), rounds, sum(map(len, per_item)), weights.stats())


def resolve(questions: list[str], localizations: str, positions: str, prompt: str, repairs: str,
            relation_prompt: str, relations: str, units: list, model: dict, cache_dir: str, iteration: int,
            max_tokens: int, provenance: dict, state: str | None = None) -> None:
    """The resolver turns the final positions into a proposed repair (Ẑ, Q̂); then the
    backbone judges, in a second batch, whether each repair with a claim keeps the
    question's subject and relation (the guard's ``relation_model`` check, recorded
    whatever the policy)."""
    us = Units(units, questions)
    held = us.committed(state)
    all_locs, all_positions = us.rows("lmad_localizations", localizations), us.rows("lmad_positions", positions)
    resolver = load_prompt(prompt)
    locs, owners, requests = [], [], []
    for u, qs in enumerate(us.questions):
        committed = held[u]
        unit_locs = all_locs[u]
        final = {r["qid"]: list(r["witness_claims"]) for r in unit_locs}  # p^(0), kept when R = 0
        for r in sorted(all_positions[u], key=lambda r: r["round"]):
            final[r["qid"]][r["agent"]] = r["position"]  # the last round wins
        for r in unit_locs:
            locs.append(r)
            owners.append(u)
            requests.append(resolution_request(resolver, qs[r["qid"]], committed[r["qid"]], r["conflict"],
                                               final[r["qid"]], max_tokens))
    backend = open_backend(role_spec(model, "resolver"), cache_dir) if requests else None
    completions = run_batch(backend, requests) if backend else []
    out, asked, asked_owners, checks = [], [], [], []
    checker = load_prompt(relation_prompt)
    for u, r, c in zip(owners, locs, completions):
        rep = parse_repair(c.text)
        out.append({"qid": r["qid"], "iteration": iteration, "nodes": rep.nodes, "quotes": rep.quotes,
                    "raw_output": c.text, "parse_error": rep.parse_error, **call_columns(c)})
        if rep.nodes and c.finish_reason != "length":  # a claim to judge, not a cut-off reply
            asked.append(r["qid"])
            asked_owners.append(u)
            checks.append(relation_request(checker, us.questions[u][r["qid"]], rep.nodes))
    same = role_spec(model, "relation_check") is role_spec(model, "resolver")  # a committee may name another
    checking = backend if same or not checks else open_backend(role_spec(model, "relation_check"), cache_dir)
    verdicts = run_batch(checking, checks) if checks else []
    judged = []
    for qid, c in zip(asked, verdicts):
        verdict, error = parse_verdict(c.text)
        judged.append({"qid": qid, "iteration": iteration, "verdict": verdict, "raw_output": c.text,
                       "parse_error": error, **call_columns(c)})
    us.write("lmad_repairs", split_rows(len(us), owners, out), repairs, provenance)
    us.write("lmad_relations", split_rows(len(us), asked_owners, judged), relations, provenance)
    truncated = sum(c.finish_reason == "length" for c in completions)
    log.info("iteration %d: %d repairs proposed over %d units (%d truncated), %d relation checks; %s", iteration,
             len(out), len(us), truncated, len(judged), cache_stats(backend))


def commit(questions: list[str], samples: list[str], repairs: str, relations: str, commits: str,
           next_state: str, units: list, iteration: int, iterations: int, min_quote_words: int,
           relation: str, provenance: dict, guard_last_iteration: bool = True,
           state: str | None = None) -> None:
    """Commit guard and state transition for every active question of every unit;
    stopped ones pass through. ``relation``: which subject/relation check the strict
    policy requires (``model`` or ``lexical``; both are recorded)."""
    us = Units(units, questions, samples=samples)
    skipped = controller.skips_auxiliary(iteration, iterations, guard_last_iteration)
    entering, unit_repairs = us.state(state), us.rows("lmad_repairs", repairs)
    unit_relations = us.rows("lmad_relations", relations)
    decided, after = [], []
    for u, qs in enumerate(us.questions):
        method = us.names[u][1]
        verdicts = {r["qid"]: r["verdict"] for r in unit_relations[u]}
        active, stopped = entering[u]
        decisions, states = _commit_unit(qs, registered_method(method).policy, table_rows("samples", samples[u]),
                                         unit_repairs[u], verdicts, active, iteration, iterations,
                                         min_quote_words, relation, skipped)
        decided.append(decisions)
        # stopped questions pass through as they were read (us.write sorts the unit's rows by qid)
        after.append(states if stopped is None or not stopped.height
                     else pl.concat([to_frame("lmad_state", states), stopped], how="vertical"))
        outcomes = Counter(d["stop_reason"] or "continues" for d in decisions)
        log.info("iteration %d, %s on %s: %s", iteration, method, us.names[u][0], dict(sorted(outcomes.items())))
    us.write("lmad_commits", decided, commits, provenance)
    us.write("lmad_state", after, next_state, provenance)


def resolve_and_commit(questions: list[str], samples: list[str], localizations: str, positions: str,
                       prompt: str, relation_prompt: str, repairs: str, relations: str, commits: str,
                       next_state: str, units: list, model: dict, cache_dir: str, iteration: int,
                       iterations: int, max_tokens: int, min_quote_words: int, relation: str, provenance: dict,
                       guard_last_iteration: bool = True, state: str | None = None) -> None:
    """The ``lmad_resolve`` job: ``resolve``, then ``commit`` on what it wrote. One job, as
    the guarded resolver commits its own repair: a separate commit job was one more process
    per iteration on the run's longest path (the LMAD chain), for a step with no model call."""
    resolve(questions=questions, localizations=localizations, positions=positions, prompt=prompt, repairs=repairs,
            relation_prompt=relation_prompt, relations=relations, units=units, model=model, cache_dir=cache_dir,
            iteration=iteration, max_tokens=max_tokens, provenance=provenance, state=state)
    commit(questions=questions, samples=samples, repairs=repairs, relations=relations, commits=commits,
           next_state=next_state, units=units, iteration=iteration, iterations=iterations,
           min_quote_words=min_quote_words, relation=relation, provenance=provenance,
           guard_last_iteration=guard_last_iteration, state=state)


def _commit_unit(qs: dict, policy: str, samples: list[dict], repairs: list[dict], verdicts: dict[str, str],
                 active: list[dict], iteration: int, iterations: int, min_quote_words: int, relation: str,
                 skipped: bool) -> tuple[list[dict], list[dict]]:
    """The decisions and the next states of the ``active`` questions' state rows."""
    answers = {qid: [r["answer"] for r in rows] for qid, rows in rows_by_qid(samples).items()}
    proposed = {r["qid"]: r for r in repairs}
    decisions, states = [], []
    for s in active:
        qid, agent_answers = s["qid"], answers[s["qid"]]
        agreed = not controller.needs_repair(agent_answers, reading_of(qs[qid]))
        rep = None if agreed or skipped else proposed.get(qid)
        # the guard re-parses the resolver's raw output: the same parse, plus its shape verdict
        guard = commit_guard(policy, qs[qid], parse_repair(rep["raw_output"]), min_quote_words, relation,
                             verdicts.get(qid)) if rep else None
        truncated = bool(rep) and rep["finish_reason"] == "length"
        new, reason = controller.transition(s, agent_answers, guard, rep["nodes"] if rep else [], iteration,
                                            iterations, reading_of(qs[qid]), truncated=truncated,
                                            skipped=skipped and not agreed)
        states.append(new)
        # a truncated reply is recorded with its checks but decides nothing: admitted stays null
        decisions.append({"qid": qid, "iteration": iteration, "policy": policy, "answers": agent_answers,
                          "agreed": agreed, "repair_nodes": rep["nodes"] if rep else [],
                          "quotes": rep["quotes"] if rep else [], "checks": guard.records() if guard else [],
                          "admitted": guard.admitted if guard and not truncated else None,
                          "committed": new["committed"], "stop_reason": reason, "prediction": new["prediction"]})
    return decisions, states


#: lmad_predict's iteration files (one of every unit per iteration): argument -> table
_ITERATION_TABLES = {"chains": "lmad_chains", "localizations": "lmad_localizations", "positions": "lmad_positions",
                     "repairs": "lmad_repairs", "relations": "lmad_relations", "commits": "lmad_commits"}


def predict(questions: str, final_state: str, samples: list[str], chains: list[str], localizations: list[str],
            positions: list[str], repairs: list[str], relations: list[str], commits: list[str], predictions: str,
            trace: str, method: str, provenance: dict, dataset: str) -> None:
    """Final answers of one (``dataset``, ``method``) unit, costed over every call the method made
    for a question (the shared proposals included), and the trace: one row per question per
    iteration it was active. ``samples``: the unit's generations of every iteration; the other
    lists: each iteration's file of every unit."""
    predict_units(questions=[questions], final_state=final_state, samples=samples, chains=chains,
                  localizations=localizations, positions=positions, repairs=repairs, relations=relations,
                  commits=commits, predictions=[predictions], trace=[trace], units=[(dataset, method)],
                  provenance=provenance)


def predict_units(questions: list[str], final_state: str, samples: list[str], chains: list[str],
                  localizations: list[str], positions: list[str], repairs: list[str], relations: list[str],
                  commits: list[str], predictions: list[str], trace: list[str], units: list,
                  provenance: dict) -> None:
    """``predict`` for several (dataset, method) units, ``questions``, ``predictions`` and ``trace``
    aligned with them; ``samples`` holds every iteration of the first unit, then of the next.
    Each iteration file is read once for all units."""
    units = [tuple(u) for u in units]
    n = len(units)
    check_aligned("lmad_predict", n, questions=questions, predictions=predictions, trace=trace)
    check_unit_paths("lmad_predict", units, questions=questions, predictions=predictions, trace=trace)
    unit_samples = per_unit("lmad_predict", n, samples)
    for k, paths in enumerate(zip(*unit_samples)):
        check_unit_paths("lmad_predict", units, **{f"samples iteration {k}": list(paths)})
    files = {"chains": chains, "localizations": localizations, "positions": positions, "repairs": repairs,
             "relations": relations, "commits": commits}
    if any(len(paths) != len(unit_samples[0]) for paths in files.values()):
        raise ValueError(f"lmad_predict: iteration files {({k: len(v) for k, v in files.items()})} for "
                         f"{len(unit_samples[0])} iterations of generations")
    # per table, per unit: every iteration's rows
    frames = {arg: read_unit_files(_ITERATION_TABLES[arg], paths, units, ITERATION) for arg, paths in files.items()}
    final = read_units("lmad_state", final_state, units)
    # each question's dataset, per questions table (a table serves every method of its dataset)
    datasets_of = {path: dict(read_table("questions", path).select("qid", "dataset").iter_rows())
                   for path in set(questions)}
    for u, (dataset, method) in enumerate(units):
        datasets = datasets_of[questions[u]]
        tables = {"samples": stack([read_table("samples", g) for g in unit_samples[u]], ITERATION),
                  **{arg: frames[arg][u] for arg in files}}
        built = build_trace_frames(datasets, method, tables, len(unit_samples[u]))
        trace_frame = write_table("lmad_trace", built, trace[u], provenance)
        write_table("predictions", lmad_prediction_rows(datasets, method, final[u], trace_frame), predictions[u],
                    provenance)
        log.info("%s on %s: %d predictions over %d iterations", method, dataset, len(datasets), len(unit_samples[u]))


def predict_methods(questions: list[str], final_state: str, samples: list[str], chains: list[str],
                    localizations: list[str], positions: list[str], repairs: list[str], relations: list[str],
                    commits: list[str], predictions: list[str], trace: list[str], methods: list[str],
                    units: list[tuple[str, str]], provenance: dict) -> None:
    """Rule ``lmad_predict``: ``predict_units`` for every (dataset, LMAD method) unit of the run in
    one job (their chain ends in the same job, so they are ready together). ``questions`` has one
    entry per dataset; ``units``, ``predictions``, ``trace`` and the generations run method after
    method, each over the datasets; the other lists hold one file per iteration."""
    if len({m for _, m in units}) != len(methods) or len(units) != len(methods) * len(questions):
        raise ValueError(f"lmad_predict: units {units} are not methods {methods} x {len(questions)} datasets")
    predict_units(questions=questions * len(methods), final_state=final_state, samples=samples, chains=chains,
                  localizations=localizations, positions=positions, repairs=repairs, relations=relations,
                  commits=commits, predictions=predictions, trace=trace, units=units, provenance=provenance)
