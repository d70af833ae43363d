"""Committees: debates whose agents sit on different models (config ``committees``).

A committee names its members, each a model of config ``models`` with its own temperature,
persona and prompt variant, and takes the place of a backbone: ``backbones: [qwen2.5-7b, mix]``
puts its results under ``results/mix/`` beside the single models'. Agent i of every method is
member i (a protocol with a fixed agent count, dMAD, takes the first members; CoT is the first
member at temperature 0). The calls that are no agent's — LMAD's extractor, localizer, resolver
and relation check, dMAD's judge and moderator, the chair — run on the model that ``roles``
names, by default the first member's; every other non-agent call (finalizers) on the first member.

A committee job's ``model`` param is the first member's model entry plus a ``committee`` key
(:func:`committee_param`): stages that know no committee open the first member, the agents'
stages read the members from it (:func:`crew`), and the role stages their model
(:func:`role_spec`). A member with persona ``plain`` and variant ``standard`` sends exactly the
request a single-model agent at the same index sends, so the two share the call cache.
"""
from __future__ import annotations

from typing import Callable, Sequence

from .societies import PoolAgent

#: The committee roles that are no agent, each with the model it runs on (config ``roles``).
ROLES = ("extractor", "localizer", "resolver", "relation_check", "debate_judge", "chair")
#: Which committee role makes the calls of each LMAD trace call-log role and each debate step of
#: no agent (call roles themselves: lmad.backends.base.CALL_ROLES).
ROLE_OF_STEP = {"extractor": "extractor", "localizer": "localizer", "resolver": "resolver",
              "relation": "relation_check", "judge": "debate_judge", "moderator": "debate_judge", "chair": "chair"}
#: Trace and step roles that an agent speaks in (its member's model makes the call).
AGENT_ROLES = ("solver", "debater")
COMMITTEE_KEY = "committee"


def is_committee(config: dict, name: str) -> bool:
    return name in (config.get("committees") or {})


def members_of(config: dict, name: str) -> list[dict]:
    """The committee's members, defaults filled in: member i's temperature is
    ``agents.temperatures[i mod K]``, persona ``plain``, variant ``standard``."""
    temps = config["agents"]["temperatures"]
    return [{"model": m["model"], "temperature": float(m.get("temperature", temps[i % len(temps)])),
             "persona": m.get("persona", "plain"), "variant": m.get("variant", "standard")}
            for i, m in enumerate(config["committees"][name]["members"])]


def roles_of(config: dict, name: str) -> dict[str, str]:
    """The model of every non-agent role (default: the first member's)."""
    entry = config["committees"][name]
    first = entry["members"][0]["model"]
    return {role: (entry.get("roles") or {}).get(role, first) for role in ROLES}


def models_of(config: dict, name: str) -> list[str]:
    """Every model a backbone's jobs may call, first member (the lead) first; a model: itself."""
    if not is_committee(config, name):
        return [name]
    return list(dict.fromkeys([m["model"] for m in members_of(config, name)] + list(roles_of(config, name).values())))


def committee_param(config: dict, name: str, spec_of: Callable[[str], dict]) -> dict:
    """A committee job's ``model`` param: the first member's entry (``spec_of``: a model's) with
    the committee under :data:`COMMITTEE_KEY` (its members, roles and every model's entry)."""
    members = members_of(config, name)
    return spec_of(members[0]["model"]) | {COMMITTEE_KEY: {
        "name": name, "members": members, "roles": roles_of(config, name),
        "models": {m: spec_of(m) for m in models_of(config, name)}}}


def agent_temperatures(config: dict, name: str) -> list[float]:
    """The temperatures of a backbone's agents: the members' for a committee, else the personas'."""
    if is_committee(config, name):
        return [m["temperature"] for m in members_of(config, name)]
    return list(config["agents"]["temperatures"])


# ---- a job's side: its model param

def committee_of(model: dict | None) -> dict | None:
    return (model or {}).get(COMMITTEE_KEY)


def crew(model: dict | None, n: int | None = None) -> list[PoolAgent] | None:
    """A committee's members as agents (their first ``n``); None for a single model."""
    c = committee_of(model)
    if c is None:
        return None
    members = c["members"][:n] if n is not None else c["members"]
    return [PoolAgent(i, m["temperature"], m["persona"], m["variant"], model=m["model"])
            for i, m in enumerate(members)]


def role_spec(model: dict, role: str) -> dict:
    """The model entry a non-agent role runs on: the committee's role model, or the model itself."""
    c = committee_of(model)
    if c is None:
        return model
    if role not in ROLES:
        raise ValueError(f"unknown committee role {role!r}; known: {list(ROLES)}")
    return c["models"][c["roles"][role]]


def model_specs(model: dict) -> dict[str, dict]:
    """Every model entry a job's agents may use by name (a single model: only its own)."""
    c = committee_of(model)
    own = {k: v for k, v in model.items() if k != COMMITTEE_KEY}
    return (c["models"] if c else {}) | {model.get("name"): own}


# ---- costs: which model made a call

def call_model(members: Sequence[str], roles: dict[str, str], role: str, agent: int) -> str:
    """The model of one call row: an agent's role (solver, debater, any debate step of agent
    i >= 0) is member i's (``members[i mod K]``), a role of no agent is its role model, any other
    non-agent call the first member's."""
    if agent >= 0 and (role in AGENT_ROLES or role not in ROLE_OF_STEP):
        return members[agent % len(members)]
    return roles.get(ROLE_OF_STEP.get(role, ""), members[0])
