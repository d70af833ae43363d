"""Coverage-selected societies (rules/societies.smk; off unless config ``societies.enabled``): their
outputs, and the held-out split every table with a society column scores on."""
from __future__ import annotations

from .. import layout
from ..registry import METHODS
from ..societies import split_society, sweep_sizes


class SocietyPlanning:
    """Society tables of a run's plan (mixed into lmad.plan.Plan, whose attributes they read)."""

    def society_outputs(self) -> list[str]:
        """What the society rules add to `rule all` (nothing unless enabled)."""
        if not self.societies["enabled"]:
            return []
        return ([layout.paper(f"societies.{ext}") for ext in ("csv", "md")] + [layout.paper("society_debates.csv")]
                + [layout.paper(f"societies_sweep.{ext}") for ext in ("csv", "md") if self.society_sizes()])

    def society_sizes(self) -> list[int]:
        """The construction-set sizes of the sweep (config societies.split.sizes; none when off)."""
        return sweep_sizes(self.societies["split"]) if self.societies["enabled"] else []

    def held_out_splits(self, wildcards=None) -> list[str]:
        """Every run's construction / held-out split while societies are on (none otherwise): the
        tables with a society column score every method on its held-out questions only."""
        return [layout.society(b, "split") for b in self.backbones] if self.societies["enabled"] else []

    def held_out_size(self) -> int | None:
        """The construction split's questions per benchmark while societies are on (table captions)."""
        return self.societies["split"]["size"] if self.societies["enabled"] else None

    def society_debate_methods(self) -> list[str]:
        """The run's debating and LMAD methods with a society, each followed by its plain method when
        the run has it."""
        out = []
        for m in self.debate_methods + self.lmad_methods:
            if METHODS[m].society:
                out += [m] + [b for b in [split_society(m)[0]] if b in self.methods and b not in out]
        return list(dict.fromkeys(out))

    def society_debate_inputs(self, wildcards) -> dict:
        """Rule paper_societies: every backbone's pool (its splits), questions and the predictions of
        society_debate_methods()."""
        methods = self.society_debate_methods()
        if not methods:
            return {}
        return {"pools": [layout.society(b, "pool") for b in self.backbones],
                "questions": [self.questions_path(b, d) for b in self.backbones for d in self.datasets],
                "predictions": [layout.predictions(b, d, m) for b in self.backbones for d in self.datasets
                                for m in methods]}
