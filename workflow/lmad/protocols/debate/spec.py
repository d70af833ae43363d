"""A debate protocol as data: its agents, the stages of each round, who sees what, and
when a question stops.

A :class:`Protocol` lists the stages of round 0 (``opening``) and of every revision round
t >= 1 (``exchange``), a stop rule applied after each round, and how a question still
open after the last round gets its answer (``final``). The one round engine
(``engine.run_round``) runs any protocol; nothing here calls a model.

Visibility is fixed per stage kind (and tested):

``Solve``   round 0, no peers: the self-consistency solver prompt.
``Reason``  the agent's reasoning manner (DMAD); after round 0 it sees its own and the
            others' round t-1 *final* responses only (never intermediate steps such as a
            Step-Back concept or a Self-Refine draft) and any advice addressed to it.
``Advise``  auxiliary calls on round t-1 responses, K(K-1) per round.
``Revise``  every agent at once: its own and the others' round t-1 responses, plus the
            advice addressed to it. Never a same-round reply.
``Turn``    one agent speaks; it sees its own previous turn and each other agent's latest
            turn: this round's if that agent already spoke, else round t-1's (dMAD).
``Judge``   this round's turns; strict JSON decision.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import cycle, islice
from typing import Mapping, Sequence


@dataclass(frozen=True)
class Step:
    """One call of an agent's turn; later steps of the turn see its output as ``$name``."""

    name: str
    role: str  # prompt role: a key of config ``prompts``


#: The step whose output is an agent's response of the round (a ``samples`` row).
ANSWER = "answer"

#: DMAD's reasoning manners: the steps one agent runs per round (IO 1, CoT 1,
#: Step-Back 2, Self-Refine 3 calls).
MANNERS: dict[str, tuple[Step, ...]] = {
    "io": (Step(ANSWER, "debate_io"),),
    "cot": (Step(ANSWER, "debate_cot"),),
    "stepback": (Step("concept", "debate_stepback_concept"), Step(ANSWER, "debate_stepback_solve")),
    "selfrefine": (Step("draft", "debate_cot"), Step("critique", "debate_refine_critique"),
                   Step(ANSWER, "debate_refine")),
}

#: Advice modes and the prompt role of their calls.
ADVICE_ROLES = {"peer": "debate_advise", "notes": "debate_note", "self": "debate_self_critique"}


# ------------------------------------------------------------------------------ stages

@dataclass(frozen=True)
class Solve:
    """Round 0 of the MAD family: each agent answers alone with the solver prompt and the
    proposal seed, i.e. exactly the self-consistency proposal."""

    def roles(self, manners: Sequence[str], shared: bool) -> tuple[str, ...]:
        return () if shared else ("solver",)


@dataclass(frozen=True)
class Reason:
    """Each agent runs the steps of its reasoning manner (DMAD)."""

    def roles(self, manners: Sequence[str], shared: bool) -> tuple[str, ...]:
        return tuple(s.role for m in manners for s in MANNERS[m])


@dataclass(frozen=True)
class Advise:
    """K(K-1) auxiliary calls before revision, on the round t-1 responses.

    ``peer``  every ordered source -> target pair: one free-form advice on the target's
              response (TrueMAD), delivered to the target in source order;
    ``notes`` every agent writes K-1 untargeted notes from all responses; the K(K-1)
              notes are dealt at random without replacement, K-1 per agent, seeded
              (ComputeMAD);
    ``self``  every agent writes K-1 critiques of its own response (Self-AdviceMAD).
    """

    mode: str

    def __post_init__(self):
        if self.mode not in ADVICE_ROLES:
            raise ValueError(f"unknown advice mode {self.mode!r}; expected one of {sorted(ADVICE_ROLES)}")

    def roles(self, manners: Sequence[str], shared: bool) -> tuple[str, ...]:
        return (ADVICE_ROLES[self.mode],)


@dataclass(frozen=True)
class Revise:
    """Every agent revises at once from the round t-1 responses (+ advice for it)."""

    role: str = "debate_revise"

    def roles(self, manners: Sequence[str], shared: bool) -> tuple[str, ...]:
        return (self.role,)


@dataclass(frozen=True)
class Turn:
    """Agent ``agent`` speaks with prompt ``role`` (sequential turns within a round)."""

    agent: int
    role: str

    def roles(self, manners: Sequence[str], shared: bool) -> tuple[str, ...]:
        return (self.role,)


