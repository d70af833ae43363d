"""The one batched round engine: runs round t of any :class:`~.spec.Protocol`.

Every call of a stage is a :class:`CallSequence` (an agent's turn, an advice, a judgment): a
short list of steps where step k sees the outputs of steps < k. The engine sends step k
of every chain of a stage — all active questions x all agents — as ONE
``backend.generate`` batch, so a MAD round is one batch, a TrueMAD round two (advice,
revision), a DMAD round as many as its longest manner (Self-Refine: 3).

Outputs of a round, as table rows:

``samples``  one per active question x agent: the agent's round-t response (the last
             step of its turn), extracted and normalized answer, tokens;
``steps``    every other call: advice / notes / self-critiques (``target`` = recipient),
             intermediate manner steps (``stepback_concept``, ``selfrefine_draft``,
             ``selfrefine_critique``), judge and moderator replies (``agent`` = -1)
             with their strict parse and its error;
``state``    one per question: still active, or stopped with reason, round and answer.

Seeds: round 0 ``Solve`` uses the proposal seed ``derive_seed(seed, qid, agent)``; every
other agent call ``derive_seed(seed, qid, kind, t, agent, ...)`` without the method
name, so MAD and Consensus send identical revision requests and share them in the cache.

A society (``members``: a selected society of lmad.societies, docs/methods.md "Coverage-selected
societies") replaces the temperature-only agents: agent i speaks with member i's temperature,
persona and prompt variant (``societies.member_prompt``) through the backend of member i's
weights; round 0 ``Solve`` repeats the member's pool call (its prompt and pool seed). Each step
is then one ``generate`` batch per distinct set of weights.
"""
from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Sequence

from ...call_accounting import call_columns, cost_per_question
from ...backends import Backend, ChatRequest, Completion
from ...backends.batch import generate_by_backend
from ...prompts import Prompt
from ...societies import PoolAgent, member_prompt
from ...disagreement_labels import (MEASUREMENT_STEPS, PERSIST_KEPT, PERSIST_REMOVED, SELF_REPORT_STEP, as_json,
                                    parse_self_report, self_report_request)
from ...answers import Reading, reading_of
from ...solver import derive_seed
from ...tones import with_tone
from . import views
from .decisions import JUDGE_SCHEMA, MODERATOR_SCHEMA, STOP_RULES, Verdict, parse_judge, parse_moderator, vote
from .spec import (ADVICE_ROLES, ANSWER, CHAIR_ROLE, MANNERS, MODERATOR_ROLE, Advise, Judge, Protocol, Reason, Revise,
                   Solve, Step, Turn)

NO_AGENT = -1  # the judge and the moderator


@dataclass
class CallSequence:
    """One call sequence. ``answers``: its last step is the agent's round response."""

    qid: str
    name: str
    agent: int
    steps: tuple[Step, ...]
    seeds: tuple[int, ...]
    temperature: float
    max_tokens: int
    fields: dict[str, str]
    answers: bool = False
    target: int = NO_AGENT
    slot: int = 0
    constraint: dict | None = None
    tone: str = ""  # the tone instruction of a debate turn (lmad.tones); "" = neutral
    completions: list[Completion] = field(default_factory=list)
    verdict: Verdict | None = None

    def request(self, k: int, prompts: dict[str, Prompt]) -> ChatRequest:
        done = {s.name: c.text for s, c in zip(self.steps, self.completions)}
        messages = with_tone(prompts[self.steps[k].role].render(**{**self.fields, **done}), self.tone, self.fields)
        return ChatRequest(messages=messages, temperature=float(self.temperature), max_tokens=self.max_tokens,
                           seed=self.seeds[k], constraint=self.constraint,
                           role="debater" if self.agent != NO_AGENT else "judge")  # judge, moderator, chair

    @property
    def text(self) -> str:
        return self.completions[-1].text


@dataclass(frozen=True)
class Member:
    """A society agent or a committee member: its pool agent (temperature, persona, variant,
    weights, model) and the backend of its weights (one per distinct model and perturbation,
    shared by the members on them). ``society``: round 0 repeats the member's pool call (its
    seed); a committee member's round 0 is a proposal (the proposal seed of its index)."""

    agent: PoolAgent
    backend: Backend
    society: bool = True


