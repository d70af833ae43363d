"""Coverage-selected societies (rules/societies.smk; off unless config ``societies.enabled``): their
outputs, and the held-out split every table with a society column scores on."""
from __future__ import annotations

from .. import layout
from ..registry import METHODS
from ..societies import split_society, sweep_sizes


class SocietyPlan:
    """Society tables of a run's plan (``plan.societies``): the run's scope, and any other
    axis' tables, come from ``plan`` (lmad.plan.Plan)."""

    def __init__(self, plan):
        self.plan = plan

    def outputs(self) -> list[str]:
        """What the society rules add to `rule all` (nothing unless enabled)."""
        if not self.plan.societies_config["enabled"]:
            return []
        born = self.plan.paper.wdh_born
        return ([born(f"societies.{ext}") for ext in ("csv", "md")] + [born("society_debates.csv")]
                + [born(f"societies_sweep.{ext}") for ext in ("csv", "md") if self.sizes()])

    def sizes(self) -> list[int]:
        """The construction-set sizes of the sweep (config societies.split.sizes; none when off)."""
        return sweep_sizes(self.plan.societies_config["split"]) if self.plan.societies_config["enabled"] else []

    def held_out_splits(self, wildcards=None) -> list[str]:
        """Every run's construction / held-out split while societies are on (none otherwise): the
        tables with a society column score every method on its held-out questions only."""
        return [layout.society(b, "split") for b in self.plan.backbones] if self.plan.societies_config["enabled"] else []

    def held_out_size(self) -> int | None:
        """The construction split's questions per benchmark while societies are on (table captions)."""
        return self.plan.societies_config["split"]["size"] if self.plan.societies_config["enabled"] else None

    def debate_methods(self) -> list[str]:
        """The run's debating and LMAD methods with a society, each followed by its plain method when
        the run has it."""
        out = []
        for m in self.plan.debate_methods + self.plan.lmad_methods:
            if METHODS[m].society:
                out += [m] + [b for b in [split_society(m)[0]] if b in self.plan.methods and b not in out]
        return list(dict.fromkeys(out))

    def debate_inputs(self, wildcards) -> dict:
        """Rule paper_societies: every backbone's pool (its splits), questions and the predictions of
        debate_methods()."""
        methods = self.debate_methods()
        if not methods:
            return {}
        return {"pools": [layout.society(b, "pool") for b in self.plan.backbones],
                "questions": [self.plan.questions.path(b, d) for b in self.plan.backbones for d in self.plan.datasets],
                "predictions": [layout.predictions(b, d, m) for b in self.plan.backbones for d in self.plan.datasets
                                for m in methods]}
