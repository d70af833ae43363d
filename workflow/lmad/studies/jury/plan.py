"""The pairwise jury's planning (rules in rules.smk): one verdicts table per backbone and juror."""
from __future__ import annotations

from lmad import layout
from lmad.registry import METHODS


def check_config(config: dict) -> None:
    """Config ``jury`` against the run's methods and models, before any job."""
    jury = config.get("jury") or {}
    if jury.get("pair") and (len(jury["pair"]) != 2 or any(m not in config["methods"] for m in jury["pair"])):
        raise ValueError(f"config jury.pair: two methods of the run's methods {config['methods']}, got {jury['pair']}")
    for name in jury.get("judges") or []:
        if name not in config["models"]:
            raise ValueError(f"config jury.judges: model {name!r} is not defined under 'models'")
    battery = jury.get("battery") or {}
    if battery.get("pass_tier") and battery.get("tiers"):
        from lmad.studies.jury.verdicts import required_tiers

        missing = [t for t in required_tiers(battery["pass_tier"]) if t not in battery["tiers"]]
        if missing:
            raise ValueError(f"config jury.battery: pass_tier {battery['pass_tier']!r} needs the tiers {missing} "
                             f"in battery.tiers {battery['tiers']}: their sensitivity decides whether the jury passes")


def enabled(config: dict) -> bool:
    return bool(config["jury"]["pair"])


class Planner:
    def __init__(self, plan):
        self.plan = plan
        self.config = plan.config["jury"]
        self.jurors = self.config["judges"] or [plan.judge]

    def outputs(self) -> list[str]:
        return [layout.paper(f"jury.{ext}") for ext in ("csv", "md")]

    def model_rules(self) -> dict[str, list[str]]:
        return {"jury": self.jurors}

    def predictions(self, wildcards) -> list[str]:
        """The final answers of the jury's two methods on every dataset of one backbone."""
        return [layout.predictions(wildcards.backbone, d, m) for d in self.plan.datasets for m in self.config["pair"]]

    def syntheses(self, wildcards) -> list[str]:
        """The last round's steps of each of the jury's methods that ends in a chair: its synthesis."""
        return [layout.debate_round(wildcards.backbone, d, m, self.plan.debate.rounds_of(m)[-1], "_steps")
                for d in self.plan.datasets for m in self.config["pair"]
                if METHODS[m].protocol is not None and METHODS[m].protocol.final == "chair"]

    def verdict_tables(self, wildcards=None) -> list[str]:
        return [layout.disagreement(b, f"jury_{j}.parquet") for b in self.plan.backbones for j in self.jurors]
