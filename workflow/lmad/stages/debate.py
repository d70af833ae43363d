"""Debate-baseline rules (rules/debate.smk): one job per method and round covering every
dataset, then one job writing every debate method's predictions of every dataset.

Round t of method m on a dataset lives in ``results/{backbone}/{dataset}/{m}/``:

  round{t}.parquet        (samples)       each active agent's round-t response and answer
  round{t}_steps.parquet  (debate_steps)  advice, notes, critiques, manner steps, judge, moderator
  round{t}_state.parquet  (debate_state)  every question: still debating, or stopped (reason, answer)

Round 0 of a protocol that opens like self-consistency (with the persona temperatures) is
the shared ``samples/proposals.parquet``, copied without a call. A method with a selected
society (``mad+ac-greedy``; lmad.societies) reads the society file
(``results/{backbone}/societies/members.parquet``) in every round: its agents are the members,
each on the backend of its weights, and its round 0 is the members' own calls. The protocol itself
(stages, visibility, stop rule) is data in ``lmad.protocols.debate.methods``.
"""
from __future__ import annotations

import logging
from collections import Counter

from .. import layout
from .. import societies as so
from ..backends import open_backend
from ..prompts import load_prompt
from ..protocols.debate import debate_prediction_rows, run_round
from ..protocols.debate.engine import Member, RoundResult
from .society_agents import JobWeights
from ..committees import committee_of, crew
from ..registry import method as registered_method
from ..tones import tone_role
from ..schemas import read_table, write_table
from .units import by_method, check_aligned, check_unit_paths, per_unit, split_rows

log = logging.getLogger(__name__)

PROMPT_PREFIX = "prompt_"


def debate_round(questions: list[str], samples: list[str], steps: list[str], state: list[str], model: dict,
                 cache_dir: str, method: str, round_index: int, last: bool, temperatures: list[float],
                 manners: list[str], max_tokens: int, aux_max_tokens: dict, seed: int, provenance: dict,
                 proposals: list[str] | None = None, previous: list[str] | None = None,
                 previous_state: list[str] | None = None, persistence: float = 0.0, members: str | None = None,
                 **prompt_files: str) -> None:
    """Round ``round_index`` of ``method`` on every dataset at once: every stage of the
    round in one batch per step. Every path argument but ``members`` is a list aligned with
    ``questions`` (one entry per dataset); ``prompt_files``: ``prompt_<role>`` paths of the roles
    this round uses; ``members``: the society file of a method with a society."""
    bad = [k for k in prompt_files if not k.startswith(PROMPT_PREFIX)]
    if bad:
        raise TypeError(f"debate_round: unexpected arguments {bad}")
    check_aligned("debate_round", len(questions), samples=samples, steps=steps, state=state, proposals=proposals,
                  previous=previous, previous_state=previous_state)
    prompts = {k[len(PROMPT_PREFIX):]: load_prompt(v) for k, v in prompt_files.items()}
    spec = registered_method(method)
    # the tone instruction (lmad.tones) and the layer-A prompt come as prompt files of the round
    role = tone_role(spec.tone)
    tone = prompts.pop(role).user if role and round_index > 0 else ""
    self_report = prompts.pop("self_report", None)
    owner, qs = {}, []
    for u, path in enumerate(questions):
        for q in read_table("questions", path).to_dicts():
            if q["qid"] in owner:
                raise ValueError(f"question id {q['qid']!r} is in both {questions[owner[q['qid']]]} and {path}")
            owner[q["qid"]] = u
            qs.append(q)

    def rows(name: str, paths: list[str] | None) -> list[dict] | None:
        return [r for p in paths for r in read_table(name, p).to_dicts()] if paths else None

    weights, committee = JobWeights(model, cache_dir, lambda spec, cache: open_backend(spec, cache)), committee_of(model)
    # the calls of no agent (judge, moderator, chair) run on a committee's role model
    role = "chair" if spec.protocol.final == "chair" else "debate_judge"
    backend = weights.of_model(committee["roles"][role]) if committee else weights.of(None)
    # one society per benchmark (config societies.split): the questions run in groups of one society each
    groups = society_groups(spec.society, members, spec.protocol.agents, model, cache_dir, backend, qs)
    if committee:  # agent i is member i, on its model's backend (one batch per model and step)
        groups = [([Member(a, weights.of(a), society=False) for a in crew(model, len(temperatures))], qs)]
    prev_rows, prev_state, shared = rows("samples", previous) or (), rows("debate_state", previous_state), \
        rows("samples", proposals)
    results = []
    for society, group in groups:
        ids = {q["qid"] for q in group}
        mine = (lambda rs, ids=ids: None if rs is None else [r for r in rs if r["qid"] in ids]) \
            if len(groups) > 1 else (lambda rs: rs)
        results.append(run_round(
            spec.protocol, method, round_index, last, group, backend, prompts, temperatures, manners, seed,
            max_tokens, aux_max_tokens, previous=mine(prev_rows) or (), previous_state=mine(prev_state),
            proposals=mine(shared), tone=tone, self_report=self_report, persistence=persistence, members=society))
    result = results[0] if len(results) == 1 else RoundResult(
        [r for x in results for r in x.samples], [r for x in results for r in x.steps],
        [r for x in results for r in x.state], sum(x.calls for x in results), sum(x.active for x in results))
    society = [m for s, _ in groups for m in s]
    for name, table, paths in (("samples", result.samples, samples), ("debate_steps", result.steps, steps),
                               ("debate_state", result.state, state)):
        for path, unit_rows in zip(paths, split_rows(len(paths), [owner[r["qid"]] for r in table], table)):
            write_table(name, unit_rows, path, provenance)
    stops = Counter(s["stop_reason"] for s in result.state if not s["active"] and s["stop_round"] == round_index)
    source = "reused the shared proposals; " if proposals else ""
    if society:
        source += f"{f'{spec.society} society' if spec.society else 'committee'} {[m.agent.name for m in society]}; "
    log.info("%s round %d: %d active questions of %d datasets, %s%d model calls (%d answers, %d other steps); "
             "stopped now: %s; %s", method, round_index, result.active, len(questions), source, result.calls,
             len(result.samples), len(result.steps), dict(stops),
             "; ".join(b.stats() for b in {id(b): b for b in [backend, *(m.backend for m in society)]}.values()))