@dataclass(frozen=True)
class Judge:
    """A judge reads this round's turns and says whether it can settle the answer."""

    role: str = "debate_judge"

    def roles(self, manners: Sequence[str], shared: bool) -> tuple[str, ...]:
        return (self.role,)


Stage = Solve | Reason | Advise | Revise | Turn | Judge

STOPS = ("rounds", "consensus", "judge")
FINALS = ("vote", "moderator", "chair")
MODERATOR_ROLE = "debate_moderator"
CHAIR_ROLE = "chair"
#: The roles of a protocol's last-round call by its final rule (one per open question).
FINAL_ROLES = {"moderator": MODERATOR_ROLE, "chair": CHAIR_ROLE}


@dataclass(frozen=True)
class Protocol:
    """One debate method.

    ``stop``   after each round: ``rounds`` (never early), ``consensus`` (all normalized
               answers agree), ``judge`` (the judge decided);
    ``final``  a question still open after the last round: ``vote`` (normalized majority,
               tie to the lowest agent index), ``moderator`` (one moderator call) or ``chair``
               (one chair call that synthesizes the agents' last answers).
    ``agents`` fixes the agent count (dMAD's two sides); otherwise it comes from config.
    ``rounds`` fixes the round count (the chair at timing none: 0); otherwise config's
    ``debate.rounds``, or the chair's timing for ``final="chair"``.
    ``manners`` is the default manner cycle of ``Reason`` stages (agent i gets
    ``manners[i % len]``).
    ``short`` is the method's label in tables and figures (default: ``title``).
    """

    name: str
    title: str
    opening: tuple[Stage, ...]
    exchange: tuple[Stage, ...]
    stop: str = "rounds"
    final: str = "vote"
    agents: int | None = None
    rounds: int | None = None
    labels: tuple[str, ...] = ()
    manners: tuple[str, ...] = ()
    short: str = ""

    def __post_init__(self):
        if self.stop not in STOPS:
            raise ValueError(f"protocol {self.name}: unknown stop rule {self.stop!r}")
        if self.final not in FINALS:
            raise ValueError(f"protocol {self.name}: unknown final rule {self.final!r}")
        unknown = set(self.manners) - set(MANNERS)
        if unknown:
            raise ValueError(f"protocol {self.name}: unknown manners {sorted(unknown)}")

    def stages(self, t: int) -> tuple[Stage, ...]:
        return self.opening if t == 0 else self.exchange

    def label(self, agent: int) -> str:
        return self.labels[agent] if self.labels else f"Agent {agent + 1}"

    @property
    def reasons_in_manners(self) -> bool:
        return any(isinstance(s, Reason) for s in (*self.opening, *self.exchange))

    @property
    def opens_like_self_consistency(self) -> bool:
        """Round 0 is the self-consistency proposal step (same prompt, seeds, temperatures)."""
        return self.opening == (Solve(),)

    def prompt_roles(self, t: int, last: bool, manners: Sequence[str], shared: bool) -> list[str]:
        """The prompt roles round ``t`` uses (so editing one reruns only its rounds)."""
        roles = {r for s in self.stages(t) for r in s.roles(manners, shared and t == 0)}
        if last and self.final in FINAL_ROLES:
            roles.add(FINAL_ROLES[self.final])
        return sorted(roles)


# ----------------------------------------------------------------------------- setting

@dataclass(frozen=True)
class Setting:
    """A method's resolved configuration."""

    temperatures: tuple[float, ...]  # one per agent
    rounds: int  # R revision rounds after round 0
    manners: tuple[str, ...]  # one per agent; empty unless the protocol reasons in manners
    shares_proposals: bool  # round 0 is results/.../samples/proposals.parquet
    society: str | None = None  # the selector whose members debate (temperatures then come from its file)
    members: int = 0  # how many of the society's members debate (its first, in pick order)


