"""A stage job's society agents: the backends of their weights and the society file, shared by
the debate rounds, LMAD's stages and layer A/C on LMAD (lmad.societies, docs/methods.md
"Coverage-selected societies")."""
from __future__ import annotations

from typing import Callable

from ..backends import Backend
from ..registry import method as registered_method
from ..schemas import read_table
from ..societies import PoolAgent, members_of


class JobWeights:
    """A job's backends, each opened on first use: the model's own, and one per distinct
    perturbation among a society's members (backends/perturb.py; a model copy of its own)."""

    def __init__(self, model: dict, cache_dir: str, opener: Callable[[dict, str], Backend],
                 base: Backend | None = None):
        # opener: the calling stage's open_backend (looked up late, so tests can stand in for it)
        self.model, self.cache_dir, self.opener = model, cache_dir, opener
        self.opened: dict = {} if base is None else {None: base}  # the model's own, when already open

    def of(self, agent: PoolAgent | None) -> Backend:
        key = None if agent is None or agent.perturb is None else (agent.perturb_seed, agent.perturb_scale)
        if key not in self.opened:
            spec = self.model if key is None else dict(self.model) | {"perturb": agent.perturb}
            self.opened[key] = self.opener(spec, self.cache_dir)
        return self.opened[key]

    def stats(self) -> str:
        return "; ".join(b.stats() for b in self.opened.values()) or "no model calls"


class SocietyFile:
    """The society file of a job (read once, when a unit first needs it)."""

    def __init__(self, members: str | None):
        self.path, self.rows = members, None

    def agents(self, method: str) -> list[PoolAgent] | None:
        """The members of ``method``'s society in pick order; None for a method without one."""
        selector = registered_method(method).society
        if selector is None:
            return None
        if not self.path:
            raise ValueError(f"{method}: the stage has no society file (input members)")
        if self.rows is None:
            self.rows = read_table("society_members", self.path).to_dicts()
        return members_of(self.rows, selector)