def society_groups(selector: str | None, members: str | None, agents: int | None, model: dict, cache_dir: str,
                   backend, questions: list[dict]) -> list[tuple[list[Member], list[dict]]]:
    """[(members, questions)]: the questions (in order) grouped by the society of their dataset
    (each benchmark has its own, lmad.societies); one group of every question without a society."""
    if selector is None or not members:
        return [(society_members(selector, members, agents, model, cache_dir, backend), list(questions))]
    rows = read_table("society_members", members).to_dicts()
    weights = JobWeights(model, cache_dir, lambda spec, cache: open_backend(spec, cache), base=backend)
    by: dict[tuple, list[dict]] = {}
    for q in questions:
        team = tuple(so.members_of(rows, selector, agents, dataset=layout.configured_dataset(q["dataset"])))
        by.setdefault(team, []).append(q)
    return [([Member(a, weights.of(a)) for a in team], qs) for team, qs in by.items()]


def society_members(selector: str | None, members: str | None, agents: int | None, model: dict, cache_dir: str,
                    backend) -> list[Member]:
    """The debating members of ``selector``'s society (none for a method without one): the
    society file's members in pick order (the first ``agents`` of them for a protocol with a
    fixed count), each on ``backend`` or, when perturbed, on one backend per distinct
    perturbation (backends/perturb.py; a model copy loaded on its first cache miss)."""
    if selector is None:
        return []
    if not members:
        raise ValueError(f"society {selector}: the round has no society file (input members)")
    weights = JobWeights(model, cache_dir, lambda spec, cache: open_backend(spec, cache), base=backend)
    return [Member(agent, weights.of(agent))
            for agent in so.members_of(read_table("society_members", members).to_dicts(), selector, agents)]


def debate_predict(questions: str, samples: list[str], steps: list[str], final_state: str, predictions: str,
                   method: str, provenance: dict) -> None:
    """The final answers of ``method`` with the cost of all its calls over every round."""
    rows = debate_prediction_rows(read_table("questions", questions).to_dicts(), method,
                           [r for p in samples for r in read_table("samples", p).to_dicts()],
                           [r for p in steps for r in read_table("debate_steps", p).to_dicts()],
                           read_table("debate_state", final_state).to_dicts())
    write_table("predictions", rows, predictions, provenance)
    log.info("%s: %d predictions; stop reasons %s", method, len(rows), dict(Counter(r["stop_reason"] for r in rows)))


def debate_predict_datasets(questions: list[str], samples: list[str], steps: list[str], final_state: list[str],
                            predictions: list[str], method: str, units: list[tuple[str, str]],
                            provenance: dict) -> None:
    """``debate_predict`` for every dataset of one method; ``samples``
    and ``steps`` hold every round of the first dataset, then of the next."""
    n = len(units)
    check_aligned("debate_predict", n, questions=questions, final_state=final_state, predictions=predictions)
    rounds = {"samples": per_unit("debate_predict", n, samples), "steps": per_unit("debate_predict", n, steps)}
    for name, lists in rounds.items():
        for t, paths in enumerate(zip(*lists)):
            check_unit_paths("debate_predict", units, **{f"{name} round {t}": list(paths)})
    check_unit_paths("debate_predict", units, questions=questions, final_state=final_state, predictions=predictions)
    for u in range(n):
        debate_predict(questions[u], rounds["samples"][u], rounds["steps"][u], final_state[u], predictions[u],
                       method, provenance)


def debate_predict_methods(questions: list[str], samples: list[str], steps: list[str], final_state: list[str],
                           predictions: list[str], methods: list[str], rounds: list[int],
                           units: list[tuple[str, str]], provenance: dict) -> None:
    """Rule ``debate_predict``: ``debate_predict_datasets`` for every debate method of the run in
    one job (a job that only writes tables is mostly its imports, so one per method would add a
    job per method). ``questions`` has one entry per dataset; every other list holds the first
    method's entries (as ``debate_predict_datasets`` takes them), then the next method's;
    ``rounds``: each method's last round."""
    n = len(questions)
    per_method = {name: by_method("debate_predict", methods, [n * k for k in counts], paths)
                  for name, paths, counts in (("samples", samples, [r + 1 for r in rounds]),
                                              ("steps", steps, [r + 1 for r in rounds]),
                                              ("final_state", final_state, [1] * len(methods)),
                                              ("predictions", predictions, [1] * len(methods)),
                                              ("units", units, [1] * len(methods)))}
    for i, method in enumerate(methods):
        debate_predict_datasets(questions, **{name: lists[i] for name, lists in per_method.items()}, method=method,
                                provenance=provenance)