def resolve_setting(protocol: Protocol, debate: Mapping, persona_temperatures: Sequence[float]) -> Setting:
    """Agents, rounds and manners of ``protocol`` from config ``debate`` and ``agents.temperatures``.

    Temperatures: ``debate.methods.<m>.temperatures`` if given; else ``agents: K`` cycles
    the persona temperatures to K agents; else a protocol with a fixed agent count takes
    the first personas; else the personas. Round 0 is the shared proposals table exactly
    when the protocol opens like self-consistency and its temperatures equal the personas.
    """
    persona = tuple(float(x) for x in persona_temperatures)
    where = f"debate.methods.{protocol.name}"
    own = dict((debate.get("methods") or {}).get(protocol.name) or {})
    if own.get("temperatures"):
        temps = tuple(float(x) for x in own["temperatures"])
        if "agents" in own and own["agents"] != len(temps):
            raise ValueError(f"{where}: agents={own['agents']} but {len(temps)} temperatures")
    elif "agents" in own:
        temps = tuple(islice(cycle(persona), own["agents"]))
    elif protocol.agents:
        temps = persona[: protocol.agents]
    else:
        temps = persona
    if protocol.agents and len(temps) != protocol.agents:
        raise ValueError(f"{where}: {protocol.title} has exactly {protocol.agents} agents, got {len(temps)} "
                         "temperatures")
    if len(temps) < 2:
        raise ValueError(f"{where}: a debate needs at least 2 agents, got {len(temps)}")
    rounds, manners = _rounds_and_manners(protocol, debate, len(temps))
    shared = protocol.opens_like_self_consistency and temps == persona
    return Setting(temperatures=temps, rounds=rounds, manners=manners, shares_proposals=shared)


def _rounds_and_manners(protocol: Protocol, debate: Mapping, agents: int) -> tuple[int, tuple[str, ...]]:
    where = f"debate.methods.{protocol.name}"
    own = dict((debate.get("methods") or {}).get(protocol.name) or {})
    rounds = int(own.get("rounds", debate.get("rounds", 2)))
    if rounds < 0:
        raise ValueError(f"{where}: rounds must be >= 0, got {rounds}")
    manners: tuple[str, ...] = ()
    if protocol.reasons_in_manners:
        pool = tuple(own.get("manners") or protocol.manners)
        unknown = set(pool) - set(MANNERS)
        if unknown or not pool:
            raise ValueError(f"{where}: manners must be a non-empty list of {sorted(MANNERS)}, got {list(pool)}")
        manners = tuple(islice(cycle(pool), agents))
    return rounds, manners


def society_setting(protocol: Protocol, debate: Mapping, selector: str, size: int, where: str) -> Setting:
    """``protocol`` debating with a selected society of ``size`` members (lmad.societies).

    The agents are the members, in pick order: all of them, or a protocol with a fixed agent count
    takes the first (dMAD: the first two; a greedy prefix is that selector's pick at that size).
    Rounds and manners come from ``debate.methods.<protocol>`` as for the plain method; its
    ``agents`` and ``temperatures`` do not apply (the society fixes them). ``where``: the config
    key that sets ``size``, for the error."""
    n = protocol.agents or size
    if size < n or n < 2:
        raise ValueError(f"config {where}: the {selector} society has {size} member(s); {protocol.title} with a "
                         f"society needs at least {max(n, 2)}")
    rounds, manners = _rounds_and_manners(protocol, debate, n)
    return Setting(temperatures=(), rounds=rounds, manners=manners, shares_proposals=False, society=selector,
                   members=n)


def committee_setting(protocol: Protocol, debate: Mapping, temperatures: Sequence[float], where: str) -> Setting:
    """``protocol`` on a committee (lmad.committees) whose members sit at ``temperatures``: agent i is
    member i (a protocol with a fixed agent count takes the first); rounds and manners come from
    ``debate.methods.<protocol>`` as for a single model, its ``agents`` and ``temperatures`` do not
    apply. Round 0 is the committee's proposals when the protocol opens like self-consistency with
    every member. ``where``: the config key of the committee, for the error."""
    n = protocol.agents or len(temperatures)
    if len(temperatures) < n or n < 2:
        raise ValueError(f"config {where}: {len(temperatures)} member(s); {protocol.title} on a committee needs "
                         f"at least {max(n, 2)}")
    rounds, manners = _rounds_and_manners(protocol, debate, n)
    shared = protocol.opens_like_self_consistency and n == len(temperatures)
    return Setting(temperatures=tuple(float(t) for t in temperatures[:n]), rounds=rounds, manners=manners,
                   shares_proposals=shared, members=n)
