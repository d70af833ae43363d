"""A stage job's society agents: the backends of their weights and the society file, shared by
the debate rounds, LMAD's stages and layer A/C on LMAD (lmad.societies, docs/methods.md
"Coverage-selected societies")."""
from __future__ import annotations

from typing import Callable

from ..backends import Backend
from ..committees import model_specs
from ..registry import method as registered_method
from ..layout import configured_dataset
from ..schemas import read_table
from ..societies import PoolAgent, members_of


class JobWeights:
    """A job's backends, each opened on first use: one per distinct (model, perturbation) among
    its agents — the model's own, a committee's member models (lmad.committees), and a society
    member's perturbed copy (backends/perturb.py; a model copy of its own)."""

    def __init__(self, model: dict, cache_dir: str, opener: Callable[[dict, str], Backend],
                 base: Backend | None = None):
        # opener: the calling stage's open_backend (looked up late, so tests can stand in for it)
        self.model, self.cache_dir, self.opener = model, cache_dir, opener
        self.specs, self.own = model_specs(model), model.get("name")
        # the model's own, when already open (keyed like a member on it, so both share one backend)
        self.opened: dict = {} if base is None else {(self.own, None): base}

    def of(self, agent: PoolAgent | None) -> Backend:
        name = (agent.model if agent is not None else None) or self.own
        perturbed = agent is not None and agent.perturb is not None
        key = (name, (agent.perturb_seed, agent.perturb_scale) if perturbed else None)
        if key not in self.opened:
            spec = self.model if name == self.own else self.specs[name]
            self.opened[key] = self.opener(dict(spec) | {"perturb": agent.perturb} if perturbed else spec,
                                           self.cache_dir)
        return self.opened[key]

    def of_model(self, name: str) -> Backend:
        """The backend of one of the job's models, unperturbed (a committee role's: lmad.committees)."""
        return self.of(PoolAgent(-1, 0.0, "plain", "standard", model=name))

    def stats(self) -> str:
        return "; ".join(b.stats() for b in self.opened.values()) or "no model calls"


class SocietyFile:
    """The society file of a job (read once, when a unit first needs it)."""

    def __init__(self, members: str | None):
        self.path, self.rows = members, None

    def agents(self, method: str, dataset: str | None = None) -> list[PoolAgent] | None:
        """The members of ``method``'s society in pick order; None for a method without one.
        ``dataset`` (a work dataset: a shard reads its dataset's): whose society, as each
        benchmark has its own (config societies.split)."""
        selector = registered_method(method).society
        if selector is None:
            return None
        if not self.path:
            raise ValueError(f"{method}: the stage has no society file (input members)")
        if self.rows is None:
            self.rows = read_table("society_members", self.path).to_dicts()
        return members_of(self.rows, selector, dataset=None if dataset is None else configured_dataset(dataset))