def run_chains(chains: Sequence[CallSequence], backend_of, prompts_of) -> int:
    """Step k of every chain in one ``generate`` per backend (``backend_of(agent)``; one for
    every chain unless a society's members sit on perturbed weights); returns the number of calls."""
    calls = 0
    for k in range(max((len(c.steps) for c in chains), default=0)):
        live = [c for c in chains if len(c.steps) > k]
        completions = generate_by_backend([(backend_of(c.agent), c.request(k, prompts_of(c.agent))) for c in live])
        for chain, completion in zip(live, completions):
            chain.completions.append(completion)
        calls += len(live)
    return calls


def deal_notes(agents: int, seed: int, qid: str, t: int) -> list[int]:
    """ComputeMAD: the recipient of each of the K(K-1) notes (note n = author * (K-1) + slot),
    dealt at random without replacement so every agent gets K-1; seeded per question and round."""
    recipients = [r for r in range(agents) for _ in range(agents - 1)]
    random.Random(derive_seed(seed, qid, "deal", t)).shuffle(recipients)
    return recipients


@dataclass
class RoundResult:
    samples: list[dict]
    steps: list[dict]
    state: list[dict]
    calls: int
    active: int


@dataclass
class _Round:
    protocol: Protocol
    method: str
    t: int
    questions: dict[str, dict]
    active: list[str]
    temperatures: tuple[float, ...]
    manners: tuple[str, ...]
    prev: dict[str, dict[int, dict]]
    prompts: dict[str, Prompt]
    seed: int
    max_tokens: int
    aux_max_tokens: dict
    backend: Backend
    tone: str = ""  # tone instruction of this round's debate turns ("" at t = 0 and for neutral)
    members: tuple[Member, ...] = ()  # a society's agents (empty: temperature-only agents)
    current: dict[str, dict[int, dict]] = field(default_factory=lambda: defaultdict(dict))
    advice: dict[str, dict[int, list]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    samples: list[dict] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    answered: list[CallSequence] = field(default_factory=list)  # every agent turn of the round
    calls: int = 0
    fields: dict[str, dict[str, str]] = field(default_factory=dict)  # question_fields per qid, built once
    _voiced: dict[int, dict[str, Prompt]] = field(default_factory=dict)
    _readings: dict[str, Reading] = field(default_factory=dict)

    @property
    def agents(self) -> range:
        return range(len(self.temperatures))

    def base(self, qid: str) -> dict[str, str]:
        # every agent and step of a question renders the same passages: format them once
        if qid not in self.fields:
            self.fields[qid] = views.question_fields(self.questions[qid])
        return self.fields[qid]

    def reading(self, qid: str) -> Reading:
        """How the question's replies are read and compared (its answer type)."""
        if qid not in self._readings:
            self._readings[qid] = reading_of(self.questions[qid])
        return self._readings[qid]

    def seed_of(self, qid: str, *parts) -> int:
        return derive_seed(self.seed, qid, *parts)

    def previous(self, qid: str) -> dict[int, str]:
        return {a: r["response"] for a, r in self.prev.get(qid, {}).items()}

    def agent_chain(self, qid: str, agent: int, name: str, steps: tuple[Step, ...], fields: dict) -> CallSequence:
        seeds = tuple(self.seed_of(qid, "debate", self.t, agent, s.name) for s in steps)
        return CallSequence(qid, name, agent, steps, seeds, self.temperatures[agent], self.max_tokens,
                     self.base(qid) | fields, answers=True, tone=self.tone)

    def backend_of(self, agent: int) -> Backend:
        """A society member's weights; the judge and the moderator (no agent) use the model's own."""
        return self.members[agent].backend if self.members and agent != NO_AGENT else self.backend

    def prompts_of(self, agent: int) -> dict[str, Prompt]:
        """The prompts as agent ``agent`` is asked them: under its persona and variant in a society."""
        if not self.members or agent == NO_AGENT:
            return self.prompts
        if agent not in self._voiced:
            pool = self.members[agent].agent
            self._voiced[agent] = {role: member_prompt(p, role, pool) for role, p in self.prompts.items()}
        return self._voiced[agent]

    def run(self, chains: list[CallSequence]) -> list[CallSequence]:
        self.calls += run_chains(chains, self.backend_of, self.prompts_of)
        return chains

    def record(self, chains: list[CallSequence]) -> None:
        self.answered += [c for c in chains if c.answers]
        for c in chains:
            for k, (step, completion) in enumerate(zip(c.steps, c.completions)):
                if c.answers and k == len(c.steps) - 1:
                    self.add_answer(self.answer_row(c, completion))
                else:
                    name = f"{c.name}_{step.name}" if c.answers else c.name
                    self.steps.append({
                        "qid": c.qid, "round": self.t, "step": name, "agent": c.agent, "target": c.target,
                        "slot": c.slot, "temperature": float(c.temperature), "seed": c.seeds[k],
                        "response": completion.text,
                        "parsed": c.verdict.as_json() if c.verdict else "",
                        "parse_error": c.verdict.error if c.verdict else "", **call_columns(completion)})

    def answer_row(self, c: CallSequence, completion: Completion) -> dict:
        answer, how = self.reading(c.qid).extract(completion.text)
        return {"qid": c.qid, "stage": self.method, "round": self.t, "agent": c.agent,
                "temperature": float(c.temperature), "seed": c.seeds[-1], "response": completion.text,
                "answer": answer, "answer_norm": self.reading(c.qid).key(answer), "answer_method": how,
                **call_columns(completion)}

    def add_answer(self, row: dict) -> None:
        self.current[row["qid"]][row["agent"]] = row
        self.samples.append(row)


# ------------------------------------------------------------------- one function per stage

def _solve(stage: Solve, rnd: _Round) -> None:
    # a society member repeats its pool call (lmad.stages.societies: the pool's seed), else the proposal seed
    def seed(qid: str, a: int) -> int:
        pool = rnd.members and rnd.members[a].society
        return rnd.seed_of(qid, "society", rnd.members[a].agent.name) if pool else rnd.seed_of(qid, a)

    chains = [CallSequence(qid, "solve", a, (Step(ANSWER, "solver"),), (seed(qid, a),), rnd.temperatures[a],
                    rnd.max_tokens, rnd.base(qid) | {"committed": ""}, answers=True)
              for qid in rnd.active for a in rnd.agents]
    rnd.record(rnd.run(chains))


def _reason(stage: Reason, rnd: _Round) -> None:
    chains = []
    for qid in rnd.active:
        prev = rnd.previous(qid)
        for a in rnd.agents:
            fields = {"self_label": rnd.protocol.label(a),
                      "debate": views.final_answers(prev, a, rnd.protocol.label),
                      "advice": views.advice(rnd.advice[qid][a])}
            chains.append(rnd.agent_chain(qid, a, rnd.manners[a], MANNERS[rnd.manners[a]], fields))
    rnd.record(rnd.run(chains))


#: Per advice mode: the step name of its calls, and how the recipient sees each item.
ADVICE_STEP = {"peer": "advise", "notes": "note", "self": "self_critique"}
ADVICE_ITEM = {"peer": "From {source}", "notes": "Note", "self": "Your own critique"}


def _advise(stage: Advise, rnd: _Round) -> None:
    label, k, name = rnd.protocol.label, len(rnd.temperatures), ADVICE_STEP[stage.mode]
    step = Step(name, ADVICE_ROLES[stage.mode])
    chains = []
    for qid in rnd.active:
        prev = rnd.previous(qid)
        for a in rnd.agents:
            fields = rnd.base(qid) | {"self_label": label(a), "own": prev[a].strip()}
            if stage.mode == "peer":  # (recipient, slot, fields): one advice per other agent
                jobs = [(r, 0, fields | {"target_label": label(r), "target_response": prev[r].strip()})
                        for r in rnd.agents if r != a]
            elif stage.mode == "notes":  # K-1 untargeted notes; recipients are dealt below
                jobs = [(NO_AGENT, s, fields | {"responses": views.labelled(prev, label)}) for s in range(k - 1)]
            else:  # K-1 critiques of the agent's own response
                jobs = [(a, s, fields) for s in range(k - 1)]
            chains += [CallSequence(qid, name, a, (step,), (rnd.seed_of(qid, name, rnd.t, a, r, s),), rnd.temperatures[a],
                             rnd.aux_max_tokens["advice"], f, target=r, slot=s, tone=rnd.tone) for r, s, f in jobs]
    rnd.run(chains)
    by_qid = defaultdict(list)  # grouped once: a scan per question is quadratic in the questions
    for c in chains:
        by_qid[c.qid].append(c)
    for qid in rnd.active:
        mine = by_qid[qid]  # author order, then recipient / slot order
        if stage.mode == "notes":
            for chain, recipient in zip(mine, deal_notes(k, rnd.seed, qid, rnd.t)):
                chain.target = recipient
        for chain in mine:
            item = ADVICE_ITEM[stage.mode].format(source=label(chain.agent))
            rnd.advice[qid][chain.target].append((item, chain.text))
    rnd.record(chains)


def _revise(stage: Revise, rnd: _Round) -> None:
    chains = []
    for qid in rnd.active:
        prev = rnd.previous(qid)
        for a in rnd.agents:
            fields = {"self_label": rnd.protocol.label(a), "own": prev[a].strip(),
                      "others": views.peers(prev, a, rnd.protocol.label),
                      "advice": views.advice(rnd.advice[qid][a])}
            chains.append(rnd.agent_chain(qid, a, "revise", (Step(ANSWER, stage.role),), fields))
    rnd.record(rnd.run(chains))


def _turn(stage: Turn, rnd: _Round) -> None:
    a, chains = stage.agent, []
    for qid in rnd.active:
        prev, now = rnd.previous(qid), {j: r["response"] for j, r in rnd.current[qid].items()}
        latest = {j: now.get(j, prev.get(j)) for j in rnd.agents if j != a and (j in now or j in prev)}
        fields = {"self_label": rnd.protocol.label(a), "own": views.own_turn(prev.get(a)),
                  "opponent": views.opponents(latest, rnd.protocol.label)}
        chains.append(rnd.agent_chain(qid, a, "turn", (Step(ANSWER, stage.role),), fields))
    rnd.record(rnd.run(chains))


def _verdict_chains(rnd: _Round, qids: list[str], name: str, role: str, schema: dict, max_tokens: int) -> list[CallSequence]:
    return [CallSequence(qid, name, NO_AGENT, (Step(name, role),), (rnd.seed_of(qid, name, rnd.t),), 0.0, max_tokens,
                  rnd.base(qid) | {"debate": views.labelled({a: r["response"] for a, r in rnd.current[qid].items()},
                                                            rnd.protocol.label)},
                  constraint={"json": schema})
            for qid in qids]


def _chair(rnd: _Round, qids: list[str], max_tokens: int, state: dict) -> None:
    """The chair's synthesis of the agents' last answers: one call per open question on the
    chair's model (``rnd.backend``), read like an agent's answer; a reply without an answer
    falls back to the majority vote (``chair_fallback``)."""
    chains = [CallSequence(qid, "chair", NO_AGENT, (Step("chair", CHAIR_ROLE),), (rnd.seed_of(qid, "chair", rnd.t),),
                           0.0, max_tokens, rnd.base(qid) | {"debate": views.labelled(
                               {a: r["response"] for a, r in rnd.current[qid].items()}, rnd.protocol.label)})
              for qid in qids]
    for chain in rnd.run(chains):
        reading = rnd.reading(chain.qid)
        answer = reading.extract(chain.text)[0]
        found = not reading.empty(answer)
        chain.verdict = Verdict(found, answer if found else "", "" if found else "no answer in the reply")
        if found:
            state[chain.qid] = _stopped(chain.qid, rnd.t, "chair", answer, reading)
        else:
            _, answer = vote([rnd.current[chain.qid][a]["answer"] for a in rnd.agents], reading)
            state[chain.qid] = _stopped(chain.qid, rnd.t, "chair_fallback", answer, reading)
    rnd.record(chains)


def _judge(stage: Judge, rnd: _Round) -> None:
    chains = rnd.run(_verdict_chains(rnd, rnd.active, "judge", stage.role, JUDGE_SCHEMA,
                                              rnd.aux_max_tokens["judge"]))
    for chain in chains:
        chain.verdict = rnd.verdicts[chain.qid] = parse_judge(chain.text, rnd.reading(chain.qid))
    rnd.record(chains)


def self_reports(rnd: _Round, prompt: Prompt, persistence: float = 0.0) -> None:
    """Layer A (lmad.disagreement_labels): every agent turn of the round, in one batch, is
    followed in its own conversation (the turn's last prompt, tone included, and its reply)
    by the self-report request, constrained to the label's JSON schema; the strict parse and
    its error go to a ``self_report`` step row. A measurement: never part of a method's cost.

    Layer C (``persistence`` > 0, a toned round only): a seeded share of the turns is re-asked
    twice in the same batch, with new seeds: once with the tone instruction deleted from the
    turn's prompt (``persist_removed``) and once, as the noise floor, with it kept
    (``persist_kept``); lmad.studies.disagreement.tables compares each re-ask's label with the original."""
    chains = [c for c in rnd.answered if c.completions]
    jobs = [(SELF_REPORT_STEP, c, c) for c in chains]
    if persistence > 0 and rnd.tone:
        for c in chains:
            if random.Random(rnd.seed_of(c.qid, "persist", rnd.t, c.agent)).random() < persistence:
                jobs += [(PERSIST_REMOVED, c, replace(c, tone="")), (PERSIST_KEPT, c, c)]
    requests = [self_report_request(asked.request(len(c.steps) - 1, rnd.prompts_of(c.agent)), c.text, prompt,
                                    rnd.seed_of(c.qid, step, rnd.t, c.agent)) for step, c, asked in jobs]
    completions = generate_by_backend([(rnd.backend_of(c.agent), r) for (_, c, _), r in zip(jobs, requests)])
    rnd.calls += len(requests)
    for (step, c, _), req, completion in zip(jobs, requests, completions):
        label, error = parse_self_report(completion.text)
        rnd.steps.append({
            "qid": c.qid, "round": rnd.t, "step": step, "agent": c.agent, "target": NO_AGENT, "slot": 0,
            "temperature": float(c.temperature), "seed": req.seed, "response": completion.text,
            "parsed": as_json(label), "parse_error": error, **call_columns(completion)})


STAGES = {Solve: _solve, Reason: _reason, Advise: _advise, Revise: _revise, Turn: _turn, Judge: _judge}


# --------------------------------------------------------------------------------- a round

def _stopped(qid: str, t: int, reason: str, answer: str, reading: Reading) -> dict:
    return {"qid": qid, "round": t, "active": False, "stop_reason": reason, "stop_round": t,
            "prediction": answer, "prediction_norm": reading.key(answer)}


def _open(qid: str, t: int) -> dict:
    return {"qid": qid, "round": t, "active": True, "stop_reason": None, "stop_round": None,
            "prediction": None, "prediction_norm": None}


def run_round(protocol: Protocol, method: str, t: int, last: bool, questions: Sequence[dict], backend: Backend,
              prompts: dict[str, Prompt], temperatures: Sequence[float], manners: Sequence[str], seed: int,
              max_tokens: int, aux_max_tokens: dict, previous: Sequence[dict] = (),
              previous_state: Sequence[dict] | None = None, proposals: Sequence[dict] | None = None,
              tone: str = "", self_report: Prompt | None = None, persistence: float = 0.0,
              members: Sequence[Member] = ()) -> RoundResult:
    """Round ``t`` of ``protocol`` for the questions still active after round t-1.

    ``previous``: the round t-1 ``samples`` rows; ``previous_state``: the round t-1
    ``state`` rows (None at t = 0: every question active); ``proposals``: round 0 of a
    protocol that opens like self-consistency, reused without a call. ``tone``: the tone
    instruction (lmad.tones) of the debate turns of rounds t >= 1; ``self_report``: the
    layer-A prompt, asked after every agent turn of rounds t >= 1 (None: not asked);
    ``persistence``: the share of a toned round's turns re-asked for layer C (``self_reports``).
    ``members``: a society's agents (their temperatures replace ``temperatures``); ``backend``
    then serves only the judge and the moderator (and members on the unperturbed weights).
    """
    qs = {q["qid"]: q for q in questions}
    if previous_state is None:
        carried, active = {}, sorted(qs)
    else:
        carried = {s["qid"]: s | {"round": t} for s in previous_state if not s["active"]}
        active = sorted(s["qid"] for s in previous_state if s["active"])
    prev: dict[str, dict[int, dict]] = defaultdict(dict)
    for row in previous:
        prev[row["qid"]][row["agent"]] = row
    if any(m.society for m in members) and proposals is not None:
        raise ValueError(f"{method}: a society's round 0 is its members' own calls, never the shared proposals")
    temps = tuple(float(m.agent.temperature) for m in members) if members else tuple(float(x) for x in temperatures)
    missing = [q for q in active if t > 0 and sorted(prev[q]) != list(range(len(temps)))]
    if missing:
        raise ValueError(f"round {t}: no round-{t - 1} responses of every agent for questions {missing[:5]}")
    rnd = _Round(protocol, method, t, qs, active, temps, tuple(manners), prev, prompts, seed, max_tokens,
                 aux_max_tokens, backend, tone=tone if t > 0 else "", members=tuple(members))

    if proposals is not None:
        if t != 0 or not protocol.opens_like_self_consistency:
            raise ValueError(f"{method}: only round 0 of a protocol that opens with Solve can reuse proposals")
        got = {(r["qid"], r["agent"]): float(r["temperature"]) for r in proposals if r["qid"] in qs}
        want = {(q, a): temp for q in active for a, temp in enumerate(temps)}
        if got != want:
            raise ValueError(f"{method}: proposals do not match the questions x agent temperatures {list(temps)}")
        for row in sorted(proposals, key=lambda r: (r["qid"], r["agent"])):
            if row["qid"] in qs:
                rnd.add_answer(dict(row))
    else:
        for stage in protocol.stages(t):
            STAGES[type(stage)](stage, rnd)
        if self_report is not None and t > 0:
            self_reports(rnd, self_report, persistence)

    state = dict(carried)
    undecided = []
    for qid in active:
        answers, reading = [rnd.current[qid][a]["answer"] for a in rnd.agents], rnd.reading(qid)
        stopped = STOP_RULES[protocol.stop](answers, rnd.verdicts.get(qid), reading)
        if stopped:
            state[qid] = _stopped(qid, t, *stopped, reading)
        elif not last:
            state[qid] = _open(qid, t)
        elif protocol.final == "vote":
            state[qid] = _stopped(qid, t, *vote(answers, reading), reading)
        else:
            undecided.append(qid)
    if undecided and protocol.final == "chair":
        _chair(rnd, undecided, aux_max_tokens["chair"], state)
    elif undecided:
        chains = rnd.run(_verdict_chains(rnd, undecided, "moderator", MODERATOR_ROLE, MODERATOR_SCHEMA,
                                                  aux_max_tokens["moderator"]))
        for chain in chains:
            reading = rnd.reading(chain.qid)
            chain.verdict = parse_moderator(chain.text, reading)
            if chain.verdict.error:
                _, answer = vote([rnd.current[chain.qid][a]["answer"] for a in rnd.agents], reading)
                state[chain.qid] = _stopped(chain.qid, t, "moderator_fallback", answer, reading)
            else:
                state[chain.qid] = _stopped(chain.qid, t, "moderator", chain.verdict.answer, reading)
        rnd.record(chains)
    missing = set(qs) - set(state)
    if missing:
        raise ValueError(f"round {t}: questions {sorted(missing)[:5]} are in no state")
    return RoundResult(rnd.samples, rnd.steps, [state[q] for q in sorted(state)], rnd.calls, len(active))


# ------------------------------------------------------------------------- predictions

def debate_prediction_rows(questions: Sequence[dict], method: str, samples: Sequence[dict], steps: Sequence[dict],
                    final_state: Sequence[dict]) -> list[dict]:
    """One ``predictions`` row per question: the final state's answer, and the cost of
    ALL the method's calls over every round (shared proposals and cached calls included,
    since a fresh run of the method alone would issue them)."""
    cost = cost_per_question((*samples, *(s for s in steps if s["step"] not in MEASUREMENT_STEPS)))
    state = {s["qid"]: s for s in final_state}
    out = []
    for q in questions:
        s = state.get(q["qid"])
        if s is None or s["active"]:
            raise ValueError(f"{method}: question {q['qid']} has no final answer after the last round")
        out.append({"qid": q["qid"], "dataset": q["dataset"], "method": method, "prediction": s["prediction"],
                    "prediction_norm": s["prediction_norm"], "stop_reason": s["stop_reason"],
                    "stop_round": s["stop_round"], **cost[q["qid"]]})
    return out
